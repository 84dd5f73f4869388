"""The AlloX family (Le, Sun, Chowdhury, Liu; EuroSys'20): AlloX and its baselines.

Registered in ``BASELINES`` (and so in ``baselines.names()``):

============ ============================================= ==========================
name         what                                          paper section
============ ============================================= ==========================
``allox``    min-cost matching + fairness knob alpha       3.1, 3.2, 3.3.3, 4.4
``allox+``   shortest first across devices, timeouts first 4.4, 5.1.1
``es``       equal static share, SJF per device type       5.1.1 (``order="fcfs"``: 1)
``drff``     online DRF, FCFS within a user                5.1.1
``drfs``     online DRF, SJF within a user                 5.1.1
``drfa``     DRF over GPU->CPU pooled compute, SJF         5.1.1
``bf``       best fit: every job on its fastest device     2.2
``jsq+``     join the queue with the earliest completion   2.2
``sjf+``     one SJF queue per device type                 2.2
============ ============================================= ==========================

``srpt`` (the paper's preemptive lower bound) is :class:`baselines.classic.SRPT`.
All schedulers here are non-preemptive. A *machine* is one slot of a device type
(a GPU, or a CPU slot; see :mod:`baselines.allox_parts`). A gang job of ``W``
workers counts as one job whose processing time is its gang duration; it starts
only when ``W`` machines of the chosen type are free at once and then takes them
all (the paper has no distributed jobs, sec. 5.1).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np
from numba import njit

from baselines.allox_parts import (
    AlloXProgress,
    admit_pairs,
    MachinePool,
    ceil_users,
    match_first_jobs,
    may_fit,
    slots_per_device,
)
from baselines.classic import PolicyScheduler
from baselines.kernels import any_start_nb, jsq_omega_nb
from baselines.drf import DRFA, DRFF, DRFS, EqualShare
from baselines.parts import ArrivalOrder, FastestFirst, FastestOnly, GreedyAdmission
from hetgym.decisions import Decision, Start
from hetgym.sim.codes import JobStatus
from hetgym.sim.dispatch import entry
from hetgym.sim.view import CapacityModel, View

__all__ = ["AlloX", "AlloXPlus", "SJFPlus", "JSQPlus", "BF", "BASELINES"]

_FUTURE, _QUEUED = int(JobStatus.FUTURE), int(JobStatus.QUEUED)


@dataclass
class AlloX:
    """AlloX: min-cost bipartite matching with dynamic fairness (sec. 3, Algorithm 2).

    At each decision point, for each idle machine ``i`` in turn (slowest device
    types first, by mean speed over the waiting jobs; the paper leaves open the order
    of machines that free at the same instant):

    1. rank the users that have waiting jobs by progress (:class:`AlloXProgress`,
       sec. 3.3.2; ties to the lower user id) and keep the ``ceil(alpha * U)`` lowest,
       ``U`` being the number of users of the workload;
    2. build ``P`` (processing time of each of their waiting jobs on each machine) and
       ``Q = [P, 2P, ..., kP] + [D, ..., D]`` with ``D(j, i) = omega_i - a_j`` (``omega_i``:
       when machine ``i`` frees; ``now`` if idle), solve the min-cost matching with
       :func:`scipy.optimize.linear_sum_assignment` (:func:`match_first_jobs`);
    3. start the job matched *first* on machine ``i`` (largest ``k``); update the
       user's progress and ``omega_i``.

    If no job is matched first on the idle machine (the selected users have no
    job for it, or their jobs would rather wait for a busy machine), alpha is raised
    temporarily (sec. 4.4, "Low utilization with small alpha"): the matching is
    solved again with the waiting jobs of *every* user, and the machine takes the job
    matched first on it there, if any. (The paper does not say by how much alpha is
    raised; going straight to 1 costs one extra matching, which stays valid across
    the idle machines of a decision point, where stepping up user by user would
    cost one matching per step and machine.) Otherwise the machine stays idle until
    the next event.

    A matching stays optimal for the remaining jobs after its first job on a
    machine starts, so it is reused until the set of selected users changes (then
    re-solved), which makes one decision point cost one matching at ``alpha = 1``.

    Simplifications: processing times are the simulator's exact estimates (no
    estimation error or profiling overhead, sec. 4.1, 5.3); a gang job is one job
    and starts only when ``W`` machines of the type are free (module docstring).

    Attributes:
        alpha: Fairness knob in [0, 1]: share of users considered (1 = no fairness).
        raise_alpha: Temporarily raise alpha (to 1) rather than leave a machine idle
            (sec. 4.4).
        window: Consider at most this many waiting jobs per user (oldest first);
            ``None`` = all (the paper's algorithm).
    """

    alpha: float = 0.1
    raise_alpha: bool = True
    window: int | None = None
    round_length: float | None = None
    solves: int = field(default=0, repr=False)

    def __post_init__(self) -> None:
        if not 0.0 <= self.alpha <= 1.0:
            raise ValueError(f"AlloX: alpha must be in [0, 1], got {self.alpha}")

    def reset(self, view: View) -> None:
        """Precompute job values and the number of users."""
        self.progress = AlloXProgress()
        self.progress.reset(view)
        self.n_users = self.progress.users
        self.solves = 0

    def decide(self, view: View) -> list[Decision]:
        """Start the first job the matching puts on each idle machine."""
        q = np.asarray(view.queue)
        if len(q) == 0:
            return []
        cap = view.capacity()
        pool = MachinePool.from_view(view, cap)
        if not pool.idle.any():
            return []
        if self.window is not None:
            q = _window(view, q, self.window)
        p = view.durations(q)
        users = np.asarray(view.user)[q]
        arrival = np.asarray(view.arrival)[q]
        alive = np.ones(len(q), dtype=bool)
        prog = self.progress.of(view)
        step = ceil_users(self.alpha, self.n_users)
        fin = np.isfinite(p)
        speed = np.where(fin, 1.0 / np.where(fin, p, 1.0), 0.0).sum(axis=0) / np.maximum(fin.sum(axis=0), 1)
        type_order = np.argsort(speed, kind="stable")
        rank = np.empty(len(type_order), dtype=np.int64)
        rank[type_order] = np.arange(len(type_order))
        idle = np.flatnonzero(pool.idle)
        idle = idle[np.argsort(rank[pool.dev[idle]], kind="stable")]
        cache: dict[tuple[int, ...], np.ndarray] = {}
        selmask = np.zeros(self.n_users, dtype=bool)

        def first_on(sel: tuple[int, ...], i: int) -> int:
            if sel not in cache:
                selmask[:] = False
                selmask[list(sel)] = True
                rows = np.flatnonzero(alive & selmask[users])
                first, _ = match_first_jobs(p[rows], arrival[rows], pool)
                self.solves += 1
                cache[sel] = np.where(first >= 0, rows[np.maximum(first, 0)], -1)
            return int(cache[sel][i])

        out: list[Decision] = []
        n_dev = p.shape[1]
        changed = True
        for i in idle.tolist():
            if pool.omega[i] > pool.now:
                continue  # taken by a gang started at this decision point
            if changed:
                # once no waiting job can start on any idle machine, the machines left
                # could only find jobs that do not fit (capacity only shrinks here): stop
                free = np.bincount(pool.dev[pool.idle], minlength=n_dev)[:n_dev]
                if not self._any_start(view, cap, q, alive, p, free):
                    break
                changed = False
            waiting = np.unique(users[alive])
            if len(waiting) == 0:
                break
            ranked = waiting[np.lexsort((waiting, prog[waiting]))]
            sel = tuple(sorted(ranked[:step].tolist()))
            j = first_on(sel, i)
            if j < 0 and self.raise_alpha and len(ranked) > step:
                sel = tuple(sorted(ranked.tolist()))
                j = first_on(sel, i)
            if j < 0:
                continue
            job, d = int(q[j]), int(pool.dev[i])
            w = int(view.workers[job])
            alive[j] = False
            pl = cap.place(job, d) if w <= int((pool.idle & (pool.dev == d)).sum()) else None
            changed = True
            if pl is None:
                cache.clear()  # the matching assumed this job would run now
                continue
            out.append(Start(job, d, pl))
            pool.occupy(d, w, pool.now + float(p[j, d]), first=i)
            prog[int(users[j])] += self.progress.value(job, d)
            # the matching stays optimal for the rest only if nothing else changed
            keep = cache[sel]
            cache.clear()
            if w == 1:
                cache[sel] = keep
        return out


    @staticmethod
    def _any_start(view: View, cap: CapacityModel, q: np.ndarray, alive: np.ndarray, p: np.ndarray,
                   free: np.ndarray) -> bool:
        """Whether a waiting job still alive could start on the free machines
        (:func:`baselines.kernels.any_start_nb`)."""
        args = (np.ascontiguousarray(q, dtype=np.int64), alive, np.ascontiguousarray(p),
                free.astype(np.int64), view.workers, view.cpus_need, view.mem, view.simulator.nodes,
                cap.ns)
        return bool(entry(any_start_nb, *args)(*args))


def _window(view: View, q: np.ndarray, window: int) -> np.ndarray:
    """The ``window`` oldest waiting jobs of each user, in queue order."""
    users = np.asarray(view.user)[q]
    keep = np.zeros(len(q), dtype=bool)
    for u in np.unique(users).tolist():
        idx = np.flatnonzero(users == u)
        keep[idx[np.argsort(np.asarray(view.arrival)[q[idx]], kind="stable")[:window]]] = True
    return q[keep]


def _list_schedule(view: View, jobs: np.ndarray, p: np.ndarray, pool: MachinePool,
                   cap: CapacityModel) -> list[Decision]:
    """Greedy list scheduling: each job in turn takes the machines on which it would
    complete earliest; it starts now if they are idle, else it reserves them.

    The walk runs in :func:`list_schedule_nb` up to the next job that would start
    now; this loop places it (if the placement fails, its machines stay as they
    were and the walk goes on).
    """
    n_dev = p.shape[1]
    present = np.zeros(n_dev, dtype=np.bool_)
    counts = np.bincount(pool.dev, minlength=n_dev)
    free_at = np.full((n_dev, max(1, int(counts.max(initial=0)))), np.inf)
    for d in np.flatnonzero(counts).tolist():
        present[d] = True
        free_at[d, : counts[d]] = np.sort(pool.omega[pool.dev == d])
    jobs = np.ascontiguousarray(jobs, dtype=np.int64)
    p = np.ascontiguousarray(p, dtype=np.float64)
    workers = np.ascontiguousarray(view.workers, dtype=np.int64)
    now = pool.now
    idle_left = int(pool.idle.sum())
    out: list[Decision] = []
    k = 0
    while True:
        k, d = list_schedule_nb(jobs, p, workers, now, idle_left, free_at, counts, present, k)
        if k < 0:
            return out
        job = int(jobs[k])
        w = int(workers[job])
        pl = cap.place(job, d)
        if pl is not None:
            out.append(Start(job, d, pl))
            idle_left -= w
            take_machines_nb(free_at, counts, d, w, free_at[d, w - 1] + p[k, d])
        k += 1


@njit(cache=True)
def take_machines_nb(free_at, counts, d, w, until):
    """The ``w`` machines of type ``d`` that free first (row ``d`` of ``free_at``, sorted,
    ``counts[d]`` long) are taken until ``until``."""
    n = counts[d]
    for i in range(n - w):
        free_at[d, i] = free_at[d, i + w]
    pos = n - w
    while pos > 0 and free_at[d, pos - 1] > until:
        pos -= 1
    for i in range(n - 1, pos + w - 1, -1):
        free_at[d, i] = free_at[d, i - w]
    for i in range(pos, pos + w):
        free_at[d, i] = until


@njit(cache=True)
def list_schedule_nb(jobs, p, workers, now, idle_left, free_at, counts, present, k):
    """AlloX+'s list scheduling from the ``k``-th of the ordered ``jobs`` on.

    ``p[i, d]``: processing time of ``jobs[i]`` on type ``d`` (inf: cannot run);
    ``free_at[d, :counts[d]]``: sorted times at which the machines of type ``d`` free
    (types with ``present[d]`` only). Each job takes the ``W`` machines of the type
    where it would complete earliest (first type on ties); a job that would start
    later reserves them (``free_at`` is updated) and the walk goes on. Returns
    ``(i, d)`` for the next job that would start now on type ``d`` (nothing taken
    for it yet), or ``(-1, -1)`` once no job is left or no machine is idle.
    """
    n_dev = p.shape[1]
    while k < jobs.shape[0]:
        if idle_left <= 0:
            return -1, -1
        idle = False
        for d in range(n_dev):
            if present[d] and free_at[d, 0] <= now:
                idle = True
        if not idle:
            return -1, -1  # later jobs could only reserve
        w = workers[jobs[k]]
        best = np.inf
        bd = -1
        for d in range(n_dev):
            if not present[d] or not np.isfinite(p[k, d]) or counts[d] < w:
                continue
            done = free_at[d, w - 1] + p[k, d]
            if done < best:
                best = done
                bd = d
        if bd >= 0:
            start_at = free_at[bd, w - 1]
            if start_at <= now:
                return k, bd
            take_machines_nb(free_at, counts, bd, w, start_at + p[k, bd])
        k += 1
    return -1, -1


@dataclass
class AlloXPlus:
    """AlloX+, the heuristic version of AlloX (sec. 4.4, 5.1.1).

    "AlloX picks the shortest jobs across CPU and GPU first. Additionally, if a job is
    waiting beyond a timeout, it will be prioritized", at cost O(m n log n). Our
    reading: jobs waiting longer than ``timeout`` come first (oldest first), then the
    rest by their shortest processing time across device types; walking that list,
    each job takes the machine(s) on which it would complete earliest (the
    machine's free time ``omega`` plus its processing time there). It starts now if
    those machines are idle; otherwise it reserves them (their ``omega`` moves on)
    and waits, so a job may wait for a GPU rather than take a slow CPU. Nothing is
    kept between decision points. The paper gives no timeout value.

    Attributes:
        timeout: Waiting time (s) after which a job is prioritised.
    """

    timeout: float = 3600.0
    round_length: float | None = None

    def reset(self, view: View) -> None:
        """Nothing to reset."""

    def decide(self, view: View) -> list[Decision]:
        """List-schedule the waiting jobs on the machines."""
        q = np.asarray(view.queue)
        if len(q) == 0:
            return []
        cap = view.capacity()
        pool = MachinePool.from_view(view, cap)
        if not pool.idle.any():
            return []
        p = view.durations(q)
        waited = view.now - np.asarray(view.arrival)[q]
        late = waited > self.timeout
        key = np.where(late, -waited, p.min(axis=1))
        order = np.lexsort((key, ~late))
        return _list_schedule(view, q[order], p[order], pool, cap)


@dataclass
class SJFPlus:
    """SJF+: one queue per device type, each sorted by processing time there (sec. 2.2).

    "Whenever a resource becomes available, schedule the first job in the
    corresponding queue and remove the job from all queues. When multiple resources
    become available simultaneously, first schedule the job with the shortest
    processing time." At a decision point this is: repeatedly start the (job, device
    type with a free machine) pair of least processing time. Jobs never wait for a
    busier device type.
    """

    round_length: float | None = None

    def reset(self, view: View) -> None:
        """Nothing to reset."""

    def decide(self, view: View) -> list[Decision]:
        """Start least-processing-time pairs while machines are free."""
        q = np.asarray(view.queue)
        if len(q) == 0:
            return []
        cap = view.capacity()
        free = slots_per_device(view, free=True, cap=cap)
        if not free.any():
            return []
        p = view.durations(q)
        # Pairs that cannot start whatever comes before them (capacity only shrinks
        # here) are left out; the others keep their order in argsort(p, stable).
        ok = (np.isfinite(p) & (free > 0)[None, :] & may_fit(view, cap, q, free)).ravel()
        idx = np.flatnonzero(ok)
        flat = idx[np.argsort(p.ravel()[idx], kind="stable")]
        return list(admit_pairs(view, cap, flat, q, p, free))


@dataclass
class JSQPlus:
    """JSQ+, join the shortest queue by completion time (sec. 2.2).

    "On the arrival of a job, the scheduler picks the resource that has the shortest
    completion time, i.e., the sum of waiting time and the processing time of the job
    on the corresponding resource." Every machine keeps a FIFO queue. On arrival, a
    job joins the queue of the machine(s) (``W`` of one device type for a gang) where
    it would complete earliest, given the work already queued there, and it keeps
    that choice. A machine starts the head of its queue when it frees.

    With ``queueing=False`` a job may not queue behind a busy machine: it takes the
    fastest *idle* device type when its turn comes (FIFO). That is the semantics
    under which the paper's Fig. 4a gives an average JCT of 100; with the queueing
    semantics of the text, the same example gives 60 (jobs 3 and 4 queue behind
    jobs 1 and 2 on the GPUs: 80 < 160). See ``docs/allox.md``.

    Attributes:
        queueing: Jobs join machine queues (the text of sec. 2.2) or only idle machines.
    """

    queueing: bool = True
    round_length: float | None = None

    def reset(self, view: View) -> None:
        """Create one empty queue per machine."""
        slots = slots_per_device(view)
        self.mdev = np.repeat(np.arange(len(slots)), slots)
        self.queues: list[list[int]] = [[] for _ in range(len(self.mdev))]
        self.holder = np.full(len(self.mdev), -1, dtype=np.int64)
        self.assigned: dict[int, tuple[int, list[int]]] = {}
        self._fifo = PolicyScheduler(ArrivalOrder(), FastestFirst(), GreedyAdmission(blocking=True))
        self._ids = [np.flatnonzero(self.mdev == d) for d in range(len(slots))]
        # Jobs queued at machines, in the order they joined (for _omega): entry e waits
        # for machines _mach[_off[e]:_off[e + 1]] and runs _dur[e]; _alive until it starts.
        n = view.n_jobs
        self._entry: dict[int, int] = {}
        self._alive = np.zeros(n, dtype=bool)
        self._off = np.zeros(n + 1, dtype=np.int64)
        self._mach = np.zeros(int(np.asarray(view.workers).sum()), dtype=np.int64)
        self._dur = np.zeros(n)
        self._lo = 0
        self._next = 0  # jobs below this index have arrived
        self._unplaced: list[int] = []  # arrived, no machine queue could take them

    def decide(self, view: View) -> list[Decision]:
        """Assign new arrivals to machine queues, start the heads of free machines."""
        if not self.queueing:
            return self._fifo.decide(view)
        status = np.asarray(view.status)
        held = self.holder >= 0
        self.holder[held & (status[np.maximum(self.holder, 0)] != 2)
                    & (status[np.maximum(self.holder, 0)] != 3)] = -1
        k = self._next
        while k < view.n_jobs and status[k] != _FUTURE:
            k += 1
        # the queued jobs not assigned yet, in queue (= arrival) order
        new = [j for j in self._unplaced + list(range(self._next, k)) if status[j] == _QUEUED]
        self._next = k
        if new:
            omega = self._omega(view)
            p = view.durations(np.asarray(new, dtype=np.int64))
            for k, j in enumerate(new):
                w = int(view.workers[j])
                best, choice = np.inf, None
                for d in range(p.shape[1]):
                    ids = self._ids[d]
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
                e = len(self._entry)
                self._entry[j] = e
                self._alive[e] = True
                self._off[e + 1] = self._off[e] + w
                self._mach[self._off[e]: self._off[e + 1]] = pick
                self._dur[e] = view.duration(j, d)
                for i in pick.tolist():
                    self.queues[i].append(j)
            self._unplaced = [j for j in new if j not in self.assigned]
        cap = view.capacity()
        out: list[Decision] = []
        failed: set[int] = set()  # found no room: capacity only shrinks here, so it never will
        progress = True
        while progress:
            progress = False
            for i in np.flatnonzero(self.holder < 0).tolist():  # machines idle at the pass start
                if self.holder[i] >= 0 or not self.queues[i]:
                    continue
                j = self.queues[i][0]
                if j in failed:
                    continue
                d, ms = self.assigned[j]
                if any(self.holder[m] >= 0 or self.queues[m][0] != j for m in ms):
                    continue
                pl = cap.place(j, d)
                if pl is None:
                    failed.add(j)
                    continue
                out.append(Start(j, d, pl))
                for m in ms:
                    self.queues[m].pop(0)
                    self.holder[m] = j
                self._alive[self._entry[j]] = False
                progress = True
        return out

    def _omega(self, view: View) -> np.ndarray:
        """When each machine would be done with its current job and its queue."""
        now = view.now
        omega = np.full(len(self.mdev), now)
        held = np.flatnonzero(self.holder >= 0)
        jobs = self.holder[held]
        rate = np.asarray(view.rate)[jobs]
        on = rate > 0
        omega[held[on]] = now + np.asarray(view.remaining)[jobs[on]] / rate[on]
        n = len(self._entry)
        while self._lo < n and not self._alive[self._lo]:
            self._lo += 1
        jsq_omega_nb(omega, self._lo, n, self._alive, self._off, self._mach, self._dur)
        return omega


def BF() -> PolicyScheduler:
    """BF, best fit (sec. 2.2): every job runs on its fastest device type and waits for it.

    Jobs are served first come first served per device type (a job whose device
    type is full does not hold back jobs bound for another one).
    """
    return PolicyScheduler(ArrivalOrder(), FastestOnly(), GreedyAdmission(blocking=False))


def _allox(alpha: float = 0.1, raise_alpha: bool = True, window: int | None = None) -> AlloX:
    return AlloX(alpha=alpha, raise_alpha=raise_alpha, window=window)


def _es(order: str = "sjf") -> EqualShare:
    return EqualShare(order=order)  # type: ignore[arg-type]


BASELINES: dict[str, Callable[..., Any]] = {
    "allox": _allox,
    "allox+": AlloXPlus,
    "es": _es,
    "drff": DRFF,
    "drfs": DRFS,
    "drfa": DRFA,
    "bf": BF,
    "jsq+": JSQPlus,
    "sjf+": SJFPlus,
}
