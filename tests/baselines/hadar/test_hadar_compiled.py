"""Hadar / HadarE: the compiled search (:mod:`baselines.hadar.kernels`) and the leaner
emitter give the schedules of the pure-Python path they replace, decision by decision.

The reference is ``Hadar.compiled = False`` (the Python candidate search, greedy pass and
backfill of :mod:`baselines.hadar.parts`, kept for views without the simulator's kernel
state) with the emitter as it was written before (:func:`reference_emit`, below)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from hypothesis import given
from hypothesis import strategies as st

import hetgym
from baselines.hadar.schedulers import Hadar, HadarE
from baselines.hadar.emit import copies_of_job, placement_of_job
from baselines.hadar.parts import (
    FindAlloc,
    PlanState,
    PriceBook,
    fork_fill,
)
from baselines.common.ledger import Ledger, preemptible
from hetgym import Workload
from hetgym.decisions import Cadence, Move, Placement, Preempt, Start
from hetgym.sim.codes import JobStatus
from tests.sim.test_forking import _forkable
from tests.sim.test_reference_equivalence import examples, scenarios

# Slow (compiled Hadar against the Python Hadar): run with -m slow.
pytestmark = pytest.mark.slow

_RUNNING, _GRACE, _QUEUED = int(JobStatus.RUNNING), int(JobStatus.GRACE), int(JobStatus.QUEUED)


# ------------------------------------------------------------------ the reference
def _flat(copies):
    return Placement(np.concatenate([c.nodes for c in copies]),
                     np.concatenate([c.gpus for c in copies]))


def _same(a, b):
    return sorted(zip(a.nodes.tolist(), a.gpus.tolist())) == \
        sorted(zip(b.nodes.tolist(), b.gpus.tolist()))


def reference_emit(view, plan):
    """``baselines.hadar.emit.emit`` as written before (one ``_flat`` per try)."""
    out = []
    ledger = Ledger(view)
    owner = np.array(view.capacity().gpu_owner)
    status = np.asarray(view.status)
    for j in np.asarray(view.running).tolist():
        if j not in plan:
            if not preemptible(view, j):
                continue
            out.append(Preempt(j))
            ledger.preempt(j)
            if float(view.grace[j]) <= 0:
                owner[owner == j] = -1
    pending = []
    for j, copies in plan.items():
        if int(status[j]) in (_RUNNING, _GRACE):
            cur = copies_of_job(view, j)
            if len(cur) == len(copies) and _same(_flat(cur), _flat(copies)):
                continue
            pending.append((j, copies, True))
        elif int(status[j]) == _QUEUED:
            pending.append((j, copies, False))
    while pending:
        left = []
        for j, copies, moving in pending:
            pl = _flat(copies)
            g = pl.gpus >= 0
            held = owner[pl.nodes[g], pl.gpus[g]]
            if np.all((held < 0) | (held == j)) and (ledger.move(j, pl) if moving
                                                    else ledger.start(j, pl)):
                owner[owner == j] = -1
                owner[pl.nodes[g], pl.gpus[g]] = j
                arg = copies if len(copies) > 1 else copies[0]
                out.append(Move(j, arg) if moving else Start(j, None, arg))
            else:
                left.append((j, copies, moving))
        if len(left) == len(pending):
            stuck = next((p for p in left if p[2] and float(view.grace[p[0]]) <= 0
                          and preemptible(view, p[0])), None)
            if stuck is None:
                break
            out.append(Preempt(stuck[0]))
            ledger.preempt(stuck[0])
            owner[owner == stuck[0]] = -1
            left = [(j, c, False) if j == stuck[0] else (j, c, m) for j, c, m in left]
        pending = left
    return out


class PlainHadar(Hadar):
    """Hadar with the pure-Python search and the emitter as it was."""

    compiled = False

    def decide_round(self, view):
        plan, _, _, _ = self.plan(view)
        return reference_emit(view, plan)


class PlainHadarE(HadarE):
    """HadarE with the pure-Python search and the emitter as it was."""

    compiled = False

    def decide_round(self, view):
        plan, free, q, _ = self.plan(view)
        cur = {j: copies_of_job(view, j) for j in np.asarray(view.running).tolist()}
        fork_fill(view, q, plan, free, cur)
        return reference_emit(view, plan)


# ------------------------------------------------------------------ comparison
def _canon(decisions) -> list:
    """Decisions as plain tuples (placements as lists), comparable with ``==``."""
    out = []
    for d in decisions:
        pls = getattr(d, "placement", None)
        pls = [] if pls is None else ([pls] if isinstance(pls, Placement) else list(pls))
        out.append((type(d).__name__, int(d.job), getattr(d, "device", None),
                    [(p.nodes.tolist(), p.gpus.tolist()) for p in pls]))
    return out


class Recorder:
    """Passes a scheduler's decisions through and keeps them (with the time); its rounds
    are the scheduler's."""

    def __init__(self, inner) -> None:
        self.inner, self.log = inner, []
        self.cadence = Cadence(round_length=inner.round_length)

    def reset(self, view) -> None:
        self.inner.reset(view)

    def decide(self, view):
        d = self.inner.decide(view)
        self.log.append((float(view.now), _canon(d)))
        return d


