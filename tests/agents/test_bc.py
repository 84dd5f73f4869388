"""Behaviour cloning: a teacher's decisions map to env actions that reproduce it."""

from __future__ import annotations

import numpy as np
import pytest

import baselines
import hetgym
from agents.imitation.bc import collect, teacher_action
from agents.common.envtools import EnvConfig, policy_mask, window_rows, window_scenario
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
    assert len(data["teacher_avg_jct"]) == 2


def test_collect_returns_on_toy_by_hand():
    """SJF on toy-3jobs (devices cpu, v100): J1 on the V100 (action 1), J2 on the CPU
    (action 0), J3 on the V100 when J1 ends at t=3 (action 1). Step rewards (jct term,
    scale 3600 s): 0, -3 jobs x 3 s, -(2 jobs x 3 s + 1 job x 2 s) = 0, -9, -8 (/3600);
    returns-to-go with gamma 0.99: -16.7508, -16.92, -8; with gamma 1: -17, -17, -8."""
    sc = scenarios.get("toy-3jobs")
    cfg = EnvConfig(n_jobs=None, window=4)
    data = collect(sc, cfg, "sjf", episodes=1, seed=0)
    assert data["action"].tolist() == [1, 0, 1]
    np.testing.assert_allclose(data["ret"] * 3600.0, [-(0.99 * (9 + 0.99 * 8)), -(9 + 0.99 * 8), -8.0],
                               rtol=1e-6)
    assert data["teacher_avg_jct"].tolist() == [17 / 3]
    undiscounted = collect(sc, cfg, "sjf", episodes=1, seed=0, gamma=1.0)
    np.testing.assert_allclose(undiscounted["ret"] * 3600.0, [-17.0, -17.0, -8.0], rtol=1e-6)


def test_collect_undiscounted_return_is_minus_total_jct(window):
    """With gamma 1 an episode's first return-to-go is minus its total JCT in hours."""
    cfg = EnvConfig(n_jobs=12)
    for seed in (0, 1):
        data = collect(window, cfg, "sjf", episodes=1, seed=seed, gamma=1.0)
        total_h = data["teacher_avg_jct"][0] * 12 / 3600.0
        assert data["ret"][0] == pytest.approx(-total_h, rel=1e-5)
        assert data["ret"][-1] < 0 and np.all(np.diff(data["ret"]) >= -1e-9)
