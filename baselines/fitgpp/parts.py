"""The placement, admission and ordering parts of the FitGpp schedulers (Yabuuchi et al.,
PFN 2019; sec. 2-3.2), used by :mod:`baselines.fitgpp.schedulers`.

* :class:`PackPlacement` (semantics 5 of :mod:`baselines.fitgpp.schedulers`): the simulator's
  placement kernel on a scratch capacity, a job's whole gang on one node
  (``single_node``, the paper's single-task jobs) unless no node could ever hold it.
* :class:`PlacedAdmission`: greedy admission (strict FIFO with ``blocking``) through a
  :class:`PackPlacement`.
* :class:`ClassPriority` (semantics 1): TE jobs ahead of BE jobs, each class in queue order.
"""

from __future__ import annotations

import weakref
from dataclasses import dataclass, field
from typing import Iterable, Iterator

import numpy as np

from baselines.common.parts import Admission, DeviceChoice, GreedyAdmission, Ordering
from hetgym.decisions import Placement, Start
from hetgym.sim.codes import JobClass, JobStatus, PlacementPolicy
from hetgym.sim.rules import slots
from hetgym.sim.view import CapacityModel, View

__all__ = ["ClassPriority", "PackPlacement", "PlacedAdmission"]

_QUEUED = int(JobStatus.QUEUED)


# --------------------------------------------------------------------- placement
@dataclass(frozen=True)
class PackPlacement:
    """Placement part: the simulator's placement kernel on a scratch capacity.

    Attributes:
        single_node: Accept only placements that put the whole gang on one node
            (FitGpp's single-task jobs). A ``spread`` scenario policy is then
            replaced by ``pack`` on the scratch copies (see :meth:`policy`).
            A gang that no single node of the type could ever hold is placed
            over several nodes instead (else it would wait forever).
    """

    single_node: bool = True

    def policy(self, view: View) -> int | None:
        """Placement policy for the scratch copies (``None``: the scenario's)."""
        if self.single_node and view.options.placement == "spread":
            return int(PlacementPolicy.PACK)
        return None

    def node_fits(self, view: View, cap: CapacityModel, job: int, dev: int) -> np.ndarray:
        """bool[N]: whether node n of device ``dev`` holds the whole gang of ``job`` in ``cap``."""
        w = int(view.workers[job])
        ok = view.node_device == dev
        if not view.dev_is_cpu[dev]:
            ok &= cap.free_gpus >= w
        c = float(view.cpus_need[job, dev])
        if c > 0:  # the simulator's rounding (rules.slots)
            ok &= slots(cap.free_cpus, c) >= w
        m = float(view.mem[job])
        if m > 0:
            ok &= slots(cap.free_mem, m) >= w
        return ok

    def one_node(self, view: View, job: int, dev: int) -> bool:
        """Whether ``job`` must sit on one node of ``dev``: ``single_node`` and some node
        of that type, all free, could hold its whole gang."""
        return self.single_node and bool(_one_node_table(view)[job, dev])

    def fits(self, view: View, cap: CapacityModel, job: int, dev: int) -> bool:
        """Whether ``job`` fits on ``dev`` in ``cap`` (on one node if :meth:`one_node`)."""
        if view.tput[job, dev] <= 0:
            return False
        if not self.one_node(view, job, dev):
            return cap.fits(job, dev)
        return bool(self.node_fits(view, cap, job, dev).any())

    def place(self, view: View, cap: CapacityModel, job: int, dev: int) -> Placement | None:
        """Place ``job`` on ``dev`` in ``cap`` (taking it there), or None."""
        if self.one_node(view, job, dev) and not self.fits(view, cap, job, dev):
            return None
        return cap.place(job, dev)


