"""Hadar / HadarE: the worked examples of docs/hadar.md with their
exact numbers, the analytic M-1 check, round-boundary behaviour and invariants."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from hypothesis import given
from hypothesis import strategies as st

import baselines
import hetgym
from baselines.hadar.schedulers import Hadar, HadarE
from baselines.hadar.parts import FindAlloc, PlanState, PriceBook, payoff_dp, price_eq5
from baselines.common.rounds import RoundBased, at_round_boundary
from hetgym import ClusterSpec, NodeSpec, Scenario, SimOptions, Workload
from hetgym.sim.engine import Simulator
from tests.sim.test_forking import _forkable
from tests.sim.test_reference_equivalence import (
    assert_same,
    examples,
    run_both,
    scenarios,
)


def _scenario(nodes, jobs, restart=10.0, sync=None, forkable=True, round_length=360.0):
    cluster = ClusterSpec(nodes=[NodeSpec(name=n, count=1, gpu_type=t, gpus=g, cpus=16, mem_gb=64)
                                 for n, t, g in nodes])
    devs = sorted({t.lower() for _, t, _ in nodes})
    rows = []
    for i, (w, work, tput) in enumerate(jobs):
        row = {"job_id": i, "arrival": 0.0, "user": "u", "job_class": "BE", "workers": w,
               "work": work, "cpus": 1.0, "mem_gb": 1.0, "forkable": forkable}
        row.update({f"tput_{d}": float(tput.get(d, 0.0)) for d in devs})
        rows.append(row)
    opts = SimOptions(restart_delay=restart, fork_sync_delay=sync, round_length=round_length,
                      topology_coeff=0.0)
    return Scenario(cluster=cluster, workload=Workload.from_frame(pd.DataFrame(rows)), options=opts)


# ------------------------------------------------------- price function
def test_h1_price_function():
    want = [0.01, 0.056234, 0.316228, 1.778279, 10.0]
    got = [price_eq5(0.01, 10.0, g, 4) for g in range(5)]
    assert got == pytest.approx(want, abs=5e-7)  # hand-computed to 6 decimals


# ------------------------------------------ mixed gang, DP and backfill
AB = [("A", "V100", 2), ("B", "K80", 2)]
J1 = (3, 3000.0, {"v100": 2.0, "k80": 1.0})
J2 = (1, 600.0, {"v100": 6.0, "k80": 1.0})


def test_h2_task_level_mixed_allocation():
    r = hetgym.simulate(_scenario(AB, [J1]), Hadar(), check_every_event=True)
    assert r.jobs["end"].iloc[0] == pytest.approx(1000.0)
    assert r.jobs["device"].iloc[0] == "mixed"


def _view_at_zero(sc):
    sim = Simulator(sc, round_length=360.0)
    sim.advance()
    return sim.view


def test_h3_prices_and_dp_skip():
    view = _view_at_zero(_scenario(AB, [J1, J2]))
    q = np.array([0, 1])
    pb = PriceBook(view, q)
    assert pb.eta == pytest.approx(1.0 / 150.0)
    assert pb.u_min == pytest.approx([0.0234375, 0.0234375])
    k80, v100 = view.devices.index("k80"), view.devices.index("v100")
    assert pb.u_max[v100] == pytest.approx(6.0) and pb.u_max[k80] == pytest.approx(1.0)
    state = PlanState.of(view, empty=True)
    find = FindAlloc(view, pb)
    c1 = find.best(0, state)
    assert c1.counts == {0: 2, 1: 1} and c1.utility == pytest.approx(3.0)
    assert c1.cost == pytest.approx(3 * 0.0234375)
    after = state.take(view, 0, c1.placement)
    c2 = find.best(1, after)
    assert c2.counts == {1: 1}
    assert c2.cost == pytest.approx(0.0234375 * (1 / 0.0234375) ** 0.5, rel=1e-6)  # 0.15309
    assert c1.payoff + c2.payoff == pytest.approx(3.7766, abs=1e-4)
    c2_alone = find.best(1, state)
    assert c2_alone.counts == {0: 1} and c2_alone.payoff == pytest.approx(5.9766, abs=1e-4)
    chosen, left = payoff_dp([0, 1], state, find, dp_limit=12)
    assert list(chosen) == [1]  # the DP skips J1
    back = find.best(0, left)  # backfill on {A:1, B:2}
    assert back.counts == {0: 1, 1: 2}
    assert back.cost == pytest.approx(0.421875)


def test_h3_run_dp_backfill_and_alternatives():
    sc = _scenario(AB, [J1, J2])
    r = hetgym.simulate(sc, Hadar(), check_every_event=True)
    assert r.jobs["end"].tolist() == pytest.approx([1000.0, 100.0])
    assert r.metrics["avg_jct"] == pytest.approx(550.0)
    assert r.metrics["restarts"] == 0  # J1 kept at t=360 (stickiness)
    r = hetgym.simulate(sc, Hadar(backfill=False))
    assert r.jobs["end"].tolist() == pytest.approx([1360.0, 100.0])
    assert r.metrics["avg_jct"] == pytest.approx(730.0)
    r = hetgym.simulate(sc, Hadar(dp_limit=0))  # greedy: always take
    assert r.jobs["end"].tolist() == pytest.approx([1000.0, 600.0])
    assert r.metrics["avg_jct"] == pytest.approx(800.0)


# -------------------------------------- one forked job, two jobs forked
ABC = [("a", "V100", 1), ("b", "P100", 1), ("c", "K80", 1)]
T3 = {"v100": 3.0, "p100": 2.0, "k80": 1.0}


def test_h4_one_job():
    sc = _scenario(ABC, [(1, 3600.0, T3)])
    assert hetgym.simulate(sc, Hadar()).metrics["makespan"] == pytest.approx(1200.0)
    r = hetgym.simulate(sc, HadarE(), check_every_event=True)
    assert r.metrics["makespan"] == pytest.approx(620.0)
    assert r.metrics["restarts"] == 0
    sc0 = _scenario(ABC, [(1, 3600.0, T3)], sync=0.0)
    assert hetgym.simulate(sc0, HadarE()).metrics["makespan"] == pytest.approx(600.0)


def test_h5_two_jobs_no_delays():
    sc = _scenario(ABC, [(1, 3600.0, T3), (1, 720.0, T3)], restart=0.0, sync=0.0)
    r = hetgym.simulate(sc, Hadar(), check_every_event=True)
    m = r.metrics
    assert (m["makespan"], m["avg_jct"]) == pytest.approx((1200.0, 780.0))
    assert m["cru"] == pytest.approx(1560.0 / 3600.0)
    r = hetgym.simulate(sc, HadarE(), check_every_event=True)
    m = r.metrics
    assert (m["makespan"], m["avg_jct"], m["cru"]) == pytest.approx((720.0, 540.0, 1.0))


def test_h5_two_jobs_default_delays():
    sc = _scenario(ABC, [(1, 3600.0, T3), (1, 720.0, T3)])
    m = hetgym.simulate(sc, HadarE(), check_every_event=True).metrics
    assert m["makespan"] == pytest.approx(720.0 + 10.0 + 100.0 / 6.0)
    assert m["avg_jct"] == pytest.approx((720.0 + 10.0 + 100.0 / 6.0 + 360.0) / 2.0)
    assert m["restarts"] == 1  # J1 grows from {a, c} to {a, b, c} at t=360 (one Move)


def test_non_forkable_jobs_are_not_forked():
    sc = _scenario(ABC, [(1, 3600.0, T3)], forkable=False)
    assert hetgym.simulate(sc, HadarE()).metrics["makespan"] == pytest.approx(1200.0)


# ------------------------------------------------------------------ M-1
def test_m1_analytic():
    """hadar-testbed M-1 (one MM job): HadarE with fork_sync_delay 0 = work / sum of the
    node rates; Hadar = work / fastest node rate."""
    sc = hetgym.scenarios.get("hadar-testbed", mix="M-1")
    sc = sc.replace(options={"fork_sync_delay": 0.0})
    row = sc.workload.frame.iloc[0]
    rates = [row[f"tput_{n.device}"] * n.count for n in sc.cluster.nodes]
    work = row["work"]
    e = hetgym.simulate(sc, HadarE(), check_every_event=True).metrics["makespan"]
    h = hetgym.simulate(sc, Hadar()).metrics["makespan"]
    assert e == pytest.approx(work / sum(rates), rel=1e-9)
    assert h == pytest.approx(work / max(r / n.count for r, n in zip(rates, sc.cluster.nodes)),
                              rel=1e-9)


# ------------------------------------------------------------ round boundaries
def test_decides_only_at_round_boundaries():
    """A job finishing mid-round leaves its GPU idle until the next boundary; arrivals wait."""
    sc = _scenario([("a", "V100", 1)], [(1, 300.0, {"v100": 1.0}), (1, 100.0, {"v100": 1.0})],
                   restart=0.0)
    r = hetgym.simulate(sc, Hadar())
    assert r.jobs["start"].tolist() == pytest.approx([0.0, 360.0])  # not at 300
    assert r.jobs["end"].tolist() == pytest.approx([300.0, 460.0])


def test_round_helper():
    class Probe(RoundBased):
        round_length = 100.0

        def reset(self, view):
            self.seen = []

        def decide_round(self, view):
            self.seen.append(view.now)
            return [] if view.now else baselines.make("fifo").decide(view)

    sc = _scenario([("a", "V100", 1)], [(1, 250.0, {"v100": 1.0})])
    p = Probe()
    hetgym.simulate(sc, p)
    assert p.seen == [0.0, 100.0, 200.0]
    sim = Simulator(sc, round_length=100.0)
    sim.advance()
    assert at_round_boundary(sim.view)


# ------------------------------------------------------------- invariants
@pytest.mark.parametrize("name", ["hadar", "hadare"])
@pytest.mark.parametrize("mix", ["M-4", "M-12"])
def test_testbed_invariants(name, mix):
    sc = hetgym.scenarios.get("hadar-testbed", mix=mix)
    r = hetgym.simulate(sc, baselines.make(name), check_every_event=True)
    assert r.jobs["finished"].all()
    assert r.metrics["util_gpu"] <= 1.0 + 1e-9 and r.metrics["cru"] <= 1.0 + 1e-9


@pytest.mark.parametrize("realloc", ["all", "new"])
def test_hetero_small_invariants(realloc):
    sc = hetgym.scenarios.get("hetero-small", n_jobs=16)
    df = sc.workload.frame.copy()  # a thousand times shorter: a few dozen rounds, not thousands
    df["work"] /= 1000.0
    df["arrival"] /= 1000.0
    sc = sc.replace(workload=Workload.from_frame(df))
    for cls in (Hadar, HadarE):
        r = hetgym.simulate(sc, cls(realloc=realloc), check_every_event=True)
        assert r.jobs["finished"].all()


def test_bad_parameters():
    with pytest.raises(ValueError, match="realloc"):
        Hadar(realloc="some")
    with pytest.raises(ValueError, match="utility"):
        Hadar(utility="x")


# ------------------------------------------------------- reference simulator
@given(scenario=scenarios(preempt=True, max_jobs=10), flags=st.lists(st.booleans(), min_size=1,
                                                                      max_size=3),
       sync=st.sampled_from([None, 0.0, 5.0]), name=st.sampled_from(["hadar", "hadare"]),
       realloc=st.sampled_from(["all", "new"]))
@examples(20)
def test_hadar_matches_reference(scenario, flags, sync, name, realloc):
    """Hadar / HadarE with forkable jobs: the same run on the fast and reference simulators."""
    sc = _forkable(scenario, flags, sync)
    fast, ref = run_both(sc, lambda: baselines.make(name, realloc=realloc))
    assert_same(fast, ref, sc)
    np.testing.assert_allclose(fast.jobs["gpu_seconds"].to_numpy(float),
                               ref.jobs["gpu_seconds"].to_numpy(float), rtol=1e-9, atol=1e-6)


@pytest.mark.parametrize("name", ["gavel-las-perf", "gavel-maxtput", "tiresias", "yarn-cs"])
def test_h2_gang_that_fits_no_single_type_is_left_unfinished_by_the_baselines(name):
    """Mixed gang example, the baselines' side: J1 (3 workers) fits neither 2 V100s nor 2 K80s
    alone, and Gavel, Tiresias and YARN-CS place a job on one GPU type only, so it never starts (the
    run ends stalled, with J1 unfinished), where Hadar's mixed allocation ends it at 1000 s."""
    with pytest.warns(hetgym.StalledRunWarning):
        r = hetgym.simulate(_scenario(AB, [J1]), baselines.make(name), check_every_event=True)
    assert r.stalled and not r.jobs["finished"].iloc[0]
    assert np.isnan(r.jobs["start"].iloc[0])
