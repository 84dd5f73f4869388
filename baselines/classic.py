"""Classic schedulers: FIFO, SJF and preemptive SRPT, composed of parts.

These are the reference points every paper compares against; device choice is
heterogeneity-aware in the simplest way (a job takes its fastest device type
that has room, see :class:`~baselines.parts.FastestFirst`).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from baselines.parts import (
    ArrivalOrder,
    DeviceChoice,
    FastestFirst,
    FastestOnly,
    GreedyAdmission,
    Ordering,
    ShortestFirst,
)
from hetgym.decisions import Decision, Preempt, Start
from hetgym.sim.view import View

__all__ = ["PolicyScheduler", "FIFO", "SJF", "SRPT"]


@dataclass
class PolicyScheduler:
    """Non-preemptive scheduler = ordering + device choice + admission.

    At each decision point the waiting jobs are ordered, then admitted greedily
    on a scratch copy of free capacity; the placements found there are the ones
    proposed to the simulator.
    """

    ordering: Ordering = field(default_factory=ArrivalOrder)
    devices: DeviceChoice = field(default_factory=FastestFirst)
    admission: GreedyAdmission = field(default_factory=GreedyAdmission)
    round_length: float | None = None

    def reset(self, view: View) -> None:
        """Nothing to reset."""

    def decide(self, view: View) -> list[Decision]:
        """Start what the admission rule admits."""
        q = view.queue
        if len(q) == 0:
            return []
        return list(self.admission.admit(view, self.ordering.order(view, q), self.devices))


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
class SRPT:
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
    """

    devices: DeviceChoice = field(default_factory=FastestFirst)
    round_length: float | None = None

    @classmethod
    def make(cls, device: str = "fastest_free") -> "SRPT":
        """Factory for the registry: ``device`` as in :func:`device_choice`."""
        return cls(devices=device_choice(device))

    def reset(self, view: View) -> None:
        """Nothing to reset."""

    def decide(self, view: View) -> list[Decision]:
        """Preempt jobs outranked by shorter ones, start the shorter ones."""
        q = np.asarray(view.queue)
        r = np.asarray(view.running)
        if len(q) == 0:
            return []
        limit = view.max_preemptions
        pinned = [j for j in r.tolist()
                  if view.in_grace(j) or (limit is not None and view.n_preempt[j] >= limit)]
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


def _free_in(plan, view: View, job: int, nodes: np.ndarray, gpus: np.ndarray) -> bool:
    """Whether a running job's current placement is free in the scratch plan."""
    need_c: dict[int, float] = {}
    need_m: dict[int, float] = {}
    for n, g in zip(nodes.tolist(), gpus.tolist()):
        if g >= 0 and plan.gpu_owner[n, g] >= 0:
            return False
        need_c[n] = need_c.get(n, 0.0) + view.cpus_need[job, view.node_device[n]]
        need_m[n] = need_m.get(n, 0.0) + view.mem[job]
    return all(plan.free_cpus[n] + 1e-9 >= c for n, c in need_c.items()) and all(
        plan.free_mem[n] + 1e-9 >= m for n, m in need_m.items())
