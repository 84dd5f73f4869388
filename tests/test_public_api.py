"""The public interface exactly as docs/semantics.md and the README write it (tests outside
the project call this)."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pandas as pd
import pytest

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
        check_summary_matches_jobs(result, scenario, name)
        # the 2-worker TE job fits only on the two single-GPU V100 nodes (tput_cpu = 0)
        te = jobs[jobs["job_class"] == "TE"].iloc[0]
        assert te["device"] == "v100"


def _approx(x: float):
    return pytest.approx(x, rel=1e-12, abs=1e-12)


def check_summary_matches_jobs(result: hetgym.Result, scenario: Scenario, name: str) -> None:
    """Every documented metric of ``summary()`` recomputed from ``result.jobs``
    (definitions: hetgym/metrics.py, docs/semantics.md "Metrics")."""
    jobs, m = result.jobs, result.summary()
    done = jobs[jobs["finished"]]
    jct = done["jct"].to_numpy()
    # the per-job columns agree with each other
    assert (jobs["start"] >= jobs["arrival"]).all(), name
    np.testing.assert_allclose(done["jct"], done["end"] - done["arrival"], rtol=1e-12)
    np.testing.assert_allclose(done["wait"], done["jct"] - done["exec_time"], rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(done["slowdown"], done["jct"] / done["exec_time"], rtol=1e-12)
    assert (done["wait"] >= -1e-9).all() and (done["exec_time"] >= done["best_duration"] - 1e-9).all()
    # the summary is a function of the jobs table
    assert m["jobs"] == len(jobs) == len(scenario.workload)
    assert m["unfinished_jobs"] == int((~jobs["finished"]).sum()) == 0
    assert m["stalled"] is False and not result.stalled
    assert m["avg_jct"] == _approx(jct.mean()), name
    for q in (50, 95, 99):
        assert m[f"p{q}_jct"] == _approx(np.percentile(jct, q)), (name, q)
    assert m["avg_wait"] == _approx(done["wait"].mean()), name
    assert m["avg_slowdown"] == _approx(done["slowdown"].mean()), name
    for cls in ("TE", "BE"):
        sd = done.loc[done["job_class"] == cls, "slowdown"].to_numpy()
        for q in (50, 95, 99):
            assert m[f"{cls.lower()}_p{q}_slowdown"] == _approx(np.percentile(sd, q)), (name, cls, q)
    assert m["makespan"] == _approx(done["end"].max()), name
    assert m["preemptions"] == jobs["preemptions"].sum() and m["restarts"] == jobs["restarts"].sum()
    assert m["tardiness_cost"] == _approx(jobs["tardiness"].sum()) == 0.0  # no deadlines
    per_user = done.groupby("user")["slowdown"].mean().to_numpy()
    assert m["jain_fairness"] == _approx(per_user.sum() ** 2 / (len(per_user) * (per_user**2).sum()))
    progress = (done["best_duration"] / done["jct"]).groupby(done["user"]).mean().to_numpy()
    assert m["user_progress_std"] == _approx(progress.std())
    assert m["energy_kwh"] > 0
    opts = scenario.options
    assert m["energy_cost"] == _approx(m["energy_kwh"] * opts.energy_price * opts.pue)
    assert 0 <= m["decision_time_p50"] <= m["decision_time_p99"]
