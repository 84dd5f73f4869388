"""HetCluster-v0's ``observation="scaled"`` layout: log times, speed-ups, no episode fractions."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest

import hetgym  # noqa: F401  (registers the envs)
from hetgym.envs.features import layout, obs_size


def _lt(x):
    return min(1.0, np.log1p(max(x, 0.0)) / np.log1p(1e7))


def _run(env, seed=0, steps=60):
    """Waits where it can (a queue builds up), else the first feasible start; the states."""
    obs, _ = env.reset(seed=seed)
    out = [obs]
    for _ in range(steps):
        m = env.action_masks()
        a = len(m) - 1 if m[-1] else int(np.flatnonzero(m)[0])
        obs, _, term, trunc, _ = env.step(a)
        out.append(obs)
        assert env.observation_space.contains(obs)
        if term or trunc:
            break
    return out


def test_default_layout_is_v0_and_scaled_is_an_option():
    env = gym.make("HetCluster-v0").unwrapped
    assert env.observation == "v0"
    assert {f.name for f in env.obs_layout if f.block == "global"} >= {"arrived", "done"}
    s = gym.make("HetCluster-v0", observation="scaled").unwrapped
    names = {(f.block, f.name) for f in s.obs_layout}
    assert ("global", "arrived") not in names and ("global", "done") not in names
    assert {("job", f"speedup_{d}") for d in s.devices} <= names
    assert s.observation_space.shape == (obs_size(s.window, s.n_dev, 0, "scaled"),)
    with pytest.raises(ValueError, match="observation"):
        gym.make("HetCluster-v0", observation="v2")


def test_scaled_features_are_the_documented_formulas():
    env = gym.make("HetCluster-v0", scenario="hetero-small", window=4,
                   observation="scaled").unwrapped
    obs = _run(env, steps=12)[-1]
    idx = {(f.block, f.slot, f.name): f.index for f in env.obs_layout}
    sim = env.sim
    jobs = env.window_jobs()
    assert len(jobs) >= 2
    for k, j in enumerate(jobs.tolist()):
        assert obs[idx["job", k, "wait"]] == pytest.approx(_lt(sim.now - sim.jobs.arrival[j]), abs=1e-6)
        t = sim.jobs.tput[j]
        for c, d in enumerate(env.devices):
            assert obs[idx["job", k, f"speedup_{d}"]] == pytest.approx(t[c] / t.max(), abs=1e-6)
    q = sim.n_queue
    assert obs[idx["global", 0, "queue_length"]] == pytest.approx(min(1, np.log2(1 + q) / 10), abs=1e-6)
    assert obs[idx["global", 0, "beyond_window"]] == pytest.approx(
        min(1, np.log2(1 + q - len(jobs)) / 10), abs=1e-6)


def test_scaled_times_do_not_saturate_where_v0_does():
    """hetero-small's jobs last hours to days: v0 (t / (t + 1 h)) squeezes most of its
    best-duration features above 0.9 (a fifth of them on this run), the log scale none."""
    def high(observation):
        env = gym.make("HetCluster-v0", scenario="hetero-small", observation=observation).unwrapped
        col = [f.index for f in env.obs_layout if f.name == "best_duration"]
        pres = [f.index for f in env.obs_layout if f.name == "present"]
        vals = np.concatenate([o[col][o[pres] > 0.5] for o in _run(env, steps=80)])
        return float((vals > 0.9).mean())

    assert high("v0") > 0.1
    assert high("scaled") == 0.0


def test_layout_function_matches_the_env():
    env = gym.make("HetCluster-v0", observation="scaled", preemption=True).unwrapped
    lay = layout(env.window, env.n_dev, env.run_window, env.devices, "scaled")
    assert lay == env.obs_layout
    assert [f.index for f in lay] == list(range(env.observation_space.shape[0]))
