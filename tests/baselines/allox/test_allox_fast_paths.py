"""The faster forms of the AlloX paper's baselines give exactly the schedules of the
straightforward rules kept here (the code they replaced, written for clarity).

``AlloXPlus`` orders the queue in one Numba pass over processing times computed once; ``JSQPlus`` keeps the machines' projected free times incrementally (a Numba walk over
the jobs queued at machines) instead of recomputing them per arrival; ``SJFPlus`` walks
its (job, device type) pairs in Numba; ``EqualShare`` ("sjf") fills a user's share in
Numba.
"""

from __future__ import annotations

import numpy as np
import pytest

import baselines
import hetgym
from baselines.allox.schedulers import AlloX, AlloXPlus, JSQPlus
from baselines.allox.machines import MachinePool, match_first_jobs, no_first_job
from baselines.allox.parts import may_fit, slots_per_device
from baselines.allox.plus import _list_schedule
from baselines.allox.drf import EqualShare
from hetgym.decisions import Start
from tests.baselines.test_fast_paths import assert_same_schedule

# Slow (AlloX-family fast paths against the plain rules): run with -m slow.
pytestmark = pytest.mark.slow

SCENARIOS = [("fitgpp-lab", {"n_jobs": 300}), ("fitgpp-lab", {"n_jobs": 200, "seed": 3}),
             ("allox-hybrid", {}), ("hetero-small", {}), ("synthetic-hybrid", {})]


class PlainJSQ:
    """JSQ+ as the paper's text puts it: per arrival, every machine's projected free time
    is recomputed from the running jobs and every job queued at machines; then every
    idle machine whose head job has all its machines starts it, until none does."""

    round_length = None

    def reset(self, view) -> None:
        slots = slots_per_device(view)
        self.mdev = np.repeat(np.arange(len(slots)), slots)
        self.queues = [[] for _ in range(len(self.mdev))]
        self.holder = np.full(len(self.mdev), -1, dtype=np.int64)
        self.assigned, self.seq = {}, {}

    def omega(self, view) -> np.ndarray:
        omega = np.full(len(self.mdev), view.now)
        for i, j in enumerate(self.holder.tolist()):
            if j >= 0 and view.rate[j] > 0:
                omega[i] = view.now + float(view.remaining[j]) / float(view.rate[j])
        for j in sorted({j for qu in self.queues for j in qu}, key=self.seq.__getitem__):
            d, ms = self.assigned[j]
            omega[ms] = max(omega[m] for m in ms) + view.duration(j, d)
        return omega

    def decide(self, view) -> list:
        status = np.asarray(view.status)
        for i, j in enumerate(self.holder.tolist()):
            if j >= 0 and status[j] not in (2, 3):
                self.holder[i] = -1
        new = [int(j) for j in view.queue.tolist() if int(j) not in self.assigned]
        if new:
            omega = self.omega(view)
            p = view.durations(np.asarray(new, dtype=np.int64))
            for k, j in enumerate(new):
                w = int(view.workers[j])
                best, choice = np.inf, None
                for d in range(p.shape[1]):
                    ids = np.flatnonzero(self.mdev == d)
                    if not np.isfinite(p[k, d]) or len(ids) < w:
                        continue
                    pick = ids[np.argsort(omega[ids], kind="stable")[:w]]
                    done = omega[pick].max() + p[k, d]
                    if done < best:
                        best, choice = done, (d, pick)
                if choice is None:
                    continue
                d, pick = choice
                omega[pick] = best
                self.assigned[j] = (d, pick.tolist())
                self.seq[j] = len(self.seq)
                for i in pick.tolist():
                    self.queues[i].append(j)
        cap = view.capacity()
        out = []
        progress = True
        while progress:
            progress = False
            for i in range(len(self.queues)):
                if self.holder[i] >= 0 or not self.queues[i]:
                    continue
                j = self.queues[i][0]
                d, ms = self.assigned[j]
                if any(self.holder[m] >= 0 or self.queues[m][0] != j for m in ms):
                    continue
                pl = cap.place(j, d)
                if pl is not None:
                    out.append(Start(j, d, pl))
                    for m in ms:
                        self.queues[m].pop(0)
                        self.holder[m] = j
                    progress = True
        return out


@pytest.mark.parametrize("name, kw", SCENARIOS)
def test_jsq_plus_matches_plain_rule(name, kw) -> None:
    sc = hetgym.scenarios.get(name, **kw)
    assert_same_schedule(sc, baselines.make("jsq+"), PlainJSQ())
    assert isinstance(baselines.make("jsq+"), JSQPlus)


