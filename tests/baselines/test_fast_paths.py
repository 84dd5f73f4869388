"""The fast paths of the classic baselines give exactly the straightforward schedule.

``PolicyScheduler`` (FIFO with backfill, SJF, BF) and ``SRPT`` keep the waiting jobs
in shape groups (:class:`baselines.common.parts.WaitingGroups`) and look only at the jobs
that could start. Here each is run job by job against a plain implementation kept
in this file (order the whole queue at every decision point, try every job), on
random workloads long enough for queues well past the short-queue shortcut, with
dyadic values so that ties in ranking keys are common.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import baselines
import hetgym
from baselines.classic.schedulers import SRPT
from baselines.common.parts import FastestOnly, WaitingGroups, preference
from baselines.classic.srpt_plan import exact_sums
from hetgym import ClusterSpec, NodeSpec, Scenario, SimOptions, Workload
from hetgym.decisions import Preempt, Start
from hetgym.sim.engine import Simulator

# Slow (fast paths against the plain orderings): run with -m slow.
pytestmark = pytest.mark.slow

EXAMPLES = settings(max_examples=25, deadline=None, derandomize=True,
                    suppress_health_check=[HealthCheck.too_slow])


def workload(seed: int, n: int, span: float, grace: bool, cpu_nodes: bool,
             halves: bool = False) -> Scenario:
    """``n`` jobs on a few nodes of three GPU types (and CPU nodes), dyadic values
    (``halves``: cores and memory per worker not all integers)."""
    rng = np.random.default_rng(seed)
    nodes = [NodeSpec(name="k", count=2, gpu_type="K80", gpus=8, cpus=32, mem_gb=64),
             NodeSpec(name="p", count=1, gpu_type="P100", gpus=4, cpus=8, mem_gb=32),
             NodeSpec(name="v", count=2, gpu_type="V100", gpus=4, cpus=16, mem_gb=20)]
    if cpu_nodes:
        nodes.append(NodeSpec(name="c", count=2, gpu_type=None, gpus=0, cpus=16, mem_gb=64))
    cluster = ClusterSpec(nodes=nodes)
    df = pd.DataFrame({
        "job_id": np.arange(n),
        "arrival": np.sort(rng.integers(0, int(span) + 1, n)).astype(float),
        "user": rng.integers(0, 3, n),
        "job_class": rng.choice(["BE", "TE"], n),
        "workers": rng.choice([1, 1, 1, 2, 2, 4, 8], n),
        "work": rng.integers(1, 40, n) * 8.0,
        "cpus": rng.choice([0.0, 1.0, 2.0, 4.0], n),
        "mem_gb": rng.choice([0.0, 2.0, 4.0, 6.0, 8.0], n),
        "grace_period": rng.choice([0.0, 0.0, 8.0], n) if grace else 0.0,
    })
    if halves:
        df["cpus"] = np.where(df["cpus"] > 0, df["cpus"] - 0.5, 0.0)
        df["mem_gb"] = df["mem_gb"] + rng.choice([0.0, 0.25, 1.5], n)
    for d in cluster.device_types:
        df[f"tput_{d}"] = rng.choice([0.0, 0.5, 1.0, 1.0, 2.0, 4.0], n)
    df["tput_k80"] = np.maximum(df["tput_k80"], 0.5)  # every job fits a K80 node
    opts = SimOptions(cpu_slot_cores=4, max_preemptions=rng.choice([None, 1, 2]) if grace else None,
                      checkpoint_interval=float(rng.choice([0.0, 16.0])),
                      restart_delay=float(rng.choice([0.0, 2.0])))
    return Scenario(cluster=cluster, workload=Workload.from_frame(df), options=opts)


def _devices(view, job: int, fastest_only: bool) -> list[int]:
    """Device types where the job can run (finite duration), fastest first."""
    dur = view.durations(np.asarray([job]))[0]
    t = np.where(np.isfinite(dur), np.asarray(view.tput[job]), 0.0)
    order = [int(d) for d in np.argsort(-t, kind="stable") if t[d] > 0]
    return order[:1] if fastest_only else order


class PlainGreedy:
    """Order the whole queue at every decision point, then try every job in turn."""

    round_length = None

    def __init__(self, shortest: bool, blocking: bool, fastest_only: bool) -> None:
        self.shortest, self.blocking, self.fastest_only = shortest, blocking, fastest_only

    def reset(self, view) -> None:
        pass

    def decide(self, view) -> list:
        q = np.asarray(view.queue)
        if self.shortest:
            q = q[np.argsort(view.durations(q).min(axis=1), kind="stable")]
        cap = view.capacity()
        out = []
        for j in q.tolist():
            for d in _devices(view, j, self.fastest_only):
                pl = cap.place(j, d)
                if pl is not None:
                    out.append(Start(j, d, pl))
                    break
            else:
                if self.blocking:
                    break
        return out


class PlainSRPT:
    """Rank every running (movable) and waiting job by remaining time at every decision point."""

    round_length = None

    def __init__(self, fastest_only: bool) -> None:
        self.fastest_only = fastest_only

    def reset(self, view) -> None:
        pass

    def decide(self, view) -> list:
        q = np.asarray(view.queue)
        if len(q) == 0:
            return []
        limit = view.max_preemptions
        movable = [j for j in view.running.tolist()
                   if not view.in_grace(j) and (limit is None or view.n_preempt[j] < limit)]
        cand = np.asarray(movable + q.tolist(), dtype=np.int64)
        rem = view.durations(cand, remaining=True).min(axis=1)
        plan = view.capacity()
        for j in movable:
            plan.give(j)
        keep, starts = set(), []
        for j in cand[np.argsort(rem, kind="stable")].tolist():
            if j in movable:
                w = int(view.workers[j])
                nodes, gpus = view.worker_node[j, :w], view.worker_gpu[j, :w]
                free = all(g < 0 or plan.gpu_owner[n, g] < 0 for n, g in zip(nodes, gpus))
                for n in set(nodes.tolist()):
                    k = int((nodes == n).sum())
                    free &= plan.free_cpus[n] + 1e-9 >= k * view.cpus_need[j, view.node_device[n]]
                    free &= plan.free_mem[n] + 1e-9 >= k * view.mem[j]
                if free:
                    plan.take(j, nodes, gpus)
                    keep.add(j)
            else:
                for d in _devices(view, j, self.fastest_only):
                    if plan.place(j, d) is not None:
                        starts.append(j)
                        break
        out: list = []
        now_free = view.capacity()
        for j in movable:
            if j not in keep:
                out.append(Preempt(j))
                if view.grace[j] <= 0:
                    now_free.give(j)
        for j in starts:
            for d in _devices(view, j, self.fastest_only):
                pl = now_free.place(j, d)
                if pl is not None:
                    out.append(Start(j, d, pl))
                    break
        return out


def assert_same_schedule(sc: Scenario, fast, plain) -> None:
    a = hetgym.simulate(sc, fast)
    b = hetgym.simulate(sc, plain)
    cols = ["start", "end", "device", "preemptions", "restarts"]
    pd.testing.assert_frame_equal(a.jobs[cols], b.jobs[cols], check_exact=True)
    assert a.segments == b.segments
    assert a.metrics["decision_points"] == b.metrics["decision_points"]


@EXAMPLES
@given(seed=st.integers(0, 2**20), n=st.integers(60, 160), span=st.sampled_from([0.0, 100.0, 400.0]),
       cpu_nodes=st.booleans(),
       which=st.sampled_from(["sjf", "sjf-fastest", "fifo-backfill", "bf", "sjf-blocking"]))
def test_policy_schedulers_match_plain_ordering(seed, n, span, cpu_nodes, which) -> None:
    sc = workload(seed, n, span, grace=False, cpu_nodes=cpu_nodes)
    fast, plain = {
        "sjf": (baselines.make("sjf"), PlainGreedy(True, False, False)),
        "sjf-fastest": (baselines.make("sjf", device="fastest"), PlainGreedy(True, False, True)),
        "fifo-backfill": (baselines.make("fifo", blocking=False), PlainGreedy(False, False, False)),
        "bf": (baselines.make("bf"), PlainGreedy(False, False, True)),
        "sjf-blocking": (baselines.make("sjf", blocking=True), PlainGreedy(True, True, False)),
    }[which]
    assert_same_schedule(sc, fast, plain)


@EXAMPLES
@given(seed=st.integers(0, 2**20), n=st.integers(40, 120), span=st.sampled_from([0.0, 100.0, 400.0]),
       cpu_nodes=st.booleans(), fastest_only=st.booleans())
def test_srpt_matches_plain_ranking(seed, n, span, cpu_nodes, fastest_only) -> None:
    sc = workload(seed, n, span, grace=True, cpu_nodes=cpu_nodes)
    fast = SRPT(devices=FastestOnly()) if fastest_only else baselines.make("srpt")
    assert_same_schedule(sc, fast, PlainSRPT(fastest_only))


@EXAMPLES
@given(seed=st.integers(0, 2**20), n=st.integers(40, 120), span=st.sampled_from([0.0, 100.0, 400.0]),
       cpu_nodes=st.booleans(), halves=st.booleans())
def test_srpt_matches_plain_ranking_with_and_without_exact_sums(seed, n, span, cpu_nodes,
                                                                halves) -> None:
    """The kernel's shortcut for integral amounts (``exact_sums``) and its full walk."""
    sc = workload(seed, n, span, grace=True, cpu_nodes=cpu_nodes, halves=halves)
    assert exact_sums(Simulator(sc)) == (not halves)
    assert_same_schedule(sc, baselines.make("srpt"), PlainSRPT(False))


