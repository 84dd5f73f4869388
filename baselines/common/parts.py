"""Typed parts that baselines are composed of.

* **Ordering**: which waiting jobs come first.
* **DeviceChoice**: which device types a job may take, in order of preference.
* **Admission**: :class:`GreedyAdmission` walks the ordered jobs and places each
  on the first device type with room, on a scratch copy of free capacity
  (blocking at the first job that does not fit, or backfilling past it).
* **Preemption**: :class:`PreemptToFit` (in :mod:`baselines.classic.schedulers`) and the
  paper-specific rules in their own modules.

Placement itself is the simulator's (its policy kernel); a part never asks
which scheduler it serves.

**Capabilities.** A scheduler's fast path (a compiled form of the parts' rule) applies
when its parts say it may, through a method of their protocol, never by their exact
type: :meth:`Ordering.sort_key`, :meth:`DeviceChoice.table`,
:meth:`DeviceChoice.type_set` and :meth:`Admission.greedy`. Each returns what the fast
path needs, or None (the default of the protocol) where the part's rule has no such
form. The stock parts derive from their protocol and declare theirs; a part derived
from a stock one keeps its capability (and the fast path, which then stands for the
inherited rule), unless it overrides the method to return None.
"""

from __future__ import annotations

import bisect
import heapq
import sys
import weakref
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

import numpy as np

from hetgym.decisions import Start

if TYPE_CHECKING:  # pragma: no cover
    from hetgym.sim.view import CapacityModel, View

__all__ = [
    "Admission",
    "ArrivalOrder",
    "DeviceChoice",
    "FastestFirst",
    "FastestOnly",
    "GreedyAdmission",
    "Ordering",
    "ShortestFirst",
    "WaitingGroups",
    "is_view",
    "preference",
    "shape_groups",
]


def is_view(obj: object) -> bool:
    """``isinstance(obj, hetgym.sim.view.View)`` without importing the simulator: a view
    exists only once its module is imported, so ``import baselines`` need not load Numba
    and the kernels (they load with the first run)."""
    mod = sys.modules.get("hetgym.sim.view")
    return mod is not None and isinstance(obj, mod.View)


class Ordering(Protocol):
    """Orders candidate jobs (indices) for admission."""

    def order(self, view: View, jobs: np.ndarray) -> np.ndarray:
        """Return ``jobs`` in admission order."""

    def sort_key(self, view: View) -> np.ndarray | None:
        """Capability: float64[J], a key fixed for the run such that :meth:`order` of
        waiting jobs that never ran is their stable sort by it (ties in arrival order);
        None (the default) when the order has no such key."""
        return None


@dataclass(frozen=True)
class ArrivalOrder(Ordering):
    """Queue order: arrival order, preempted jobs at the head (FIFO)."""

    def order(self, view: View, jobs: np.ndarray) -> np.ndarray:
        return jobs

    def sort_key(self, view: View) -> np.ndarray | None:
        """All zeros: arrival order is the ties' order."""
        return np.zeros(view.n_jobs)


@dataclass(frozen=True)
class ShortestFirst(Ordering):
    """Shortest estimated duration first, on the job's fastest device type.

    Attributes:
        remaining: Rank by remaining work instead of total work (SRPT).
    """

    remaining: bool = False

    def order(self, view: View, jobs: np.ndarray) -> np.ndarray:
        if len(jobs) <= 1:
            return jobs
        best = view.durations(jobs, remaining=self.remaining).min(axis=1)
        return jobs[np.argsort(best, kind="stable")]

    def sort_key(self, view: View) -> np.ndarray | None:
        """Each job's duration on its fastest type; None with ``remaining`` (the remaining
        work changes during the run)."""
        if self.remaining:
            return None
        return view.durations(np.arange(view.n_jobs)).min(axis=1)


class DeviceChoice(Protocol):
    """Device types a job may be started on, most preferred first."""

    def candidates(self, view: View, job: int) -> list[int]:
        """Device indices in order of preference."""

    def table(self, view: View) -> np.ndarray | None:
        """Capability: int64 ``(J, k)``, row ``j`` is :meth:`candidates` of job ``j`` in
        order (-1 padded), fixed for the run (for :meth:`View.admit
        <hetgym.sim.view.View.admit>` and compiled admission); None (the default) when the
        candidates have no such table."""
        return None

    def type_set(self, view: View) -> np.ndarray | None:
        """Capability: int64 ``(J, k)``, row ``j`` holds the device types of
        :meth:`candidates` of job ``j`` in some order (-1 padded), for a fast path that
        only asks whether a job fits on one of them; default: :meth:`table`."""
        return self.table(view)


