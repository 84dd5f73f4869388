"""The shipped models (agents/pretrained): every one loads and runs like a baseline, of both
kinds (MaskablePPO ``.zip``, residual policy ``.pt``)."""

from __future__ import annotations

import json
import math

import pytest

pytest.importorskip("sb3_contrib")

import pandas as pd

import baselines
import hetgym
from agents import load_pretrained, pretrained_names
from agents.pretrained import registry as P
from agents.common.envtools import EnvConfig
from agents.pretrained.registry import DeviceCheck, card, model_path
from hetgym import scenarios

SHIPPED = pretrained_names()
CARD_KEYS = {"name", "algo", "env", "devices", "scenario", "scenario_kwargs", "command", "steps",
             "wall_s", "machine", "heldout"}


def test_the_three_families_are_shipped():
    assert {"hetero-small", "google-hybrid", "fitgpp-lab"} <= set(SHIPPED)


def test_both_kinds_are_listed_and_loaded():
    """The registry lists MaskablePPO and residual models; each loads as its scheduler class."""
    algos = {n: card(n)["algo"] for n in SHIPPED}
    assert {"maskable_ppo", "residual"} <= set(algos.values()), algos
    for n, algo in algos.items():
        s = load_pretrained(n)
        want = P.PretrainedResidualScheduler if algo == "residual" else P.PretrainedScheduler
        assert type(s) is want and isinstance(s, DeviceCheck) and s.name == f"pretrained:{n}"
        assert model_path(n).suffix == P.MODEL_SUFFIX[algo]


@pytest.mark.parametrize("name", SHIPPED)
def test_card_and_size(name):
    c = card(name)
    assert CARD_KEYS <= set(c), f"card of {name} lacks {CARD_KEYS - set(c)}"
    assert c["name"] == name and c["scenario"] == name
    assert model_path(name).stat().st_size < 5 * 2**20
    json.dumps(c, allow_nan=False)  # strict JSON
    if c["algo"] == "residual":
        assert math.isfinite(float(c["tau"])) or float(c["tau"]) == math.inf


@pytest.mark.parametrize("name", SHIPPED)
def test_runs_on_a_tiny_window(name):
    c = card(name)
    sc = scenarios.get(c["scenario"], n_jobs=12, **c["scenario_kwargs"])
    sched = load_pretrained(name)
    res = hetgym.simulate(sc, sched, seed=0)
    assert res.summary()["unfinished_jobs"] == 0
    if c["algo"] == "residual":
        assert sched.points > 0  # the chooser was asked
    else:
        assert len(sched.actions) >= 12  # at least one start per job, chosen by the policy
    # the same run again gives the same schedule (greedy policy, fresh state on reset)
    again = hetgym.simulate(sc, load_pretrained(name), seed=0)
    assert again.summary()["avg_jct"] == res.summary()["avg_jct"]


@pytest.mark.parametrize(("name", "base"), [("hetero-small", "allox"), ("fitgpp-lab", "fitgpp")])
def test_shipped_residual_policies(name, base):
    """``hetero-small`` is the residual policy over AlloX, ``fitgpp-lab`` over FitGpp: the card
    matches the model file (env arguments, tau, base), it names the scenario's device types,
    and the model runs a 32-job workload of its scenario to the end."""
    import torch

    c = card(name)
    assert c["algo"] == "residual" and c["residual"]["base"] == base
    d = torch.load(model_path(name), map_location="cpu", weights_only=True)
    assert d["env"] == c["env"] and float(d["tau"]) == float(c["tau"]) and d["residual"] == c["residual"]
    sc = scenarios.get(name, n_jobs=32, seed=3, **c["scenario_kwargs"])
    assert [str(x) for x in sc.cluster.device_types] == c["devices"]
    sched = load_pretrained(name)
    assert sched.chooser.tau == float(c["tau"])
    res = hetgym.simulate(sc, sched, seed=0)
    assert res.summary()["unfinished_jobs"] == 0 and sched.points > 0


def _residual_card(tmp_path, monkeypatch, card_tau: float) -> str:
    """A residual model (a small random net, saved with tau 0) and its card with
    ``card_tau``, in a registry folder of its own."""
    import torch

    from agents import residual as R

    sc = scenarios.get("hetero-small", n_jobs=24, seed=5)
    env_config = EnvConfig(n_jobs=None, window=8, time_scale=36000.0)
    env = env_config.make(sc)
    torch.manual_seed(0)
    net = R.AdvantageNet(env.observation_space.shape[0], env.action_space.n, (16,))
    R.save(tmp_path / "toy.pt", net, env_config, R.ResidualConfig(), R.FitConfig(hidden=(16,)), 0.0,
           env.observation_space.shape[0], env.action_space.n)
    c = {"name": "toy", "scenario": "hetero-small", "scenario_kwargs": {}, "algo": "residual",
         "devices": [str(x) for x in sc.cluster.device_types], "env": env_config.to_dict(),
         "tau": str(card_tau), "heldout": {}}
    (tmp_path / "toy.json").write_text(json.dumps(c))
    monkeypatch.setattr(P, "PRETRAINED_DIR", tmp_path)
    return "toy"


def test_residual_card_with_tau_inf_is_allox(tmp_path, monkeypatch):
    """A residual card with tau = inf runs AlloX's own schedule (the same jobs frame), though
    its model file says tau 0; with a very low tau the same model leaves AlloX's schedule."""
    name = _residual_card(tmp_path, monkeypatch, math.inf)
    assert pretrained_names() == [name]
    sc = scenarios.get("hetero-small", n_jobs=24, seed=5)
    ref = hetgym.simulate(sc, baselines.make("allox"), seed=0)
    sched = load_pretrained(name)
    got = hetgym.simulate(sc, sched, seed=0)
    assert sched.points > 0 and sched.deviations == 0
    pd.testing.assert_frame_equal(got.jobs, ref.jobs)
    assert got.summary()["avg_jct"] == ref.summary()["avg_jct"]

    _residual_card(tmp_path, monkeypatch, -1e9)  # always deviate when there is a candidate
    sched = load_pretrained(name)
    other = hetgym.simulate(sc, sched, seed=0)
    assert sched.deviations > 0
    assert not other.jobs.equals(ref.jobs)


def test_unknown_algo_is_refused(tmp_path, monkeypatch):
    _residual_card(tmp_path, monkeypatch, math.inf)
    c = json.loads((tmp_path / "toy.json").read_text())
    (tmp_path / "toy.json").write_text(json.dumps({**c, "algo": "dqn"}))
    with pytest.raises(ValueError, match="unknown algo 'dqn'"):
        load_pretrained("toy")


@pytest.mark.parametrize("name", SHIPPED)
def test_wrong_cluster_is_refused(name):
    """Both kinds refuse a cluster with other device types, with the same error."""
    with pytest.raises(ValueError, match=r"acts on clusters with device types .* the scenario has \['cpu', 'v100'\]"):
        hetgym.simulate(scenarios.get("toy-3jobs"), load_pretrained(name), seed=0)


def test_unknown_name_is_refused():
    with pytest.raises(ValueError, match="no pretrained model 'nope'"):
        load_pretrained("nope")