class PlainSJFPlus:
    """SJF+: repeatedly start the (job, device type with a free machine) pair of least
    processing time, placing it with ``CapacityModel.place``."""

    round_length = None

    def reset(self, view) -> None:
        pass

    def decide(self, view) -> list:
        q = np.asarray(view.queue)
        cap = view.capacity()
        free = slots_per_device(view, free=True, cap=cap)
        if not free.any():
            return []
        p = view.durations(q)
        ok = (np.isfinite(p) & (free > 0)[None, :] & may_fit(view, cap, q, free)).ravel()
        idx = np.flatnonzero(ok)
        started = np.zeros(len(q), dtype=bool)
        out = []
        for f in idx[np.argsort(p.ravel()[idx], kind="stable")].tolist():
            k, d = divmod(f, p.shape[1])
            if started[k] or free[d] <= 0:
                continue
            pl = cap.place(int(q[k]), d)
            if pl is not None:
                out.append(Start(int(q[k]), d, pl))
                started[k] = True
                free[d] -= int(view.workers[q[k]])
                if not free.any():
                    break
        return out


@pytest.mark.parametrize("name, kw", SCENARIOS)
def test_sjf_plus_matches_plain_rule(name, kw) -> None:
    assert_same_schedule(hetgym.scenarios.get(name, **kw), baselines.make("sjf+"), PlainSJFPlus())


class PlainES(EqualShare):
    """ES with each user's share filled in Python: per device type (most favoured first),
    the user's jobs shortest first, each placed with ``CapacityModel.place``."""

    def decide(self, view) -> list:
        q = np.asarray(view.queue)
        cap = view.capacity()
        used = np.zeros_like(self.quota)
        for j in view.running.tolist():
            if view.device[j] >= 0:
                used[int(view.user[j]), int(view.device[j])] += int(view.workers[j])
        out = []
        for u in sorted(set(np.asarray(view.user)[q].tolist())):
            arr = q[np.asarray(view.user)[q] == u]
            dur = view.durations(arr)
            counts = np.bincount(np.argmin(dur, axis=1), minlength=dur.shape[1])
            left = np.ones(len(arr), dtype=bool)
            for d in np.argsort(-counts, kind="stable").tolist():
                fin = np.flatnonzero(np.isfinite(dur[:, d]))
                for k in fin[np.argsort(dur[fin, d], kind="stable")].tolist():
                    w = int(view.workers[arr[k]])
                    if used[u, d] >= self.quota[u, d]:
                        break
                    if not left[k] or not (used[u, d] + w <= self.quota[u, d] or used[u, d] == 0):
                        continue
                    left[k] = False
                    pl = cap.place(int(arr[k]), d)
                    if pl is not None:
                        out.append(Start(int(arr[k]), d, pl))
                        used[u, d] += w
        return out


@pytest.mark.parametrize("name, kw", SCENARIOS)
def test_es_matches_plain_rule(name, kw) -> None:
    assert_same_schedule(hetgym.scenarios.get(name, **kw), baselines.make("es"), PlainES())


class EveryMachineAlloX(AlloX):
    """AlloX that solves the matching for every idle machine, also after no waiting job can
    start on any of them any more (the fast form stops there)."""

    @staticmethod
    def _any_start(*args) -> bool:
        return True


@pytest.mark.parametrize("name, kw", [
    ("fitgpp-lab", {"n_jobs": 100}), ("toy-3jobs", {}),
    pytest.param("allox-hybrid", {}, marks=pytest.mark.slow),
    pytest.param("hetero-small", {}, marks=pytest.mark.slow)])
def test_allox_stops_only_where_nothing_can_start(name, kw) -> None:
    sc = hetgym.scenarios.get(name, **kw)
    fast, plain = baselines.make("allox"), EveryMachineAlloX()
    assert_same_schedule(sc, fast, plain)
    assert fast.solves <= plain.solves


class AlwaysSolveAlloX(AlloX):
    """AlloX that solves every matching it asks about, also where the exchange argument
    shows that it puts no job first on the idle machine's type (the fast form skips it)."""

    @staticmethod
    def _no_first(*args) -> bool:
        return False


def _scaling_scenario(n_jobs: int, load: float):
    """The 1,024-GPU cluster of ``scripts/bench_scale.py`` at ``load`` with ``n_jobs`` jobs."""
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "scripts"))
    from bench_scale import scale_scenario

    return scale_scenario(n_jobs, load)


