"""Fair-sharing baselines of the AlloX paper: ES, DRFF, DRFS and DRFA.

All four are non-preemptive and composed of parts: a share model
(:mod:`baselines.allox.parts`), an ordering of each user's jobs and a device
choice (:mod:`baselines.common.parts`). Each returns starts whose placements were
found on a scratch copy of free capacity; the simulator carries them out.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

import numpy as np

from baselines.allox.parts import (
    DominantShare,
    PooledShare,
    ShareModel,
    may_fit,
    run_start_kernel,
    slots_per_device,
)
from baselines.common.kernels import share_fill_nb
from baselines.common.parts import (
    ArrivalOrder,
    DeviceChoice,
    FastestFirst,
    FastestOnly,
    Ordering,
    ShortestFirst,
)
from hetgym.decisions import Decision, SchedulerBase, Start
from hetgym.sim.view import CapacityModel, View

__all__ = ["DRFScheduler", "DRFF", "DRFS", "DRFA", "EqualShare"]


def _per_user(view: View, jobs: np.ndarray) -> dict[int, list[int]]:
    """Each user's jobs among ``jobs``, in their order there."""
    jobs = np.asarray(jobs, dtype=np.int64)
    users = np.asarray(view.user)[jobs]
    o = np.argsort(users, kind="stable")
    us, first = np.unique(users[o], return_index=True)
    return {int(u): part.tolist() for u, part in zip(us.tolist(), np.split(jobs[o], first[1:]))}


@dataclass
class DRFScheduler(SchedulerBase):
    """Online DRF: the user with the least dominant share starts her next job.

    At a decision point, repeatedly: among users whose next job (the head of her
    jobs in ``ordering``) can start on one of ``devices.candidates``, the one with
    the least dominant share (``share``; ties to the lower user id) starts it. A
    user whose next job does not fit is skipped until the next decision point
    (her later jobs do not jump ahead: "schedules the *first* job of the user").

    Attributes:
        share: How resources count towards a user's dominant share.
        ordering: Order of jobs within a user.
        devices: Device types a job may take, preferred first.
    """

    share: ShareModel = field(default_factory=DominantShare)
    ordering: Ordering = field(default_factory=ArrivalOrder)
    devices: DeviceChoice = field(default_factory=FastestOnly)
    round_length: float | None = None

    def reset(self, view: View) -> None:
        """Precompute the share model's capacities."""
        self.share.reset(view)

    def decide(self, view: View) -> list[Decision]:
        """Start head jobs of the users with the least dominant share while they fit."""
        q = np.asarray(view.queue)
        if len(q) == 0:
            return []
        cap = view.capacity()
        if not slots_per_device(view, free=True, cap=cap).any():
            return []
        per = {u: self.ordering.order(view, np.asarray(js, dtype=np.int64)).tolist()
               for u, js in _per_user(view, q).items()}
        usage = self.share.usage(view)
        out: list[Decision] = []
        active = sorted(per)
        while active:
            dom = self.share.dominant(usage[active])
            k = int(np.argmin(dom))
            u = active[k]
            j = per[u][0]
            for d in self.devices.candidates(view, j):
                pl = cap.place(j, d)
                if pl is not None:
                    out.append(Start(j, d, pl))
                    usage[u] += self.share.demand(view, j, d)
                    per[u].pop(0)
                    break
            else:
                active.pop(k)
                continue
            if not per[u]:
                active.pop(k)
        return out


def DRFF() -> DRFScheduler:
    """DRFF, online DRF with FCFS within each user (AlloX sec. 5.1.1).

    Each job runs in the configuration its user prefers, here its fastest device
    type (in the paper every job prefers the GPU), and waits for it: no fallback to
    the other device type. Users are served by least dominant share over each
    device type's machines and memory; within a user, first come first served.
    """
    return DRFScheduler(DominantShare(), ArrivalOrder(), FastestOnly())


def DRFS() -> DRFScheduler:
    """DRFS, online DRF with shortest job first within each user (AlloX sec. 5.1.1).

    Like :func:`DRFF`, but each user's jobs go shortest first (processing time on
    the configuration the estimator picks, the fastest device type).
    """
    return DRFScheduler(DominantShare(), ShortestFirst(), FastestOnly())


def DRFA(speedup: float | None = None) -> DRFScheduler:
    """DRFA, DRF over pooled compute (AlloX sec. 5.1.1).

    GPUs are converted to CPU-slot equivalents with an average speedup (1 GPU =
    ``speedup`` CPUs), which turns the problem into plain DRF over (compute,
    memory); within each user, shortest job first. As the pooled resource makes
    device types interchangeable, a job takes its fastest device type with room
    (a GPU if one is free, else a CPU slot).

    Args:
        speedup: GPU/CPU speedup; ``None`` = mean ``p_cpu / p_gpu`` over the
            workload's jobs (per GPU type).
    """
    return DRFScheduler(PooledShare(speedup), ShortestFirst(), FastestFirst())


