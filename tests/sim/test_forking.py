"""Forking / multi-copy jobs (docs/semantics.md, *Forking*) and the utilisation metrics.

* Parity: the fast engine against the pure-Python reference (``tests/reference_sim.py``)
  on random small scenarios with forkable jobs, a scheduler that starts random copies,
  preempts at random and asks for rounds (so that ``fork_sync_delay`` applies at round
  boundaries): same starts, ends, restarts, segments, placements, per-job GPU-seconds,
  per-node busy time, busy time per type and energy.
* The exact rules: pooled rate, sync delay at start and at every round boundary (max with
  the restart delay, not the sum), all copies released together, errors for bad copies.
* The forking examples of docs/hadar.md on the mechanism alone (hand-written
  decisions), and the utilisation metrics on them.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import pandas as pd
import pytest
from hypothesis import given
from hypothesis import strategies as st

import hetgym
from hetgym import ClusterSpec, NodeSpec, Scenario, SimOptions, Workload
from hetgym.decisions import Move, Placement, Preempt, SchedulerBase, SchedulingError, Start
from hetgym.metrics import node_books, time_fraction_at_least
from tests import reference_sim as R
from tests.sim.test_reference_equivalence import (
    RandomScheduler,
    assert_same,
    examples,
    run_both,
    scenarios,
)


# ------------------------------------------------------------------- parity
@dataclass
class ForkingScheduler(RandomScheduler):
    """:class:`RandomScheduler` that also gives forkable jobs extra copies: after choosing
    a first placement it adds, with probability ``p_fork`` each, single-node copies on
    GPU nodes that the job's other copies do not use."""

    p_fork: float = 0.7
    p_move: float = 0.3

    def _add_copies(self, view, cap, j, first, rng) -> list:
        used = set(first.nodes.tolist())
        copies = [first]
        w = int(view.workers[j])
        for n in range(len(view.node_device) if view.forkable[j] else 0):
            dev = int(view.node_device[n])
            if n in used or view.dev_is_cpu[dev] or view.tput[j, dev] <= 0:
                continue
            if rng.random() >= self.p_fork:
                continue
            free = [g for g in range(int(view.node_gpus[n])) if cap.gpu_owner[n, g] < 0]
            if len(free) < w or cap.free_cpus[n] + 1e-9 < w * view.cpus_need[j, dev] \
                    or cap.free_mem[n] + 1e-9 < w * view.mem[j]:
                continue
            pl = Placement.of([n] * w, free[:w])
            cap.take(j, pl.nodes, pl.gpus)
            copies.append(pl)
            used.add(n)
        return copies

    def decide(self, view) -> list:
        out = super().decide(view)
        rng = view.rng
        cap = view.capacity()
        firsts: list = []  # first pass: every start's own placement, in order
        for d in out:
            if isinstance(d, Preempt):
                if view.grace[d.job] <= 0:
                    cap.give(d.job)
                firsts.append(None)
                continue
            if isinstance(d, Move):  # the inner scheduler's own moves pass unchanged
                cap.give(d.job)
                cap.take(d.job, d.placement.nodes, d.placement.gpus)
                firsts.append(None)
                continue
            first = d.placement
            if first is None:  # place it here so that the copies below see it
                dev = view.devices.index(d.device) if isinstance(d.device, str) else int(d.device)
                first = cap.place(d.job, dev)
            else:
                cap.take(d.job, first.nodes, first.gpus)
            firsts.append(first)
        res = []
        for d, first in zip(out, firsts):
            if first is None:
                res.append(d)
                continue
            j = d.job
            copies = self._add_copies(view, cap, j, first, rng)
            res.append(Start(j, None, copies if len(copies) > 1 else first))
        touched = {d.job for d in out}
        for j in view.running.tolist():  # moves: keep the first copy, redraw the others
            if j in touched or not view.forkable[j] or rng.random() >= self.p_move:
                continue
            w = int(view.workers[j])
            first = Placement.of(view.worker_node[j, :w].tolist(), view.worker_gpu[j, :w].tolist())
            k = int(view.n_copies[j])
            for c in range(1, k):  # give back the other copies in the scratch state
                sl = slice(c * w, (c + 1) * w)
                for n, g in zip(view.worker_node[j, sl].tolist(), view.worker_gpu[j, sl].tolist()):
                    dev = int(view.node_device[n])
                    cap.free_gpus[n] += 1
                    cap.gpu_owner[n, g] = -1
                    cap.free_cpus[n] += view.cpus_need[j, dev]
                    cap.free_mem[n] += view.mem[j]
            copies = self._add_copies(view, cap, j, first, rng)
            res.append(Move(j, copies if len(copies) > 1 else first))
        return res