def test_no_first_job_is_a_proof() -> None:
    """Wherever :func:`no_first_job` says the matching puts no job first on the idle
    machines of a type, the solved matching puts none there; and it says so often enough
    to matter (random pools of idle and busy machines of 2-4 types, job sizes and type
    slowdowns spread over a wide range, some jobs unable to run on some types)."""
    rng = np.random.default_rng(0)
    shown = empty = 0
    for _ in range(1500):
        n_dev = int(rng.integers(2, 5))
        dev = np.repeat(np.arange(n_dev), rng.integers(1, 8, size=n_dev)).astype(np.int64)
        now = float(rng.uniform(0, 1000))
        busy = rng.random(len(dev)) < rng.uniform(0.2, 0.9)
        pool = MachinePool(dev, np.where(busy, now + rng.exponential(rng.uniform(1, 300), len(dev)), now), now)
        n = int(rng.integers(1, 30))
        base = rng.lognormal(3, 1, n)
        p = base[:, None] * np.exp(rng.uniform(0, rng.uniform(0.1, 3), (n, n_dev)))
        p[rng.random((n, n_dev)) < 0.1] = np.inf
        none = np.isinf(p).all(axis=1)
        p[none, 0] = base[none]
        first, _ = match_first_jobs(p, now - rng.uniform(0, 500, n), pool)
        for t in range(n_dev):
            idle_t = pool.idle & (pool.dev == t)
            if not idle_t.any():
                continue
            empty += bool((first[idle_t] < 0).all())
            if no_first_job(p, pool, t):
                shown += 1
                assert (first[idle_t] < 0).all()
    assert shown > empty // 4 > 0


@pytest.mark.parametrize("name, kw", [
    ("fitgpp-lab", {"n_jobs": 100}), ("toy-3jobs", {}), ("scale", {"n_jobs": 500, "load": 1.2}),
    pytest.param("scale", {"n_jobs": 1000, "load": 0.9}, marks=pytest.mark.slow),
    pytest.param("allox-hybrid", {}, marks=pytest.mark.slow)])
@pytest.mark.parametrize("alpha", [0.1, 1.0])
def test_allox_skips_only_matchings_with_no_first_job(name, kw, alpha, monkeypatch) -> None:
    """Tried on every matching (not only those of 30 rows or more), the proof leaves the
    schedule as solving every matching does."""
    import baselines.allox.schedulers

    monkeypatch.setattr(baselines.allox.schedulers, "_PROOF_ROWS", 0)
    sc = _scaling_scenario(**kw) if name == "scale" else hetgym.scenarios.get(name, **kw)
    fast, plain = AlloX(alpha=alpha), AlwaysSolveAlloX(alpha=alpha)
    assert_same_schedule(sc, fast, plain)
    assert fast.solves <= plain.solves
    if name == "scale":
        assert fast.solves < plain.solves  # idle CPU slots no job wants: skipped


class PlainAlloXPlus(AlloXPlus):
    """AlloX+ as it was written first: per decision point, processing times of the whole
    queue, ``np.lexsort`` of (timed out first, longest waiting first; then least
    processing time), then the list schedule."""

    def decide(self, view) -> list:
        got = MachinePool.at_decision(view)
        if got is None:
            return []
        q, cap, pool = got
        p = view.durations(q)
        waited = view.now - np.asarray(view.arrival)[q]
        late = waited > self.timeout
        key = np.where(late, -waited, p.min(axis=1))
        order = np.lexsort((key, ~late))
        full = np.full((view.n_jobs, p.shape[1]), np.inf)
        full[q] = p
        walked = q[order] if self.walk is None else q[order][: self.walk]
        self.cut = getattr(self, "cut", 0) + int(len(walked) < len(q))
        return _list_schedule(view, walked, full, pool, cap)


@pytest.mark.parametrize("name, kw", SCENARIOS + [("allox-hybrid", {"setting": "paper", "n_jobs": 600})])
@pytest.mark.parametrize("timeout", [3600.0, 300.0])
def test_allox_plus_matches_plain_rule(name, kw, timeout) -> None:
    sc = hetgym.scenarios.get(name, **kw)
    assert_same_schedule(sc, AlloXPlus(timeout=timeout), PlainAlloXPlus(timeout=timeout))