def test_fast_paths_are_taken() -> None:
    """The comparisons above exercise the shape groups, not only the short-queue shortcut."""
    sc = workload(3, 150, 0.0, grace=True, cpu_nodes=True)
    for sched in (baselines.make("sjf"), baselines.make("srpt")):
        seen = []
        name = "decide_and_apply" if sched.cadence.fast_path else "decide"
        inner = getattr(type(sched), name)

        def spy(self, view, inner=inner, seen=seen):
            seen.append((len(view.queue), len(self._groups)))
            return inner(self, view)

        setattr(sched, name, spy.__get__(sched))
        hetgym.simulate(sc, sched)
        assert max(q for q, _ in seen) > 100
        assert sched._groups is not None and len(sched._groups.count) > 1


@EXAMPLES
@given(seed=st.integers(0, 2**20), k=st.integers(0, 60))
def test_group_bounds_never_below_what_fits(seed, k) -> None:
    """``WaitingGroups.bounds`` is an upper bound on the jobs of a shape that fit."""
    sc = workload(seed, 80, 0.0, grace=False, cpu_nodes=True)
    sim = Simulator(sc)
    while sim.n_queue < 80 and sim.advance():
        pass
    view = sim.view
    cap = view.capacity()
    rng = np.random.default_rng(seed)
    for j in rng.permutation(view.n_jobs)[:k].tolist():  # fill the cluster part way
        for d in preference(view)[j]:
            if d >= 0 and cap.place(j, int(d)) is not None:
                break
    groups = WaitingGroups(view, preference(view))
    for j in range(view.n_jobs):
        groups.add(j, 0.0, j)
    bound = groups.bounds(cap.free_gpus, cap.free_cpus, cap.free_mem)
    for g in range(len(groups.count)):
        j = groups.lists[g][0][2]
        trial = view.capacity()
        trial.free_gpus[:], trial.free_cpus[:], trial.free_mem[:] = cap.free_gpus, cap.free_cpus, cap.free_mem
        trial.gpu_owner[:] = cap.gpu_owner
        fits = 0
        while fits <= bound[g] + 1 and any(trial.place(j, int(d)) is not None
                                            for d in preference(view)[j] if d >= 0):
            fits += 1
        assert fits <= bound[g], (g, fits, bound[g])
    live = np.flatnonzero(groups.count > 0)
    loose = groups.bound_rows(live, cap.free_gpus, cap.free_cpus, cap.free_mem, False)
    assert (loose >= bound[live]).all()  # from the totals alone: never tighter
    for best_node in (True, False):
        want = _bounds_numpy(groups, live, cap.free_gpus, cap.free_cpus, cap.free_mem, best_node)
        got = groups.bound_rows(live, cap.free_gpus, cap.free_cpus, cap.free_mem, best_node)
        np.testing.assert_array_equal(got, want)


