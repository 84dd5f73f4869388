"""Decisions a scheduler returns, and the scheduler protocol.

A scheduler is any object with ``reset(view)`` and ``decide(view) -> list[Decision]``;
an optional ``round_length`` attribute (seconds, ``True`` for the scenario's
round length, or ``None``) asks for a decision point at every round boundary
besides the events. Instants at which no job waits are skipped unless the
scheduler sets ``call_when_queue_empty = True`` (or has rounds).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol, Sequence, Union, runtime_checkable

import numpy as np

if TYPE_CHECKING:  # pragma: no cover
    from hetgym.sim.view import View

__all__ = ["Placement", "Start", "Preempt", "Move", "Wait", "Decision", "Scheduler", "SchedulingError"]


class SchedulingError(ValueError):
    """A decision the simulator cannot carry out (names the job and the reason)."""


@dataclass(frozen=True)
class Placement:
    """Where each worker of a job runs.

    Attributes:
        nodes: int64[W], node index of each worker.
        gpus: int64[W], GPU index on that node, -1 for a worker on a CPU node.
    """

    nodes: np.ndarray
    gpus: np.ndarray

    @classmethod
    def of(cls, nodes: Sequence[int], gpus: Sequence[int] | None = None) -> "Placement":
        """Build from sequences (``gpus`` defaults to all -1, i.e. CPU workers)."""
        n = np.asarray(nodes, dtype=np.int64)
        g = np.full(len(n), -1, dtype=np.int64) if gpus is None else np.asarray(gpus, dtype=np.int64)
        if g.shape != n.shape:
            raise ValueError(f"Placement: nodes has {len(n)} entries but gpus has {len(g)}")
        return cls(n, g)

    def __len__(self) -> int:
        return len(self.nodes)


@dataclass(frozen=True)
class Start:
    """Start (or restart) pending job ``job`` on device type ``device``.

    ``device`` is a device key (``"v100"``) or an index into the scenario's
    device types; it may be ``None`` only with an explicit ``placement``
    (a mixed allocation over several device types). A list of placements starts
    *copies* of a ``forkable`` job (forking, docs/semantics.md): one full gang each,
    on pairwise distinct nodes, progress pooled; a non-forkable job given more than
    one copy raises :class:`SchedulingError`.
    """

    job: int
    device: Union[str, int, None] = None
    placement: "Placement | Sequence[Placement] | None" = None


@dataclass(frozen=True)
class Preempt:
    """Preempt running job ``job`` (it keeps running for its grace period)."""

    job: int


@dataclass(frozen=True)
class Move:
    """Re-allocate running job ``job`` to ``placement`` in one instant.

    The job gives back what it holds and runs on ``placement`` (checked against
    the free resources plus its own) after the scenario's restart delay; the
    progress since its last checkpoint is lost, as in a preemption with no grace
    period. A move counts one restart and no preemption (the preemption limit and
    any grace period do not apply; a grace period under way is cancelled). A move
    to the job's current placement changes nothing (no delay), except that it
    cancels a grace period. ``device`` (optional) asserts the placement's device type.
    A list of placements moves a ``forkable`` job to that set of copies (see
    :class:`Start`); with >= 2 copies it waits for the larger of the restart delay and
    ``fork_sync_delay``.
    """

    job: int
    placement: "Placement | Sequence[Placement]"
    device: Union[str, int, None] = None


@dataclass(frozen=True)
class Wait:
    """Do nothing until the next event."""


Decision = Union[Start, Preempt, Move, Wait]


@runtime_checkable
class Scheduler(Protocol):
    """What :func:`hetgym.simulate` drives."""

    def reset(self, view: "View") -> None:
        """Called once before the first decision point."""

    def decide(self, view: "View") -> list[Decision]:
        """Decisions at the current decision point (may be empty)."""
