"""The rollout values of a gated residual policy (:mod:`agents.residual`): what a run from
the current state is worth, on copies of the simulator.

:func:`copy_sim` copies the simulator and the base (``myopic``: without the jobs still to
arrive; ``fill``: with a sampled future, :mod:`agents.residual.futures`); :func:`base_value` /
:func:`base_summary` value the run that follows the base from now, :func:`deviation_value`
the run that takes one deviation now and then follows the base (a run that leaves arrived
jobs unfinished is worth ``inf``).
"""

from __future__ import annotations

import copy
import math
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:  # pragma: no cover
    from hetgym.envs.hetcluster import HetClusterEnv
    from hetgym.sim import Simulator

__all__ = ["Fill", "Value", "base_summary", "base_value", "copy_sim", "deviation_value"]


Fill = Callable[["Simulator"], None]


def copy_sim(sim: Simulator, sched: Any, myopic: bool = False, fill: Fill | None = None) -> tuple[Simulator, Any]:
    """Deep copies of ``sim`` and ``sched`` whose view reads the copied arrays
    (see :func:`agents.imitation.rollout.copy_env`). ``myopic``: in the copy, the jobs that have not
    arrived never arrive (arrival time ``inf``), so a run of it ends with the jobs arrived
    so far, and its metrics (:func:`hetgym.metrics.summarize`, over finished jobs) are theirs.
    ``fill(copy)``: rewrites the copy's not-yet-arrived jobs before its view is made (a
    sampled future, :meth:`agents.residual.futures.FutureSource.fill`)."""
    s, b = copy.deepcopy((sim, sched))
    if myopic:
        s.jobs.arrival[s.next_arrival:] = np.inf
    if fill is not None:
        fill(s)
    s.view = s.view.__class__(s)
    return s, b


Value = str | Callable[[dict[str, float]], float]


def _finish_summary(sim: Simulator, sched: Any, decide_now: bool) -> dict[str, float] | None:
    from agents.imitation.rollout import finish_sim

    # decide_now False is "wait": no decisions at this instant, the base from the next event on
    s = finish_sim(sim, sched, decide_now)
    # jobs left (a "wait" with nothing to wake the run): no value
    return None if sim.n_done < sim.next_arrival else s


def _value(s: dict[str, float] | None, metric: Value) -> float:
    """``metric`` of a run's summary; ``inf`` for a run that left jobs (None) or a non-finite value."""
    if s is None:
        return math.inf
    v = float(s[metric] if isinstance(metric, str) else metric(s))
    return v if math.isfinite(v) else math.inf


def _finish(sim: Simulator, sched: Any, metric: Value, decide_now: bool) -> float:
    return _value(_finish_summary(sim, sched, decide_now), metric)


def base_summary(sim: Simulator, sched: Any, myopic: bool = False, fill: Fill | None = None) -> dict[str, float] | None:
    """The summary of the run that follows ``sched`` from now (as :func:`base_value`;
    ``fill`` as :func:`copy_sim`); None when it leaves arrived jobs unfinished."""
    s, b = copy_sim(sim, sched, myopic, fill)
    return _finish_summary(s, b, True)


def base_value(sim: Simulator, sched: Any, metric: Value = "avg_jct", myopic: bool = False) -> float:
    """``metric`` (a summary column, or a function of the summary such as
    :meth:`ResidualConfig.value`) of the run that follows ``sched`` from now (on copies;
    ``myopic``: of the jobs arrived so far, :func:`copy_sim`)."""
    return _value(base_summary(sim, sched, myopic), metric)


def deviation_value(env: HetClusterEnv, sched: Any, action: int, metric: Value = "avg_jct",
                    myopic: bool = False, fill: Fill | None = None) -> float:
    """``metric`` (as :func:`base_value`) of the run that takes env ``action`` now (a start,
    a preemption or "wait"), then follows ``sched`` (on copies of ``env``'s bound simulator;
    ``fill`` as :func:`copy_sim`)."""
    s, b = copy_sim(env.sim, sched, myopic, fill)
    kind, job, dev = env.decode(action)
    if kind == "wait":
        return _finish(s, b, metric, False)
    if kind == "start":
        s.start(job, dev)
    elif kind == "preempt":
        s.preempt(job)
    else:  # pragma: no cover - decode gives only these
        raise ValueError(f"deviation_value: action {action} is a {kind}")
    return _finish(s, b, metric, True)
