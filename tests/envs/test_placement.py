"""HetClusterPlacement-v0: TOPO-AWARE's decision (GPU set within one server, or postpone)."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env

import hetgym  # noqa: F401  (registers the ids)
from hetgym.decisions import Placement, SchedulingError, Start
from tests.envs.decision_helpers import assert_exact

ID = "HetClusterPlacement-v0"


@pytest.mark.parametrize("name", ["topo-aware", "topo-aware-p", "topo-bf", "topo-fcfs"])
@pytest.mark.parametrize("scenario", ["topo-prototype", "topo-sim"])
def test_paper_scheduler_acts_exactly_as_in_simulate(scenario, name):
    """The scheduler's decisions, encoded as actions one at a time, give its
    hetgym.simulate run: same jobs table, same metrics, return = - total JCT."""
    assert_exact(ID, scenario, name, window=100)


def test_check_env_and_spaces():
    env = gym.make(ID, scenario="topo-sim", n_jobs=16, window=4)
    check_env(env.unwrapped, skip_render_check=True)
    u = env.unwrapped
    # topo-sim: 5 servers of 4 P100; widest list: 2 of 4 GPUs on 5 servers = 30
    assert u.max_candidates == 30
    assert env.action_space.n == 4 * 30 + 1
    assert env.observation_space.shape == (4 * 8 + 4 * 30 * 6 + 5,)
    assert len(u.obs_layout) == env.observation_space.shape[0]


def _rollout(seed, policy_seed=0, n=200):
    env = gym.make(ID, scenario="topo-sim", n_jobs=24, window=4)
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


def test_seeding_is_deterministic():
    np.testing.assert_array_equal(_rollout(5), _rollout(5))
    assert not np.array_equal(_rollout(5), _rollout(6))


def test_candidates_are_free_gpu_sets_of_one_server():
    env = gym.make(ID, scenario="topo-sim", n_jobs=24, window=4)
    u = env.unwrapped
    env.reset(seed=1)
    sim = u.sim
    k_n, m_n = u.window, u.max_candidates
    mask = u.action_masks()
    assert mask[u.done_action]
    for a in np.flatnonzero(mask[:-1]).tolist():
        d = u.decode(a)
        j = u.window_jobs()[a // m_n]
        assert isinstance(d, Start) and d.job == j
        nodes = np.asarray(d.placement.nodes)
        assert len(set(nodes.tolist())) == 1 and len(nodes) == sim.jobs.workers[j]
        assert (sim.ns.gpu_owner[nodes, d.placement.gpus] < 0).all()
        assert u.encode(d) == a  # the codec is a bijection on the candidates
    # a start with the same GPU set in another worker order is the same action
    a = int(np.flatnonzero(mask[:-1])[-1])
    d = u.decode(a)
    rev = Start(d.job, d.device, Placement.of(d.placement.nodes[::-1], d.placement.gpus[::-1]))
    assert u.encode(rev) == a
    assert k_n * m_n == u.done_action


def test_masked_action_raises_or_is_done():
    env = gym.make(ID, scenario="topo-sim", n_jobs=24, window=4, invalid_action="raise")
    env.reset(seed=0)
    u = env.unwrapped
    bad = int(np.flatnonzero(~u.action_masks())[0])
    with pytest.raises(SchedulingError, match="slot|candidates"):
        env.step(bad)
    env2 = gym.make(ID, scenario="topo-sim", n_jobs=24, window=4)
    env2.reset(seed=0)
    t0 = env2.unwrapped.sim.now
    _, _, _, _, info = env2.step(bad)
    assert info["invalid_action"] and env2.unwrapped.sim.now > t0  # taken as done
    with pytest.raises(SchedulingError, match="not in the window"):
        env2.unwrapped.encode(Start(10**6, 0, None))


def test_a_start_takes_no_time_and_done_advances():
    env = gym.make(ID, scenario="topo-sim", n_jobs=24, window=4)
    u = env.unwrapped
    env.reset(seed=2)
    t0, q0 = u.sim.now, u.sim.n_queue
    a = int(np.flatnonzero(u.action_masks()[:-1])[0])
    _, r, _, _, info = env.step(a)
    assert u.sim.now == t0 and info["queued"] == q0 - 1 and r == 0.0
    _, r, _, _, info = env.step(u.done_action)
    assert u.sim.now > t0 and r < 0
