"""AlloX+, the heuristic version of AlloX (Le et al., EuroSys'20, sec. 4.4, 5.1.1).

:class:`AlloXPlus` orders the waiting jobs (timed-out jobs first, then shortest
processing time across device types) and list-schedules them on the machines
(:func:`list_schedule_nb`, a Numba kernel). Registered as ``allox+`` in
:data:`baselines.allox.schedulers.BASELINES`.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numba import njit

from baselines.allox.machines import MachinePool
from hetgym.decisions import Decision, SchedulerBase, Start
from hetgym.sim.view import CapacityModel, View

__all__ = ["AlloXPlus", "list_schedule_nb", "plus_order_inc_nb", "plus_order_nb", "take_machines_nb"]


def _list_schedule(view: View, jobs: np.ndarray, p: np.ndarray, pool: MachinePool,
                   cap: CapacityModel) -> list[Decision]:
    """Greedy list scheduling: each job in turn takes the machines on which it would
    complete earliest; it starts now if they are idle, else it reserves them.

    ``p[j]``: processing times of job ``j`` (rows indexed by job id, as ``jobs``). The walk
    runs in :func:`list_schedule_nb` up to the next job that would start now; this loop
    places it (if the placement fails, its machines stay as they were and the walk goes on).
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
    tmp = np.empty(free_at.shape[1] + 1, dtype=np.int64)  # a gang never needs more machines
    memo = np.empty((n_dev, free_at.shape[1] + 1))
    memo_v = np.full((n_dev, free_at.shape[1] + 1), -1, dtype=np.int64)
    ver = np.zeros(n_dev, dtype=np.int64)
    out: list[Decision] = []
    k = 0
    while True:
        k, d, start_at = list_schedule_nb(jobs, p, workers, now, idle_left, free_at, counts, present,
                                          k, tmp, memo, memo_v, ver)
        if k < 0:
            return out
        job = int(jobs[k])
        w = int(workers[job])
        pl = cap.place(job, d)
        if pl is not None:
            out.append(Start(job, d, pl))
            idle_left -= w
            take_machines_nb(free_at, counts, d, w, start_at + p[job, d])
            ver[d] += 1
        k += 1


@njit(cache=True)
def wth_free_nb(free_at, counts, d, w, tmp):
    """When the ``w``-th machine of type ``d`` frees: the ``w``-th smallest of the min-heap
    ``free_at[d, :counts[d]]`` (a best-first search from the root; ``tmp``: int64 scratch
    of at least ``w + 1`` heap positions, the search's frontier)."""
    row = free_at[d]
    if w == 1:
        return row[0]
    n = counts[d]
    m = 1
    tmp[0] = 0
    for _ in range(w - 1):  # pop the frontier's least entry, push its children
        b = 0
        for t in range(1, m):
            if row[tmp[t]] < row[tmp[b]]:
                b = t
        i = tmp[b]
        m -= 1
        tmp[b] = tmp[m]
        c = 2 * i + 1
        if c < n:
            tmp[m] = c
            m += 1
        if c + 1 < n:
            tmp[m] = c + 1
            m += 1
    b = 0
    for t in range(1, m):
        if row[tmp[t]] < row[tmp[b]]:
            b = t
    return row[tmp[b]]


@njit(cache=True)
def take_machines_nb(free_at, counts, d, w, until):
    """The ``w`` machines of type ``d`` that free first are taken until ``until`` (at least
    the ``w``-th smallest free time): ``w`` times, the least entry of the min-heap
    ``free_at[d, :counts[d]]`` is replaced by ``until`` and sifted down, ``O(w log n)``.
    Each replacement removes the least entry left of the ``w`` taken ones (``until`` is
    no smaller, and an equal value is the same), so the heap then holds exactly the
    other machines' free times and ``w`` times ``until``."""
    row = free_at[d]
    n = counts[d]
    for _ in range(w):
        i = 0
        while True:  # sift ``until`` down from the root
            c = 2 * i + 1
            if c >= n:
                break
            if c + 1 < n and row[c + 1] < row[c]:
                c += 1
            if row[c] < until:
                row[i] = row[c]
                i = c
            else:
                break
        row[i] = until


