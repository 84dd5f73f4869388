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


def run_both(env_id: str, scenario: str, name: str, seed: int = 3, params: dict | None = None,
             **kw):
    """The scheduler ``name`` through ``env_id``'s actions and through ``hetgym.simulate``
    (same simulator seed): ``(steps, final info, env jobs table, simulate Result)``."""
    params = params or {}
    sched = baselines.make(name, **params)
    env = gym.make(env_id, scenario=scenario, n_jobs=None, **decision_point_kwargs(sched), **kw)
    steps, info = play(env, SchedulerAgent(sched), seed=seed)
    sim = env.unwrapped.sim
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = hetgym.simulate(env.unwrapped.scenario, baselines.make(name, **params), seed=sim.seed)
    return steps, info, job_table(sim), res


def assert_exact(env_id: str, scenario: str, name: str, params: dict | None = None,
                 **kw) -> None:
    """Same jobs table, same metrics (but the timing ones), and the return is minus the
    objective's metrics."""
    steps, info, jobs, res = run_both(env_id, scenario, name, params=params, **kw)
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


def random_rollout(env_id: str, scenario: str, seed: int, policy_seed: int = 0, n: int = 200,
                   **kw) -> np.ndarray:
    """Observations and rewards of ``n`` uniformly random feasible actions (resetting at
    each episode end), concatenated."""
    env = gym.make(env_id, scenario=scenario, **kw)
    rng = np.random.default_rng(policy_seed)
    obs, _ = env.reset(seed=seed)
    out = [obs]
    for _ in range(n):
        a = int(rng.choice(np.flatnonzero(env.unwrapped.action_masks())))
        obs, r, term, trunc, info = env.step(a)
        out.append(np.append(obs, r))
        if term or trunc:
            assert "episode_metrics" in info
            obs, _ = env.reset()
    return np.concatenate(out)
