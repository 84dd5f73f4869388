"""The adapter runs a policy through ``hetgym.simulate`` exactly as the env would."""

from __future__ import annotations

import math

import numpy as np
import pytest

import hetgym
from agents.common.adapter import AgentScheduler
from agents.common.envtools import (EnvConfig, heldout_windows, policy_mask, time_feature_index,
                             window_rows, window_scenario)
from hetgym import scenarios
from hetgym.envs.hetcluster import HetClusterEnv


class RandomMasked:
    """Seeded random policy over the mask (wait drawn as often as all else)."""

    def __init__(self, seed: int) -> None:
        self.rng = np.random.default_rng(seed)
        self.seen: list[np.ndarray] = []

    def __call__(self, obs: np.ndarray, mask: np.ndarray) -> int:
        self.seen.append(obs.copy())
        ok = np.flatnonzero(mask)
        return int(self.rng.choice(ok))


def _episode(env: HetClusterEnv, policy, cfg: EnvConfig, seed: int = 0):
    obs, _ = env.reset(seed=seed)
    actions, done, info = [], False, {}
    while not done:
        a = policy(obs, policy_mask(env, cfg.no_idle_wait))
        actions.append(a)
        obs, _, term, trunc, info = env.step(a)
        done = term or trunc
    return actions, info["episode_metrics"]


@pytest.fixture(scope="module")
def window():
    sc = scenarios.get(scenarios.DEFAULT, n_jobs=96, seed=3)
    env = EnvConfig(n_jobs=24).make(sc)
    return window_scenario(sc, window_rows(env, 5))


@pytest.mark.parametrize("cfg", [EnvConfig(n_jobs=None),
                                 EnvConfig(n_jobs=None, window=4, time_scale=36000.0),
                                 EnvConfig(n_jobs=None, preemption=True, run_window=4)],
                         ids=["default", "window4-rescaled", "preemption"])
def test_adapter_matches_env(window, cfg):
    env = cfg.make(window)
    pol_env = RandomMasked(7)
    actions, metrics = _episode(env, pol_env, cfg)
    pol_sim = RandomMasked(7)
    sched = AgentScheduler(pol_sim, cfg)
    res = hetgym.simulate(window, sched, seed=0)
    assert sched.actions == actions
    assert len(pol_sim.seen) == len(pol_env.seen)
    for a, b in zip(pol_env.seen, pol_sim.seen):
        np.testing.assert_array_equal(a, b)
    s = res.summary()
    for k in ("avg_jct", "makespan", "energy_kwh", "preemptions", "unfinished_jobs"):
        assert s[k] == pytest.approx(metrics[k], rel=1e-12, abs=1e-9), k


def test_fixed_action_sequence_replays(window):
    """A recorded action sequence gives the same jobs table through simulate."""
    cfg = EnvConfig(n_jobs=None)
    env = cfg.make(window)
    actions, metrics = _episode(env, RandomMasked(11), cfg)
    it = iter(actions)
    res = hetgym.simulate(window, AgentScheduler(lambda o, m: next(it), cfg), seed=0)
    assert next(it, None) is None
    assert res.summary()["avg_jct"] == pytest.approx(metrics["avg_jct"], rel=1e-12)
    assert res.summary()["unfinished_jobs"] == 0


def test_env_window_equals_window_scenario():
    """An env episode on a window of a workload is the same as one on the window scenario."""
    sc = scenarios.get(scenarios.DEFAULT, n_jobs=96, seed=3)
    cfg = EnvConfig(n_jobs=24)
    env = cfg.make(sc)
    rows = window_rows(env, 9)
    a1, m1 = _episode(env, RandomMasked(1), cfg, seed=9)
    wcfg = EnvConfig(n_jobs=None)
    a2, m2 = _episode(wcfg.make(window_scenario(sc, rows)), RandomMasked(1), wcfg)
    assert a1 == a2
    assert m1["avg_jct"] == pytest.approx(m2["avg_jct"], rel=1e-12)


def test_heldout_windows_are_scenarios_of_n_jobs():
    sc = scenarios.get(scenarios.DEFAULT, n_jobs=96, seed=3)
    wins = heldout_windows(sc, EnvConfig(n_jobs=20), 3)
    assert [len(w.workload) for w in wins] == [20, 20, 20]
    assert all(w.workload.frame["arrival"].iloc[0] == 0 for w in wins)