def _bounds_numpy(groups: WaitingGroups, g: np.ndarray, free_gpus, free_cpus, free_mem,
                  best_node: bool) -> np.ndarray:
    """The rule of ``group_bounds_nb`` in numpy, written out from its docstring (how the
    bounds were computed before the kernel)."""
    on = groups._on
    fg, fc, fm = (np.asarray(x, dtype=np.float64) for x in (free_gpus, free_cpus, free_mem))
    d = groups._d[g]
    tot_g, tot_c, tot_m = (on @ fg)[d], (on @ fc)[d], (on @ fm)[d]
    inv_c, inv_m, has_c, has_m = groups._inv_c[g], groups._inv_m[g], groups._has_c[g], groups._has_m[g]
    slots = np.minimum(np.where(has_c, tot_c * inv_c, np.inf), np.where(has_m, tot_m * inv_m, np.inf))
    slots = np.where(groups._cpu_col[g], slots, np.minimum(slots, tot_g))
    if best_node:
        max_c = np.where(on, fc, -np.inf).max(axis=1)[d]
        max_m = np.where(on, fm, -np.inf).max(axis=1)[d]
        room = (~has_c | (max_c * inv_c + 1e-6 >= 1.0)) & (~has_m | (max_m * inv_m + 1e-6 >= 1.0))
        slots = np.where(room, slots, 0.0)
    jobs = np.where(groups._valid[g], np.floor(np.floor(slots + groups._tol[g]) / groups._wf[g]), 0.0)
    return jobs.sum(axis=1)