def test_allox_plus_resets_itself_for_a_new_view() -> None:
    """Kept processing times belong to one view: a decision on another view without a
    reset (a teacher moved to a new episode) recomputes them."""
    from hetgym.sim.engine import Simulator

    a = Simulator(hetgym.scenarios.get("fitgpp-lab", n_jobs=60, seed=1))
    b = Simulator(hetgym.scenarios.get("allox-hybrid", setting="paper", n_jobs=80, seed=2))
    for sim in (a, b):
        while not len(sim.view.queue):
            sim.advance()
    reused, fresh = AlloXPlus(), AlloXPlus()
    reused.reset(a.view)
    fresh.reset(b.view)
    got = [(s.job, s.device) for s in reused.decide(b.view)]
    assert got == [(s.job, s.device) for s in fresh.decide(b.view)] and got


@pytest.mark.parametrize("seed", range(40))
def test_allox_plus_kept_order_matches_full_order(seed) -> None:
    """``plus_order_inc_nb`` (the jobs that have not timed out kept sorted between decision
    points) gives ``plus_order_nb``'s order at every call: arrivals, starts, timeouts,
    tied keys, and now and then a queue out of index order (a suspended job at the head)."""
    from baselines.allox.plus import plus_order_inc_nb, plus_order_nb

    rng = np.random.default_rng(seed)
    n_jobs = int(rng.integers(5, 120))
    arrival = np.sort(rng.integers(0, 50, n_jobs)).astype(np.float64)
    key = rng.choice([1.0, 2.0, 3.0, np.inf], n_jobs)
    timeout = float(rng.choice([0.0, 5.0, 20.0, 1e9]))
    out, ref = np.empty(n_jobs, np.int64), np.empty(n_jobs, np.int64)
    srt, insrt = np.empty(n_jobs, np.int64), np.zeros(n_jobs, np.bool_)
    inq, state = np.zeros(n_jobs, np.int64), np.zeros(2, np.int64)
    started = np.zeros(n_jobs, bool)
    for now in np.arange(0.0, 80.0, float(rng.choice([1.0, 3.0]))):
        q = np.flatnonzero((arrival <= now) & ~started)
        if len(q) and rng.random() < 0.15:  # one job back at the head
            i = int(rng.integers(len(q)))
            q = np.concatenate([q[i:i + 1], np.delete(q, i)])
        n = plus_order_inc_nb(q, arrival, key, now, timeout, out, srt, insrt, inq, state)
        m = plus_order_nb(q, arrival, key, now, timeout, ref)
        assert n == m == len(q)
        assert out[:n].tolist() == ref[:m].tolist()
        if len(q):
            started[rng.choice(q, min(len(q), int(rng.integers(0, 3))), replace=False)] = True


@pytest.mark.parametrize("n_jobs, load", [(300, 0.9), (400, 1.2)])
def test_allox_plus_matches_plain_rule_on_the_scaling_workload(n_jobs, load) -> None:
    """The 1,024-GPU cluster of ``scripts/bench_scale.py`` (gangs of up to 8 workers,
    queues of hundreds of jobs under overload)."""
    sc = _scaling_scenario(n_jobs, load)
    assert_same_schedule(sc, AlloXPlus(), PlainAlloXPlus())


@pytest.mark.parametrize("walk", [1, 4])
def test_allox_plus_walk_bounds_the_list(walk) -> None:
    """``AlloXPlus(walk=k)`` list-schedules only the first ``k`` jobs of the plain rule's
    order at each decision point: the same schedule as the plain rule cut at ``k``, on a
    workload whose queue holds hundreds of jobs (so the cut happens)."""
    sc = _scaling_scenario(400, 1.2)
    plain = PlainAlloXPlus(walk=walk)
    assert_same_schedule(sc, AlloXPlus(walk=walk), plain)
    assert plain.cut > 0
    full = hetgym.simulate(sc, AlloXPlus())
    cut = hetgym.simulate(sc, AlloXPlus(walk=walk))
    assert not full.jobs["start"].equals(cut.jobs["start"])  # the cut changes the schedule
    assert cut.jobs["end"].notna().all()


def test_allox_plus_walk_past_the_queue_is_the_paper_rule() -> None:
    sc = hetgym.scenarios.get("allox-hybrid")
    assert_same_schedule(sc, AlloXPlus(walk=10**9), AlloXPlus())


@pytest.mark.parametrize("walk", [0, -3, 2.5, True, "8"])
def test_allox_plus_refuses_a_bad_walk(walk) -> None:
    with pytest.raises((ValueError, TypeError), match="walk"):
        AlloXPlus(walk=walk)
