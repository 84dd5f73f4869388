"""HetCluster-v0 semantics that an agent could exploit or a user could misread:
returns equal the metrics for every reward term, truncation never pays, windows
shift deadlines, the reward before the first decision counts, actions are checked,
preemption through the env."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pandas as pd
import pytest

import hetgym
from hetgym import ClusterSpec, NodeSpec, Scenario, SimOptions, Workload
from hetgym.sim.state.jobs import best_durations

TOY_OPT = 17.0 / 3600.0  # AlloX's 3-job example: optimal total JCT 17 s


def _episode(env, policy, seed=0, max_steps=10_000):
    obs, info = env.reset(seed=seed)
    ret, steps = 0.0, 0
    terms_sum: dict[str, float] = {}
    while True:
        a = policy(env, steps)
        obs, r, term, trunc, info = env.step(a)
        ret += r
        for k, v in info["reward_terms"].items():
            terms_sum[k] = terms_sum.get(k, 0.0) + v
        steps += 1
        if term or trunc or steps >= max_steps:
            return ret, terms_sum, term, trunc, info


def first_feasible(env, _step):
    return int(np.flatnonzero(env.unwrapped.action_masks())[0])


def test_masked_wait_is_a_no_op_not_a_free_truncation():
    env = gym.make("HetCluster-v0", scenario="toy-3jobs", window=4)
    env.reset(seed=0)
    u = env.unwrapped
    assert not u.action_masks()[u.wait_action]  # nothing runs, all arrived: wait is masked
    obs, r, term, trunc, info = env.step(u.wait_action)
    assert info["invalid_action"] and not term and not trunc
    assert r == 0.0 and info["time"] == 0.0 and info["queued"] == 3 and info["done"] == 0


@pytest.mark.parametrize("seed", range(40))
def test_no_action_sequence_beats_the_optimum(seed):
    """Random actions, masked or not, with random max_steps: return <= -17/3600."""
    rng = np.random.default_rng(seed)
    env = gym.make("HetCluster-v0", scenario="toy-3jobs", window=4,
                   max_steps=int(rng.integers(1, 8)))
    n = env.action_space.n
    ret, _, term, trunc, _ = _episode(env, lambda e, s: int(rng.integers(0, n)), seed=seed)
    assert term or trunc
    assert ret <= -TOY_OPT + 1e-12


def test_truncation_by_max_steps_charges_unfinished_jobs():
    env = gym.make("HetCluster-v0", scenario="toy-3jobs", window=4, max_steps=1)
    ret, terms, term, trunc, info = _episode(env, first_feasible)
    assert trunc and not term
    assert info["episode_metrics"]["unfinished_jobs"] == 3.0
    # the first feasible action starts job 0 on the CPU slot (device 0, 4 s); the charge
    # runs it to 4 s, then the two others alone, shortest first, on the V100 (4 s, 5 s):
    # 4 + (4 + 4) + (4 + 4 + 5) = 25 s
    assert env.unwrapped.devices[0] == "cpu"
    assert ret == pytest.approx(-25.0 / 3600.0)


def test_truncation_by_horizon():
    sc = hetgym.scenarios.get("toy-3jobs", horizon=3.5)
    env = gym.make("HetCluster-v0", scenario=sc, window=4)
    ret, terms, term, trunc, info = _episode(env, first_feasible)
    assert trunc and not term
    assert info["time"] == pytest.approx(3.5)
    assert info["episode_metrics"]["unfinished_jobs"] >= 1
    assert ret <= -TOY_OPT


def _deadline_scenario(objective: str) -> Scenario:
    cluster = ClusterSpec(nodes=[NodeSpec(name="v100", count=1, gpu_type="V100", gpus=2,
                                          cpus=8, mem_gb=64)])
    rng = np.random.default_rng(0)
    n = 12
    arrival = np.cumsum(rng.uniform(50, 400, n)) + 1000.0
    df = pd.DataFrame({
        "job_id": np.arange(n), "arrival": arrival, "user": rng.integers(0, 3, n),
        "job_class": "BE", "workers": rng.integers(1, 3, n), "work": rng.uniform(500, 3000, n),
        "tput_v100": 1.0, "cpus": 1.0, "mem_gb": 1.0,
        "deadline": arrival + rng.uniform(200, 2000, n), "weight": rng.uniform(0.5, 2.0, n),
    })
    return Scenario(cluster=cluster, workload=Workload.from_frame(df),
                    options=SimOptions(restart_delay=0.0), objective=objective)


@pytest.mark.parametrize("n_jobs", [5, None])
def test_episode_return_equals_metric_for_every_term(n_jobs):
    for term in ("jct", "slowdown", "makespan", "tardiness", "energy_cost"):
        sc = _deadline_scenario(term)
        env = gym.make("HetCluster-v0", scenario=sc, window=4, n_jobs=n_jobs, reward_scale=1.0)
        ret, terms, done, trunc, info = _episode(env, first_feasible, seed=3)
        assert done
        m = info["episode_metrics"]
        sim = env.unwrapped.sim
        js, jb = sim.js, sim.jobs
        jct = js.end - jb.arrival
        expected = {
            "jct": -jct.sum(),
            "slowdown": -(jct / best_durations(jb)).sum(),
            "makespan": -m["makespan"],
            "tardiness": -m["tardiness_cost"],
            "energy_cost": -m["energy_cost"],
        }[term]
        assert ret == pytest.approx(expected, rel=1e-9), term
        assert terms[term] == pytest.approx(expected, rel=1e-9)
        if term == "tardiness":
            # the deadlines the episode should charge, from the workload itself: each
            # job's deadline moved by its window's shift (its arrival is moved by it too)
            rows = np.arange(len(sc.workload.frame)) if sim.rows is None else sim.rows
            fr = sc.workload.frame.iloc[rows]
            shift = float(fr["arrival"].iloc[0]) - float(jb.arrival[0])
            due = fr["deadline"].to_numpy() - shift
            own = -(fr["weight"].to_numpy() * np.maximum(0.0, js.end - due)).sum()
            assert own < 0  # some job is late: the check can tell shifted deadlines apart
            assert ret == pytest.approx(own, rel=1e-9)


def test_windows_shift_deadlines_with_arrivals():
    sc = _deadline_scenario("tardiness")
    env = gym.make("HetCluster-v0", scenario=sc, window=4, n_jobs=5)
    env.reset(seed=7)
    sim = env.unwrapped.sim
    fr = sc.workload.frame.iloc[sim.rows]
    slack = (fr["deadline"] - fr["arrival"]).to_numpy()
    assert sim.jobs.arrival[0] == 0.0
    np.testing.assert_allclose(sim.jobs.deadline - sim.jobs.arrival, slack)
    assert "EpisodeWindows(n_total=12, n_jobs=5)" in repr(env.unwrapped)


def test_reward_before_first_decision_is_paid():
    """Whole workload whose first job arrives at 1000 s: makespan counts from 0."""
    sc = _deadline_scenario("makespan")
    env = gym.make("HetCluster-v0", scenario=sc, window=4, n_jobs=None, reward_scale=1.0)
    ret, _, done, _, info = _episode(env, first_feasible)
    assert done
    assert ret == pytest.approx(-info["episode_metrics"]["makespan"])
    assert info["episode_metrics"]["makespan"] > 1000.0


@pytest.mark.parametrize("bad", [1.5, "1", None, np.float64(1.0), [1]])
def test_non_integer_action_is_refused(bad):
    env = gym.make("HetCluster-v0", scenario="toy-3jobs", window=4)
    env.reset(seed=0)
    with pytest.raises(ValueError, match="action must be an integer"):
        env.unwrapped.step(bad)


def test_integer_like_actions_are_accepted():
    env = gym.make("HetCluster-v0", scenario="toy-3jobs", window=4)
    env.reset(seed=0)
    a = first_feasible(env, 0)
    for x in (np.int64(a), np.array(a)):
        env.reset(seed=0)
        _, _, _, _, info = env.unwrapped.step(x)
        assert info["running"] == 1


def _preempt_scenario(grace: float, limit: int | None, gpus: int = 1,
                      arrival1: float = 10.0) -> Scenario:
    cluster = ClusterSpec(nodes=[NodeSpec(name="v100", count=1, gpu_type="V100", gpus=gpus,
                                          cpus=8, mem_gb=64)])
    df = pd.DataFrame({
        "job_id": [0, 1], "arrival": [0.0, arrival1], "user": [0, 1], "job_class": "BE",
        "workers": 1, "work": [1000.0, 100.0], "tput_v100": 1.0, "cpus": 1.0, "mem_gb": 1.0,
        "grace_period": grace,
    })
    return Scenario(cluster=cluster, workload=Workload.from_frame(df),
                    options=SimOptions(restart_delay=0.0, max_preemptions=limit))


def test_preemption_through_env_grace_period_and_limit():
    env = gym.make("HetCluster-v0", scenario=_preempt_scenario(30.0, 1), window=2,
                   preemption=True, run_window=2)
    u = env.unwrapped
    sim_of = lambda: u.sim  # noqa: E731
    env.reset(seed=0)
    env.step(0)  # job 0 starts on the V100 at 0; preempting it is feasible: still t=0
    assert sim_of().now == 0.0 and u.action_masks()[u.n_start_actions]
    env.step(u.wait_action)  # job 1 arrives at 10
    sim = sim_of()
    assert sim.now == 10.0 and not u.action_masks()[0]
    env.step(u.n_start_actions)  # preempt job 0: it keeps the GPU for its 30 s grace period
    assert sim.now == pytest.approx(40.0) and sim.js.status[0] == 1  # then suspended
    assert list(sim.queued()) == [0, 1]  # back at the head of the queue
    env.step(1)  # start job 1 (window slot 1)
    env.step(u.wait_action)  # job 1 completes at 140
    assert sim.now == pytest.approx(140.0) and sim.js.status[1] == 4
    # job 0 restarts; it was preempted once and the limit is 1, so it is not offered for
    # preemption: no decision point is left and the step runs the episode to its end
    obs, r, term, trunc, info = env.step(0)
    assert term and sim.now == pytest.approx(140.0 + 960.0)  # 40 s of progress kept
    assert info["episode_metrics"]["preemptions"] == 1.0


def test_job_in_grace_is_not_offered_for_preemption():
    env = gym.make("HetCluster-v0", scenario=_preempt_scenario(1000.0, None, gpus=2, arrival1=0.0),
                   window=2, preemption=True, run_window=2)
    u = env.unwrapped
    env.reset(seed=0)
    env.step(0)  # job 0 starts
    env.step(0)  # job 1 starts (now first in the window)
    sim = u.sim
    assert list(sim.running_jobs()) == [0, 1]
    env.step(u.n_start_actions)  # preempt job 0: grace period of 1000 s
    assert sim.now == 0.0 and sim.js.status[0] == 3
    m = u.action_masks()
    assert m[u.n_start_actions] and not m[u.n_start_actions + 1]
    assert u.running_window_jobs().tolist() == [1]  # only job 1 is offered
