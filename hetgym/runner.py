"""``hetgym.simulate``: run one scheduler over one scenario."""

from __future__ import annotations

import time
import warnings
from typing import Any

import numpy as np

from hetgym.compile_log import kernel_loads
from hetgym.metrics import Result, gpu_util_series, job_table, summarize
from hetgym.sim.engine import Simulator
from hetgym.sim.state import ACC_ROUND, ACC_WAKE
from hetgym.specs import Scenario

__all__ = ["simulate", "StalledRunWarning"]


class StalledRunWarning(RuntimeWarning):
    """A run ended with jobs left that no event could start (``Result.stalled``).

    Its metrics cover the finished jobs only; do not rank it with complete runs.
    """


def simulate(scenario: Scenario, scheduler: Any, seed: int = 0, *,
             check_every_event: bool = False, progress: bool = False) -> Result:
    """Simulate ``scenario`` under ``scheduler`` and return a :class:`~hetgym.metrics.Result`.

    At every decision point (after the events of one instant) the scheduler's
    ``decide(view)`` is called once and its decisions are applied in order. A
    scheduler may offer ``decide_and_apply(view) -> int`` besides: it is then called
    instead, carries out what ``decide`` would return (the same decisions, in the same
    order, e.g. through :meth:`~hetgym.sim.engine.Simulator.apply_plan`) and returns how
    many decisions that were (its time counts as decision time). Decision times
    (``decision_time_p50/p99``) leave out the calls during which Numba compiled or
    loaded a kernel (:func:`hetgym.compile_log.kernel_loads`): they time warm calls.
    Instants at which no job waits are not decision points unless the scheduler
    sets ``call_when_queue_empty = True`` or asks for rounds (``round_length``).
    A scheduler with a ``next_wakeup(view)`` method is asked after every decision
    for a time at which it wants a decision point (a float later than now, or
    ``None``); that instant is a decision point even if no job waits.
    A run ends ``stalled`` when jobs wait and no event can change that (with
    rounds: a round boundary at which nothing runs, nothing is left to arrive and
    the scheduler decides nothing); it then warns with a
    :class:`StalledRunWarning` naming the scenario, the unfinished jobs and the
    time, and ``Result.stalled`` (also ``summary()["stalled"]``) is True.
    Invariants (docs/semantics.md) are checked at the end of every run, and after
    every event when ``check_every_event`` is set.

    Args:
        scenario: What to simulate.
        scheduler: A ``baselines`` scheduler or anything with ``reset``/``decide``
            (an ``agents`` adapter for a trained model).
        seed: Seed of the run's RNG (``view.rng``); same seed, same run.
        check_every_event: Check capacity invariants after every event (slow).
        progress: Show a progress bar (``tqdm``) over completed jobs.
    """
    round_length = getattr(scheduler, "round_length", None)
    if round_length is True:
        round_length = scenario.options.round_length
    sim = Simulator(scenario, seed=seed, round_length=round_length,
                    check_every_event=check_every_event)
    view = sim.view
    scheduler.reset(view)
    wakeup = getattr(scheduler, "next_wakeup", None)
    fast = getattr(scheduler, "decide_and_apply", None)
    if wakeup is not None:
        sim.set_wakeup(wakeup(view))
    times: list[float] = []
    bar = None
    if progress:
        from tqdm.auto import tqdm

        bar = tqdm(total=sim.n_jobs, desc=f"{type(scheduler).__name__}", unit="job", leave=False)
    t0 = time.perf_counter()
    perf = time.perf_counter
    done_seen = 0
    every_event = bool(getattr(scheduler, "call_when_queue_empty", False) or round_length)
    while True:
        timed = min(float(sim.acc[ACC_ROUND]), float(sim.acc[ACC_WAKE]))
        if not sim.advance():
            break
        # a round boundary or a wake-up is this instant (a boundary that passed while the
        # cluster was idle was no event, so an arrival after it is not a timed instant)
        timer = sim.now == timed
        if not every_event and sim.n_queue == 0 and not timer:
            continue  # nothing waits: no decision to make (see Scheduler protocol)
        loads, a = kernel_loads(), perf()
        decided = fast(view) if fast is not None else scheduler.decide(view)
        dt = perf() - a
        sim.decision_points += 1
        if kernel_loads() == loads:  # warm calls only: none compiled or loaded a kernel
            times.append(dt)
        if fast is None and decided:
            sim.apply(decided)
        if not decided and timer and sim.n_running == 0 and sim.next_arrival == sim.n_jobs:
            break  # a timed instant with an idle cluster changed nothing: every later one would too
        if wakeup is not None:
            sim.set_wakeup(wakeup(view))
        if bar is not None and sim.n_done != done_seen:
            bar.update(sim.n_done - done_seen)
            done_seen = sim.n_done
    wall = time.perf_counter() - t0
    if bar is not None:
        bar.close()
    stalled = not sim.finished and sim.now < scenario.options.horizon
    sim.stalled = stalled
    sim.check_final()
    jobs = job_table(sim)
    metrics = summarize(sim, jobs, np.asarray(times) * 1e3)
    if stalled:
        warnings.warn(
            f"run of {type(scheduler).__name__} on scenario {scenario.name!r} stalled at "
            f"t={sim.now:.6g} s: {int(metrics['unfinished_jobs'])} of {sim.n_jobs} jobs "
            "unfinished and no event can start them", StalledRunWarning, stacklevel=2)
    return Result(jobs=jobs, metrics=metrics, segments=list(sim.segments),
                  devices=list(sim.devices), wall_time=wall, stalled=stalled,
                  extra={"gpu_util_series": gpu_util_series(sim)})
