"""The CPU-configuration rule, speed-weighted offered load and the default scenario's windows."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from hetgym import scenarios
from hetgym.specs import ClusterSpec, NodeSpec
from hetgym.throughput import CPU_MAX_HOURS, cpu_offered, restrict_cpu
from hetgym.traces.defaults import MAX_BURST, burstiness, philly_window
from hetgym.traces.windows import offered_load, speed_weights


def _jobs() -> pd.DataFrame:
    # CPU run time = work / (workers x tput_cpu): 10 h, 30 h, 10 h (2 workers), none
    return pd.DataFrame({"work": [36000.0, 108000.0, 72000.0, 100.0], "workers": [1, 1, 2, 1],
                         "tput_cpu": [1.0, 1.0, 1.0, 0.0], "tput_v100": [10.0, 10.0, 10.0, 10.0],
                         "arrival": [0.0, 1.0, 2.0, 100.0]})


def test_cpu_rule() -> None:
    assert cpu_offered(_jobs()).tolist() == [True, False, False, False]
    assert cpu_offered(_jobs(), max_hours=40).tolist() == [True, True, False, False]
    assert cpu_offered(_jobs(), max_workers=2).tolist() == [True, False, True, False]
    out = restrict_cpu(_jobs())
    assert out["tput_cpu"].tolist() == [1.0, 0.0, 0.0, 0.0] and out.attrs["cpu_withdrawn"] == 2
    assert _jobs()["tput_cpu"].tolist() == [1.0, 1.0, 1.0, 0.0]   # input untouched
    with pytest.raises(ValueError, match="no column"):
        cpu_offered(_jobs().drop(columns="work"))


def test_default_scenario_offers_cpu_only_by_the_rule() -> None:
    """Only single-worker jobs of at most a day on a CPU keep a CPU configuration, and
    enough of them do that the CPU/GPU choice is real."""
    for seed in range(3):
        sc = scenarios.get("hetero-small", seed=seed)
        df = sc.workload.frame
        cpu = df["tput_cpu"].to_numpy() > 0
        hours = df["work"][cpu] / (df["workers"][cpu] * df["tput_cpu"][cpu]) / 3600.0
        assert (df["workers"][cpu] == 1).all() and (hours <= CPU_MAX_HOURS).all()
        assert cpu.mean() > 0.1, cpu.mean()
        assert df.attrs["cpu_withdrawn"] > 0


def test_speed_weighted_load() -> None:
    """One V100 and one CPU slot; the CPU runs the job 10x slower, so it adds 0.1 of a slot."""
    cluster = ClusterSpec(nodes=[NodeSpec(name="g", count=1, gpu_type="V100", gpus=1, cpus=8, mem_gb=64),
                                 NodeSpec(name="c", count=1, gpu_type=None, gpus=0, cpus=20, mem_gb=64)])
    df = pd.DataFrame({"work": [100.0, 100.0], "workers": [1, 1], "tput_v100": [1.0, 1.0],
                       "tput_cpu": [0.1, 0.1], "arrival": [0.0, 400.0]})
    assert speed_weights(df, cluster) == pytest.approx({"v100": 1.0, "cpu": 0.1})
    assert offered_load(df, cluster) == pytest.approx(200 / (2 * 400))            # slots
    assert offered_load(df, cluster, resources="speed") == pytest.approx(200 / (1.1 * 400))
    df.loc[1, "tput_cpu"] = 0.0     # half the work cannot use the CPU: it counts half as much
    assert speed_weights(df, cluster)["cpu"] == pytest.approx(0.05)
    one_type = ClusterSpec(nodes=[NodeSpec(name="g", count=3, gpu_type="V100", gpus=2, cpus=8, mem_gb=64)])
    assert offered_load(df, one_type, resources="speed") == pytest.approx(offered_load(df, one_type))


def test_default_scenario_load_is_on_speed_weighted_capacity() -> None:
    sc = scenarios.get("hetero-small", n_jobs=128, seed=1, load=0.7)
    df = sc.workload.frame
    assert offered_load(df, sc.cluster, resources="speed", cpu_slot_cores=8) == pytest.approx(0.7)
    # counting a CPU slot (or a K80) like a V100 would call the same jobs a much lower load
    assert offered_load(df, sc.cluster, cpu_slot_cores=8) < 0.5


def test_default_windows_are_even_and_disjoint() -> None:
    cluster = scenarios.default_cluster()
    starts = []
    for seed in range(5):
        df = philly_window(cluster, n_jobs=512, seed=seed)
        assert burstiness(df, cluster) == pytest.approx(df.attrs["burstiness"])
        assert df.attrs["burstiness"] <= MAX_BURST
        starts.append(df.attrs["window_start"])
    s = np.sort(starts)
    assert (np.diff(s) >= 512).all(), starts
    # seed 3's window does not depend on whether seeds 0-2 were built first
    from hetgym.traces import defaults

    defaults._STARTS.clear()
    assert philly_window(cluster, n_jobs=512, seed=3).attrs["window_start"] == starts[3]
    # without the bound, a bursty window can be drawn
    bursts = [philly_window(cluster, n_jobs=512, seed=s, max_burst=None).attrs["burstiness"]
              for s in range(8)]
    assert max(bursts) > MAX_BURST


def test_burstiness() -> None:
    cluster = ClusterSpec(nodes=[NodeSpec(name="g", count=1, gpu_type="V100", gpus=1, cpus=8, mem_gb=64)])
    even = pd.DataFrame({"arrival": np.arange(10.0), "work": 1.0, "workers": 1, "tput_v100": 1.0})
    assert burstiness(even.iloc[:-1], cluster) == pytest.approx(1 / 9)
    burst = even.assign(work=[1.0] * 5 + [21.0] + [1.0] * 4)
    assert burstiness(burst, cluster) == pytest.approx(21 / 30)
