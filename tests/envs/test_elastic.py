"""HetClusterElastic-v0: ANDREAS' decision (node and GPU count, postpone, move, preempt)."""

from __future__ import annotations

from collections import Counter

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env

import baselines
import hetgym  # noqa: F401  (registers the ids)
from hetgym.decisions import Move, Preempt, SchedulingError, Start
from hetgym.envs.decision_base import SchedulerAgent, decision_point_kwargs, play
from hetgym.sim.codes import GRACE, QUEUED, RUNNING
from tests.envs.decision_helpers import assert_exact, random_rollout

ID = "HetClusterElastic-v0"


@pytest.mark.parametrize("name", ["andreas-fifo", "andreas-edf", "andreas-ps", "andreas-rg"])
@pytest.mark.parametrize("scenario", ["andreas-armida", "andreas-sim"])
def test_paper_scheduler_acts_exactly_as_in_simulate(scenario, name):
    """Decisions encoded one at a time give the hetgym.simulate run: same jobs table,
    same metrics, return = - (energy cost + weighted tardiness / 3600)."""
    # RG on andreas-armida: 100 iterations per decision point, not 1,000 (25 s -> 3 s)
    params = {"max_iter": 100} if name == "andreas-rg" and scenario == "andreas-armida" else {}
    assert_exact(ID, scenario, name, params=params, window=100, run_window=40)


def test_rg_uses_moves_and_preemptions():
    """ANDREAS-RG's run in the env carries out starts, moves and preemptions as actions."""
    sched = baselines.make("andreas-rg")
    env = gym.make(ID, scenario="andreas-sim", n_jobs=None, window=100, run_window=40,
                   **decision_point_kwargs(sched))
    u = env.unwrapped
    kinds: Counter = Counter()
    agent = SchedulerAgent(sched)
    act = agent.act

    def counting(e):
        a = act(e)
        kinds[type(e.decode(a)).__name__ if a != e.done_action else "done"] += 1
        return a

    agent.act = counting
    _, info = play(env, agent, seed=3)
    assert info["done"] == u.sim.n_jobs
    assert kinds["Start"] > 0 and kinds["Move"] > 0 and kinds["Preempt"] > 0, kinds


def test_check_env_and_spaces():
    env = gym.make(ID, scenario="andreas-sim", n_jobs=16, window=4, run_window=3)
    check_env(env.unwrapped, skip_render_check=True)
    u = env.unwrapped
    # andreas-sim: 10 GPU nodes, g in 1..2 (V100 nodes) -> 1 preempt + 10 x 2 configurations
    assert u.max_candidates == 21
    assert env.action_space.n == 7 * 21 + 1
    assert env.observation_space.shape == (7 * 9 + 7 * 21 * 8 + 5,) == (len(u.obs_layout),)


def test_seeding_is_deterministic():
    def roll(seed):
        return random_rollout(ID, "andreas-sim", seed, n_jobs=24, window=4, run_window=3)

    np.testing.assert_array_equal(roll(5), roll(5))
    assert not np.array_equal(roll(5), roll(6))


def test_candidates_and_codec():
    env = gym.make(ID, scenario="andreas-sim", n_jobs=40, window=4, run_window=4)
    u = env.unwrapped
    env.reset(seed=1)
    seen: Counter = Counter()
    rng = np.random.default_rng(0)
    for _ in range(60):  # random feasible actions, checking every candidate on the way
        sim = u.sim
        mask = u.action_masks()
        for a in np.flatnonzero(mask[:-1]).tolist():
            d = u.decode(a)
            seen[type(d).__name__] += 1
            assert u.encode(d) == a
            j = d.job
            if isinstance(d, Start):
                assert sim.js.status[j] == QUEUED
                g = len(d.placement)
                assert sim.jobs.min_workers[j] <= g <= sim.jobs.max_workers[j]
                assert len(set(d.placement.nodes.tolist())) == 1
            elif isinstance(d, Move):
                assert sim.js.status[j] in (RUNNING, GRACE)
                owner = sim.ns.gpu_owner[d.placement.nodes, d.placement.gpus]
                assert ((owner < 0) | (owner == j)).all()
            else:
                assert isinstance(d, Preempt) and sim.js.status[j] == RUNNING
        _, _, term, trunc, _ = env.step(int(rng.choice(np.flatnonzero(mask))))
        if term or trunc:
            env.reset()
    assert seen["Start"] and seen["Move"] and seen["Preempt"], seen
    with pytest.raises(SchedulingError, match="no candidate|not in the window"):
        u.encode(Preempt(10**6))