def test_toy_first_feasible_policy():
    """Devices (cpu, v100); durations (GPU, CPU) = (3, 4), (4, 6), (5, 10) s. The first
    feasible action starts J1 on the CPU (action 0: slot 0, cpu), then J2 on the V100
    (action 1: the CPU is taken); both end at t=4, and J3 takes the CPU (action 0), 10 s."""
    sc = scenarios.get("toy-3jobs")
    sched = AgentScheduler(lambda o, m: int(np.flatnonzero(m)[0]), EnvConfig(n_jobs=None, window=4))
    res = hetgym.simulate(sc, sched, seed=0)
    assert sched.actions == [0, 1, 0]
    jobs = res.jobs.set_index("job_id")
    assert jobs["device"].to_dict() == {1: "cpu", 2: "v100", 3: "cpu"}
    assert jobs["start"].to_dict() == {1: 0.0, 2: 0.0, 3: 4.0}
    assert jobs["end"].to_dict() == {1: 4.0, 2: 4.0, 3: 14.0}
    assert res.summary()["unfinished_jobs"] == 0
    assert res.summary()["avg_jct"] == (4 + 4 + 14) / 3


def test_no_idle_wait_masks_wait_when_no_event_is_left():
    env = EnvConfig(n_jobs=None, window=4).make(scenarios.get("toy-3jobs"))
    env.reset(seed=0)
    assert env.sim.next_event_time() == math.inf  # all arrived at 0, nothing runs
    # the env itself masks "wait" here (it could only end the episode early) ...
    assert not env.action_masks()[env.wait_action]
    assert not policy_mask(env, no_idle_wait=True)[env.wait_action]
    assert not policy_mask(env, no_idle_wait=False)[env.wait_action]
    # ... and offers it again once something runs
    env.step(int(np.flatnonzero(env.action_masks())[0]))
    assert env.action_masks()[env.wait_action]


def test_time_scale_of_the_time_features():
    base = EnvConfig(n_jobs=None, window=4).make(scenarios.get("toy-3jobs"))
    env = EnvConfig(n_jobs=None, window=4, time_scale=36000.0).make(scenarios.get("toy-3jobs"))
    obs0, _ = base.reset(seed=0)
    obs, _ = env.reset(seed=0)
    idx = time_feature_index(env.window, env.n_dev, env.run_window)
    # slot 0, best duration 3 s: 3/(3+3600) with the default scale, 3/(3+36000) here
    assert obs0[2] == pytest.approx(3.0 / 3603.0, rel=1e-6)
    assert obs[2] == pytest.approx(3.0 / 36003.0, rel=1e-6)
    assert (obs[idx][obs0[idx] < 0] == -1).all()
    untouched = np.setdiff1d(np.arange(len(obs)), idx)
    untouched = untouched[[not f.name.startswith("deadline") for f in
                           (env.obs_layout[i] for i in untouched)]]
    np.testing.assert_array_equal(obs[untouched], obs0[untouched])


def test_invalid_policy_action_raises_or_waits(window):
    cfg = EnvConfig(n_jobs=None, invalid_action="raise")
    sched = AgentScheduler(lambda o, m: int(np.flatnonzero(~m)[0]) if (~m).any() else 0, cfg)
    with pytest.raises(hetgym.SchedulingError):
        hetgym.simulate(window, sched, seed=0)
    with pytest.raises(ValueError, match="outside"):
        hetgym.simulate(window, AgentScheduler(lambda o, m: 10**6, EnvConfig(n_jobs=None)), seed=0)


def test_resolve_action():
    from agents.common.envtools import resolve_action

    m = np.array([False, True, False, True])
    assert resolve_action(1, m, 3) == 1
    assert resolve_action(0, m, 3) == 3          # forbidden -> wait
    m[3] = False
    assert resolve_action(3, m, 3) == 1          # wait forbidden too -> first allowed


def test_unmasked_policy_cannot_idle_forever():
    """A policy that always waits (plain PPO ignoring the mask) still finishes every job."""
    sc = scenarios.get("toy-3jobs")
    cfg = EnvConfig(n_jobs=None, window=4)
    res = hetgym.simulate(sc, AgentScheduler(lambda o, m: 8, cfg), seed=0)
    assert res.summary()["unfinished_jobs"] == 0


def test_agents_window_scenario_shifts_deadlines_with_arrivals():
    """``agents.common.envtools.window_scenario`` (the episode of those rows, for ``simulate``)
    moves each job's deadline with its arrival: every job keeps its slack."""
    from tests.envs.test_env_semantics import _deadline_scenario

    sc = _deadline_scenario("tardiness")
    rows = np.arange(3, 8)
    fr = sc.workload.frame.iloc[rows]
    w = window_scenario(sc, rows).workload.frame
    assert w["arrival"].iloc[0] == 0.0
    np.testing.assert_allclose((w["deadline"] - w["arrival"]).to_numpy(),
                               (fr["deadline"] - fr["arrival"]).to_numpy())
    np.testing.assert_allclose(w["arrival"].to_numpy(),
                               (fr["arrival"] - fr["arrival"].iloc[0]).to_numpy())
