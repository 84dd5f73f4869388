"""Trace and lab scenario presets (hetgym.presets.traces) and the default job window."""

from __future__ import annotations

import time
from pathlib import Path

import gymnasium as gym
import numpy as np
import pytest

import hetgym
from hetgym import scenarios
from hetgym.presets import traces as presets
from hetgym.traces.defaults import max_node_gang, philly_window
from hetgym.traces.windows import offered_load

FIXTURES = Path(__file__).parent / "fixtures"

# small parameters per registered name, so every check stays quick
SMALL: dict[str, dict] = {
    "philly-hetero": {"n_jobs": 48},
    "google-hybrid": {"n_jobs": 48},
    "alibaba-pai": {"n_jobs": 48},
    "helios": {"n_jobs": 48},
    "hadar-testbed": {},
    "andreas-armida": {},
    "fitgpp-lab": {"n_jobs": 64},
}
NAMES = list(presets.REGISTERED)


def test_all_registered() -> None:
    known = scenarios.names()
    for name in NAMES:
        assert name in known
        assert name in SMALL
    assert {"philly-hetero", "google-hybrid", "alibaba-pai", "helios", "hadar-testbed",
            "andreas-armida"} <= set(NAMES)
    assert "fitgpp-lab" in known  # from hetgym.presets.fitgpp


@pytest.mark.parametrize("name", NAMES)
def test_builds_and_runs_fifo(name: str) -> None:
    import baselines

    sc = scenarios.get(name, **SMALL[name])
    assert sc.name == name
    assert len(sc.workload) > 0
    res = hetgym.simulate(sc, baselines.make("fifo"))
    assert res.metrics["unfinished_jobs"] == 0


@pytest.mark.parametrize("name", NAMES)
def test_env_masked_random_steps(name: str) -> None:
    env = gym.make("HetCluster-v0", scenario=scenarios.get(name, **SMALL[name]))
    obs, info = env.reset(seed=0)
    rng = np.random.default_rng(0)
    for _ in range(10):
        mask = env.unwrapped.action_masks()
        assert mask.any()
        a = int(rng.choice(np.flatnonzero(mask)))
        obs, r, term, trunc, info = env.step(a)
        assert np.isfinite(r)
        if term or trunc:
            break
    env.close()


@pytest.mark.parametrize("name", NAMES)
def test_env_by_name(name: str) -> None:
    env = gym.make("HetCluster-v0", scenario=name)
    env.reset(seed=0)
    mask = env.unwrapped.action_masks()
    env.step(int(np.flatnonzero(mask)[0]))
    env.close()


def test_defaults_build() -> None:
    sc = scenarios.get("philly-hetero")
    assert len(sc.workload) == 512
    assert sc.cluster.capacity("v100") == 16
    sc = scenarios.get("andreas-armida")
    assert sc.objective.as_dict() == {"tardiness": 1.0}
    assert sc.options.energy_price == 0.172 and sc.options.pue == 1.33
    sc = scenarios.get("andreas-armida", energy_weight=0.5)
    assert sc.objective.as_dict() == {"tardiness": 1.0, "energy_cost": 0.5}
    assert len(scenarios.get("hadar-testbed", mix="M-3").workload) == 3


def test_trace_paths() -> None:
    sc = scenarios.get("alibaba-pai", job_table=FIXTURES / "pai_job_table.csv",
                       task_table=FIXTURES / "pai_task_table.csv")
    assert 1 <= len(sc.workload) <= 3
    assert {c for c in sc.workload.frame.columns if c.startswith("tput_")} == {"tput_p100", "tput_v100", "tput_t4"}
    sc = scenarios.get("helios", path=FIXTURES / "helios_cluster_log.csv")
    assert len(sc.workload) == 3
    with pytest.raises(ValueError, match="both"):
        scenarios.get("alibaba-pai", job_table=FIXTURES / "pai_job_table.csv")


def test_seed_and_load_change_workload() -> None:
    a = scenarios.get("google-hybrid", n_jobs=40, seed=0).workload.frame
    b = scenarios.get("google-hybrid", n_jobs=40, seed=1).workload.frame
    assert not a["trace_id"].equals(b["trace_id"])
    c = scenarios.get("google-hybrid", n_jobs=40, seed=0, load=2.0).workload.frame
    assert np.allclose(c["arrival"].to_numpy() * 2.0, a["arrival"].to_numpy())


@pytest.mark.parametrize("n_jobs,seed,load", [(512, 0, 1.0), (100, 3, 0.7), (37, 11, 2.5)])
def test_philly_window(n_jobs: int, seed: int, load: float) -> None:
    cluster = scenarios.default_cluster()
    df = philly_window(cluster, n_jobs=n_jobs, seed=seed, load=load)
    assert len(df) == n_jobs
    assert df["arrival"].iloc[0] == 0.0
    assert (np.diff(df["arrival"].to_numpy()) >= 0).all()
    assert df["job_id"].tolist() == list(range(n_jobs))
    assert offered_load(df, cluster, resources="speed", cpu_slot_cores=8) == pytest.approx(load, rel=0.01)
    assert df["workers"].max() <= max_node_gang(cluster) == 4
    assert df.attrs["dropped_too_large"] > 0
    hetgym.Workload.from_frame(df).check_cluster(cluster, hetgym.SimOptions(cpu_slot_cores=8))


def test_philly_window_cached_and_seeded() -> None:
    cluster = scenarios.default_cluster()
    philly_window(cluster, n_jobs=64)
    t = time.perf_counter()
    a = philly_window(cluster, n_jobs=512, seed=5)
    assert time.perf_counter() - t < 0.5
    b = philly_window(cluster, n_jobs=512, seed=5)
    c = philly_window(cluster, n_jobs=512, seed=6)
    assert a.equals(b)
    assert not a["trace_id"].equals(c["trace_id"])
    with pytest.raises(ValueError):
        philly_window(cluster, n_jobs=1)


def test_default_scenario_uses_philly_window() -> None:
    sc = scenarios.get("hetero-small", n_jobs=32)
    assert len(sc.workload) == 32
    assert sc.workload.frame["trace_id"].str.contains(":").all()