def _forkable(scenario: Scenario, flags: list[bool], sync: float | None) -> Scenario:
    df = scenario.workload.frame.copy()
    df["forkable"] = [flags[i % len(flags)] for i in range(len(df))]
    return scenario.replace(workload=Workload.from_frame(df), options={"fork_sync_delay": sync})


def _assert_forking_same(fast, ref) -> None:
    np.testing.assert_allclose(fast.jobs["gpu_seconds"].to_numpy(float),
                               ref.jobs["gpu_seconds"].to_numpy(float), rtol=1e-9, atol=1e-6)


@given(scenario=scenarios(cpu_nodes=False, preempt=True, max_jobs=12),
       flags=st.lists(st.booleans(), min_size=1, max_size=4),
       sync=st.sampled_from([None, 0.0, 5.0, 20.0]),
       rounds=st.sampled_from([None, 40.0, 100.0]), seed=st.integers(0, 3))
@examples(25)
def test_forking_matches_reference(scenario, flags, sync, rounds, seed):
    sc = _forkable(scenario, flags, sync)
    fast, ref = run_both(sc, lambda: ForkingScheduler(round_length=rounds), seed=seed)
    assert_same(fast, ref, sc)
    _assert_forking_same(fast, ref)
    assert fast.metrics["energy_kwh"] == pytest.approx(ref.energy_kwh, rel=1e-9, abs=1e-12)


@given(scenario=scenarios(cpu_nodes=False, preempt=True, max_jobs=10),
       flags=st.lists(st.booleans(), min_size=1, max_size=3),
       coeff=st.sampled_from([0.3, 1.0]), domain=st.sampled_from(["socket", "node"]),
       seed=st.integers(0, 3))
@examples(15)
def test_forking_with_interference_matches_reference(scenario, flags, coeff, domain, seed):
    """Copies under co-location interference: each copy's rate has its own factor (other
    copies of the same job are not neighbours), pooled; same run on both simulators."""
    sc = _forkable(scenario, flags, 5.0).replace(
        options={"interference_coeff": coeff, "interference_domain": domain})
    fast, ref = run_both(sc, lambda: ForkingScheduler(round_length=50.0), seed=seed)
    assert_same(fast, ref, sc)
    _assert_forking_same(fast, ref)


@given(scenario=scenarios(cpu_nodes=False, max_jobs=10),
       flags=st.lists(st.booleans(), min_size=1, max_size=3),
       sync=st.sampled_from([None, 0.0, 7.0]), seed=st.integers(0, 3))
@examples(25)
def test_forking_metrics_match_reference(scenario, flags, sync, seed):
    """Per-node busy time (CRU), GPUs per segment and GPU-seconds against the reference,
    which integrates them instant by instant."""
    sc = _forkable(scenario, flags, sync)
    sched = ForkingScheduler(round_length=60.0)
    sim = hetgym.sim.engine.Simulator(sc, seed=seed, round_length=60.0, check_every_event=True)
    sched.reset(sim.view)
    while sim.advance():
        ds = sched.decide(sim.view)
        if ds:
            sim.apply(ds)
        elif sim.n_running == 0 and sim.next_arrival == sim.n_jobs and sim.n_queue:
            break
    ref = R.simulate(sc, ForkingScheduler(round_length=60.0), seed=seed)
    _, busy = node_books(sim)
    np.testing.assert_allclose(busy, ref.node_busy, rtol=1e-9, atol=1e-6)
    assert sim.segment_gpus.tolist() == ref.segment_gpus


# ------------------------------------------------------------ exact rules
def _three_nodes(sync: float | None = 10.0, restart: float = 10.0, forkable: bool = True,
                 works=(3600.0,), arrivals=None, max_copies=None) -> Scenario:
    """One forked job example's cluster: nodes a, b, c (one GPU each) where the job runs at 3,
    2, 1 it/s."""
    cluster = ClusterSpec(nodes=[NodeSpec(name=n, count=1, gpu_type=t, gpus=1, cpus=4, mem_gb=16)
                                 for n, t in (("a", "V100"), ("b", "P100"), ("c", "K80"))])
    rows = [{"job_id": i, "arrival": 0.0 if arrivals is None else arrivals[i], "workers": 1,
             "user": "u", "job_class": "BE", "cpus": 1.0, "mem_gb": 1.0,
             "work": w, "tput_v100": 3.0, "tput_p100": 2.0, "tput_k80": 1.0,
             "forkable": forkable} for i, w in enumerate(works)]
    opts = SimOptions(restart_delay=restart, fork_sync_delay=sync, round_length=360.0,
                      max_copies=max_copies)
    return Scenario(cluster=cluster, workload=Workload.from_frame(pd.DataFrame(rows)), options=opts)


def _one(n: int) -> Placement:
    return Placement.of([n], [0])


