"""The decision-point driver (:mod:`hetgym.driver`) on a scripted simulator, and the
cadence of the :class:`~hetgym.decisions.Scheduler` protocol."""

from __future__ import annotations

import math

import pytest

import baselines
from hetgym.decisions import Cadence, SchedulerBase, Start, cadence_of
from hetgym.driver import DecisionPoints, ask_wakeup, drive


class Scripted:
    """A :class:`~hetgym.driver.Driven` whose event instants are given: ``(time, waiting,
    running, arrived)`` after each; a wake-up asked through ``set_wakeup`` is one more
    instant (nothing else changes there)."""

    def __init__(self, instants: list[tuple[float, int, int, int]], n_jobs: int,
                 round_length: float | None = None) -> None:
        self.todo = list(instants)
        self.n_jobs = n_jobs
        self.now, self.n_queue, self.n_running, self.next_arrival = 0.0, 0, 0, 0
        self.decision_points = 0
        self.length = round_length or math.inf
        self.round = self.length
        self.wakeup = math.inf
        self.applied: list[tuple[float, list]] = []

    @property
    def next_timed(self) -> float:
        return min(self.round, self.wakeup)

    def advance(self) -> bool:
        t_ev = self.todo[0][0] if self.todo else math.inf
        t = min(t_ev, self.wakeup, self.round if (self.todo or self.n_running) else math.inf)
        if t == math.inf:
            return False
        if t == t_ev:
            _, self.n_queue, self.n_running, self.next_arrival = self.todo.pop(0)
        if self.wakeup <= t:
            self.wakeup = math.inf
        while self.round <= t:
            self.round += self.length
        self.now = t
        return True

    def apply(self, decisions) -> None:
        self.applied.append((self.now, list(decisions)))

    def set_wakeup(self, t) -> None:
        self.wakeup = math.inf if t is None else float(t)


class Logger(SchedulerBase):
    """Records the times it is asked; starts job 0 at the times in ``act``."""

    def __init__(self, act=(), wakes=(), **cadence) -> None:
        self.act, self.wakes, self.asked, self.fast = set(act), list(wakes), [], []
        self._cadence = Cadence(**cadence)

    @property
    def cadence(self) -> Cadence:
        return self._cadence

    def decide(self, view):
        self.asked.append(view.now)
        return [Start(0)] if view.now in self.act else []

    def decide_and_apply(self, view) -> int:
        self.fast.append(view.now)
        return 0

    def next_wakeup(self, view):
        later = [t for t in self.wakes if t > view.now]
        return later[0] if later else None


#: arrivals at 1 and 2 (queued), a start at 2, completions at 5 (nothing waits) and 9
INSTANTS = [(1.0, 1, 0, 1), (2.0, 1, 1, 2), (5.0, 0, 1, 2), (9.0, 0, 0, 2)]


def test_events_only_skip_instants_where_nothing_waits():
    sim, s = Scripted(INSTANTS, 2), Logger()
    times = drive(sim, sim, s, s.cadence)
    assert s.asked == [1.0, 2.0] and len(times) == 2 and sim.decision_points == 2


def test_every_instant_and_the_fast_path():
    sim, s = Scripted(INSTANTS, 2), Logger(call_when_queue_empty=True)
    drive(sim, sim, s, s.cadence)
    assert s.asked == [1.0, 2.0, 5.0, 9.0]
    sim, s = Scripted(INSTANTS, 2), Logger(fast_path=True)
    drive(sim, sim, s, s.cadence)
    assert s.fast == [1.0, 2.0] and s.asked == []
    sim, s = Scripted(INSTANTS, 2), Logger(fast_path=True)
    drive(sim, sim, s, s.cadence, fast_path=False)  # the reference's choice
    assert s.asked == [1.0, 2.0] and s.fast == []


def test_decisions_are_applied_in_order_at_their_point():
    sim, s = Scripted(INSTANTS, 2), Logger(act=[2.0])
    drive(sim, sim, s, s.cadence)
    assert sim.applied == [(2.0, [Start(0)])]


def test_wakeups_only_when_declared_and_a_wakeup_is_a_decision_point():
    sim, s = Scripted(INSTANTS, 2), Logger(wakes=[3.0])
    drive(sim, sim, s, s.cadence)  # next_wakeup exists but the cadence does not declare it
    assert s.asked == [1.0, 2.0]
    sim, s = Scripted(INSTANTS, 2), Logger(wakes=[3.0], wakeups=True)
    ask_wakeup(sim, sim, s, s.cadence)
    drive(sim, sim, s, s.cadence)
    assert s.asked == [1.0, 2.0, 3.0]  # nothing waits at 3: a timed instant


def test_an_idle_timed_instant_that_decides_nothing_ends_the_run():
    # everything arrived and nothing runs at the wake-up at 20: the run ends there
    sim, s = Scripted(INSTANTS, 2), Logger(wakes=[20.0, 30.0], wakeups=True,
                                           call_when_queue_empty=True)
    ask_wakeup(sim, sim, s, s.cadence)
    drive(sim, sim, s, s.cadence)
    assert s.asked == [1.0, 2.0, 5.0, 9.0, 20.0]
    # ... but not while a job is left to arrive (the same instant is no end then)
    points = DecisionPoints(Scripted([(1.0, 0, 0, 0)], 2), every_instant=True)
    assert points.next() and not points.idle_end(0)


def test_rounds_are_timed_instants():
    # rounds of 4 s: a point at 4 and 8 while a job runs (nothing waits there)
    sim, s = Scripted(INSTANTS, 2, round_length=4.0), Logger(round_length=4.0)
    assert s.cadence.every_instant and s.cadence.rounds(360.0) == 4.0
    drive(sim, sim, s, s.cadence)
    assert s.asked == [1.0, 2.0, 4.0, 5.0, 8.0, 9.0]


def test_cadence_of():
    class Plain:
        round_length = 100.0  # not read: a plain object has the default cadence

        def reset(self, view): ...

        def decide(self, view):
            return []

    assert cadence_of(Plain()) == Cadence()

    class Bad(Plain):
        cadence = {"round_length": 5}

    with pytest.raises(TypeError, match="Bad.cadence must be a hetgym.decisions.Cadence"):
        cadence_of(Bad())
    with pytest.raises(ValueError, match="Cadence.round_length must be seconds"):
        Cadence(round_length=-1.0)
    assert Cadence(round_length=True).rounds(360.0) == 360.0
    assert Cadence(round_length=0.0).rounds(360.0) is None and not Cadence().every_instant


def test_baseline_cadences():
    """The hooks a baseline offers are those its cadence declares."""
    assert baselines.make("srpt").cadence == Cadence(fast_path=True)
    assert baselines.make("tiresias").cadence == Cadence(wakeups=True)
    assert baselines.make("gavel-las").cadence == Cadence(round_length=True)
    assert baselines.make("andreas-rg").cadence == Cadence(round_length=300.0,
                                                          call_when_queue_empty=True)
    assert baselines.make("fifo").cadence == Cadence()
