"""AlloX+, the heuristic version of AlloX (Le et al., EuroSys'20, sec. 4.4, 5.1.1).

:class:`AlloXPlus` orders the waiting jobs (timed-out jobs first, then shortest
processing time across device types) and list-schedules them on the machines
(:func:`list_schedule_nb`, a Numba kernel). Registered as ``allox+`` in
:data:`baselines.allox.BASELINES`.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numba import njit

from baselines.allox_machines import MachinePool
from hetgym.decisions import Decision, Start
from hetgym.sim.view import CapacityModel, View

__all__ = ["AlloXPlus", "list_schedule_nb", "take_machines_nb"]


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