class Plan(SchedulerBase):
    """Round-based scheduler that replays fixed decisions: ``{round index: [decisions]}``."""

    round_length = True

    def __init__(self, plan: dict[int, list]) -> None:
        self.plan = plan

    def reset(self, view) -> None:
        pass

    def decide(self, view) -> list:
        k = view.now / 360.0
        return self.plan.get(round(k), []) if abs(k - round(k)) < 1e-9 else []


def test_h4_three_copies_ttd_620():
    """One forked job example: 3 copies pooled at 6 it/s, a 10 s sync in round 0 and at t=360:
    TTD 620."""
    sc = _three_nodes()
    r = hetgym.simulate(sc, Plan({0: [Start(0, None, [_one(0), _one(1), _one(2)])]}),
                        check_every_event=True)
    assert r.jobs["end"].iloc[0] == pytest.approx(620.0, rel=1e-12)
    assert r.metrics["restarts"] == 0
    assert r.jobs["gpu_seconds"].iloc[0] == pytest.approx(3 * 620.0)
    assert r.metrics["util_gpu"] == pytest.approx(1.0)
    assert r.metrics["cru"] == pytest.approx(1.0)


def test_h4_without_sync_is_work_over_summed_rates():
    sc = _three_nodes(sync=0.0)
    r = hetgym.simulate(sc, Plan({0: [Start(0, None, [_one(0), _one(1), _one(2)])]}))
    assert r.jobs["end"].iloc[0] == pytest.approx(3600.0 / 6.0, rel=1e-12)


def test_h4_hadar_single_copy_1200():
    sc = _three_nodes()
    r = hetgym.simulate(sc, Plan({0: [Start(0, None, _one(0))]}))
    assert r.jobs["end"].iloc[0] == pytest.approx(1200.0)
    assert r.metrics["cru"] == pytest.approx(1.0 / 3.0)


def test_fork_sync_defaults_to_restart_delay():
    sc = _three_nodes(sync=None, restart=4.0)
    r = hetgym.simulate(sc, Plan({0: [Start(0, None, [_one(0), _one(1), _one(2)])]}))
    # round 0: 4 s sync, 356 x 6 = 2136; t=360: 4 s sync, 1464 / 6 = 244
    assert r.jobs["end"].iloc[0] == pytest.approx(360.0 + 4.0 + 244.0)


def _h5(sync: float, restart: float):
    sc = _three_nodes(sync=sync, restart=restart, works=(3600.0, 720.0))
    plan = {0: [Start(1, None, _one(1)), Start(0, None, [_one(0), _one(2)])]}

    class Grow(Plan):
        def decide(self, view):
            if abs(view.now - 360.0) < 1e-9 and view.status[0] == 2:
                # J2 is done at 360; J1 regrows onto all three nodes: a re-start of its copies
                return [Preempt(0), Start(0, None, [_one(0), _one(1), _one(2)])]
            return super().decide(view)

    return hetgym.simulate(sc, Grow(plan), check_every_event=True)


def test_h5_hadare_two_jobs_no_delays():
    """Two jobs forked example with restart = sync = 0: J2 done 360, J1 720; avg JCT 540, CRU
    1.0."""
    r = _h5(0.0, 0.0)
    assert r.jobs["end"].tolist() == pytest.approx([720.0, 360.0])
    assert r.metrics["avg_jct"] == pytest.approx(540.0)
    assert r.metrics["makespan"] == pytest.approx(720.0)
    assert r.metrics["cru"] == pytest.approx(1.0)
    assert r.metrics["t50_completion"] == pytest.approx(360.0)
    assert (r.metrics["jct_min"], r.metrics["jct_max"]) == pytest.approx((360.0, 720.0))


def test_h5_default_delays_max_not_sum():
    """Two jobs forked example with restart = sync = 10: 1400 in round 0, 2100 in round 1 (the
    re-start pays max(10, 10) = 10 s, not 20), a 10 s sync at 720, then 100/6 s: 746.67."""
    r = _h5(10.0, 10.0)
    assert r.jobs["end"].iloc[0] == pytest.approx(720.0 + 10.0 + 100.0 / 6.0, rel=1e-12)
    assert r.metrics["avg_jct"] == pytest.approx((746.0 + 2.0 / 3.0 + 360.0) / 2.0)


