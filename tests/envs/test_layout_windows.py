"""The env publishes its observation layout, and one EpisodeWindows owns episode windows."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest

import hetgym
from hetgym.episodes import EpisodeWindows


@pytest.mark.parametrize("preemption", [False, True])
def test_obs_layout_describes_every_entry(preemption):
    env = gym.make("HetCluster-v0", preemption=preemption).unwrapped
    lay = env.obs_layout
    assert [f.index for f in lay] == list(range(env.observation_space.shape[0]))
    obs, _ = env.reset(seed=1)
    k = env.window
    job0 = [f for f in lay if f.block == "job" and f.slot == 0]
    assert [f.name for f in job0][:6] == ["present", "wait", "best_duration", "workers",
                                          "te_class", "deadline_slack"]
    assert [f.name for f in job0][6:] == [f"duration_{d}" for d in env.devices]
    present = [f.index for f in lay if f.block == "job" and f.name == "present"]
    assert obs[present].sum() == min(k, env.sim.n_queue)
    g = {f.name: f.index for f in lay if f.block == "global"}
    assert obs[g["done"]] == pytest.approx(env.sim.n_done / env.sim.n_jobs)
    run = [f for f in lay if f.block == "running"]
    assert len(run) == (4 * env.run_window if preemption else 0)


def test_agents_time_features_come_from_the_layout():
    from agents.common.envtools import time_feature_index

    env = gym.make("HetCluster-v0", preemption=True).unwrapped
    idx = time_feature_index(env.window, env.n_dev, env.run_window)
    names = {(f.block, f.name) for f in env.obs_layout if f.index in set(idx.tolist())}
    assert names == {("job", "wait"), ("job", "best_duration"), ("running", "remaining_time")} | {
        ("job", f"duration_{d}") for d in env.devices}


def test_episode_windows_are_the_env_resets():
    sc = hetgym.scenarios.get("hetero-small", n_jobs=100)
    env = gym.make("HetCluster-v0", scenario=sc, n_jobs=10).unwrapped
    for seed in (0, 5, 9):
        rows = env.windows.rows_for_seed(seed)
        env.reset(seed=seed)
        np.testing.assert_array_equal(env.sim.rows, rows)
        wsc = EpisodeWindows.scenario(sc, rows)
        np.testing.assert_allclose(wsc.workload.frame["arrival"].to_numpy(), env.sim.jobs.arrival)
    assert "EpisodeWindows(n_total=100, n_jobs=10)" in repr(env)


def test_episode_windows_bounds_and_errors():
    assert EpisodeWindows(5, None).whole and EpisodeWindows(5, 9).size == 5
    assert EpisodeWindows(5, 9).draw(np.random.default_rng(0)) is None
    rows = EpisodeWindows(50, 7).draw(np.random.default_rng(0))
    assert len(rows) == 7 and np.all(np.diff(rows) == 1) and 0 <= rows[0] <= 43
    with pytest.raises(ValueError, match="n_jobs"):
        EpisodeWindows(5, 0)


def test_socket_features_follow_placements() -> None:
    """free_sockets / shared_sockets of a GPU type: one 4-GPU, 2-socket node, pack placement."""
    import pandas as pd

    from hetgym import ClusterSpec, NodeSpec, Scenario, SimOptions, Workload
    from hetgym.envs.hetcluster import HetClusterEnv

    df = pd.DataFrame({"job_id": [0, 1, 2], "arrival": [0.0, 0.0, 0.0], "user": "u",
                       "job_class": "BE", "workers": 1, "work": [100.0, 200.0, 300.0],
                       "tput_v100": 1.0, "cpus": 1.0, "mem_gb": 1.0})
    sc = Scenario(cluster=ClusterSpec(nodes=[NodeSpec(name="v", gpu_type="V100", gpus=4,
                                                      cpus=16, mem_gb=64, sockets=2)]),
                  workload=Workload.from_frame(df), options=SimOptions(placement="pack"))
    env = HetClusterEnv(scenario=sc, n_jobs=None, window=4)
    idx = {f.name: f.index for f in env.obs_layout if f.block == "device"}
    obs, _ = env.reset(seed=0)
    assert (obs[idx["free_sockets"]], obs[idx["shared_sockets"]]) == (1.0, 0.0)
    obs, *_ = env.step(0)  # job 0 on GPU 0 (socket 0)
    assert (obs[idx["free_sockets"]], obs[idx["shared_sockets"]]) == (0.5, 0.0)
    obs, *_ = env.step(0)  # job 1 packed next to it: socket 0 holds two jobs
    assert (obs[idx["free_sockets"]], obs[idx["shared_sockets"]]) == (0.5, 1.0)


@pytest.mark.parametrize("kwargs", [
    {"n_jobs": 16},
    {"scenario": "fitgpp-lab", "scenario_kwargs": {"n_jobs": 64}, "n_jobs": 16, "window": 6,
     "preemption": True, "run_window": 4},
    {"scenario": "google-hybrid", "window": 8, "n_jobs": 16},
])
def test_job_duration_features_follow_the_table(kwargs) -> None:
    """best_duration / duration_c of every window job, step by step, equal the module
    table's formulas computed here (the kernel computes each type's duration once)."""
    env = gym.make("HetCluster-v0", **kwargs).unwrapped
    f = 6 + env.n_dev
    ts = env.time_scale

    def sq(x: float) -> float:
        return 0.0 if x <= 0.0 else x / (x + ts)

    rng = np.random.default_rng(3)
    obs, _ = env.reset(seed=2)
    e = env.sim.params.opts.scaling_exponent
    rows = 0
    for _ in range(120):
        jb, rem = env.sim.params.jobs, env.sim.state.job.remaining
        for k, j in enumerate(env.window_jobs().tolist()):
            w = int(jb.workers[j])
            dur = [rem[j] / (w * t * w ** (e - 1.0)) if t > 0.0 else np.inf for t in jb.tput[j]]
            best = min([d for d, h in zip(dur, jb.holdable[j]) if h], default=np.inf)
            np.testing.assert_array_equal(obs[k * f + 2], np.float32(sq(best)))
            want = [np.float32(sq(d)) if t > 0.0 and h else np.float32(-1.0)
                    for d, t, h in zip(dur, jb.tput[j], jb.holdable[j])]
            np.testing.assert_array_equal(obs[k * f + 6:(k + 1) * f], want)
            rows += 1
        obs, _, term, trunc, _ = env.step(int(rng.choice(np.flatnonzero(env.action_masks()))))
        if term or trunc:
            obs, _ = env.reset()
    assert rows > 100
