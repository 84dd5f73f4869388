"""The ANDREAS scenarios: ``andreas-sim`` (paper section V-B) and ``andreas-armida`` with
ANDREAS' own model, built by name and by the environment."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest

import hetgym
from hetgym.presets.andreas import andreas_sim


@pytest.mark.parametrize("gpus,per_node", [("2/1", (2, 1)), ("4/2", (4, 2))])
def test_andreas_sim_layout_and_jobs(gpus: str, per_node: tuple[int, int]) -> None:
    sc = hetgym.scenarios.get("andreas-sim", n_nodes=6, gpus=gpus, seed=3)
    groups = {g.name: (g.count, g.gpus, g.gpu_type) for g in sc.cluster.nodes}
    assert groups == {"v100": (3, per_node[0], "V100"), "t4": (3, per_node[1], "T4")}
    fr = sc.workload.frame
    assert len(fr) == 60
    assert set(fr["work"]) <= {60.0, 80.0, 160.0}
    assert (fr["min_workers"] == 1).all() and (fr["max_workers"] == per_node[0]).all()
    assert (fr["scaling_exponent"] == 0.8).all()
    fastest = fr["work"] / (fr["tput_v100"] * per_node[0] ** 0.8)
    ratio = (fr["deadline"] - fr["arrival"]) / fastest
    assert ratio.between(1.0, 3.0).all()
    assert fr["weight"].between(0.003, 0.015).all()
    o = sc.options
    assert (o.idle_power, o.checkpoint_unit, o.checkpoint_interval) == ("busy_nodes", "work", 1.0)
    assert sc.objective.as_dict() == {"energy_cost": 1.0, "tardiness": 1.0}


def test_andreas_sim_load_scales_arrivals() -> None:
    """Twice the load, half the mean inter-arrival time (same jobs otherwise)."""
    a = andreas_sim(n_nodes=4, seed=1, load=0.4).workload.frame
    b = andreas_sim(n_nodes=4, seed=1, load=0.8).workload.frame
    np.testing.assert_allclose(a["arrival"].to_numpy(), 2 * b["arrival"].to_numpy(), rtol=1e-12)
    with pytest.raises(ValueError, match="gpus"):
        andreas_sim(gpus="8/4")


@pytest.mark.parametrize("name,kw", [("andreas-sim", {"n_nodes": 4}),
                                     ("andreas-armida", {"elastic": True})])
def test_env_runs_the_andreas_scenarios(name: str, kw: dict) -> None:
    env = gym.make("HetCluster-v0", scenario=name, scenario_kwargs=kw)
    _, info = env.reset(seed=0)
    terms = set()
    for _ in range(30):
        mask = info["action_mask"] if "action_mask" in info else env.unwrapped.action_masks()
        a = int(np.flatnonzero(mask)[0])
        _, _, term, trunc, info = env.step(a)
        terms |= set(info.get("reward_terms", {}))
        if term or trunc:
            break
    assert {"energy_cost", "tardiness"} <= terms
    assert env.unwrapped.scenario.objective.as_dict()["energy_cost"] == 1.0


def test_armida_elastic_and_default() -> None:
    """elastic=True: 1-2 GPUs per job and ANDREAS' options; the default stays as it was."""
    e = hetgym.scenarios.get("andreas-armida", elastic=True)
    assert (e.workload.frame["max_workers"] == 2).all() and e.options.idle_power == "busy_nodes"
    d = hetgym.scenarios.get("andreas-armida")
    assert (d.workload.frame["max_workers"] == 1).all() and d.options.idle_power == "always"
    assert d.objective.as_dict() == {"tardiness": 1.0}