def test_sync_and_restart_take_the_max():
    sc = _three_nodes(sync=5.0, restart=20.0, works=(3600.0,))
    sim = hetgym.sim.engine.Simulator(sc)
    sim.advance()
    sim.apply([Start(0, None, _one(0))])
    sim.preempt(0)
    sim.apply([Start(0, None, [_one(0), _one(1)])])
    assert sim.js.resume_at[0] == pytest.approx(20.0)  # a restart: max(20, 5), not 25
    assert sim.js.rate[0] == pytest.approx(5.0)
    assert sim.js.n_copies[0] == 2
    assert sim.view.n_copies[0] == 2
    sc = _three_nodes(sync=30.0, restart=20.0, works=(3600.0,))
    sim = hetgym.sim.engine.Simulator(sc)
    sim.advance()
    sim.apply([Start(0, None, [_one(0), _one(1)])])
    assert sim.js.resume_at[0] == pytest.approx(30.0)  # first start: the sync alone


def test_copies_released_together_and_busy_counts_every_copy():
    sc = _three_nodes(sync=0.0, works=(600.0,))
    sim = hetgym.sim.engine.Simulator(sc, check_every_event=True)
    sim.advance()
    sim.apply([Start(0, None, [_one(2), _one(0)])])  # 1 + 3 = 4 it/s
    assert sim.js.finish[0] == pytest.approx(150.0)
    assert sim.state.run.busy.sum() == 2
    assert (sim.ns.free_gpus == [0, 1, 0]).all()
    assert sim.advance()
    assert sim.now == pytest.approx(150.0) and sim.finished
    assert (sim.ns.free_gpus == [1, 1, 1]).all()
    assert sim.segment_gpus.tolist() == [2]
    sim.check_final()


@pytest.mark.parametrize("copies,msg", [
    ([_one(0), _one(0)], "share node"),
    ([_one(0), Placement.of([1, 2], [0, 0])], "copy 1 .* has 2 workers"),
    ([], "empty list"),
])
def test_bad_copies_raise(copies, msg):
    sim = hetgym.sim.engine.Simulator(_three_nodes())
    sim.advance()
    with pytest.raises(SchedulingError, match=msg):
        sim.apply([Start(0, None, copies)])


def test_non_forkable_job_refuses_copies():
    sim = hetgym.sim.engine.Simulator(_three_nodes(forkable=False))
    sim.advance()
    with pytest.raises(SchedulingError, match="not forkable"):
        sim.apply([Start(0, None, [_one(0), _one(1)])])
    ref = R.RefSim(_three_nodes(forkable=False))
    ref.step()
    with pytest.raises(SchedulingError, match="not forkable"):
        ref.apply([Start(0, None, [_one(0), _one(1)])])


def test_max_copies_enforced():
    sim = hetgym.sim.engine.Simulator(_three_nodes(max_copies=2))
    sim.advance()
    with pytest.raises(SchedulingError, match="max_copies is 2"):
        sim.apply([Start(0, None, [_one(0), _one(1), _one(2)])])


def test_layout_unchanged_without_forkable_jobs():
    """No forkable job: one copy's worth of worker slots (the engine's layout and every
    result as before forking existed)."""
    sim = hetgym.sim.engine.Simulator(_three_nodes(forkable=False))
    assert sim.js.worker_node.shape[1] == 1
    assert sim.params.opts.max_copies == 1
    sim = hetgym.sim.engine.Simulator(_three_nodes())
    assert sim.js.worker_node.shape[1] == 3


# ----------------------------------------------------------------- metrics
def test_util_series_and_fraction():
    """Hadar on the two jobs forked example (no delays): J1 on a 0-1200, J2 on b 0-360: 2 busy
    GPUs for 360 s, 1 for 840 s; CRU 1560 / 3600, util_gpu 1560 / 3600."""
    sc = _three_nodes(sync=0.0, restart=0.0, works=(3600.0, 720.0))
    r = hetgym.simulate(sc, Plan({0: [Start(0, None, _one(0)), Start(1, None, _one(1))]}))
    assert r.metrics["makespan"] == pytest.approx(1200.0)
    assert r.metrics["cru"] == pytest.approx(1560.0 / 3600.0)
    assert r.metrics["util_gpu"] == pytest.approx(1560.0 / 3600.0)
    series = r.extra["gpu_util_series"]
    assert series == [(0.0, 360.0, 2), (360.0, 1200.0, 1)]
    assert time_fraction_at_least(series, 0.5, 3) == pytest.approx(360.0 / 1200.0)
    assert time_fraction_at_least(series, 0.3, 3) == pytest.approx(1.0)
    assert time_fraction_at_least(series, 0.9, 3) == 0.0
    assert r.metrics["t50_completion"] == pytest.approx(360.0)
    assert r.jobs["gpu_seconds"].tolist() == pytest.approx([1200.0, 360.0])


def test_t50_is_nan_when_fewer_than_half_finish():
    sc = _three_nodes(works=(3600.0, 720.0, 720.0)).replace(options={"horizon": 100.0})
    r = hetgym.simulate(sc, Plan({0: [Start(0, None, _one(0))]}))
    assert math.isnan(r.metrics["t50_completion"])
