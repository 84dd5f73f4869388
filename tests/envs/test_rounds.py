"""HetClusterRounds-v0: Hadar's / HadarE's / Gavel's decision (re-plan each round boundary,
worker by worker, copies for forkable jobs)."""

from __future__ import annotations

from collections import Counter

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env

import baselines
import hetgym  # noqa: F401  (registers the ids)
from hetgym import scenarios
from hetgym.decisions import Move, Preempt, SchedulingError, Start
from hetgym.envs.decision_base import SchedulerAgent, decision_point_kwargs, play
from tests.envs.decision_helpers import assert_exact, random_rollout

ID = "HetClusterRounds-v0"
GAVEL = ["gavel-las", "gavel-las-perf", "gavel-fifo", "gavel-fifo-perf", "gavel-ftf",
         "gavel-ftf-perf", "gavel-makespan", "gavel-maxtput"]


@pytest.mark.parametrize("name", ["hadar", "hadare"] + GAVEL)
def test_paper_scheduler_acts_exactly_as_in_simulate_aws(name):
    """hadar-aws (5 single-GPU servers of three types): the scheduler's decisions as
    actions give its hetgym.simulate run (jobs table, metrics, return = - total JCT)."""
    assert_exact(ID, "hadar-aws", name, window=64)


@pytest.mark.parametrize("name", ["hadar", "hadare", "gavel-las-perf", "gavel-fifo"])
def test_paper_scheduler_acts_exactly_as_in_simulate_sim(name):
    """hadar-sim, 24 jobs (15 servers of 4 GPUs; gangs of 1-8 GPUs across servers)."""
    sc = scenarios.get("hadar-sim", n_jobs=24)
    assert_exact(ID, sc, name, window=24)


def test_hadare_forks_and_hadar_moves_through_actions():
    """The runs above go through copies (HadarE), moves and preemptions as actions."""
    sc = scenarios.get("hadar-sim", n_jobs=24)
    seen: Counter = Counter()
    for name in ("hadar", "hadare"):
        sched = baselines.make(name)
        env = gym.make(ID, scenario=sc, n_jobs=None, window=24, **decision_point_kwargs(sched))
        agent = SchedulerAgent(sched)
        decide = sched.decide

        def spy(view, decide=decide, name=name):
            out = decide(view)
            for d in out:
                copies = isinstance(d, (Start, Move)) and not hasattr(d.placement, "nodes")
                seen[(name, type(d).__name__, copies)] += 1
            return out

        sched.decide = spy
        _, info = play(env, agent, seed=3)
        assert info["done"] == 24
    assert seen[("hadare", "Start", True)] + seen[("hadare", "Move", True)] > 0, seen
    assert sum(v for (n, k, _), v in seen.items() if n == "hadar" and k == "Move") > 0, seen


def test_check_env_spaces_and_nodes():
    env = gym.make(ID, scenario="hadar-sim", scenario_kwargs={"n_jobs": 24}, n_jobs=12, window=6)
    check_env(env.unwrapped, skip_render_check=True)
    u = env.unwrapped
    env.reset(seed=0)
    assert u.n_nodes == len(u.sim.nodes.gpus) == 15 and u.G == 4
    m = 15 * 4 + 2
    assert env.action_space.n == 6 * m + 1
    assert env.observation_space.shape == (6 * (9 + 3) + 60 * (4 + 3) + 5,) == (len(u.obs_layout),)


def test_seeding_is_deterministic():
    def roll(seed):
        return random_rollout(ID, "hadar-sim", seed, scenario_kwargs={"n_jobs": 24}, n_jobs=8,
                              window=8)

    np.testing.assert_array_equal(roll(5), roll(5))
    assert not np.array_equal(roll(5), roll(6))


def test_gang_is_built_worker_by_worker():
    """One job at a time: after a first worker only that job's actions stay feasible; a
    non-forkable gang issues its Start when complete; a forkable one on commit."""
    sc = scenarios.get("hadar-sim", n_jobs=24)
    env = gym.make(ID, scenario=sc, n_jobs=None, window=24)
    u = env.unwrapped
    env.reset(seed=0)
    sim = u.sim
    k = next(i for i, j in enumerate(u.window_jobs()) if sim.jobs.workers[j] == 2)
    j = int(u.window_jobs()[k])
    m = u.max_candidates
    a = int(np.flatnonzero(u.action_masks()[k * m: k * m + u.n_gpu_actions])[0]) + k * m
    assert isinstance(u.decode(a), Start) and len(u.decode(a).placement) == 1
    env.step(a)
    mask = u.action_masks()
    others = np.delete(mask[:-1].reshape(len(mask) // m, m), k, axis=0)
    assert not others.any() and mask[-1]          # only job j (and done)
    assert not mask[a]                              # its GPU is taken by the gang
    assert not mask[k * m + u.n_gpu_actions + 1]    # commit needs a whole gang
    b = int(np.flatnonzero(mask[k * m: k * m + u.n_gpu_actions])[0]) + k * m
    env.step(b)
    assert sim.js.status[j] == 1 and sim.n_running == 0  # forkable: not issued yet
    assert u.action_masks()[k * m + u.n_gpu_actions + 1]
    env.step(k * m + u.n_gpu_actions + 1)            # commit: one copy
    assert sim.js.status[j] == 2 and sim.js.nworkers[j] == 2
    with pytest.raises(SchedulingError, match="not in the window"):
        u.encode_actions(Preempt(10**6))
