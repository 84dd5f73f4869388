"""Ended episodes stay ended: after the step that terminates or truncates, ``step``
raises a clear ``RuntimeError`` until ``reset`` (every single env); the batched env
keeps Gymnasium's autoreset and never raises; Gymnasium's checker still passes."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env

import hetgym  # noqa: F401  (registers the envs)

SINGLE = ["HetCluster-v0", "HetClusterElastic-v0", "HetClusterPlacement-v0", "HetClusterRounds-v0"]
SMALL = {"HetCluster-v0": dict(scenario="toy-3jobs", window=4)}


def _first_feasible(env: gym.Env, i: int = 0) -> int:
    """The first feasible action, or at odd steps ``done``/``wait`` where feasible (so that
    decision envs move on to the next decision point)."""
    u = env.unwrapped
    mask = u.action_masks()
    end = getattr(u, "done_action", getattr(u, "wait_action", None))
    if i % 2 and end is not None and mask[end]:
        return int(end)
    return int(np.flatnonzero(mask)[0])


def _run_to_end(env: gym.Env, seed: int = 0, limit: int = 20_000) -> tuple[bool, bool]:
    env.reset(seed=seed)
    for i in range(limit):
        _, _, term, trunc, info = env.step(_first_feasible(env, i))
        if term or trunc:
            assert "episode_metrics" in info
            return term, trunc
    raise AssertionError("episode did not end")


@pytest.mark.parametrize("env_id", SINGLE)
@pytest.mark.parametrize("how", ["truncated", "natural"])
def test_step_after_end_raises_until_reset(env_id, how):
    kw = dict(SMALL.get(env_id, {}), n_jobs=4)
    if how == "truncated":
        kw["max_steps"] = 2
    env = gym.make(env_id, **kw)
    term, trunc = _run_to_end(env)
    assert trunc if how == "truncated" else term or trunc
    u = env.unwrapped
    now, steps = u.sim.now, u.steps
    for _ in range(2):
        with pytest.raises(RuntimeError, match=r"after the episode ended.*reset\(\)"):
            env.step(_first_feasible(env))
    assert u.sim.now == now and u.steps == steps  # nothing simulated, no charge again
    term2, trunc2 = _run_to_end(env, seed=1)  # reset makes it usable again
    assert term2 or trunc2


@pytest.mark.parametrize("env_id", SINGLE)
def test_check_env_after_the_guard(env_id):
    """Gymnasium's checker (and the passive checker of ``gym.make``) still pass."""
    env = gym.make(env_id, **SMALL.get(env_id, {}))
    check_env(env.unwrapped, skip_render_check=True)
    _run_to_end(gym.make(env_id, **SMALL.get(env_id, {}), n_jobs=4))  # through PassiveEnvChecker


def test_batched_env_autoresets_and_never_raises():
    """The vector env resets finished rows itself (Gymnasium's autoreset): stepping past
    many episode ends raises nothing and reports them."""
    venv = gym.make_vec("HetCluster-v0", num_envs=2, vectorization_mode="vector_entry_point",
                        scenario="toy-3jobs", window=4, max_steps=3)
    venv.reset(seed=0)
    ends = 0
    for _ in range(30):
        masks = np.stack(venv.call("action_masks")) if hasattr(venv, "call") else None
        acts = np.array([int(np.flatnonzero(m)[0]) for m in masks]) if masks is not None \
            else np.full(2, venv.single_action_space.n - 1)
        _, _, term, trunc, _ = venv.step(acts)
        ends += int(np.sum(term | trunc))
    assert ends >= 4
    venv.close()
