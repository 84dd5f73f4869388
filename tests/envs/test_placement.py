"""HetClusterPlacement-v0: TOPO-AWARE's decision (GPU set within one server, or postpone)."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pandas as pd
import pytest
from gymnasium.utils.env_checker import check_env

import hetgym
from hetgym.decisions import Cadence, Placement, SchedulingError, Start
from tests.envs.decision_helpers import assert_exact, random_rollout

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


def test_seeding_is_deterministic():
    def roll(seed):
        return random_rollout(ID, "topo-sim", seed, n_jobs=24, window=4)

    np.testing.assert_array_equal(roll(5), roll(5))
    assert not np.array_equal(roll(5), roll(6))


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


class _Ticker:
    """Starts waiting jobs (first fit, FIFO) only at its own wake-ups, every 500 s: a
    scheduler whose decision points are wake-ups (``next_wakeup``) and events."""

    cadence = Cadence(wakeups=True)

    def reset(self, view):
        self.calls = 0

    def decide(self, view):
        self.calls += 1
        if view.now % 500.0:
            return []
        from baselines.topo.parts import first_fit

        cap, out = view.capacity(), []
        for j in view.queue.tolist():
            hit = first_fit(view, cap, j)
            if hit is None:
                break
            n, gpus = hit
            pl = Placement.of([n] * len(gpus), list(gpus))
            cap.take(j, pl.nodes, pl.gpus)
            out.append(Start(j, int(view.node_device[n]), pl))
        return out

    def next_wakeup(self, view):
        return (view.now // 500.0 + 1) * 500.0


def test_wakeups_are_honoured_as_in_simulate():
    """A scheduler that acts only at its wake-ups gives its hetgym.simulate run through
    the env (wake-ups asked at reset and after every decision point)."""
    from hetgym.envs.decision_base import SchedulerAgent, play
    from hetgym.metrics import job_table

    env = gym.make(ID, scenario="topo-sim", n_jobs=None, window=100)
    sched = _Ticker()
    _, info = play(env, SchedulerAgent(sched), seed=0)
    calls = sched.calls
    ref = _Ticker()
    res = hetgym.simulate(env.unwrapped.scenario, ref, seed=env.unwrapped.sim.seed)
    assert info["done"] == 100 and ref.calls == calls
    pd.testing.assert_frame_equal(job_table(env.unwrapped.sim), res.jobs)
    assert (res.jobs["start"] % 500.0 == 0).all()  # every start at a wake-up
