"""DAgger with the rollout teacher (agents.imitation.dagger): set-valued fitting and one iteration."""

from __future__ import annotations

import json

import numpy as np
import pytest

pytest.importorskip("sb3_contrib")

from agents.imitation.dagger import DaggerConfig, dagger, fit_sets
from agents.common.envtools import EnvConfig, window_rows, window_scenario
from agents.sb3.agent import AgentConfig, make_vec_env
from hetgym import scenarios

CFG = EnvConfig(n_jobs=12, window=8, time_scale=36000.0)


def _model(sc):
    venv = make_vec_env(sc, CFG, n_envs=1)
    return AgentConfig(net_arch=(32, 32), n_steps=32, batch_size=32).build(venv, seed=0)


def test_fit_sets_learns_target_sets():
    """After fitting, the greedy action lies in each state's target set (random sets of
    1-3 allowed actions on 40 random observations)."""
    sc = scenarios.get(scenarios.DEFAULT, n_jobs=64, seed=0)
    model = _model(sc)
    rng = np.random.default_rng(0)
    n, A = 40, model.action_space.n
    obs = rng.random((n, model.observation_space.shape[0])).astype(np.float32)
    mask = rng.random((n, A)) < 0.5
    mask[:, -1] = True
    target = np.zeros_like(mask)
    for i in range(n):
        allowed = np.flatnonzero(mask[i])
        target[i, rng.choice(allowed, size=min(len(allowed), rng.integers(1, 4)), replace=False)] = True
    before = fit_sets(model, obs, mask, target, epochs=0)["in_set"]
    after = fit_sets(model, obs, mask, target, epochs=300, batch_size=64, learning_rate=3e-3)
    assert after["in_set"] >= 0.95 > before
    assert np.isfinite(after["loss"])


def test_one_iteration_on_12_job_windows(tmp_path):
    """Iteration 0 (the teacher acting) and 1 (the student acting, labelled) on 12-job
    windows; files written, the selection history has both iterations."""
    sc = scenarios.get(scenarios.DEFAULT, n_jobs=96, seed=1)
    val = [window_scenario(sc, window_rows(CFG.make(sc), s)) for s in (11, 12)]
    model = _model(sc)
    cfg = DaggerConfig(base="sjf", iterations=1, episodes=1, epochs=2, top_k=2)
    out = dagger(model, sc, val, CFG, cfg, tmp_path, log=lambda *_: None)
    for f in ("agent.json", "best_model.zip", "final_model.zip", "eval.csv", "dagger.json"):
        assert (tmp_path / f).is_file(), f
    hist = out["history"]
    assert [h["iteration"] for h in hist] == [-1, 0, 1]
    assert hist[2]["samples"] > hist[1]["samples"] > 0
    assert 0.0 <= hist[2]["in_set"] <= 1.0
    assert out["best_score"] == min(h["score"] for h in hist)
    assert json.loads((tmp_path / "agent.json").read_text())["dagger"]["base"] == "sjf"
