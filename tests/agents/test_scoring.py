"""The scoring policy: one shared network per candidate, the same weights at any size."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest
import torch

import hetgym  # noqa: F401  (registers the envs)
from agents.sb3.scoring import ABSENT, MaskableScoringPolicy, ScoringPolicy, policy_kwargs, transfer


def _policy(env, cls=MaskableScoringPolicy, seed=0):
    torch.manual_seed(seed)
    return cls(env.observation_space, env.action_space, lambda _: 1e-3,
               **policy_kwargs(env, embed_dim=16))


def _logits(policy, obs):
    with torch.no_grad():
        return policy.mlp_extractor.scores(torch.as_tensor(obs[None], dtype=torch.float32))[0][0].numpy()


def _env(window, **kw):
    return gym.make("HetCluster-v0", scenario="hetero-small", window=window,
                    observation="scaled", **kw).unwrapped


def _busy_state(env, seed=3, steps=12):
    """Reset and wait (or take the first feasible start) ``steps`` times: a state with a queue."""
    obs, _ = env.reset(seed=seed)
    for _ in range(steps):
        m = env.action_masks()
        a = len(m) - 1 if m[-1] else int(np.flatnonzero(m)[0])
        obs, _, term, trunc, _ = env.step(a)
        if term or trunc:
            break
    return obs


def _embed(obs8, env8, env512):
    """The window-8 observation written into the window-512 layout (slots 8.. empty)."""
    out = np.zeros(env512.observation_space.shape, np.float32)
    where = {(f.block, f.slot, f.name): f.index for f in env512.obs_layout}
    for f in env8.obs_layout:
        out[where[(f.block, f.slot, f.name)]] = obs8[f.index]
    return out


def test_same_weights_score_a_candidate_the_same_at_window_8_and_512():
    env8, env512 = _env(8), _env(512)
    p8 = _policy(env8)
    p512 = transfer(p8, env512)
    assert sum(x.numel() for x in p8.parameters()) == sum(x.numel() for x in p512.parameters())
    obs8 = _busy_state(env8)
    assert obs8[[f.index for f in env8.obs_layout if f.name == "present"]].sum() >= 2
    l8, l512 = _logits(p8, obs8), _logits(p512, _embed(obs8, env8, env512))
    c = env8.n_dev
    assert l8.shape == (8 * c + 1,) and l512.shape == (512 * c + 1,)
    np.testing.assert_allclose(l512[: 8 * c], l8[:-1], rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(l512[-1], l8[-1], rtol=1e-5, atol=1e-5)  # wait
    assert np.all(l512[8 * c: -1] == ABSENT)                              # padding


def test_same_weights_act_validly_on_windows_of_8_and_512():
    env8, env512 = _env(8, n_jobs=600), _env(512, n_jobs=600)
    p8 = _policy(env8)
    p512 = transfer(p8, env512)
    for env, pol in ((env8, p8), (env512, p512)):
        obs = _busy_state(env, steps=5)
        m = env.action_masks()
        a, _ = pol.predict(obs, action_masks=m, deterministic=True)
        assert m[int(a)]
        assert _logits(pol, obs).shape == (env.action_space.n,)


def test_permuting_the_slots_permutes_the_scores():
    env = _env(8)
    pol = _policy(env)
    obs = _busy_state(env)
    lay = env.obs_layout
    perm = np.asarray([3, 0, 7, 1, 6, 2, 5, 4])
    jobs = {k: [f.index for f in lay if f.block == "job" and f.slot == k] for k in range(8)}
    new = obs.copy()
    for k in range(8):
        new[jobs[k]] = obs[jobs[perm[k]]]
    c = env.n_dev
    l0, l1 = _logits(pol, obs), _logits(pol, new)
    np.testing.assert_allclose(l1[:-1].reshape(8, c), l0[:-1].reshape(8, c)[perm], rtol=1e-5,
                               atol=1e-5)
    np.testing.assert_allclose(l1[-1], l0[-1], rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("env_id,kw", [
    ("HetCluster-v0", {"preemption": True}),
    ("HetClusterPlacement-v0", {}),
    ("HetClusterElastic-v0", {}),
    ("HetClusterRounds-v0", {}),
])
def test_candidate_tables_of_every_env(env_id, kw):
    env = gym.make(env_id, **kw).unwrapped
    t = env.candidate_table
    d = env.observation_space.shape[0]
    assert t.index.shape[0] == env.action_space.n - 1 == t.present.shape[0]
    assert t.index.shape[1] == len(t.names) and t.obs_dim == d
    assert t.index.min() >= 0 and t.index.max() <= d + 1
    obs, _ = env.reset(seed=0)
    pol = _policy(env)
    ext = np.concatenate([obs, [0.0, 1.0]])
    here = (ext[t.present] > 0.5).all(axis=1)
    m = env.action_masks()
    assert not (m[:-1] & ~here).any()  # every feasible candidate is present
    a, _ = pol.predict(obs, action_masks=m, deterministic=True)
    assert m[int(a)]


def test_plain_ppo_policy_never_picks_padding():
    env = _env(8)
    pol = _policy(env, ScoringPolicy)
    obs, _ = env.reset(seed=0)
    with torch.no_grad():
        dist = pol.get_distribution(torch.as_tensor(obs[None]))
    p = dist.distribution.probs[0].numpy()
    here = obs[[f.index for f in env.obs_layout if f.name == "present"]] > 0.5
    absent = np.repeat(~here, env.n_dev)
    assert p[:-1][absent].sum() < 1e-12 and p.sum() == pytest.approx(1.0)


def test_agent_config_builds_the_scoring_policy_and_it_saves(tmp_path):
    from sb3_contrib import MaskablePPO

    from agents.common.envtools import EnvConfig
    from agents.sb3.agent import AgentConfig, make_vec_env

    ec = EnvConfig(window=8, n_jobs=16, observation="scaled")
    venv = make_vec_env("hetero-small", ec, n_envs=2)
    model = AgentConfig(features="score", n_steps=16, batch_size=16, n_epochs=1,
                        embed_dim=16).build(venv, device="auto")
    assert isinstance(model.policy, MaskableScoringPolicy)
    model.learn(32)
    model.save(tmp_path / "m.zip")
    back = MaskablePPO.load(tmp_path / "m.zip", device="cpu")
    obs = venv.reset()
    masks = np.stack(venv.env_method("action_masks"))
    a1, _ = model.predict(obs, action_masks=masks, deterministic=True)
    a2, _ = back.predict(obs, action_masks=masks, deterministic=True)
    np.testing.assert_array_equal(a1, a2)
