"""The decision-point driver: when a scheduler is asked to decide, stated once.

:func:`hetgym.simulate`, the decision envs (:mod:`hetgym.envs.decision_base`), the agents'
rollouts (:func:`agents.imitation.rollout.finish_sim`) and the test suite's reference simulator
all step their simulator with :class:`DecisionPoints` and, where a scheduler decides,
:func:`drive`. The rules, for a scheduler's :class:`~hetgym.decisions.Cadence`:

1. the simulator advances one event instant at a time (``advance()``; False: no event left);
2. the instant is a decision point if a job waits, or the cadence asks for every instant
   (``call_when_queue_empty`` or rounds), or it is a *timed* instant: the round boundary
   or wake-up that was due when the step began (a boundary passed while the cluster was
   idle is no event, so an arrival after it is not a timed instant);
3. at a decision point the scheduler decides once (``decide_and_apply`` when its cadence
   declares the fast path, else ``decide`` and the decisions applied in order), then is
   asked for its next wake-up when its cadence declares wake-ups;
4. a timed instant at which nothing runs, nothing is left to arrive and the scheduler
   decided nothing ends the run: every later timed instant would change nothing either.

The simulator is anything with the members of :class:`Driven` (the engine's
:class:`~hetgym.sim.engine.Simulator`, or the reference simulator of the tests).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sized
from typing import Any, Protocol, Sequence

from hetgym.compile_log import kernel_loads
from hetgym.decisions import Cadence, Decision

__all__ = ["DecisionPoints", "Driven", "ask_wakeup", "decide_once", "drive"]


class Driven(Protocol):
    """What the driver needs of a simulator."""

    decision_points: int

    @property
    def now(self) -> float:
        """Current simulated time."""

    @property
    def n_queue(self) -> int:
        """Waiting jobs."""

    @property
    def n_running(self) -> int:
        """Jobs holding resources."""

    @property
    def next_arrival(self) -> int:
        """Jobs arrived so far."""

    @property
    def n_jobs(self) -> int:
        """Jobs of the run."""

    @property
    def next_timed(self) -> float:
        """The next round boundary or wake-up, whichever comes first (``inf`` if none)."""

    def advance(self) -> bool:
        """Process the next event instant; False if there is none."""

    def apply(self, decisions: Sequence[Decision]) -> None:
        """Carry out decisions in order."""

    def set_wakeup(self, t: float | None) -> None:
        """Ask for a decision point at ``t`` (None: none)."""


class DecisionPoints:
    """Steps a simulator from one decision point to the next (rules 1, 2 and 4 of the
    module docstring).

    Args:
        sim: The simulator.
        every_instant: Every event instant is a decision point (``Cadence.every_instant``).
        advance: How one event instant is processed (default ``sim.advance``; the decision
            envs accrue their reward terms around it, the reference checks its invariants).
    """

    def __init__(self, sim: Driven, every_instant: bool,
                 advance: Callable[[], bool] | None = None) -> None:
        self.sim = sim
        self.every_instant = bool(every_instant)
        self._advance = sim.advance if advance is None else advance
        self.timed = False  # whether the current decision point is a timed instant

    def next(self) -> bool:
        """Advance to the next decision point (counting it in ``sim.decision_points``);
        False when no event is left."""
        sim = self.sim
        while True:
            due = sim.next_timed
            if not self._advance():
                return False
            self.timed = sim.now == due
            if self.every_instant or sim.n_queue or self.timed:
                sim.decision_points += 1
                return True

    def idle_end(self, decided: Any) -> bool:
        """Whether the decision point just ended ends the run (rule 4): nothing
        ``decided`` at a timed instant, with nothing running and nothing left to arrive."""
        sim = self.sim
        return (not decided and self.timed and sim.n_running == 0
                and sim.next_arrival == sim.n_jobs)


def ask_wakeup(sim: Driven, view: Any, scheduler: Any, cadence: Cadence) -> None:
    """Rule 3's wake-up: ``sim.set_wakeup(scheduler.next_wakeup(view))`` when the cadence
    declares wake-ups."""
    if cadence.wakeups:
        sim.set_wakeup(scheduler.next_wakeup(view))


def decide_once(sim: Driven, view: Any, scheduler: Any, cadence: Cadence,
                fast_path: bool = True) -> tuple[int, float]:
    """Rule 3's decision: the number of decisions carried out and the seconds the
    scheduler took (``decide_and_apply``, or ``decide`` without its application).
    ``fast_path=False`` calls ``decide`` even where the cadence declares the fast path."""
    perf = time.perf_counter
    a = perf()
    if fast_path and cadence.fast_path:
        decided = int(scheduler.decide_and_apply(view))
        return decided, perf() - a
    decisions = scheduler.decide(view)
    took = perf() - a
    if not decisions:
        return 0, took
    sim.apply(decisions)
    return (len(decisions) if isinstance(decisions, Sized) else 1), took


def drive(sim: Driven, view: Any, scheduler: Any, cadence: Cadence, *,
          advance: Callable[[], bool] | None = None,
          after_point: Callable[[], None] | None = None,
          fast_path: bool = True) -> list[float]:
    """Run ``sim`` to its end with ``scheduler`` (already reset, its first wake-up asked)
    by the module's rules; the seconds each warm decision took (calls during which Numba compiled or loaded a
    kernel are left out).

    Args:
        sim: The simulator (built with the cadence's round length).
        view: What the scheduler reads (``sim.view`` for the engine).
        scheduler: Anything with ``decide`` (and the hooks its cadence declares).
        cadence: The scheduler's :class:`~hetgym.decisions.Cadence`.
        advance: As in :class:`DecisionPoints`.
        after_point: Called after every decision point (wake-up asked).
        fast_path: As in :func:`decide_once`.
    """
    points = DecisionPoints(sim, cadence.every_instant, advance)
    times: list[float] = []
    while points.next():
        loads = kernel_loads()
        decided, took = decide_once(sim, view, scheduler, cadence, fast_path)
        if kernel_loads() == loads:  # warm calls only: none compiled or loaded a kernel
            times.append(took)
        if points.idle_end(decided):
            break
        ask_wakeup(sim, view, scheduler, cadence)
        if after_point is not None:
            after_point()
    return times
