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


@dataclass(frozen=True)
class FastestOnly:
    """Only the job's fastest device type (it waits for it)."""

    def candidates(self, view: View, job: int) -> list[int]:
        return [int(np.argmax(view.tput[job]))]


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
