"""Heterogeneity-unaware device choice (docs/gavel.md, *Tiresias and YARN-CS*).

:class:`AnyType` lists the device types a job can run on (where it has throughput and
the nodes of the type can hold its gang, the simulator's ``holdable`` rule) without
looking at speed: in a random order drawn from ``view.rng`` once per decision point
(``order="random"``; Gavel's non-Perf policies shuffle worker types each round,
``scheduler.py::_schedule_jobs_on_workers``) or in the cluster's device order
(``order="cluster"``). Tiresias and YARN-CS, which do not know GPU types, use it.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from baselines.common.parts import DeviceChoice, preference

__all__ = ["AnyType"]


@dataclass
class AnyType(DeviceChoice):
    """Every device type the job can run on, speed ignored (module docstring).

    Attributes:
        order: ``"random"`` (one permutation of the device types per decision point,
            the same for every job at that point) or ``"cluster"`` (device index order).
    """

    order: str = "random"
    _at: float | None = field(default=None, init=False, repr=False)
    _view: object = field(default=None, init=False, repr=False)
    _rank: np.ndarray | None = field(default=None, init=False, repr=False)

    def __post_init__(self) -> None:
        if self.order not in ("random", "cluster"):
            raise ValueError(f"AnyType: order must be 'random' or 'cluster', got {self.order!r}")

    def _ranks(self, view) -> np.ndarray:
        """Rank of each device type at this decision point (lower first)."""
        now = float(view.now)
        if self._rank is None or self._at != now or self._view is not view:
            c = len(view.devices)
            if self.order == "random":
                perm = np.asarray(view.rng.permutation(c))
            else:
                perm = np.arange(c)
            rank = np.empty(c, dtype=np.int64)
            rank[perm] = np.arange(c)
            self._rank, self._at, self._view = rank, now, view
        return self._rank

    def candidates(self, view, job: int) -> list[int]:
        """The job's runnable device types in this decision point's order."""
        ok = [d for d in preference(view)[job].tolist() if d >= 0]
        rank = self._ranks(view)  # drawn at the first call of a decision point, always
        return sorted(ok, key=lambda d: rank[d]) if len(ok) > 1 else ok

    def type_set(self, view) -> np.ndarray:
        """Every type the job can run on (rows of :func:`~baselines.common.parts.preference`);
        no :meth:`table`, as the order is drawn at each decision point."""
        return preference(view)
