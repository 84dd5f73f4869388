"""The public interface exactly as DESIGN.md writes it (tests outside the project call this)."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pandas as pd

import baselines
import hetgym
from hetgym import ClusterSpec, NodeSpec, Scenario, Workload


def test_design_snippet_end_to_end():
    env = gym.make("HetCluster-v0")
    env = gym.make("HetCluster-v0", scenario="allox-hybrid")
    obs, info = env.reset(seed=0)
    mask = env.unwrapped.action_masks()
    assert mask.dtype == np.bool_ and len(mask) == env.action_space.n
    done, steps = False, 0
    while not done and steps < 50_000:
        action = int(np.flatnonzero(env.unwrapped.action_masks())[0])
        obs, reward, terminated, truncated, info = env.step(action)
        done = terminated or truncated
        steps += 1
    assert done and isinstance(info["episode_metrics"], dict)

    cluster = ClusterSpec(nodes=[
        NodeSpec(name="v100", count=2, gpu_type="V100", gpus=1, cpus=8, mem_gb=64),
        NodeSpec(name="cpu", count=2, gpu_type=None, gpus=0, cpus=20, mem_gb=64),
    ])
    df = pd.DataFrame({
        "job_id": [1, 2, 3], "arrival": [0.0, 5.0, 5.0], "user": ["a", "b", "a"],
        "job_class": ["BE", "TE", "BE"], "workers": [1, 2, 1], "work": [100.0, 200.0, 50.0],
        "tput_v100": [10.0, 10.0, 5.0], "tput_cpu": [1.0, 0.0, 1.0],
        "cpus": [4.0, 4.0, 20.0], "mem_gb": [8.0, 8.0, 8.0],
    })
    workload = Workload.from_frame(df)
    scenario = Scenario(cluster=cluster, workload=workload)
    assert set(hetgym.scenarios.names()) >= {"hetero-small", "allox-hybrid", "fitgpp-lab"}
    assert isinstance(hetgym.scenarios.get("hetero-small", n_jobs=32), Scenario)
    assert {"fifo", "sjf", "srpt", "allox", "allox+", "fitgpp"} <= set(baselines.names())
    for name in baselines.names():
        result = hetgym.simulate(scenario, baselines.make(name), seed=0)
        jobs = result.jobs
        assert len(jobs) == 3 and jobs["finished"].all(), name
        for col in ("arrival", "start", "end", "device", "wait", "jct", "slowdown"):
            assert col in jobs.columns
        m = result.summary()
        for key in ("avg_jct", "p50_jct", "p95_jct", "p99_jct", "avg_wait", "avg_slowdown",
                    "te_p95_slowdown", "be_p50_slowdown", "makespan", "energy_kwh",
                    "energy_cost", "tardiness_cost", "preemptions", "restarts",
                    "jain_fairness", "user_progress_std", "decision_time_p50",
                    "decision_time_p99", "unfinished_jobs"):
            assert key in m, key
        # the 2-worker TE job fits only on the two single-GPU V100 nodes (tput_cpu = 0)
        te = jobs[jobs["job_class"] == "TE"].iloc[0]
        assert te["device"] == "v100"
