"""The Hadar scenarios ``hadar-sim`` (paper §IV) and ``hadar-aws`` (§VI-A): layout, job
sizing rules, determinism, and runs through ``HetCluster-v0`` (gymnasium's check_env)."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env

import hetgym
from hetgym.presets.hadar import CATEGORIES, gang_size, hadar_sim


def test_hadar_sim_layout_and_jobs():
    sc = hetgym.scenarios.get("hadar-sim", n_jobs=480, seed=0)
    c = sc.cluster
    assert [(n.device, n.count, n.gpus) for n in c.nodes] == [("v100", 5, 4), ("p100", 5, 4),
                                                              ("k80", 5, 4)]
    f = sc.workload.frame
    assert len(f) == 480 and (f["arrival"] == 0).all() and f["forkable"].all()
    assert set(f["workers"]) <= {1, 2, 4, 8}
    allowed = {t for _, _, names in CATEGORIES for t in names}
    assert set(f["job_type"]) <= allowed and len(set(f["job_type"])) == len(allowed)
    assert sc.options.restart_delay == 10.0 and sc.options.round_length == 360.0


def test_hadar_sim_sizes_follow_the_trace():
    """work = trace duration x V100 rate at the rounded gang size; class by GPU-hours."""
    sc = hadar_sim(n_jobs=60, seed=3)
    f = sc.workload.frame
    dur = f["work"] / (f["workers"] * f["tput_v100"])
    trace_gpus = f["trace_id"]  # "vc:index" of the shipped CSV
    raw = __import__("pandas").read_csv(hetgym.traces.philly.packaged_philly_csv())
    key = raw["vc"].astype(str) + ":" + raw["job_index_in_vc"].astype(str)
    row = raw.set_index(key).loc[trace_gpus.to_numpy()]
    np.testing.assert_allclose(dur.to_numpy(), row["duration_s"].to_numpy(), rtol=1e-9)
    np.testing.assert_array_equal(f["workers"].to_numpy(), gang_size(row["num_gpus"].to_numpy()))
    gh = row["num_gpus"].to_numpy() * row["duration_s"].to_numpy() / 3600.0
    for x, t in zip(gh, f["job_type"]):
        _, _, names = next(c for c in CATEGORIES if c[0] <= x < c[1])
        assert t in names
    hours = (row["arrival_time_s"].to_numpy() % 86400) / 3600
    assert ((hours >= 3) & (hours < 10)).all()


def test_gang_size_rounding():
    assert gang_size(np.array([1, 2, 3, 4, 5, 7, 8, 16])).tolist() == [1, 2, 4, 4, 8, 8, 8, 8]


def test_hadar_sim_seeded_and_bad_size():
    a = hadar_sim(n_jobs=40, seed=1).workload.frame
    b = hadar_sim(n_jobs=40, seed=1).workload.frame
    assert a.equals(b)
    assert not a.equals(hadar_sim(n_jobs=40, seed=2).workload.frame)
    with pytest.raises(ValueError, match="n_jobs"):
        hadar_sim(n_jobs=0)


@pytest.mark.parametrize("mix,n", [("M-1", 1), ("M-5", 5), ("M-12", 12)])
def test_hadar_aws(mix, n):
    sc = hetgym.scenarios.get("hadar-aws", mix=mix)
    assert sorted((nd.device, nd.count, nd.gpus) for nd in sc.cluster.nodes) == [
        ("k80", 2, 1), ("t4", 2, 1), ("v100", 1, 1)]
    assert len(sc.workload.frame) == n and (sc.workload.frame["arrival"] == 0).all()
    with pytest.raises(ValueError, match="mix"):
        hetgym.scenarios.get("hadar-aws", mix="M-2")


@pytest.mark.parametrize("name,kw", [("hadar-sim", {"n_jobs": 24}), ("hadar-aws", {"mix": "M-5"}),
                                     ("hadar-testbed", {"mix": "M-8"})])
def test_env_check_hadar_scenarios(name, kw):
    env = gym.make("HetCluster-v0", scenario=name, scenario_kwargs=kw)
    check_env(env.unwrapped, skip_render_check=True)
    env.reset(seed=0)
    for _ in range(50):
        a = int(np.flatnonzero(env.unwrapped.action_masks())[0])
        _, _, term, trunc, _ = env.step(a)
        if term or trunc:
            break
