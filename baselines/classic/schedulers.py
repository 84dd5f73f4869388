"""Classic schedulers: FIFO, SJF and preemptive SRPT, composed of parts.

These are the reference points every paper compares against; device choice is
heterogeneity-aware in the simplest way (a job takes its fastest device type
that has room, see :class:`~baselines.common.parts.FastestFirst`).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING

import numpy as np

from baselines.common.parts import (
    Admission,
    ArrivalOrder,
    DeviceChoice,
    FastestFirst,
    FastestOnly,
    GreedyAdmission,
    Ordering,
    ShortestFirst,
    WaitingGroups,
    is_view,
)
from hetgym.decisions import Cadence, Decision, Placement, Preempt, SchedulerBase, Start
from hetgym.sim.codes import JobStatus
from hetgym.sim.rules import below_limit, covers, limit_code

if TYPE_CHECKING:  # pragma: no cover
    from baselines.classic.srpt_migrate import MigratingSRPT
    from baselines.classic.srpt_plan import SRPTPlan
    from hetgym.sim.view import View

__all__ = ["FIFO", "SJF", "SRPT", "PolicyScheduler"]

_SHORT = 32  # queues up to this long are ordered whole (PolicyScheduler fast path)
_FUTURE, _QUEUED, _GRACE = int(JobStatus.FUTURE), int(JobStatus.QUEUED), int(JobStatus.GRACE)


@dataclass
class PolicyScheduler(SchedulerBase):
    """Non-preemptive scheduler = ordering + device choice + admission.

    At each decision point the waiting jobs are ordered, then admitted greedily
    on a scratch copy of free capacity; the placements found there are the ones
    proposed to the simulator.

    With parts that declare the capabilities (:mod:`baselines.common.parts`: an ordering
    with a ``sort_key``, such as arrival order or shortest total work first; device
    choice with a ``table``, such as fastest type with room or fastest only; an
    admission that is ``greedy``) on the simulator's
    :class:`~hetgym.sim.view.View`, the waiting jobs are kept sorted between
    decision points in :class:`~baselines.common.parts.WaitingGroups` and only the jobs
    that could start are handed to admission, so a decision point costs what it
    starts, not the length of the queue. Same starts as ordering the whole queue
    (ties in queue order, which is arrival order as nothing preempts here).
    """

    ordering: Ordering = field(default_factory=ArrivalOrder)
    devices: DeviceChoice = field(default_factory=FastestFirst)
    admission: Admission = field(default_factory=GreedyAdmission)
    round_length: float | None = None

    def reset(self, view: View) -> None:
        """Sort keys and shape groups for the fast path (when it applies)."""
        self._groups: WaitingGroups | None = None
        blocking = self.admission.greedy()
        if not is_view(view) or blocking is None:
            return
        if blocking and isinstance(self.ordering, ArrivalOrder):
            return  # strict FIFO: admission stops at the first job that does not fit anyway
        table = self.devices.table(view)
        key = None if table is None else self.ordering.sort_key(view)
        if key is None:
            return
        self._key = key
        self._table = table
        self._groups = WaitingGroups(view, self._table)
        self._next = 0
        self._proposed: list[int] = []
        self._full: tuple[np.ndarray, ...] | None = None  # see _nothing_new_fits

    def decide(self, view: View) -> list[Decision]:
        """Start what the admission rule admits."""
        groups = getattr(self, "_groups", None)
        n_q = len(view.queue) if groups is None else view.n_queue
        if n_q == 0:
            return []
        if groups is None or not self._sync(view, groups):
            self._groups = None  # someone else decides too: rank the whole queue from now on
            q = view.queue
            return list(self.admission.admit(view, self.ordering.order(view, q), self.devices))
        blocking = self.admission.blocking
        if not blocking and self._nothing_new_fits(view, groups):
            return []
        cap = view.capacity()
        if n_q <= _SHORT:  # ordering a short queue costs less than bounding the groups
            q = view.queue
            starts = self.admission.admit(view, self.ordering.order(view, q), self.devices, cap)
        else:
            bound = groups.bounds(cap.free_gpus, cap.free_cpus, cap.free_mem)
            starts = [] if not (bound >= 1).any() else view.admit(
                groups.candidates(bound, blocking), blocking, pref=self._table, cap=cap)
        for s in starts:
            groups.remove(s.job)
        self._proposed = [s.job for s in starts]
        # Without blocking every waiting job was tried (or bounded out): none fits on what
        # these starts leave free. Remember that capacity and the shapes still waiting.
        self._full = (cap.free_gpus, cap.free_cpus, cap.free_mem, groups.count > 0)
        return list(starts)

    def _nothing_new_fits(self, view: View, groups: WaitingGroups) -> bool:
        """Whether free capacity is what the last decision point left and only jobs of
        shapes that did not fit then are waiting (so nothing can start)."""
        full = self._full
        if full is None or not ((full[0] == view.free_gpus).all()  # same shapes: array_equal
                                and (full[1] == view.free_cpus).all()
                                and (full[2] == view.free_mem).all()):
            return False
        new = np.flatnonzero((groups.count > 0) & ~full[3])
        if len(new) == 0:
            return True
        bound = groups.bound_rows(new, view.free_gpus, view.free_cpus, view.free_mem, False)
        return not (bound >= 1).any()

    def _sync(self, view: View, groups: WaitingGroups) -> bool:
        """Add the jobs that arrived since the last decision point. False if the groups
        may not stand for the queue any more: a start proposed last time was not carried
        out, or the queue has another length (someone else starts or preempts jobs, e.g.
        an environment that applies one decision per step)."""
        st, n, k, key = view.status, view.n_jobs, self._next, self._key
        if any(st[j] == _QUEUED for j in self._proposed):
            return False
        self._proposed = []
        while k < n and st[k] != _FUTURE:
            groups.add(k, key[k], k)
            k += 1
        self._next = k
        return len(groups) == view.n_queue


def device_choice(name: str) -> DeviceChoice:
    """Device-choice part by name: ``"fastest_free"`` (fastest type with room, the
    default) or ``"fastest"`` (wait for the job's fastest type)."""
    choices = {"fastest_free": FastestFirst, "fastest": FastestOnly}
    if name not in choices:
        raise ValueError(f"device must be one of {sorted(choices)}, got {name!r}")
    return choices[name]()


def FIFO(blocking: bool = True, device: str = "fastest_free") -> PolicyScheduler:
    """First in, first out; the head job takes its fastest device type with room.

    Args:
        blocking: Strict FIFO (the head blocks the queue) when True; FIFO with
            backfilling when False.
        device: ``"fastest_free"`` or ``"fastest"`` (see :func:`device_choice`).
    """
    return PolicyScheduler(ArrivalOrder(), device_choice(device), GreedyAdmission(blocking=blocking))


def SJF(blocking: bool = False, device: str = "fastest_free") -> PolicyScheduler:
    """Shortest job first by best-device duration, non-preemptive, backfilling.

    Args:
        blocking: Stop at the first job that does not fit (default: backfill).
        device: ``"fastest_free"`` or ``"fastest"`` (see :func:`device_choice`).
    """
    return PolicyScheduler(ShortestFirst(), device_choice(device), GreedyAdmission(blocking=blocking))


@dataclass
class SRPT(SchedulerBase):
    """Preemptive shortest remaining processing time first.

    At each decision point all waiting and running jobs are ranked by remaining
    time on their fastest device type. Walking that ranking on the capacity of
    the whole cluster, a running job keeps its placement if it is still free,
    a waiting job takes a placement (fastest device with room); running jobs
    left out are preempted. With the default device choice (fastest type with room)
    a job may be moved to a much slower type, so this SRPT is no lower bound on a
    hybrid cluster; ``SRPT(devices=FastestOnly())`` (``make("srpt",
    device="fastest")``) waits for the fastest type. Jobs in a grace period, or at the preemption limit,
    keep their resources and are never preempted. A waiting job only starts if
    it fits in what is free once the preempted jobs without grace period have
    left; others start at a later decision point.

    This is the *sticky* form, the registered default: a running job never moves to a
    faster type that frees up, and no decision is made while no job waits. The AlloX
    paper's SRPT (re-plan every job at every event, moves at no cost) is
    ``SRPT.make(migrate=True)`` (``make("srpt", migrate=True)``,
    :class:`baselines.classic.srpt_migrate.MigratingSRPT`); docs/allox.md compares the two.
    """

    devices: DeviceChoice = field(default_factory=FastestFirst)
    round_length: float | None = None

    @property
    def cadence(self) -> Cadence:
        """The base cadence with the fast path (:meth:`decide_and_apply`)."""
        return replace(super().cadence, fast_path=True)

    @classmethod
    def make(cls, device: str = "fastest_free", migrate: bool = False) -> SRPT | MigratingSRPT:
        """Factory for the registry: ``device`` as in :func:`device_choice`.

        ``migrate=False`` (the default) builds this sticky SRPT: a running job keeps its
        placement while it is free there, and nothing is decided while no job waits; it is
        compiled, and it is the SRPT every family's study uses. ``migrate=True`` builds the
        AlloX paper's SRPT (sec. 5.1, "preemptive at no cost"),
        :class:`baselines.classic.srpt_migrate.MigratingSRPT`: every job re-planned at every event,
        a running job moved to a faster type as soon as one frees up.
        """
        if migrate:
            from baselines.classic.srpt_migrate import MigratingSRPT

            return MigratingSRPT(devices=device_choice(device))
        return cls(devices=device_choice(device))

    def reset(self, view: View) -> None:
        """Shape heaps of the waiting jobs for the fast path (when it applies)."""
        self._groups: SRPTPlan | None = None
        table = self.devices.table(view) if is_view(view) else None
        if table is not None:
            # the plan's kernels load with the first SRPT run, not with ``import baselines``
            from baselines.classic.srpt_plan import SRPTPlan

            self._groups = SRPTPlan(view, table)
            self._proposed: list[Start | _Preempted] = []

    def decide(self, view: View) -> list[Decision]:
        """Preempt jobs outranked by shorter ones, start the shorter ones."""
        if len(view.queue) == 0:
            return []
        plan = self._fast(view)
        if plan is None or plan.step(False) is None:
            return self._fall_back(view)
        out: list[Decision] = []
        self._proposed = []
        for j in plan.pre[:plan.n_pre].tolist():
            out.append(Preempt(j))
            self._proposed.append(_Preempted(j, int(plan.n_preempt[j])))
        workers = plan.workers
        for i in range(plan.n_st):
            j = int(plan.job[i])
            w = int(workers[j])
            d = Start(j, int(plan.dev[i]), Placement(plan.nodes[i, :w].copy(), plan.gpus[i, :w].copy()))
            out.append(d)
            self._proposed.append(d)
        return out

    def decide_and_apply(self, view: View) -> int:
        """What :meth:`decide` returns, carried out at once (the runner's fast path, see
        :func:`hetgym.simulate`): the same preemptions and starts in the same order, planned
        and applied in one compiled call (:meth:`SRPTPlan.step`), without decision objects.
        Returns the number of decisions."""
        plan = self._fast(view)
        k = None if plan is None else plan.step(True)
        if k is None:
            out = self.decide(view)
            if out:
                view.kernel.apply(out)
            return len(out)
        self._proposed = []
        return k

    def _fast(self, view: View) -> SRPTPlan | None:
        """The shape heaps, or None (and the fast path off from now on) when a decision
        proposed last time was not carried out (someone else decides too)."""
        plan = getattr(self, "_groups", None)
        if plan is not None and self._proposed:
            st = view.status
            for d in self._proposed:
                if (st[d.job] == _QUEUED) if isinstance(d, Start) else \
                        (plan.n_preempt[d.job] <= d.before):
                    self._groups = plan = None
                    break
        return plan

    def _fall_back(self, view: View) -> list[Decision]:
        """The fast path off for good: rank every job from now on."""
        self._groups = None
        return self._decide_all(view)

    def _decide_all(self, view: View) -> list[Decision]:
        """The rule of the class docstring, straightforwardly: rank every job."""
        q = np.asarray(view.queue)
        r = np.asarray(view.running)
        limit = limit_code(view.max_preemptions)
        pinned = [j for j in r.tolist()
                  if view.in_grace(j) or not below_limit(view.n_preempt[j], limit)]
        movable = np.asarray([j for j in r.tolist() if j not in set(pinned)], dtype=np.int64)
        cand = np.concatenate([movable, q])
        rem = view.durations(cand, remaining=True).min(axis=1)
        order = cand[np.argsort(rem, kind="stable")]
        plan = view.capacity()
        for j in movable.tolist():
            plan.give(j)
        running = set(movable.tolist())
        keep: set[int] = set()
        starts: list[int] = []
        for j in order.tolist():
            if j in running:
                w = int(view.workers[j])
                nodes = np.asarray(view.worker_node[j, :w])
                gpus = np.asarray(view.worker_gpu[j, :w])
                if _free_in(plan, view, j, nodes, gpus):
                    plan.take(j, nodes, gpus)
                    keep.add(j)
            else:
                if any(plan.fits(j, d) for d in self.devices.candidates(view, j)):
                    for d in self.devices.candidates(view, j):
                        if plan.place(j, d) is not None:
                            starts.append(j)
                            break
        return self._carry_out(view, movable, keep, starts)

    def _carry_out(self, view: View, movable: np.ndarray, keep: set[int],
                   starts: list[int]) -> list[Decision]:
        """Preempt the movable jobs not kept, then place the starts on what is free once
        the preempted jobs without a grace period have left."""
        out: list[Decision] = []
        now_free = view.capacity()
        for j in movable.tolist():
            if j not in keep:
                out.append(Preempt(j))
                if view.grace[j] <= 0:
                    now_free.give(j)
        for j in starts:
            for d in self.devices.candidates(view, j):
                pl = now_free.place(j, d)
                if pl is not None:
                    out.append(Start(j, d, pl))
                    break
        return out


@dataclass(frozen=True)
class _Preempted:
    """A preemption SRPT proposed, with the job's preemption count before it."""

    job: int
    before: int


def _free_in(plan, view: View, job: int, nodes: np.ndarray, gpus: np.ndarray) -> bool:
    """Whether a running job's current placement is free in the scratch plan."""
    need_c: dict[int, float] = {}
    need_m: dict[int, float] = {}
    for n, g in zip(nodes.tolist(), gpus.tolist()):
        if g >= 0 and plan.gpu_owner[n, g] >= 0:
            return False
        need_c[n] = need_c.get(n, 0.0) + view.cpus_need[job, view.node_device[n]]
        need_m[n] = need_m.get(n, 0.0) + view.mem[job]
    return all(covers(plan.free_cpus[n], c) for n, c in need_c.items()) and all(
        covers(plan.free_mem[n], m) for n, m in need_m.items())
