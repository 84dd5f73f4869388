"""``hetgym.simulate``: run one scheduler over one scenario."""

from __future__ import annotations

import time
import warnings
from typing import Any

import numpy as np

from hetgym.decisions import cadence_of
from hetgym.driver import ask_wakeup, drive
from hetgym.metrics import Result, gpu_util_series, job_table, summarize
from hetgym.sim.engine import Simulator
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
    ``decide(view)`` is called once and its decisions are applied in order; when the
    decision points fall and which hooks are called is the scheduler's
    :class:`~hetgym.decisions.Cadence` (``scheduler.cadence``), by the rules of
    :mod:`hetgym.driver`. With ``Cadence.fast_path`` ``decide_and_apply(view) -> int``
    is called instead: it carries out what ``decide`` would return (the same decisions,
    in the same order, e.g. through :meth:`~hetgym.sim.engine.Simulator.apply_plan`) and
    returns how many decisions that were (its time counts as decision time).
    Decision times (``decision_time_p50/p99``) leave out the calls during which Numba
    compiled or loaded a kernel (:func:`hetgym.compile_log.kernel_loads`): they time warm
    calls. Instants at which no job waits are not decision points unless the cadence sets
    ``call_when_queue_empty`` or asks for rounds (``round_length``).
    With ``Cadence.wakeups`` the scheduler's ``next_wakeup(view)`` is asked after every
    decision for a time at which it wants a decision point (a float later than now, or
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
            (an ``agents`` adapter for a trained model); see
            :class:`~hetgym.decisions.Scheduler`.
        seed: Seed of the run's RNG (``view.rng``); same seed, same run.
        check_every_event: Check capacity invariants after every event (slow).
        progress: Show a progress bar (``tqdm``) over completed jobs.
    """
    cadence = cadence_of(scheduler)
    sim = Simulator(scenario, seed=seed, round_length=cadence.rounds(scenario.options.round_length),
                    check_every_event=check_every_event)
    view = sim.view
    scheduler.reset(view)
    ask_wakeup(sim, view, scheduler, cadence)
    after_point = None
    bar = None
    if progress:
        from tqdm.auto import tqdm

        bar = tqdm(total=sim.n_jobs, desc=f"{type(scheduler).__name__}", unit="job", leave=False)
        seen = [0]

        def after_point() -> None:
            if sim.n_done != seen[0]:
                bar.update(sim.n_done - seen[0])
                seen[0] = sim.n_done

    t0 = time.perf_counter()
    times = drive(sim, view, scheduler, cadence, after_point=after_point)
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