def preference(view: View) -> np.ndarray:
    """``(J, C)`` device indices per job, fastest first, -1 padded: ``view.pref``.

    A type is listed where the job has throughput and the nodes of that type could
    hold its gang (``view.holdable``, the simulator's one rule). A duck-typed view
    without ``pref`` (the test suite's reference simulator) gets the same table
    derived from its ``durations`` (inf exactly where the job cannot run), computed
    once per view.
    """
    pref = getattr(view, "pref", None)
    if pref is not None:
        return pref
    cached = _PREF.get(view)
    if cached is None:
        dur = np.asarray(view.durations(np.arange(view.n_jobs)))
        t = np.where(np.isfinite(dur), np.asarray(view.tput), 0.0)
        order = np.argsort(-t, axis=1, kind="stable")
        ok = np.take_along_axis(t, order, axis=1) > 0
        cached = np.where(ok, order, -1).astype(np.int64)
        _PREF[view] = cached
    return cached


_PREF: weakref.WeakKeyDictionary[object, np.ndarray] = weakref.WeakKeyDictionary()


@dataclass(frozen=True)
class FastestFirst(DeviceChoice):
    """Every device type that could hold the job, fastest (highest rate) first
    (a row of :func:`preference`)."""

    def candidates(self, view: View, job: int) -> list[int]:
        return [int(d) for d in preference(view)[job] if d >= 0]

    def table(self, view: View) -> np.ndarray:
        """``(J, k)`` candidates of every job, -1 padded (for :meth:`View.admit`)."""
        return preference(view)


@dataclass(frozen=True)
class FastestOnly(DeviceChoice):
    """Only the job's fastest device type that can ever hold its gang (it waits for it)."""

    def candidates(self, view: View, job: int) -> list[int]:
        d = int(preference(view)[job, 0])
        return [d] if d >= 0 else []

    def table(self, view: View) -> np.ndarray:
        """``(J, 1)`` candidate of every job, -1 where none (for :meth:`View.admit`)."""
        cached = _FIRST.get(view)
        if cached is None:
            cached = _FIRST[view] = np.ascontiguousarray(preference(view)[:, :1])
        return cached


_FIRST: weakref.WeakKeyDictionary[object, np.ndarray] = weakref.WeakKeyDictionary()


class Admission(Protocol):
    """Admits ordered jobs: the starts (with placements) on a scratch capacity."""

    blocking: bool

    def admit(self, view: View, jobs: np.ndarray, devices: DeviceChoice,
              cap: CapacityModel | None = None) -> list[Start]:
        """Starts for the ordered ``jobs`` on ``cap`` (default: a fresh scratch copy)."""

    def greedy(self) -> bool | None:
        """Capability: when :meth:`admit` is the greedy walk of :class:`GreedyAdmission`
        (each job on its first candidate with room, in order), whether it blocks; None
        (the default) otherwise."""
        return None


@dataclass(frozen=True)
class GreedyAdmission(Admission):
    """Start ordered jobs while they fit.

    Attributes:
        blocking: Stop at the first job that fits nowhere (strict FIFO
            head-of-line blocking); otherwise skip it and try the next (backfill).
    """

    blocking: bool = True

    def admit(self, view: View, jobs: np.ndarray, devices: DeviceChoice,
              cap: CapacityModel | None = None) -> list[Start]:
        """Starts for the ordered ``jobs`` on ``cap`` (default: a fresh scratch copy)."""
        table = devices.table(view) if is_view(view) else None
        if table is not None:
            # candidates with a table run in one Numba kernel (same rule as the loop below)
            return view.admit(jobs, self.blocking, pref=table, cap=cap)
        cap = cap if cap is not None else view.capacity()
        out: list[Start] = []
        for j in jobs.tolist():
            placed = False
            for d in devices.candidates(view, j):
                pl = cap.place(j, d)
                if pl is not None:
                    out.append(Start(j, d, pl))
                    placed = True
                    break
            if not placed and self.blocking:
                break
        return out

    def greedy(self) -> bool | None:
        """This is the greedy walk: its ``blocking``."""
        return self.blocking


