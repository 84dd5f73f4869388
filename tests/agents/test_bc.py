"""Behaviour cloning: a teacher's decisions map to env actions that reproduce it."""

from __future__ import annotations

import numpy as np
import pytest

import baselines
import hetgym
from agents.bc import collect, teacher_action
from agents.envtools import EnvConfig, policy_mask, window_rows, window_scenario
from hetgym import scenarios


@pytest.fixture(scope="module")
def window():
    sc = scenarios.get(scenarios.DEFAULT, n_jobs=96, seed=4)
    return window_scenario(sc, window_rows(EnvConfig(n_jobs=24).make(sc), 2))


@pytest.mark.parametrize("teacher", ["fifo", "sjf"])
def test_teacher_in_env_reproduces_simulate(window, teacher):
    """Rolling FIFO/SJF through the action space gives their hetgym.simulate result."""
    cfg = EnvConfig(n_jobs=None, window=32)
    env = cfg.make(window)
    env.reset(seed=0)
    sched = baselines.make(teacher)
    sched.reset(env.sim.view)
    done, info = False, {}
    while not done:
        a = teacher_action(env, sched, policy_mask(env, cfg.no_idle_wait))
        _, _, term, trunc, info = env.step(a)
        done = term or trunc
    ref = hetgym.simulate(window, baselines.make(teacher), seed=0).summary()
    assert info["episode_metrics"]["avg_jct"] == pytest.approx(ref["avg_jct"], rel=1e-9)


def test_collect_shapes(window):
    cfg = EnvConfig(n_jobs=12)
    data = collect(window, cfg, "sjf", episodes=2, seed=0)
    n = len(data["action"])
    assert data["obs"].shape[0] == n == len(data["ret"]) == data["mask"].shape[0]
    assert data["mask"][np.arange(n), data["action"]].all()
    assert (data["ret"] <= 0).all() and len(data["teacher_avg_jct"]) == 2
