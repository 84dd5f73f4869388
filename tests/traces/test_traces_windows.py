import numpy as np
import pandas as pd
import pytest

from hetgym.specs import ClusterSpec, NodeSpec
from hetgym.traces import load_philly_derived
from hetgym.traces.windows import (
    all_at_zero,
    best_durations,
    busiest_window,
    episodes,
    hour_window,
    offered_load,
    rebase,
    sample_jobs,
    scale_to_load,
    split_by_count,
    split_by_time,
    time_window,
)


def _jobs(arrivals, work=100.0, workers=1):
    n = len(arrivals)
    return pd.DataFrame({
        "job_id": np.arange(n), "arrival": np.asarray(arrivals, float), "user": "u", "job_class": "BE",
        "workers": np.full(n, workers), "work": np.full(n, work), "tput_k80": 1.0, "tput_v100": 2.0,
        "cpus": 4.0, "mem_gb": 16.0, "deadline": np.asarray(arrivals, float) + 1000.0,
    })


CLUSTER = ClusterSpec([NodeSpec("v", count=2, gpu_type="V100", gpus=4, cpus=32, mem_gb=128),
                       NodeSpec("k", count=1, gpu_type="K80", gpus=2, cpus=16, mem_gb=64)])


def test_rebase_and_time_windows():
    df = _jobs([50, 10, 30, 3700, 7300])
    r = rebase(df)
    assert r["arrival"].tolist() == [0, 20, 40, 3690, 7290] and r["job_id"].tolist() == [0, 1, 2, 3, 4]
    assert r["deadline"].tolist() == [1000, 1020, 1040, 4690, 8290]
    w = time_window(df, 20, 3800)
    assert w["arrival"].tolist() == [0, 20, 3670]
    h = hour_window(df, 1, 2)  # [10 + 3600, 10 + 7200)
    assert h["arrival"].tolist() == [0.0]
    wins = split_by_time(df, 3600)
    assert [len(x) for x in wins] == [3, 1]  # the final window [7210, 10810) is partial
    assert [len(x) for x in split_by_time(df, 3600, drop_partial=False)] == [3, 1, 1]
    assert [len(x) for x in split_by_count(df, 2)] == [2, 2]
    assert [len(x) for x in split_by_count(df, 2, drop_partial=False)] == [2, 2, 1]


def test_busiest_window_and_sampling():
    df = _jobs([0, 1000, 5000, 5010, 5020, 5030, 9000], workers=1)
    b = busiest_window(df, 100, step=10)
    assert len(b) == 4 and b["arrival"].tolist() == [0, 10, 20, 30]
    s1, s2 = sample_jobs(df, 3, seed=7), sample_jobs(df, 3, seed=7)
    pd.testing.assert_frame_equal(s1, s2)
    assert len(s1) == 3 and s1["arrival"].iloc[0] == 0
    z = all_at_zero(df)
    assert (z["arrival"] == 0).all() and (z["deadline"] == 1000).all()


def test_offered_load_definitions():
    df = _jobs([0, 100, 200, 400], work=800.0, workers=2)
    # best device V100: 800 / (2 x 2) = 200 s; sum W d = 4 x 2 x 200 = 1600; slots 10; T = 400
    np.testing.assert_allclose(best_durations(df, CLUSTER), 200.0)
    assert offered_load(df, CLUSTER) == pytest.approx(1600 / (10 * 400))
    # dominant: max(2x4/80, 2x16/320, 2/10) = 0.2 per job -> 4 x 200 x 0.2 / 400
    assert offered_load(df, CLUSTER, resources="dominant") == pytest.approx(4 * 200 * 0.2 / 400)
    scaled = scale_to_load(df, CLUSTER, 2.0)
    assert offered_load(scaled, CLUSTER) == pytest.approx(2.0)
    assert scaled["arrival"].tolist() == pytest.approx([0, 20, 40, 80])
    assert (scaled["deadline"] - scaled["arrival"]).tolist() == pytest.approx([1000] * 4)
    with pytest.raises(ValueError, match="pass span"):
        offered_load(_jobs([5, 5]), CLUSTER)
    assert offered_load(_jobs([5, 5]), CLUSTER, span=100) == pytest.approx(2 * 50 / (10 * 100))


def test_philly_busiest_hours_episodes():
    df, _ = load_philly_derived(devices=["k80", "v100"])
    w = hour_window(df, 3, 10)
    assert w["arrival"].max() < 7 * 3600 and len(w) > 0
    eps = episodes(df, n_jobs=500, cluster=CLUSTER, target_load=1.5)
    assert len(eps) == len(df) // 500
    for e in eps[:5]:
        assert len(e) == 500 and e["arrival"].iloc[0] == 0
        assert offered_load(e, CLUSTER) == pytest.approx(1.5)


@pytest.mark.parametrize("name, kw", [("hetero-small", {}), ("allox-hybrid", {}), ("google-hybrid", {}),
                                      ("fitgpp-lab", {"n_jobs": 512}), ("topo-sim", {}),
                                      ("hadar-sim", {}), ("andreas-sim", {}), ("philly-hetero", {})])
def test_table_best_durations_agree_with_the_simulators_on_scenarios(name, kw):
    """The table form (no gang check) and the simulator's (fastest type that holds the
    gang) give the same durations on the jobs of registered scenarios."""
    import hetgym
    from hetgym.sim.engine import Simulator
    from hetgym.sim.state.jobs import best_durations as sim_best

    sc = hetgym.scenarios.get(name, **kw)
    np.testing.assert_allclose(best_durations(sc.workload.frame, sc.cluster),
                               sim_best(Simulator(sc).jobs), rtol=1e-12)