def _cpus_per_candidate(view: View, tab: np.ndarray) -> np.ndarray:
    """float64[J, k]: cores per worker of each job on each candidate of ``tab`` (0 past -1)."""
    return np.where(tab >= 0, np.take_along_axis(np.asarray(view.cpus_need), np.maximum(tab, 0),
                                                 axis=1), 0.0)


def shape_groups(view: View, table: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(gid, first)``: int64[J], each job's *shape* group (gang size, memory per worker,
    candidate device types of its ``table`` row in order, cores per worker on each;
    :class:`WaitingGroups`), and for each group its first job."""
    tab = np.asarray(table, dtype=np.int64)
    rows = np.column_stack([np.asarray(view.workers, dtype=np.float64),
                            np.asarray(view.mem, dtype=np.float64), tab.astype(np.float64),
                            _cpus_per_candidate(view, tab)])
    _, first, gid = np.unique(rows, axis=0, return_index=True, return_inverse=True)
    return gid.reshape(-1).astype(np.int64), np.asarray(first, dtype=np.int64)


class WaitingGroups:
    """The waiting jobs, grouped by *shape*, each group sorted by ``(key, tie)``.

    A job's shape is everything that decides whether it fits on a given free
    capacity: its gang size, memory per worker, candidate device types in order
    (a row of ``table``) and its cores per worker on each. Jobs of one shape fit,
    or do not, alike; and while a decision point plans its starts, capacity only
    shrinks. So a greedy walk over the waiting jobs in ``(key, tie)`` order that
    skips (or, blocking, stops at) jobs that do not fit never needs to look past
    the first ``L`` jobs of a group, ``L`` being an upper bound on how many jobs of
    that shape the free capacity can take (:meth:`bounds`): the walk costs what it
    starts plus one job per group, not the length of the queue.

    The groups are kept up to date by the scheduler that owns them (:meth:`add`,
    :meth:`remove`); ``len`` lets it check them against ``view.queue``.

    Args:
        view: The simulator's view (static job and node arrays are read once).
        table: ``(J, k)`` candidate device types of every job, -1 padded.
    """

    def __init__(self, view: View, table: np.ndarray) -> None:
        tab = np.asarray(table, dtype=np.int64)
        cpus = _cpus_per_candidate(view, tab)
        self.gid, first = shape_groups(view, tab)
        self.w = np.asarray(view.workers, dtype=np.int64)[first]
        self.m = np.asarray(view.mem, dtype=np.float64)[first]
        self.dev = tab[first]
        self.cpus = cpus[first]
        self.lists: list[list[tuple[float, int, int]]] = [[] for _ in range(len(first))]
        self.count = np.zeros(len(first), dtype=np.int64)
        self.entry: dict[int, tuple[float, int, int]] = {}
        self._workers = np.asarray(view.workers, dtype=np.int64)
        self._cpus_need = np.asarray(view.cpus_need, dtype=np.float64)
        self._mem = np.asarray(view.mem, dtype=np.float64)
        nd = np.asarray(view.node_device, dtype=np.int64)
        self._n_dev = len(view.devices)
        self._is_cpu = np.asarray(view.dev_is_cpu, dtype=bool)
        self._on = np.stack([nd == d for d in range(self._n_dev)]) if len(nd) else \
            np.zeros((self._n_dev, 0), dtype=bool)
        # per group and candidate, what bound_rows needs; counts are rounded with a
        # tolerance above the placement kernel's (1e-6 per node of the type, and 1e-6 on
        # "one worker's cores / memory fit on the best node")
        self._d = np.maximum(self.dev, 0)
        self._valid = self.dev >= 0
        self._has_c = self.cpus > 0
        self._has_m = np.broadcast_to((self.m > 0)[:, None], self.cpus.shape)
        self._inv_c = 1.0 / np.where(self._has_c, self.cpus, 1.0)
        self._inv_m = 1.0 / np.where(self._has_m, self.m[:, None], 1.0)
        self._wf = self.w.astype(np.float64)[:, None]
        self._cpu_col = self._is_cpu[self._d]
        self._tol = 1e-6 * (1.0 + self._on.sum(axis=1)[self._d])
        c = np.ascontiguousarray
        self._bound_args = (c(self._d), c(self._valid), c(self._has_c), c(self._has_m),
                            c(self._inv_c), c(self._inv_m), c(self._wf[:, 0]),
                            c(self._cpu_col), c(self._tol), c(nd), self._n_dev)
        self._bound_entry = None

    def __len__(self) -> int:
        return len(self.entry)

    def add(self, job: int, key: float, tie: int) -> None:
        """A job starts waiting; it sorts by ``(key, tie)`` within its group."""
        e = (float(key), int(tie), int(job))
        g = int(self.gid[job])
        lst = self.lists[g]
        i = bisect.bisect_right(lst, e)
        lst.insert(i, e)
        self.count[g] += 1
        self.entry[int(job)] = e

    def remove(self, job: int) -> None:
        """A job stops waiting (started)."""
        e = self.entry.pop(int(job))
        g = int(self.gid[job])
        lst = self.lists[g]
        i = bisect.bisect_left(lst, e)
        del lst[i]
        self.count[g] -= 1

    def bounds(self, free_gpus: np.ndarray, free_cpus: np.ndarray, free_mem: np.ndarray
               ) -> np.ndarray:
        """float64[G], an upper bound on how many jobs of each group fit on this free
        capacity (0: none does; ``inf``: no bound). Only non-empty groups are bounded;
        empty ones get 0.

        From per-type summaries (free GPUs, cores and memory in total, most cores and
        memory on one node) with a tolerance above the simulator's rounding, so it
        never says 0 where the placement kernel would find room.
        """
        out = np.zeros(len(self.count))
        live = np.flatnonzero(self.count > 0)
        if len(live) == 0 or self._on.shape[1] == 0:
            return out
        out[live] = self.bound_rows(live, free_gpus, free_cpus, free_mem)
        return out

    def bound_rows(self, groups: np.ndarray, free_gpus: np.ndarray, free_cpus: np.ndarray,
                   free_mem: np.ndarray, best_node: bool = True) -> np.ndarray:
        """Upper bound on the jobs of each of ``groups`` that fit on this free capacity
        (:func:`baselines.common.kernels.group_bounds_nb`): from the per-type totals and, with
        ``best_node``, the most cores and memory free on one node of each type (a bound
        from the totals alone is looser, still never below what fits)."""
        out = np.empty(len(groups))
        args = (np.ascontiguousarray(groups, dtype=np.int64), *self._bound_args,
                np.ascontiguousarray(free_gpus, dtype=np.int64),
                np.ascontiguousarray(free_cpus, dtype=np.float64),
                np.ascontiguousarray(free_mem, dtype=np.float64), bool(best_node), out)
        if self._bound_entry is None:
            from baselines.common.kernels import group_bounds_nb
            from hetgym.sim.fastpath import entry

            self._bound_entry = entry(group_bounds_nb, *args)
        self._bound_entry(*args)
        return out

    def candidates(self, bound: np.ndarray, blocking: bool) -> np.ndarray:
        """The waiting jobs a greedy walk in ``(key, tie)`` order could start, in that order.

        Non-blocking: the first ``bound[g]`` jobs of every group. Blocking: the walk's
        prefix up to and including the first job that surely does not fit (its group
        has had ``bound[g]`` jobs before it).
        """
        if not blocking:
            picked: list[tuple[float, int, int]] = []
            for g in np.flatnonzero(bound >= 1).tolist():
                lst = self.lists[g]
                b = bound[g]
                picked.extend(lst if b >= len(lst) else lst[: int(b)])
            picked.sort()
            return np.fromiter((e[2] for e in picked), dtype=np.int64, count=len(picked))
        out: list[int] = []
        used = np.zeros(len(self.count), dtype=np.int64)
        for e in heapq.merge(*[lst for lst in self.lists if lst]):
            j = e[2]
            out.append(j)
            g = self.gid[j]
            if used[g] >= bound[g]:
                break
            used[g] += 1
        return np.asarray(out, dtype=np.int64)

