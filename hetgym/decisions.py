"""Decisions a scheduler returns, and the scheduler protocol.

A scheduler is any object with ``reset(view)`` and ``decide(view) -> list[Decision]``.
When it is asked is its :class:`Cadence`, read once per run from its ``cadence``
attribute (:class:`SchedulerBase` derives it from ``round_length`` and
``call_when_queue_empty``; an object without one has the default ``Cadence()``: asked
after the events of every instant at which a job waits). :mod:`hetgym.driver` applies
those rules for :func:`hetgym.simulate`, the decision envs and the agents' rollouts.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol, Sequence, Union, runtime_checkable

import numpy as np

if TYPE_CHECKING:  # pragma: no cover
    from hetgym.sim.view import View

__all__ = ["Placement", "Start", "Preempt", "Move", "Wait", "Decision", "Cadence", "Scheduler",
           "SchedulerBase", "SchedulingError", "cadence_of"]


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


@dataclass(frozen=True)
class Cadence:
    """When a scheduler is asked to decide (the rules of :mod:`hetgym.driver`).

    Attributes:
        round_length: Besides the events, a decision point at every multiple of this many
            seconds (``True``: the scenario's ``SimOptions.round_length``; ``None``: events only).
        call_when_queue_empty: Ask at every event instant, also when no job waits (rounds
            imply it).
        wakeups: After every decision (and once after ``reset``) the driver asks
            ``next_wakeup(view)`` for a time at which it wants a decision point.
        fast_path: The driver calls ``decide_and_apply(view)`` instead of ``decide``: it carries
            out what ``decide`` would return, in the same order, and returns how many
            decisions that were.
    """

    round_length: float | bool | None = None
    call_when_queue_empty: bool = False
    wakeups: bool = False
    fast_path: bool = False

    def __post_init__(self) -> None:
        rl = self.round_length
        if not (rl is None or isinstance(rl, bool) or (isinstance(rl, (int, float)) and rl >= 0)):
            raise ValueError(f"Cadence.round_length must be seconds >= 0 (0: none), True (the "
                             f"scenario's) or None, got {rl!r}")

    def rounds(self, scenario_round_length: float) -> float | None:
        """The round length in seconds (``True`` resolved to ``scenario_round_length``), or
        None without rounds (``None``, ``False`` or 0)."""
        if self.round_length is True:
            return float(scenario_round_length)
        return float(self.round_length) if self.round_length else None

    @property
    def every_instant(self) -> bool:
        """Whether every event instant is a decision point (empty queue or not)."""
        return bool(self.call_when_queue_empty or self.round_length)


@runtime_checkable
class _Paced(Protocol):
    cadence: Cadence


def cadence_of(scheduler: object) -> Cadence:
    """The scheduler's :class:`Cadence` (its ``cadence``; ``Cadence()`` for an object that
    declares none). Raises TypeError when ``cadence`` is not a :class:`Cadence`."""
    if not isinstance(scheduler, _Paced):
        return Cadence()
    c = scheduler.cadence
    if not isinstance(c, Cadence):
        raise TypeError(f"{type(scheduler).__name__}.cadence must be a hetgym.decisions.Cadence, "
                        f"got {c!r}")
    return c


@runtime_checkable
class Scheduler(Protocol):
    """What :func:`hetgym.simulate` drives (through :mod:`hetgym.driver`).

    ``reset`` and ``decide`` are required; ``cadence`` says when the scheduler is asked
    (default ``Cadence()``), and ``next_wakeup`` / ``decide_and_apply`` are called only
    when its cadence declares them (``wakeups``, ``fast_path``). :class:`SchedulerBase`
    gives every member a default.
    """

    cadence: Cadence

    def reset(self, view: "View") -> None:
        """Called once before the first decision point."""

    def decide(self, view: "View") -> list[Decision]:
        """Decisions at the current decision point (may be empty)."""

    def next_wakeup(self, view: "View") -> float | None:
        """A time later than now at which a decision point is wanted, or None (asked when
        ``cadence.wakeups``)."""

    def decide_and_apply(self, view: "View") -> int:
        """Carry out what :meth:`decide` would return and return how many decisions that
        were (called instead of ``decide`` when ``cadence.fast_path``)."""


class SchedulerBase:
    """Defaults of the :class:`Scheduler` protocol for schedulers to derive from.

    ``cadence`` is built from the attributes ``round_length`` (seconds, ``True`` for the
    scenario's, or ``None``) and ``call_when_queue_empty``, which subclasses (or dataclass
    fields) set; a scheduler with wake-ups or a fast path overrides :attr:`cadence` to say
    so (``dataclasses.replace(super().cadence, wakeups=True)``).
    """

    round_length: float | bool | None = None
    call_when_queue_empty: bool = False

    @property
    def cadence(self) -> Cadence:
        """When this scheduler is asked (see :class:`Cadence`)."""
        return Cadence(round_length=self.round_length,
                       call_when_queue_empty=bool(self.call_when_queue_empty))

    def reset(self, view: "View") -> None:
        """Nothing to reset."""

    def decide(self, view: "View") -> list[Decision]:  # pragma: no cover - abstract
        """Decisions at the current decision point."""
        raise NotImplementedError

    def next_wakeup(self, view: "View") -> float | None:
        """No wake-up."""
        return None

    def decide_and_apply(self, view: "View") -> int:  # pragma: no cover - not declared
        """Not offered (``cadence.fast_path`` is False)."""
        raise NotImplementedError(f"{type(self).__name__} declares no fast path")
