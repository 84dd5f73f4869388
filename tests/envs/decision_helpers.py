"""Shared checks of the decision envs: a paper scheduler acting through an env's actions
gives exactly its ``hetgym.simulate`` run."""

from __future__ import annotations

import warnings

import gymnasium as gym
import numpy as np
import pandas as pd
import pytest

import baselines
import hetgym
from hetgym.envs.decision_base import SchedulerAgent, decision_point_kwargs, play
from hetgym.metrics import job_table

#: Metrics that time the scheduler's calls (wall clock), not the run.
TIMING = {"decision_time_p50", "decision_time_p99"}


def run_both(env_id: str, scenario: str, name: str, seed: int = 3, **kw):
    """The scheduler ``name`` through ``env_id``'s actions and through ``hetgym.simulate``
    (same simulator seed): ``(steps, final info, env jobs table, simulate Result)``."""
    sched = baselines.make(name)
    env = gym.make(env_id, scenario=scenario, n_jobs=None, **decision_point_kwargs(sched), **kw)
    steps, info = play(env, SchedulerAgent(sched), seed=seed)
    sim = env.unwrapped.sim
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = hetgym.simulate(env.unwrapped.scenario, baselines.make(name), seed=sim.seed)
    return steps, info, job_table(sim), res


def assert_exact(env_id: str, scenario: str, name: str, **kw) -> None:
    """Same jobs table, same metrics (but the timing ones), return = - total JCT (h)."""
    steps, info, jobs, res = run_both(env_id, scenario, name, **kw)
    pd.testing.assert_frame_equal(jobs, res.jobs)
    got = info["episode_metrics"]
    for k, v in res.metrics.items():
        if k in TIMING:
            continue
        assert (v == got[k]) or (np.isnan(v) and np.isnan(got[k])), (k, v, got[k])
    assert info["done"] == len(jobs) and not res.stalled
    # the undiscounted return is minus the objective's metrics (hetgym.envs.reward)
    m, scale = res.metrics, 3600.0
    paid = {"jct": res.jobs["jct"].sum() / scale, "makespan": m["makespan"] / scale,
            "energy_cost": m["energy_cost"], "tardiness": m["tardiness_cost"] / scale}
    weights = env_weights(env_id, scenario)
    want = -sum(w * paid[k] for k, w in weights.items())
    assert sum(s[3] for s in steps) == pytest.approx(want, rel=1e-9, abs=1e-9)


def env_weights(env_id: str, scenario: str) -> dict[str, float]:
    """The scenario objective's weights."""
    return gym.make(env_id, scenario=scenario).unwrapped.reward.weights