@pytest.mark.parametrize("name", ["sjf", "srpt", "bf"])
def test_rerun_same_scheduler_object(name) -> None:
    """``reset`` forgets the previous run: one scheduler object, two runs, same schedule."""
    sc = workload(11, 120, 100.0, grace=True, cpu_nodes=True)
    s = baselines.make(name)
    a = hetgym.simulate(sc, s).jobs
    b = hetgym.simulate(sc, s).jobs
    pd.testing.assert_frame_equal(a, b)


class FirstOnly:
    """Carries out only the first decision of the wrapped scheduler (as ``agents.imitation.bc`` does
    with a teacher), so the scheduler is not the only one deciding what happens."""

    round_length = None

    def __init__(self, inner) -> None:
        self.inner = inner

    def reset(self, view) -> None:
        self.inner.reset(view)

    def decide(self, view) -> list:
        return self.inner.decide(view)[:1]


@pytest.mark.parametrize("which", ["sjf", "srpt"])
def test_same_schedule_when_only_some_decisions_are_carried_out(which) -> None:
    sc = workload(5, 120, 0.0, grace=True, cpu_nodes=True)
    fast = baselines.make(which)
    plain = PlainGreedy(True, False, False) if which == "sjf" else PlainSRPT(False)
    assert_same_schedule(sc, FirstOnly(fast), FirstOnly(plain))
    assert fast._groups is None  # it noticed, and ranks the whole queue since


def plain_list_schedule(workers, jobs, p, dev, omega, now, fails) -> list[tuple[int, int]]:
    """AlloX+'s list scheduling with one heap of free times per device type."""
    import heapq

    heaps = {}
    for d in np.unique(dev).tolist():
        h = omega[dev == d].tolist()
        heapq.heapify(h)
        heaps[d] = h
    idle_left = int((omega <= now).sum())
    out = []
    for k, job in enumerate(jobs.tolist()):
        if idle_left == 0 or all(h[0] > now for h in heaps.values() if h):
            break
        w = int(workers[job])
        best, best_d = np.inf, -1
        for d, h in heaps.items():
            if not np.isfinite(p[k, d]) or len(h) < w:
                continue
            done = heapq.nsmallest(w, h)[-1] + p[k, d]
            if done < best:
                best, best_d = done, d
        if best_d < 0:
            continue
        h = heaps[best_d]
        taken = [heapq.heappop(h) for _ in range(w)]
        start_at = taken[-1]
        if start_at <= now:
            if job in fails:
                for t in taken:
                    heapq.heappush(h, t)
                continue
            out.append((job, best_d))
            idle_left -= w
        for _ in range(w):
            heapq.heappush(h, start_at + float(p[k, best_d]))
    return out


@settings(max_examples=200, deadline=None, derandomize=True)
@given(seed=st.integers(0, 2**20))
def test_allox_plus_list_schedule_matches_heaps(seed) -> None:
    from types import SimpleNamespace

    from baselines.allox.plus import _list_schedule
    from baselines.allox.parts import MachinePool
    from hetgym.decisions import Placement

    rng = np.random.default_rng(seed)
    n_dev, n_jobs = int(rng.integers(1, 4)), int(rng.integers(1, 40))
    m = int(rng.integers(1, 24))
    dev = rng.integers(0, n_dev, m)
    now = 10.0
    omega = np.where(rng.random(m) < 0.3, now, now + rng.integers(0, 6, m) * 2.0)
    workers = rng.choice([1, 1, 2, 3], n_jobs)
    p = rng.choice([1.0, 2.0, 4.0, np.inf], (n_jobs, n_dev))
    jobs = rng.permutation(n_jobs)
    fails = set(rng.choice(n_jobs, int(rng.integers(0, 3))).tolist())

    class Cap:
        def place(self, job, d):
            return None if job in fails else Placement.of([0], [0])

    view = SimpleNamespace(workers=workers)
    pool = MachinePool(dev.astype(np.int64), omega.astype(np.float64), now)
    got = [(s.job, s.device) for s in _list_schedule(view, jobs, p, pool, Cap())]
    assert got == plain_list_schedule(workers, jobs, p[jobs], dev, omega, now, fails)


@pytest.mark.parametrize("scenario, n", [("fitgpp-lab", 200), ("synthetic-hybrid", None)])
def test_srpt_matches_plain_ranking_on_scenarios(scenario, n) -> None:
    """The same on registered scenarios: fitgpp-lab's cores and memory per worker are not
    dyadic, so the order of floating-point additions on free capacity could matter."""
    sc = hetgym.scenarios.get(scenario, **({"n_jobs": n} if n else {}))
    assert_same_schedule(sc, baselines.make("srpt"), PlainSRPT(False))
