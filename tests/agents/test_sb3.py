"""MaskablePPO smoke run through agents.sb3.training.train, and the trained model as a scheduler."""

from __future__ import annotations

import json

import numpy as np
import pytest

pytest.importorskip("sb3_contrib")

import hetgym  # noqa: E402
from agents.common.adapter import AgentScheduler, SB3Policy, load_scheduler  # noqa: E402
from agents.imitation.bc import BCConfig  # noqa: E402
from agents.common.envtools import EnvConfig, heldout_windows  # noqa: E402
from agents.sb3.agent import AgentConfig, make_vec_env  # noqa: E402
from agents.sb3.training import TrainConfig, train  # noqa: E402
from hetgym import scenarios  # noqa: E402


def test_maskable_ppo_smoke(tmp_path):
    sc = scenarios.get(scenarios.DEFAULT, n_jobs=64, seed=0)
    val = scenarios.get(scenarios.DEFAULT, n_jobs=64, seed=1)
    env_cfg = EnvConfig(n_jobs=12, window=8, time_scale=36000.0)
    agent = AgentConfig(n_steps=64, batch_size=64, n_epochs=2, net_arch=(32, 32))
    cfg = TrainConfig(total_timesteps=256, n_envs=2, checkpoint_every=128, eval_every=128,
                      val_windows=2, test_windows=2, val_workload_seeds=(1,), test_workload_seeds=(1,), baselines=("fifo",), tensorboard=False,
                      verbose=0)
    bc = BCConfig(teacher="sjf", episodes=2, epochs=1)
    res = train(sc, [val], [val], env_cfg, agent, cfg, tmp_path, seed=0, bc=bc)
    assert res.timesteps >= 256 and res.bc_stats["samples"] > 0
    for f in ("agent.json", "best_model.zip", "final_model.zip", "eval.csv", "progress.csv",
              "comparison.md", "comparison.csv", "test_runs.csv", "learning_curve.png"):
        assert (tmp_path / f).is_file(), f
    assert list((tmp_path / "checkpoints").glob("*.zip"))
    assert json.loads((tmp_path / "agent.json").read_text())["env"]["time_scale"] == 36000.0
    assert len(res.eval_history) >= 2
    assert set(res.comparison.index) == {"fifo", "agent (best)", "agent (final)"}
    # the checkpoint runs through hetgym.simulate like a baseline
    win = heldout_windows(val, env_cfg, 1)[0]
    out = hetgym.simulate(win, load_scheduler(str(tmp_path / "best_model.zip")), seed=0)
    assert out.summary()["unfinished_jobs"] == 0


def test_plain_ppo_through_adapter():
    from stable_baselines3 import PPO

    sc = scenarios.get(scenarios.DEFAULT, n_jobs=64, seed=0)
    env_cfg = EnvConfig(n_jobs=12, window=8)
    venv = make_vec_env(sc, env_cfg, n_envs=1, masked=False)
    model = AgentConfig(algo="ppo", n_steps=32, batch_size=32, n_epochs=1,
                        net_arch=(16,)).build(venv, seed=0)
    assert isinstance(model, PPO)
    model.learn(64)
    win = heldout_windows(sc, env_cfg, 1)[0]
    res = hetgym.simulate(win, AgentScheduler(SB3Policy(model), env_cfg), seed=0)
    assert res.summary()["unfinished_jobs"] == 0
    assert np.isfinite(res.summary()["avg_jct"])
