"""What the three decision envs share (hetgym/envs/decision_base.py): skip_forced."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pandas as pd
import pytest

import baselines
from hetgym import scenarios
from hetgym.envs.decision_base import SchedulerAgent, play
from hetgym.envs.decision_vec import DecisionVecEnv
from hetgym.metrics import job_table

CASES = [("HetClusterPlacement-v0", "topo-sim", {}, {"window": 4}),
         ("HetClusterElastic-v0", "andreas-sim", {}, {"window": 4, "run_window": 3}),
         ("HetClusterRounds-v0", "hadar-sim", {"n_jobs": 24}, {"window": 6})]


@pytest.mark.parametrize("env_id,name,skw,kw", CASES, ids=[c[0] for c in CASES])
def test_skip_forced_never_stops_where_only_done_is_feasible(env_id, name, skw, kw):
    env = gym.make(env_id, scenario=scenarios.get(name, **skw), n_jobs=12, skip_forced=True,
                   max_steps=120, **kw)
    rng = np.random.default_rng(0)
    env.reset(seed=1)
    ends = 0
    for _ in range(300):
        mask = env.unwrapped.action_masks()
        assert mask[:-1].any()
        _, _, term, trunc, info = env.step(int(rng.choice(np.flatnonzero(mask))))
        if term or trunc:
            ends += 1
            assert info["done"] == 12 or trunc
            env.reset()
    assert ends >= 1


def test_skip_forced_keeps_the_run_of_a_stateless_scheduler():
    """topo-bf decides nothing where nothing fits: skipping those points changes nothing."""
    runs = []
    for skip in (False, True):
        env = gym.make("HetClusterPlacement-v0", scenario="topo-sim", n_jobs=None, window=100,
                       skip_forced=skip)
        steps, _ = play(env, SchedulerAgent(baselines.make("topo-bf")), seed=0)
        runs.append((len(steps), job_table(env.unwrapped.sim)))
    assert runs[1][0] < runs[0][0]  # fewer steps
    pd.testing.assert_frame_equal(runs[0][1], runs[1][1])


@pytest.mark.parametrize("env_id,name,skw,kw", CASES, ids=[c[0] for c in CASES])
def test_make_vec_gives_the_vector_entry_point(env_id, name, skw, kw):
    """gym.make_vec uses the id's vector_entry_point (DecisionVecEnv): (N, A) masks."""
    v = gym.make_vec(env_id, num_envs=2, scenario=scenarios.get(name, **skw), n_jobs=8, **kw)
    assert isinstance(v, DecisionVecEnv)
    obs, info = v.reset(seed=0)
    assert obs.shape == (2,) + v.single_observation_space.shape
    masks = v.action_masks()
    assert masks.shape == (2, v.single_action_space.n)
    np.testing.assert_array_equal(masks, info["action_mask"])
    _, r, _, _, _ = v.step(np.array([np.flatnonzero(m)[0] for m in masks]))
    assert r.shape == (2,)
    sync = gym.make_vec(env_id, num_envs=2, vectorization_mode="sync",
                        scenario=scenarios.get(name, **skw), n_jobs=8, **kw)
    assert np.stack(sync.call("action_masks")).shape == masks.shape


def _vec_and_singles(env_id, name, skw, kw, n, seed, rng_seed, n_steps, **vec_kw):
    """The vector env of ``n`` short-episode envs (max_steps=15) and ``n`` single envs, all
    reset (single env i with ``seed + i``; their first observations checked equal), and
    a generator of ``n_steps`` random masked vector steps: (masks, actions, step result)."""
    sc = scenarios.get(name, **skw)
    v = gym.make_vec(env_id, num_envs=n, scenario=sc, n_jobs=6, max_steps=15, **vec_kw, **kw)
    singles = [gym.make(env_id, scenario=sc, n_jobs=6, max_steps=15, **kw).unwrapped
               for _ in range(n)]
    obs, _ = v.reset(seed=seed)
    for i, e in enumerate(singles):
        o, _ = e.reset(seed=seed + i)
        np.testing.assert_array_equal(obs[i], o)
    rng = np.random.default_rng(rng_seed)

    def steps():
        for _ in range(n_steps):
            masks = v.action_masks()
            acts = np.array([rng.choice(np.flatnonzero(m)) for m in masks])
            yield masks, acts, v.step(acts)

    return v, singles, steps()


@pytest.mark.parametrize("env_id,name,skw,kw", CASES, ids=[c[0] for c in CASES])
def test_vector_env_steps_exactly_like_single_envs(env_id, name, skw, kw):
    """Env by env, the vector env's trajectories are those of single envs seeded seed + i,
    across next-step autoresets (short episodes: max_steps=15)."""
    n = 3
    v, singles, steps = _vec_and_singles(env_id, name, skw, kw, n, seed=5, rng_seed=0, n_steps=60)
    pending = [False] * n
    resets = 0
    for masks, acts, (obs, rew, term, trunc, _) in steps:
        for i, e in enumerate(singles):
            if pending[i]:  # next_step autoreset: this step resets env i, its action ignored
                o, _ = e.reset()
                r, t, u = 0.0, False, False
                pending[i] = False
                resets += 1
            else:
                np.testing.assert_array_equal(masks[i], e.action_masks())
                o, r, t, u, _ = e.step(int(acts[i]))
                pending[i] = t or u
            np.testing.assert_array_equal(obs[i], o)
            assert (rew[i], term[i], trunc[i]) == (r, t, u)
    assert resets >= n


@pytest.mark.parametrize("env_id,name,skw,kw", CASES[:1], ids=[CASES[0][0]])
def test_vector_env_same_step_autoreset(env_id, name, skw, kw):
    """same_step: the ending step returns the next episode's first observation; the last
    one is in info["final_obs"], as for single envs reset right after the end."""
    n = 2
    v, singles, steps = _vec_and_singles(env_id, name, skw, kw, n, seed=3, rng_seed=1, n_steps=50,
                                         autoreset_mode="same_step")
    ends = 0
    for _, acts, (obs, rew, term, trunc, info) in steps:
        for i, e in enumerate(singles):
            o, r, t, u, _ = e.step(int(acts[i]))
            assert (rew[i], term[i], trunc[i]) == (r, t, u)
            if t or u:
                ends += 1
                assert info["_final_obs"][i]
                np.testing.assert_array_equal(info["final_obs"][i], o)
                o, _ = e.reset()
            np.testing.assert_array_equal(obs[i], o)
    assert ends >= n


@pytest.mark.parametrize("env_id,name,skw,kw", CASES, ids=[c[0] for c in CASES])
def test_render_shows_the_cluster_and_the_decision_point(env_id, name, skw, kw):
    sc = scenarios.get(name, **skw)
    env = gym.make(env_id, scenario=sc, n_jobs=12, render_mode="ansi", **kw)
    env.reset(seed=1)
    text = env.render()
    mask = env.unwrapped.action_masks()
    slots = env.unwrapped.window_jobs().tolist()
    assert text.splitlines()[0].startswith("t=")
    assert f"decision point {env.unwrapped.point}: window {slots[:8]}" in text
    assert text.endswith(f"{int(mask[:-1].sum())} feasible decisions besides done")
    img = gym.make(env_id, scenario=sc, n_jobs=12, render_mode="rgb_array", **kw)
    img.reset(seed=1)
    frame = img.render()
    assert frame.ndim == 3 and frame.shape[2] == 3 and frame.dtype == np.uint8
    assert gym.make(env_id, scenario=sc, n_jobs=12, **kw).unwrapped.render() is None
