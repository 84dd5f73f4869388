"""Typed parts that baselines are composed of (STYLE.md item 10).

* **Ordering**: which waiting jobs come first.
* **DeviceChoice**: which device types a job may take, in order of preference.
* **Admission**: :class:`GreedyAdmission` walks the ordered jobs and places each
  on the first device type with room, on a scratch copy of free capacity
  (blocking at the first job that does not fit, or backfilling past it).
* **Preemption**: :class:`PreemptToFit` (in :mod:`baselines.classic`) and the
  paper-specific rules in their own modules.

Placement itself is the simulator's (its policy kernel); a part never asks
which scheduler it serves.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

import numpy as np

from hetgym.decisions import Start
from hetgym.sim.view import CapacityModel, View

__all__ = [
    "Ordering",
    "ArrivalOrder",
    "ShortestFirst",
    "DeviceChoice",
    "FastestFirst",
    "FastestOnly",
    "GreedyAdmission",
    "can_hold",
]


class Ordering(Protocol):
    """Orders candidate jobs (indices) for admission."""

    def order(self, view: View, jobs: np.ndarray) -> np.ndarray:
        """Return ``jobs`` in admission order."""


@dataclass(frozen=True)
class ArrivalOrder:
    """Queue order: arrival order, preempted jobs at the head (FIFO)."""

    def order(self, view: View, jobs: np.ndarray) -> np.ndarray:
        return jobs


@dataclass(frozen=True)
class ShortestFirst:
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


class DeviceChoice(Protocol):
    """Device types a job may be started on, most preferred first."""

    def candidates(self, view: View, job: int) -> list[int]:
        """Device indices in order of preference."""


@dataclass(frozen=True)
class FastestFirst:
    """Every device type the job can run on, fastest (highest rate) first."""

    def candidates(self, view: View, job: int) -> list[int]:
        t = view.tput[job]
        order = np.argsort(-t, kind="stable")
        return [int(c) for c in order if t[c] > 0]


def can_hold(view: View, job: int, dev: int) -> bool:
    """Whether the nodes of type ``dev``, all free, could hold the job's whole gang."""
    nodes = np.asarray(view.node_device) == dev
    if not nodes.any():
        return False
    per = np.full(int(nodes.sum()), 1 << 30, dtype=np.int64)
    if not view.dev_is_cpu[dev]:
        per = np.minimum(per, np.asarray(view.node_gpus)[nodes])
    c = float(view.cpus_need[job, dev])
    m = float(view.mem[job])
    if c > 0:
        per = np.minimum(per, np.floor(np.asarray(view.node_cpus)[nodes] / c + 1e-9).astype(np.int64))
    if m > 0:
        per = np.minimum(per, np.floor(np.asarray(view.node_mem)[nodes] / m + 1e-9).astype(np.int64))
    return int(per.sum()) >= int(view.workers[job])


@dataclass(frozen=True)
class FastestOnly:
    """Only the job's fastest device type that can ever hold its gang (it waits for it)."""

    def candidates(self, view: View, job: int) -> list[int]:
        t = view.tput[job]
        for c in np.argsort(-t, kind="stable").tolist():
            if t[c] > 0 and can_hold(view, job, c):
                return [int(c)]
        return []


@dataclass(frozen=True)
class GreedyAdmission:
    """Start ordered jobs while they fit.

    Attributes:
        blocking: Stop at the first job that fits nowhere (strict FIFO
            head-of-line blocking); otherwise skip it and try the next (backfill).
    """

    blocking: bool = True

    def admit(self, view: View, jobs: np.ndarray, devices: DeviceChoice,
              cap: CapacityModel | None = None) -> list[Start]:
        """Starts for the ordered ``jobs`` on ``cap`` (default: a fresh scratch copy)."""
        if isinstance(devices, FastestFirst) and isinstance(view, View):
            # the common case runs in one Numba kernel (same rule as the loop below)
            return view.admit(jobs, self.blocking, cap=cap)
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