def assert_same_run(sc, fast, plain) -> None:
    """The same decisions at every decision point, job table, segments and metrics."""
    ra, rb = Recorder(fast), Recorder(plain)
    a, b = hetgym.simulate(sc, ra), hetgym.simulate(sc, rb)
    assert len(ra.log) == len(rb.log)
    for x, y in zip(ra.log, rb.log):
        assert x == y
    pd.testing.assert_frame_equal(a.jobs, b.jobs, check_exact=True)
    assert a.segments == b.segments
    timing = ("decision_time_p50", "decision_time_p99")
    ma = {k: v for k, v in a.metrics.items() if k not in timing}
    mb = {k: v for k, v in b.metrics.items() if k not in timing}
    assert ma.keys() == mb.keys()
    for k, x in ma.items():
        assert x == mb[k] or (pd.isna(x) and pd.isna(mb[k])), k


def _short(sc, factor):
    """The workload ``factor`` times shorter (arrivals and work): fewer rounds."""
    df = sc.workload.frame.copy()
    df["work"] /= factor
    df["arrival"] /= factor
    return sc.replace(workload=Workload.from_frame(df))


PAIRS = {"hadar": (Hadar, PlainHadar), "hadare": (HadarE, PlainHadarE)}


# ------------------------------------------------------------------ whole runs
@pytest.mark.parametrize("name", ["hadar", "hadare"])
def test_fitgpp_lab_256_jobs(name):
    """The benchmark's cluster (84 nodes of 8 V100, grace periods, preemption limit 1)."""
    fast, plain = PAIRS[name]
    assert_same_run(hetgym.scenarios.get("fitgpp-lab", n_jobs=256), fast(), plain())


@pytest.mark.parametrize("kw", [{}, {"realloc": "new"}, {"utility": "normalized"},
                                {"sticky": False}, {"dp_limit": 0}, {"dp_limit": 12},
                                {"backfill": False}])
@pytest.mark.parametrize("name", ["hadar", "hadare"])
def test_hetero_small_variants(name, kw):
    """CPU nodes and three GPU types (mixed allocations), every parameter."""
    fast, plain = PAIRS[name]
    sc = _short(hetgym.scenarios.get("hetero-small", n_jobs=40), 3.0)
    assert_same_run(sc, fast(**kw), plain(**kw))


def test_hadar_sim_forking():
    """hadar-sim (every job forkable): HadarE's copies, pooled progress, sync delays."""
    sc = _short(hetgym.scenarios.get("hadar-sim", n_jobs=40), 30.0)
    assert_same_run(sc, HadarE(), PlainHadarE())
    assert_same_run(sc, HadarE(dp_limit=0), PlainHadarE(dp_limit=0))


@pytest.mark.parametrize("name", ["hadar", "hadare"])
def test_topo_sim_interference(name):
    """topo-sim: interference between co-located jobs and communication (the rate kernel's
    full form)."""
    fast, plain = PAIRS[name]
    assert_same_run(_short(hetgym.scenarios.get("topo-sim", n_jobs=40), 10.0), fast(), plain())


