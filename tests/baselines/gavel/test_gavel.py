"""Gavel's round mechanism: the time-sharing and motivational examples of docs/gavel.md, and
Gavel traces.

Worked examples run through ``hetgym.simulate`` with restart delay 0 and 360 s rounds.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import baselines
import hetgym
from baselines.gavel.schedulers import POLICIES, Gavel
from hetgym import ClusterSpec, NodeSpec, Scenario, SimOptions, Workload
from hetgym.traces.gavel import load_gavel_trace, packaged_gavel_dir
from tests.baselines.tiny import ends, scenario

G3 = [(0.0, 1, {"v100": 1.0}, 720.0), (0.0, 1, {"v100": 1.0}, 1080.0)]


def test_g3_las_time_shares_one_gpu():
    """Time sharing example: rounds J0, J1, J0 (done 1080), J1, J1 (done 1800); avg JCT 1440."""
    res = hetgym.simulate(scenario(G3, [("V100", 1, 1)]), baselines.make("gavel-las"))
    assert ends(res) == pytest.approx([1080.0, 1800.0])
    assert res.summary()["avg_jct"] == pytest.approx(1440.0)
    assert res.summary()["makespan"] == pytest.approx(1800.0)


@pytest.mark.parametrize("name", ["gavel-fifo", "gavel-fifo-perf"])
def test_g3_fifo_runs_to_completion(name):
    """Time sharing example, FIFO: J0 0-720, J1 720-1800; avg JCT 1260."""
    res = hetgym.simulate(scenario(G3, [("V100", 1, 1)]), baselines.make(name))
    assert ends(res) == pytest.approx([720.0, 1800.0])
    assert res.summary()["avg_jct"] == pytest.approx(1260.0)


G4_X = np.array([[0.6, 0.4, 0.0], [0.2, 0.6, 0.2], [0.2, 0.0, 0.8]])  # V100, P100, K80
G4_PROGRESS = np.array([[40, 20, 30], [5, 15, 5], [10, 2, 20]], dtype=float)  # epochs/round
G4_WORKERS = [3, 2, 2]


def _g4():
    rows = [(0.0, w, {d: G4_PROGRESS[i, k] / 360.0 / w for k, d in enumerate(["v100", "p100", "k80"])},
             e) for i, (w, e) in enumerate(zip(G4_WORKERS, [80.0, 30.0, 50.0]))]
    sc = scenario(rows, [("V100", 1, 2), ("P100", 1, 3), ("K80", 1, 1)])
    cols = [sc.device_types.index(d) for d in ("v100", "p100", "k80")]
    fixed = np.zeros((3, len(sc.device_types)))
    fixed[:, cols] = G4_X
    return sc, Gavel(policy="las-perf", fixed_allocation=fixed, type_order=["v100", "p100", "k80"])


def test_g4_motivational_example_rounds():
    """Motivational example: R1 {J2 V100, J1 P100}, R2 {J3 V100, J2 P100}, R3 {J2 V, J1 P}, R4
    {J3 V, J2 P} (J2 done 120 s in), R5 and R6 {J3 V, J1 P} (J1 done at 2160), R7 {J3 V} (done
    2520)."""
    sc, sched = _g4()
    res = hetgym.simulate(sc, sched)
    assert ends(res) == pytest.approx([2160.0, 1200.0, 2520.0])
    by_round = {r: {j for j, a, b, *_ in res.segments if a <= r * 360.0 + 1 < b} for r in range(7)}
    assert by_round == {0: {0, 1}, 1: {1, 2}, 2: {0, 1}, 3: {1, 2}, 4: {0, 2}, 5: {0, 2}, 6: {2}}
    # busy GPUs over the first two rounds: 5/6 then 4/6 (paper-confirmed)
    assert [sum(G4_WORKERS[j] for j in by_round[r]) for r in (0, 1)] == [5, 4]


def test_gang_only_on_a_type_that_holds_it():
    """W=3 on 2 V100 + 4 K80: the V100s cannot hold the gang (T = 0 there), so every
    policy runs it on K80 (3 x 1 it/s: 1000 s), never on a split allocation."""
    rows = [(0.0, 3, {"v100": 2.0, "k80": 1.0}, 3000.0)]
    sc = scenario(rows, [("V100", 1, 2), ("K80", 1, 4)])
    for name in ("gavel-las-perf", "gavel-maxtput", "gavel-fifo"):
        assert ends(hetgym.simulate(sc, baselines.make(name))) == pytest.approx([1000.0])


def test_arrival_waits_for_the_next_round_and_gpus_idle_after_completion():
    """Round boundaries: J1 arriving at 100 starts at 360; J0 finishing at 50 leaves its GPU
    idle."""
    rows = [(0.0, 1, {"v100": 1.0}, 50.0), (100.0, 1, {"v100": 1.0}, 10.0)]
    res = hetgym.simulate(scenario(rows, [("V100", 1, 1)]), baselines.make("gavel-las-perf"))
    assert ends(res) == pytest.approx([50.0, 370.0])


def test_heterogeneity_aware_las_uses_fast_types():
    """Aware LP tie-break example's jobs through the mechanism: each runs on its fast type every
    round."""
    rows = [(0.0, 1, {"v100": 4.0, "k80": 1.0}, 4 * 720.0), (0.0, 1, {"v100": 1.0, "k80": 2.0}, 2 * 720.0)]
    sc = scenario(rows, [("V100", 1, 1), ("K80", 1, 1)])
    res = hetgym.simulate(sc, baselines.make("gavel-las-perf"))
    assert ends(res) == pytest.approx([720.0, 720.0])


def _trace_scenario(n_jobs: int = 24) -> Scenario:
    path = min(packaged_gavel_dir().glob("*.trace"))
    df, _ = load_gavel_trace(path, devices=["k80", "p100", "v100"])
    df = df.sort_values("arrival", kind="stable")
    multi = df[df["workers"] > 1].head(n_jobs // 3)  # single- and multi-GPU jobs
    df = pd.concat([df[df["workers"] == 1].head(n_jobs - len(multi)), multi])
    df = df.sort_values("arrival", kind="stable").reset_index(drop=True)
    df["job_id"] = np.arange(len(df))
    df["work"] = df["work"] / 50.0  # keep the test quick: shorter jobs, same mix
    cluster = ClusterSpec([NodeSpec("v100", count=1, gpu_type="V100", gpus=8, cpus=96, mem_gb=768),
                           NodeSpec("p100", count=1, gpu_type="P100", gpus=8, cpus=96, mem_gb=768),
                           NodeSpec("k80", count=1, gpu_type="K80", gpus=8, cpus=96, mem_gb=768)])
    return Scenario(cluster=cluster, workload=Workload.from_frame(df),
                    options=SimOptions(restart_delay=0.0, round_length=360.0, topology_coeff=0.0))


@pytest.mark.parametrize("policy", sorted(POLICIES))
def test_every_policy_runs_a_gavel_trace(policy):
    sc = _trace_scenario()
    res = hetgym.simulate(sc, baselines.make(f"gavel-{policy}", round_length=360), seed=1)
    s = res.summary()
    assert not res.stalled and s["unfinished_jobs"] == 0
    assert s["avg_jct"] > 0 and s["makespan"] >= res.jobs["arrival"].max()
    starts = res.jobs["start"].to_numpy()
    assert np.all(np.abs(starts / 360.0 - np.round(starts / 360.0)) < 1e-6)  # round boundaries only


def test_fifo_defects_option_runs():
    sc = _trace_scenario()
    res = hetgym.simulate(sc, baselines.make("gavel-fifo", fifo_defects=True), seed=1)
    assert res.summary()["unfinished_jobs"] == 0


def test_bad_parameters():
    with pytest.raises(ValueError, match="unknown policy"):
        Gavel(policy="srtf")
    with pytest.raises(ValueError, match="applies to policy .fifo. only"):
        baselines.make("gavel-las", fifo_defects=True)
    with pytest.raises(ValueError, match="absent_jobs"):
        Gavel(absent_jobs="maybe")
    assert {f"gavel-{p}" for p in POLICIES} <= set(baselines.names())


def test_last_arrival_after_an_idle_spell_is_scheduled():
    """Round boundaries that pass while nothing runs or waits are no events; the last
    job arriving after such a spell starts at the next boundary (the run must not
    stop at its arrival as if a round had changed nothing)."""
    rows = [(0.0, 1, {"v100": 1.0}, 10.0), (1000.0, 1, {"v100": 1.0}, 10.0)]
    res = hetgym.simulate(scenario(rows, [("V100", 1, 1)]), baselines.make("gavel-las"))
    assert not res.stalled and ends(res) == pytest.approx([10.0, 1090.0])
