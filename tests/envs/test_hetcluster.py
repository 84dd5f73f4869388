"""HetCluster-v0: Gymnasium API conformance, determinism, masks, reward, render."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env

import hetgym
from hetgym.decisions import SchedulingError


def _ids() -> list[str]:
    return [k for k, s in gym.registry.items() if str(s.entry_point).startswith("hetgym.")]


@pytest.mark.parametrize("env_id", _ids())
def test_check_env_every_registered_id(env_id):
    env = gym.make(env_id)
    check_env(env.unwrapped, skip_render_check=True)


def test_check_env_preemption_option():
    env = gym.make("HetCluster-v0", preemption=True)
    check_env(env.unwrapped, skip_render_check=True)
    assert env.action_space.n == 16 * 4 + 8 + 1


def test_make_with_namespace_and_scenario_name():
    env = gym.make("hetgym:HetCluster-v0", scenario="toy-3jobs", window=4)
    obs, info = env.reset(seed=0)
    assert env.observation_space.contains(obs)
    assert info["action_mask"].shape == (env.action_space.n,)


def _rollout(env, seed, n_steps=300, policy_seed=0):
    rng = np.random.default_rng(policy_seed)
    obs, _ = env.reset(seed=seed)
    traj = [obs]
    rewards = []
    for _ in range(n_steps):
        mask = env.unwrapped.action_masks()
        a = int(rng.choice(np.flatnonzero(mask)))
        obs, r, term, trunc, info = env.step(a)
        traj.append(obs)
        rewards.append(r)
        if term or trunc:
            obs, _ = env.reset()
            traj.append(obs)
    return np.stack(traj), np.asarray(rewards)


def test_same_seed_same_trajectory():
    a = _rollout(gym.make("HetCluster-v0"), seed=3)
    b = _rollout(gym.make("HetCluster-v0"), seed=3)
    np.testing.assert_array_equal(a[0], b[0])
    np.testing.assert_array_equal(a[1], b[1])
    c = _rollout(gym.make("HetCluster-v0"), seed=4)
    assert not np.array_equal(a[0][:50], c[0][:50])


def test_episode_return_is_minus_total_jct():
    env = gym.make("HetCluster-v0", scenario="hetero-small", n_jobs=24)
    rng = np.random.default_rng(1)
    env.reset(seed=0)
    ret, jct_term, done = 0.0, 0.0, False
    while not done:
        a = int(rng.choice(np.flatnonzero(env.unwrapped.action_masks())))
        _, r, term, trunc, info = env.step(a)
        ret += r
        jct_term += info["reward_terms"]["jct"]
        done = term or trunc
    assert term and not trunc
    m = info["episode_metrics"]
    assert m["unfinished_jobs"] == 0
    total_jct_h = m["avg_jct"] * m["jobs"] / 3600.0
    assert ret == pytest.approx(-total_jct_h, rel=1e-9)
    # the per-step "jct" terms (in reward units, like the reward) add up to the same
    assert jct_term == pytest.approx(-total_jct_h, rel=1e-9)


def test_mask_matches_feasibility_and_invalid_raise():
    env = gym.make("HetCluster-v0", scenario="toy-3jobs", window=4, invalid_action="raise")
    env.reset(seed=0)
    u = env.unwrapped
    mask = u.action_masks()
    # toy: 3 jobs wait, 1 V100 and 1 CPU slot free -> every (job, device) start is feasible
    assert mask[: 3 * u.n_dev].all()
    assert not mask[3 * u.n_dev: u.n_start_actions].any()
    # start job 0 on the GPU, then job 1 on the GPU is infeasible
    gpu = u.devices.index("v100")
    env.step(0 * u.n_dev + gpu)
    mask = u.action_masks()
    assert not mask[0 * u.n_dev + gpu]
    with pytest.raises(SchedulingError, match="cannot start on v100"):
        env.step(0 * u.n_dev + gpu)
    with pytest.raises(ValueError, match="out of range"):
        env.step(u.action_space.n)


def test_toy_optimal_sequence_reaches_17():
    """Hand-computed optimum of the 3-job toy (AlloX example): total JCT 17 s."""
    env = gym.make("HetCluster-v0", scenario="toy-3jobs", window=4, reward_scale=1.0)
    env.reset(seed=0)
    u = env.unwrapped
    gpu, cpu = u.devices.index("v100"), u.devices.index("cpu")
    # J1 on CPU (4), J2 on GPU (4); then J3 on GPU at t=4 (5) -> 4 + 4 + 9 = 17
    ret = 0.0
    for a in (0 * u.n_dev + cpu, 0 * u.n_dev + gpu):  # after the first start the window shifts
        _, r, term, trunc, info = env.step(a)
        ret += r
    while not (term or trunc):
        _, r, term, trunc, info = env.step(u.wait_action if not u.action_masks()[:u.wait_action].any()
                                           else 0 * u.n_dev + gpu)
        ret += r
    assert ret == pytest.approx(-17.0)


def test_make_vec_and_sb3_check_env():
    venv = gym.make_vec("HetCluster-v0", num_envs=2, vectorization_mode="sync")
    obs, info = venv.reset(seed=0)
    assert obs.shape == (2,) + venv.single_observation_space.shape
    obs, r, term, trunc, info = venv.step(np.array([venv.single_action_space.n - 1] * 2))
    assert r.shape == (2,)
    sb3 = pytest.importorskip("stable_baselines3")
    from stable_baselines3.common.env_checker import check_env as sb3_check

    sb3_check(gym.make("HetCluster-v0").unwrapped, warn=False)
    _ = sb3


@pytest.mark.parametrize("mode", ["ansi", "rgb_array"])
def test_render(mode):
    env = gym.make("HetCluster-v0", render_mode=mode)
    env.reset(seed=0)
    env.step(0)
    out = env.render()
    if mode == "ansi":
        assert "queued=" in out and "v100" in out
    else:
        assert out.ndim == 3 and out.shape[2] == 3 and out.dtype == np.uint8
        assert out.std() > 0


def test_bad_arguments():
    with pytest.raises(ValueError, match="invalid_action"):
        gym.make("HetCluster-v0", invalid_action="ignore")
    with pytest.raises(KeyError, match="unknown scenario"):
        gym.make("HetCluster-v0", scenario="nope")
    assert "HetCluster-v0" in gym.registry
    assert hetgym.scenarios.DEFAULT in hetgym.scenarios.names()
