"""The straightforward schedulers of the AlloX paper (sec. 2.2): SJF+, JSQ+ and BF.

The paper shows they do poorly on interchangeable resources (Figs. 4, 5); they are
registered as ``sjf+``, ``jsq+`` and ``bf`` in :data:`baselines.allox.schedulers.BASELINES`. As in
:mod:`baselines.allox.schedulers`, a gang job of ``W`` workers counts as one job that starts only
when ``W`` machines of the chosen type are free at once.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from baselines.allox.machines import admit_pairs, may_fit, slots_per_device
from baselines.classic.schedulers import PolicyScheduler
from baselines.common.kernels import jsq_omega_nb
from baselines.common.parts import ArrivalOrder, FastestFirst, FastestOnly, GreedyAdmission
from hetgym.decisions import Decision, SchedulerBase, Start
from hetgym.sim.codes import JobStatus
from hetgym.sim.view import View

__all__ = ["BF", "JSQPlus", "SJFPlus"]

_FUTURE, _QUEUED = int(JobStatus.FUTURE), int(JobStatus.QUEUED)
_RUNNING, _GRACE = int(JobStatus.RUNNING), int(JobStatus.GRACE)


@dataclass
class SJFPlus(SchedulerBase):
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
class JSQPlus(SchedulerBase):
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
        self.holder[held & (status[np.maximum(self.holder, 0)] != _RUNNING)
                    & (status[np.maximum(self.holder, 0)] != _GRACE)] = -1
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
