"""``episode_metrics`` of the batched env, computed when first read.

:func:`hetgym.metrics.summarize` costs about 60 us an episode (a third of a 64-job
episode's Python work in the batched env), and a training loop never reads it.
:class:`EpisodeMetrics` is a read-only mapping over the finished simulator that
computes the very same dict on first access. The batched env keeps the finished
simulator untouched while such a mapping is alive and unread (it steps the sub-env on
a second simulator meanwhile) and, before it reuses that simulator, computes the
values of any mapping still alive (:class:`MetricsLedger`). Pickling gives the plain
dict.
"""

from __future__ import annotations

import weakref
from collections.abc import Iterator, Mapping
from typing import Any

from hetgym.metrics import summarize

__all__ = ["EpisodeMetrics", "MetricsLedger"]


class EpisodeMetrics(Mapping):
    """The :func:`~hetgym.metrics.summarize` dict of a finished episode, computed on first
    access (a read-only mapping; ``dict(m)`` gives the plain dict)."""

    __slots__ = ("__weakref__", "_sim", "_values")

    def __init__(self, sim: Any) -> None:
        self._sim = sim
        self._values: dict[str, float] | None = None

    @property
    def computed(self) -> bool:
        """Whether the values were computed (read, or saved before the simulator's reuse)."""
        return self._values is not None

    def compute(self) -> dict[str, float]:
        """The values (computed now if not yet; the simulator is then released)."""
        if self._values is None:
            self._values = summarize(self._sim)
            self._sim = None
        return self._values

    def __getitem__(self, key: str) -> float:
        return self.compute()[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self.compute())

    def __len__(self) -> int:
        return len(self.compute())

    def __repr__(self) -> str:
        return f"EpisodeMetrics({self.compute()!r})"

    def __reduce__(self) -> tuple:
        return (dict, (self.compute(),))


class MetricsLedger:
    """Which simulators back an unread :class:`EpisodeMetrics` (weak references: a mapping
    nobody holds any more costs nothing)."""

    def __init__(self) -> None:
        self._open: dict[int, weakref.ref] = {}

    def issue(self, sim: Any) -> EpisodeMetrics:
        """A mapping over ``sim``, which must stay untouched until :meth:`release`."""
        m = EpisodeMetrics(sim)
        self._open[id(sim)] = weakref.ref(m)
        return m

    def held(self, sim: Any) -> bool:
        """Whether an unread mapping over ``sim`` is still alive."""
        ref = self._open.get(id(sim))
        m = None if ref is None else ref()
        if m is None or m.computed:
            self._open.pop(id(sim), None)
            return False
        return True

    def release(self, sim: Any) -> None:
        """Compute the values of a live unread mapping over ``sim`` (before its reuse)."""
        ref = self._open.pop(id(sim), None)
        m = None if ref is None else ref()
        if m is not None:
            m.compute()