@njit(cache=True)
def list_schedule_nb(jobs, p, workers, now, idle_left, free_at, counts, present, k, tmp, memo,
                     memo_v, ver):
    """AlloX+'s list scheduling from the ``k``-th of the ordered ``jobs`` on.

    ``p[j, d]``: processing time of job ``j`` on type ``d`` (inf: cannot run);
    ``free_at[d, :counts[d]]``: the times at which the machines of type ``d`` free, a
    min-heap (types with ``present[d]`` only; a sorted row is one); ``tmp``: int64
    scratch for :func:`wth_free_nb`; ``memo[d, w]``: the ``w``-th free time of type ``d``
    found while row ``d`` was at version ``memo_v[d, w]`` (``ver[d]`` counts the changes
    of row ``d``; a gang's search is done once per row version). Each job takes the ``W`` machines of the
    type where it would complete earliest (first type on ties); a job that would start
    later reserves them (``free_at`` is updated) and the walk goes on. Returns
    ``(i, d, start)`` for the next job that would start now on type ``d`` (nothing taken
    for it yet), or ``(-1, -1, 0)`` once no job is left or no machine is idle.
    """
    n_dev = p.shape[1]
    while k < jobs.shape[0]:
        if idle_left <= 0:
            return -1, -1, 0.0
        idle = False
        for d in range(n_dev):
            if present[d] and free_at[d, 0] <= now:
                idle = True
        if not idle:
            return -1, -1, 0.0  # later jobs could only reserve
        j = jobs[k]
        w = workers[j]
        best = np.inf
        bd = -1
        bs = 0.0
        for d in range(n_dev):
            if not present[d] or not np.isfinite(p[j, d]) or counts[d] < w:
                continue
            if w == 1:
                s = free_at[d, 0]
            elif memo_v[d, w] == ver[d]:
                s = memo[d, w]
            else:
                s = wth_free_nb(free_at, counts, d, w, tmp)
                memo[d, w] = s
                memo_v[d, w] = ver[d]
            done = s + p[j, d]
            if done < best:
                best = done
                bd = d
                bs = s
        if bd >= 0:
            if bs <= now:
                return k, bd, bs
            take_machines_nb(free_at, counts, bd, w, bs + p[j, bd])
            ver[bd] += 1
        k += 1
    return -1, -1, 0.0


@njit(cache=True)
def late_first_nb(q, arrival, now, timeout, out):
    """The jobs of ``q`` waiting longer than ``timeout`` into ``out``, longest waiting
    first, ties in queue order; returns how many."""
    nl = 0
    in_order = True
    last = -np.inf
    for i in range(q.shape[0]):
        j = q[i]
        if now - arrival[j] > timeout:
            out[nl] = j
            nl += 1
            neg = -(now - arrival[j])
            if neg < last:
                in_order = False
            last = neg
    if not in_order:
        ks = np.empty(nl)
        for i in range(nl):
            ks[i] = -(now - arrival[out[i]])
        out[:nl] = out[:nl][np.argsort(ks, kind="mergesort")]
    return nl


@njit(cache=True)
def plus_order_nb(q, arrival, key, now, timeout, out):
    """AlloX+'s order of the waiting jobs ``q`` into ``out``: jobs waiting longer than
    ``timeout`` first, longest waiting first, then the others by ``key`` (least
    processing time), ties in queue order (``np.lexsort((key, ~late))`` of the plain
    rule)."""
    n = q.shape[0]
    nl = late_first_nb(q, arrival, now, timeout, out)
    rest = np.empty(n - nl, dtype=np.int64)
    m = 0
    for i in range(n):
        j = q[i]
        if not (now - arrival[j] > timeout):
            rest[m] = j
            m += 1
    ks = np.empty(m)
    for i in range(m):
        ks[i] = key[rest[i]]
    out[nl:n] = rest[np.argsort(ks, kind="mergesort")]
    return n


@njit(cache=True)
def plus_order_inc_nb(q, arrival, key, now, timeout, out, srt, insrt, inq, state):
    """:func:`plus_order_nb` with the jobs that have not timed out kept sorted between
    calls: ``srt[:state[0]]`` (``insrt[j]``: job ``j`` is in it) is the last call's order
    of those jobs; this call drops the ones that started or timed out, sorts the new ones
    and merges them in, ``O(len(q))`` instead of a sort of the queue. The same order as
    :func:`plus_order_nb` (ties in queue order are ties by job index while the queue is
    in increasing job index, which is checked; otherwise that function orders the queue
    and the kept order is dropped). ``inq``: int64 scratch per job, ``state[1]`` its stamp."""
    n = q.shape[0]
    increasing = True
    for i in range(1, n):
        if q[i] <= q[i - 1]:
            increasing = False
            break
    ns = state[0]
    if not increasing:
        for i in range(ns):
            insrt[srt[i]] = False
        state[0] = 0
        return plus_order_nb(q, arrival, key, now, timeout, out)
    state[1] += 1
    stamp = state[1]
    nl = late_first_nb(q, arrival, now, timeout, out)
    n_new = 0
    new = np.empty(n, dtype=np.int64)
    for i in range(n):
        j = q[i]
        inq[j] = stamp
        if not (now - arrival[j] > timeout) and not insrt[j]:
            new[n_new] = j
            n_new += 1
    m = 0  # keep the jobs still waiting and not timed out, in their order
    for i in range(ns):
        j = srt[i]
        if inq[j] == stamp and not (now - arrival[j] > timeout):
            srt[m] = j
            m += 1
        else:
            insrt[j] = False
    if n_new > 1:  # by key, ties by index (they are in index order)
        ks = np.empty(n_new)
        for i in range(n_new):
            ks[i] = key[new[i]]
        new[:n_new] = new[:n_new][np.argsort(ks, kind="mergesort")]
    a = 0
    b = 0
    o = nl
    while a < m or b < n_new:
        if b >= n_new:
            out[o] = srt[a]
            a += 1
        elif a >= m:
            out[o] = new[b]
            b += 1
        else:
            x = srt[a]
            y = new[b]
            if key[x] < key[y] or (key[x] == key[y] and x < y):
                out[o] = x
                a += 1
            else:
                out[o] = y
                b += 1
        o += 1
    for i in range(n_new):
        insrt[new[i]] = True
    srt[: o - nl] = out[nl:o]
    state[0] = o - nl
    return o


