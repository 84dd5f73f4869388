"""Round-boundary semantics for round-based schedulers (docs/semantics.md, *Rounds*).

Gavel (``scheduler/scheduler.py::simulate`` adds jobs and re-plans only at round
starts) and Hadar/HadarE (paper §III Algorithm 1, §V-A "the node waits to get its next
allocated job at the beginning of the next round") act only at round boundaries: a
job that finishes mid-round leaves its GPUs idle until the next boundary, and a job
that arrives mid-round waits for it.

The engine makes every event instant *and* every round boundary (multiples of the
round length L from t = 0) a decision point when a scheduler asks for rounds
(``round_length``). :class:`RoundBased` filters those: its ``decide`` calls
``decide_round(view)`` at boundaries only and returns no decision elsewhere.

Usage::

    @dataclass
    class MyPolicy(RoundBased):
        round_length: float | bool = True   # True = the scenario's round length
        def decide_round(self, view): ...
"""

from __future__ import annotations

import math
from typing import Any

from hetgym.decisions import SchedulerBase
from hetgym.sim.rules import EPS

__all__ = ["RoundBased", "at_round_boundary", "round_index", "round_length_of"]


def round_length_of(view: Any) -> float:
    """The run's round length L (s) as the engine uses it (0 if the run has no rounds)."""
    sim = getattr(view, "simulator", None) or getattr(view, "_sim", None)
    length = getattr(sim, "round_length", None)
    if length is True or length is None:
        length = view.options.round_length if length is True else 0.0
    return float(length or 0.0)


def at_round_boundary(view: Any) -> bool:
    """Whether ``view.now`` is a round boundary (a multiple of L within 1e-9 L).

    Uses ``view.at_round_boundary`` where the view offers it (the engine's own
    flag), else the same rule computed from the round length.
    """
    flag = getattr(view, "at_round_boundary", None)
    if flag is not None and not callable(flag):
        return bool(flag)
    length = round_length_of(view)
    if length <= 0:
        return False
    x = view.now / length
    return abs(x - round(x)) <= EPS * max(1.0, x)


def round_index(view: Any) -> int:
    """Index of the round that starts at (or contains) ``view.now`` (0 for the first)."""
    idx = getattr(view, "round_index", None)
    if idx is not None and not callable(idx):
        return int(idx)
    length = round_length_of(view)
    if length <= 0:
        return 0
    x = view.now / length
    return round(x) if abs(x - round(x)) <= EPS * max(1.0, x) else math.floor(x)


class RoundBased(SchedulerBase):
    """Mixin: ``decide`` acts only at round boundaries (docs/semantics.md, *Rounds*).

    Subclasses set ``round_length`` (``True`` = the scenario's ``round_length``, or
    seconds) and implement ``decide_round(view) -> list[Decision]``. Between
    boundaries ``decide`` returns ``[]``: GPUs freed mid-round stay idle and new
    arrivals wait until the next boundary.
    """

    round_length: float | bool = True

    def decide_round(self, view: Any) -> list:  # pragma: no cover - abstract
        """Decisions at a round boundary."""
        raise NotImplementedError

    def decide(self, view: Any) -> list:
        """``decide_round(view)`` at a round boundary, no decision elsewhere."""
        if not at_round_boundary(view):
            return []
        return self.decide_round(view)