@dataclass
class EqualShare(SchedulerBase):
    """ES, equal share: every user gets ``1/U`` of each device type's machines, statically.

    User ``u`` of ``U`` may hold ``floor(S_t / U)`` machines of type ``t``, ``S_t`` being
    the type's GPUs or CPU slots; the ``S_t mod U`` machines left over go one each to
    the next users in turn, the turn going on from one device type to the next (device
    order), so that leftovers spread over users instead of all going to the first ones
    (``toy-3jobs``, 1 CPU slot and 1 V100 for 2 users: the slot to user 0, the V100 to
    user 1, so each user can run). A share left idle is not lent to others. A user
    with no machine of any type (more users than machines in all) can never start a
    job: the run stalls (:class:`hetgym.StalledRunWarning`), which is what a static
    equal share means there. Two orders within a user:

    * ``"sjf"`` (AlloX sec. 5.1.1, the default): whenever a machine of the user's
      share is free, the user's waiting job with the shortest processing time *on that
      device type* starts there; device types are filled in the order of how many of
      the user's waiting jobs favour them ("if all jobs prefer GPUs, ES first fills up
      all available GPUs ... then fills available CPUs").
    * ``"fcfs"`` (AlloX sec. 1, Fig. 1a): jobs in arrival order; the head job takes its
      favourite device type if the user's share of it has room, else another one,
      else it waits and the user's later jobs wait behind it.

    Gangs (not in the paper): a job of ``W`` workers needs ``W`` machines of the
    user's share; a user who holds nothing on a device type of which her share is at
    least one machine may start one job there that is larger than her share
    (otherwise it could never run).

    Attributes:
        order: ``"sjf"`` or ``"fcfs"``.
    """

    order: Literal["sjf", "fcfs"] = "sjf"
    round_length: float | None = None

    def __post_init__(self) -> None:
        if self.order not in ("sjf", "fcfs"):
            raise ValueError(f"EqualShare.order must be 'sjf' or 'fcfs', got {self.order!r}")

    def reset(self, view: View) -> None:
        """Split every device type's machines among the workload's users."""
        users = int(np.asarray(view.user).max()) + 1
        slots = slots_per_device(view)
        self.quota = np.zeros((users, len(slots)), dtype=np.int64)
        turn = 0  # next user to get a leftover machine
        for d, s in enumerate(slots.tolist()):
            self.quota[:, d] = s // users
            self.quota[(turn + np.arange(s % users)) % users, d] += 1
            turn = (turn + s % users) % users
        self._fastest = FastestFirst()

    def decide(self, view: View) -> list[Decision]:
        """Fill each user's free share with her jobs."""
        q = np.asarray(view.queue)
        if len(q) == 0:
            return []
        cap = view.capacity()
        used = np.zeros_like(self.quota)
        r = np.asarray(view.running)
        r = r[np.asarray(view.device)[r] >= 0]
        np.add.at(used, (np.asarray(view.user)[r], np.asarray(view.device)[r]), np.asarray(view.workers)[r])
        out: list[Decision] = []
        for u, jobs in sorted(_per_user(view, q).items()):
            fill = self._fcfs if self.order == "fcfs" else self._sjf
            out.extend(fill(view, u, jobs, used, cap))
        return out

    def _room(self, u: int, d: int, w: int, used: np.ndarray) -> bool:
        return bool(used[u, d] + w <= self.quota[u, d] or (used[u, d] == 0 < self.quota[u, d]))

    def _fcfs(self, view: View, u: int, jobs: list[int], used: np.ndarray,
              cap: CapacityModel) -> list[Start]:
        out: list[Start] = []
        for j in jobs:
            w = int(view.workers[j])
            for d in self._fastest.candidates(view, j):
                if self._room(u, d, w, used):
                    pl = cap.place(j, d)
                    if pl is not None:
                        out.append(Start(j, d, pl))
                        used[u, d] += w
                        break
            else:
                break
        return out

    def _sjf_py(self, u: int, arr: np.ndarray, dur: np.ndarray, order: np.ndarray, w: np.ndarray,
                may: np.ndarray, used: np.ndarray, cap: CapacityModel) -> list[Start]:
        """:func:`baselines.common.kernels.share_fill_nb` in Python, for any view."""
        quota, out = self.quota, []
        left = np.ones(len(arr), dtype=bool)
        for d in order.tolist():
            fin = np.flatnonzero(np.isfinite(dur[:, d]))
            for k in fin[np.argsort(dur[fin, d], kind="stable")].tolist():
                if used[u, d] >= quota[u, d]:
                    break
                if not left[k] or not (used[u, d] + w[k] <= quota[u, d] or used[u, d] == 0):
                    continue
                left[k] = False
                pl = cap.place(int(arr[k]), d) if may[k, d] else None
                if pl is not None:
                    out.append(Start(int(arr[k]), d, pl))
                    used[u, d] += int(w[k])
        return out

    def _sjf(self, view: View, u: int, jobs: list[int], used: np.ndarray,
              cap: CapacityModel) -> list[Start]:
        arr = np.asarray(jobs, dtype=np.int64)
        dur = view.durations(arr)
        fav = np.argmin(dur, axis=1)
        counts = np.bincount(fav, minlength=dur.shape[1])
        order = np.argsort(-counts, kind="stable")
        w = np.ascontiguousarray(np.asarray(view.workers)[arr])
        # a job that surely does not fit is used up without a placement attempt
        may = may_fit(view, cap, arr, slots_per_device(view, free=True, cap=cap))
        # shortest first per type (first index on ties, as argmin); a job without room now
        # has none later in this pass (the user's use only grows), so one walk suffices
        if not isinstance(view, View):  # a duck-typed view (the tests' reference simulator)
            return self._sjf_py(u, arr, dur, order, w, may, used, cap)
        return run_start_kernel(view, cap, share_fill_nb, len(arr), u, arr, np.ascontiguousarray(dur),
                                order.astype(np.int64), w, np.ascontiguousarray(may), used, self.quota)