def _one_node_table(view: View) -> np.ndarray:
    """bool[J, C]: some node of type ``c``, all free, holds job ``j``'s whole gang
    (same rounding as the placement kernel); computed once per view."""
    out = _ONE_NODE.get(view)
    if out is None:
        w = np.asarray(view.workers, dtype=np.float64)[:, None]
        nd = np.asarray(view.node_device)
        out = np.zeros((view.n_jobs, len(view.devices)), dtype=bool)
        for d in range(len(view.devices)):
            on = nd == d
            if not on.any():
                continue
            ok = np.ones((view.n_jobs, int(on.sum())), dtype=bool)
            if not view.dev_is_cpu[d]:
                ok &= np.asarray(view.node_gpus)[on][None, :] >= w
            c = np.asarray(view.cpus_need)[:, d][:, None]
            m = np.asarray(view.mem)[:, None]
            with np.errstate(divide="ignore", invalid="ignore"):
                ok &= (c <= 0) | (slots(np.asarray(view.node_cpus)[on][None, :],
                                        np.where(c > 0, c, 1.0)) >= w)
                ok &= (m <= 0) | (slots(np.asarray(view.node_mem)[on][None, :],
                                        np.where(m > 0, m, 1.0)) >= w)
            out[:, d] = ok.any(axis=1)
        _ONE_NODE[view] = out
    return out


_ONE_NODE: "weakref.WeakKeyDictionary[object, np.ndarray]" = weakref.WeakKeyDictionary()


@dataclass(frozen=True)
class PlacedAdmission(Admission):
    """Greedy admission (as :class:`~baselines.common.parts.GreedyAdmission`) through a placement part.

    Attributes:
        placement: Where a job may go (``single_node`` for FitGpp's jobs).
        blocking: Strict FIFO: stop at the first job that does not fit.
    """

    placement: PackPlacement = field(default_factory=PackPlacement)
    blocking: bool = True

    def admit(self, view: View, jobs: Iterable[int], devices: DeviceChoice,
              cap: CapacityModel | None = None) -> list[Start]:
        """Starts for the ordered ``jobs`` on ``cap`` (default: a fresh scratch copy).

        ``jobs`` may be any iterable; with blocking it is read only up to the
        first job that does not fit.
        """
        if not self.placement.single_node:
            arr = np.fromiter(jobs, dtype=np.int64)
            return GreedyAdmission(self.blocking).admit(view, arr, devices, cap)
        cap = cap if cap is not None else view.capacity(self.placement.policy(view))
        out: list[Start] = []
        for j in jobs:
            for d in devices.candidates(view, j):
                pl = self.placement.place(view, cap, j, d)
                if pl is not None:
                    out.append(Start(j, d, pl))
                    break
            else:
                if self.blocking:
                    break
        return out


# ---------------------------------------------------------------------- ordering
@dataclass
class ClassPriority(Ordering):
    """Ordering part: TE jobs first, then BE jobs, each class in queue order
    (preempted jobs at the head of the queue, then arrival order).

    :meth:`order` sorts a whole array; a scheduler that runs at every event
    uses :meth:`te_waiting` (kept up to date from the arrivals, so it costs
    nothing per queued BE job) and :meth:`be_in_order` (lazy) instead: the
    queue of an overloaded cluster holds tens of thousands of jobs.
    """

    _next: int = field(default=0, repr=False)
    _te: list[int] = field(default_factory=list, repr=False)

    def reset(self) -> None:
        """Forget the jobs seen in a previous run."""
        self._next = 0
        self._te = []

    def order(self, view: View, jobs: np.ndarray) -> np.ndarray:
        """``jobs`` with the TE class ahead (stable)."""
        if len(jobs) <= 1:
            return jobs
        te = np.asarray(view.job_class)[jobs] == int(JobClass.TE)
        return np.concatenate([jobs[te], jobs[~te]])

    def te_waiting(self, view: View) -> list[int]:
        """Queued TE jobs in arrival order (TE jobs are never preempted here)."""
        arr, cls, n, now = view.arrival, view.job_class, view.n_jobs, view.now
        k = self._next
        while k < n and arr[k] <= now:
            if cls[k] == int(JobClass.TE):
                self._te.append(k)
            k += 1
        self._next = k
        if self._te:
            st = view.status
            self._te = [t for t in self._te if st[t] == _QUEUED]
        return list(self._te)

    def be_in_order(self, view: View) -> Iterator[int]:
        """Queued BE jobs in queue order, lazily."""
        q, cls = view.queue, view.job_class
        for i in range(len(q)):
            j = int(q[i])
            if cls[j] != int(JobClass.TE):
                yield j