def _view_key(view: View) -> tuple[int, int, int]:
    """What identifies the jobs a view shows: the view, its job count, its arrival buffer."""
    arr = np.asarray(view.arrival)
    return id(view), int(view.n_jobs), int(arr.__array_interface__["data"][0])


@dataclass
class AlloXPlus(SchedulerBase):
    """AlloX+, the heuristic version of AlloX (sec. 4.4, 5.1.1).

    "AlloX picks the shortest jobs across CPU and GPU first. Additionally, if a job is
    waiting beyond a timeout, it will be prioritized", at cost O(m n log n). Our
    reading: jobs waiting longer than ``timeout`` come first (oldest first), then the
    rest by their shortest processing time across device types; walking that list,
    each job takes the machine(s) on which it would complete earliest (the
    machine's free time ``omega`` plus its processing time there). It starts now if
    those machines are idle; otherwise it reserves them (their ``omega`` moves on)
    and waits, so a job may wait for a GPU rather than take a slow CPU. Only the jobs'
    processing times are kept between decision points (computed once at ``reset``). The
    paper gives no timeout value.

    Cost per decision point: a few passes over the queue (:func:`plus_order_inc_nb`: the
    jobs that have not timed out stay sorted between decision points, new ones are
    merged in) and a walk over the ordered queue that ends once no machine is idle or
    no job is left (under overload, every job); machines' free times are one min-heap
    per device type (sorted once per decision point), so a reservation of ``W`` machines
    costs ``O(W log m)`` and a gang's ``W``-th free time ``O(W^2)``.

    Attributes:
        timeout: Waiting time (s) after which a job is prioritised.
        walk: Walk at most this many jobs of the ordered list per decision point (the
            others wait for the next one); ``None`` = the whole list (the paper's rule).
            Not the paper's: it bounds the walk's cost per decision point, and changes
            the schedule whenever a job past position ``walk`` would have started now
            (measured by ``scripts/bench_scale.py``).
    """

    timeout: float = 3600.0
    round_length: float | None = None
    walk: int | None = None

    def __post_init__(self) -> None:
        if self.walk is not None and (isinstance(self.walk, bool) or int(self.walk) != self.walk
                                      or self.walk < 1):
            raise ValueError(f"AlloX+: walk must be a positive integer or None, got {self.walk!r}")

    def reset(self, view: View) -> None:
        """Precompute every job's processing times (they do not change: AlloX+ never
        preempts, and ``View.durations`` is of all the work)."""
        self._p = np.ascontiguousarray(view.durations(np.arange(view.n_jobs)), dtype=np.float64)
        self._key = self._p.min(axis=1) if view.n_jobs else np.zeros(0)
        self._arrival = np.ascontiguousarray(view.arrival, dtype=np.float64)
        self._order = np.empty(view.n_jobs, dtype=np.int64)
        self._srt = np.empty(view.n_jobs, dtype=np.int64)
        self._insrt = np.zeros(view.n_jobs, dtype=np.bool_)
        self._inq = np.zeros(view.n_jobs, dtype=np.int64)
        self._state = np.zeros(2, dtype=np.int64)
        self._for = _view_key(view)

    def decide(self, view: View) -> list[Decision]:
        """List-schedule the waiting jobs on the machines."""
        got = MachinePool.at_decision(view)
        if got is None:
            return []
        q, cap, pool = got
        if getattr(self, "_for", None) != _view_key(view):
            self.reset(view)  # not reset for this view (e.g. a teacher moved to a new episode)
        n = plus_order_inc_nb(np.ascontiguousarray(q, dtype=np.int64), self._arrival, self._key,
                              float(view.now), float(self.timeout), self._order, self._srt,
                              self._insrt, self._inq, self._state)
        if self.walk is not None:
            n = min(n, int(self.walk))
        return _list_schedule(view, self._order[:n], self._p, pool, cap)
