"""The shipped models (agents/pretrained): every one loads and runs like a baseline."""

from __future__ import annotations

import json

import pytest

pytest.importorskip("sb3_contrib")

import hetgym  # noqa: E402
from agents import load_pretrained, pretrained_names  # noqa: E402
from agents.pretrained import PRETRAINED_DIR, card  # noqa: E402
from hetgym import scenarios  # noqa: E402

SHIPPED = pretrained_names()
CARD_KEYS = {"name", "algo", "env", "devices", "scenario", "scenario_kwargs", "command", "steps",
             "wall_s", "machine", "heldout"}


def test_the_three_families_are_shipped():
    assert {"hetero-small", "google-hybrid", "fitgpp-lab"} <= set(SHIPPED)


@pytest.mark.parametrize("name", SHIPPED)
def test_card_and_size(name):
    c = card(name)
    assert CARD_KEYS <= set(c), f"card of {name} lacks {CARD_KEYS - set(c)}"
    assert c["name"] == name and c["scenario"] == name
    assert (PRETRAINED_DIR / f"{name}.zip").stat().st_size < 5 * 2**20
    json.dumps(c)  # plain JSON


@pytest.mark.parametrize("name", SHIPPED)
def test_runs_on_a_tiny_window(name):
    c = card(name)
    sc = scenarios.get(c["scenario"], n_jobs=12, **c["scenario_kwargs"])
    sched = load_pretrained(name)
    res = hetgym.simulate(sc, sched, seed=0)
    assert res.summary()["unfinished_jobs"] == 0
    assert len(sched.actions) >= 12  # at least one start per job, chosen by the policy
    # the same run again gives the same schedule (greedy policy, fresh state on reset)
    again = hetgym.simulate(sc, load_pretrained(name), seed=0)
    assert again.summary()["avg_jct"] == res.summary()["avg_jct"]


def test_wrong_cluster_and_name_are_refused():
    name = SHIPPED[0]
    other = "toy-3jobs"
    with pytest.raises(ValueError, match="device types"):
        hetgym.simulate(scenarios.get(other), load_pretrained(name), seed=0)
    with pytest.raises(ValueError, match="no pretrained model 'nope'"):
        load_pretrained("nope")
