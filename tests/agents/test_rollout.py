"""The rollout teacher (agents.imitation.rollout): exact copies, never worse than its base."""

from __future__ import annotations

import numpy as np
import pytest

import baselines
import hetgym
from agents.common.envtools import EnvConfig, policy_mask, window_rows, window_scenario
from agents.imitation.rollout import (
    NetActor,
    RolloutTeacher,
    SchedulerActor,
    copy_env,
    finish,
    finish_sim,
    play,
)
from hetgym import scenarios


def _windows(n_jobs=12, k=3):
    sc = scenarios.get(scenarios.DEFAULT, n_jobs=256, seed=5)
    env = EnvConfig(n_jobs=n_jobs).make(sc)
    return [window_scenario(sc, window_rows(env, s)) for s in range(k)]


CFG = EnvConfig(n_jobs=None, window=8, time_scale=36000.0)


@pytest.fixture(scope="module")
def windows():
    return _windows()


def test_copy_env_continues_exactly(windows):
    """A copy made mid-episode finishes with the same metrics as the original (the copied
    simulator's view must read the copied arrays: a plain deepcopy's view does not)."""
    env = CFG.make(windows[0])
    obs, _ = env.reset(seed=0)
    actor = SchedulerActor("allox")
    actor.reset(env)
    for _ in range(3):  # a few steps in, so that jobs run
        obs, _, term, trunc, _ = env.step(actor(env, obs, policy_mask(env)))
        assert not (term or trunc)
    e, a = copy_env(env, actor)
    assert e.sim is not env.sim and e.sim.view.status.base is not env.sim.view.status.base
    got = finish(e, a, obs)["avg_jct"]
    assert got == finish(env, actor, obs)["avg_jct"]


def test_finish_sim_is_simulate(windows):
    """From the first decision point, finish_sim with a baseline is hetgym.simulate's run."""
    for w in windows[:2]:
        env = CFG.make(w)
        env.reset(seed=0)
        sched = baselines.make("allox")
        sched.reset(env.sim.view)
        got = finish_sim(env.sim, sched)["avg_jct"]
        assert got == pytest.approx(hetgym.simulate(w, baselines.make("allox")).summary()["avg_jct"],
                                    rel=1e-12)


@pytest.mark.parametrize("base", ["allox", "sjf"])
def test_teacher_never_worse_than_its_base(windows, base):
    """One-step lookahead with the base's action among the candidates and ties to it:
    on every window the teacher's avg JCT is at most the base's (acting in the env)."""
    improved = 0
    for w in windows:
        env = CFG.make(w)
        b = play(env, SchedulerActor(base))["avg_jct"]
        t = RolloutTeacher(SchedulerActor(base))
        v = play(env, t)["avg_jct"]
        assert v <= b * (1 + 1e-12), (w.name, v, b)
        assert t.stats.decisions > 0 and t.stats.rollouts > 0
        improved += v < b
    assert base == "allox" or improved >= 1  # SJF leaves room on these windows


def test_label_ties_and_candidates(windows):
    """The label's tie set holds the chosen action; candidates are allowed and distinct."""
    env = CFG.make(windows[1])
    obs, _ = env.reset(seed=0)
    rng = np.random.default_rng(0)
    t = RolloutTeacher(SchedulerActor("sjf"), proposer=lambda o, m: rng.random(len(m)), top_k=2)
    t.reset(env)
    mask = policy_mask(env)
    a, ties = t.label(env, obs, mask)
    cand = t.candidates(env, obs, mask, t.base(env, obs, mask))
    assert a in ties and set(ties) <= set(cand)
    assert len(set(cand)) == len(cand) and mask[cand].all()
    full = RolloutTeacher(SchedulerActor("sjf"), all_actions=True)
    assert sorted(full.candidates(env, obs, mask, cand[0])) == np.flatnonzero(mask).tolist()


def test_net_actor_finishes(windows):
    """A policy(obs, mask) finishes rollouts too (here: the first allowed action)."""
    env = CFG.make(windows[2])
    m = play(env, NetActor(lambda o, mask: int(np.flatnonzero(mask)[0])))
    assert m["unfinished_jobs"] == 0


def test_window_only_actor_starts_what_it_decides(windows):
    """With ``window_only`` the scheduler sees the env's window as its queue
    (``WindowView``), so whenever it decides a start the actor starts a job (no wait)."""
    from agents.imitation.rollout import WindowView

    env = EnvConfig(n_jobs=None, window=2, time_scale=36000.0).make(windows[0])
    obs, _ = env.reset(seed=0)
    actor = SchedulerActor("allox", window_only=True)
    actor.reset(env)
    ref = baselines.make("allox")
    ref.reset(env.sim.view)
    starts = 0
    while True:
        mask = policy_mask(env)
        win = env.window_jobs()
        v = WindowView(env.sim, win)
        assert v.queue.tolist() == win.tolist()
        decided = [d for d in (ref.decide(v) or []) if hasattr(d, "job")]
        a = actor(env, obs, mask)
        if decided:
            assert a < env.n_start_actions
            starts += 1
        obs, _, term, trunc, info = env.step(a)
        if term or trunc:
            break
    assert starts > 0 and info["episode_metrics"]["unfinished_jobs"] == 0