@pytest.mark.filterwarnings("ignore::hetgym.StalledRunWarning")
@given(scenario=scenarios(preempt=True, max_jobs=12),
       flags=st.lists(st.booleans(), min_size=1, max_size=3),
       sync=st.sampled_from([None, 0.0, 5.0]), name=st.sampled_from(["hadar", "hadare"]),
       kw=st.sampled_from([{}, {"realloc": "new"}, {"utility": "normalized"}, {"sticky": False},
                           {"dp_limit": 0}, {"dp_limit": 3}]))
@examples(40)
def test_random_scenarios(scenario, flags, sync, name, kw):
    """Random clusters (CPU nodes, topologies, placements policies), grace periods,
    preemption limits, forkable jobs: the same run both ways."""
    fast, plain = PAIRS[name]
    assert_same_run(_forkable(scenario, flags, sync), fast(**kw), plain(**kw))


def test_the_comparison_sees_a_different_schedule():
    """``assert_same_run`` fails on two runs that differ (here: stickiness)."""
    sc = _short(hetgym.scenarios.get("hetero-small", n_jobs=40), 3.0)
    with pytest.raises(AssertionError):
        assert_same_run(sc, Hadar(), PlainHadar(sticky=False))


# ------------------------------------------------------------------ one search
class Probe(Hadar):
    """At every round: ``FindAlloc.best`` both ways, for every job of Q, on the plan state
    of the round and on random states with GPUs, cores and memory taken away."""

    def reset(self, view) -> None:
        self.rng = np.random.default_rng(7)
        self.calls = self.found = 0

    def decide_round(self, view):
        status = np.asarray(view.status)
        running = [j for j in np.asarray(view.running).tolist() if int(status[j]) == _RUNNING]
        q = sorted(running + np.asarray(view.queue).tolist())
        if q:
            current = {j: placement_of_job(view, j) for j in running}
            prices = PriceBook(view, np.asarray(q, dtype=np.int64))
            for utility in ("throughput", "normalized"):
                for sticky in (True, False):
                    fast = FindAlloc(view, prices, utility, sticky, current)
                    slow = FindAlloc(view, prices, utility, sticky, current, compiled=False)
                    assert fast.compiled is not None and slow.compiled is None
                    for empty in (True, False):
                        for state in self._states(view, empty):
                            for j in q:
                                self._check(fast.best(j, state), slow.best(j, state))
        return super().decide_round(view)

    def _states(self, view, empty):
        base = PlanState.of(view, empty=empty)
        yield base
        for _ in range(3):
            keep = self.rng.random(base.gpu.shape) < self.rng.uniform(0.2, 0.9)
            cut = self.rng.uniform(0.0, 1.0, size=base.cpus.shape)
            yield PlanState(base.gpu & keep, base.cpus * cut, base.mem * self.rng.uniform(
                0.2, 1.0, size=base.mem.shape), base.cpu_node)

    def _check(self, a, b):
        self.calls += 1
        assert (a is None) == (b is None)
        if a is None:
            return
        self.found += 1
        assert a.placement.nodes.tolist() == b.placement.nodes.tolist()
        assert a.placement.gpus.tolist() == b.placement.gpus.tolist()
        assert list(a.counts.items()) == list(b.counts.items())
        assert (a.cost, a.utility, a.kind) == (b.cost, b.utility, b.kind)


@pytest.mark.parametrize("name,kw,factor", [("hetero-small", {"n_jobs": 40}, 1000.0),
                                            ("allox-hybrid", {"n_jobs": 40}, 1000.0),
                                            ("topo-sim", {"n_jobs": 20}, 100.0)])
def test_best_on_random_plan_states(name, kw, factor):
    """Candidate search alone: the same choice, counts, cost, utility and kind, bit for bit."""
    p = Probe()
    hetgym.simulate(_short(hetgym.scenarios.get(name, **kw), factor), p)
    assert p.calls > 500 and p.found > 50

