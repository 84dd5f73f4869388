"""The decision envs with learners: MaskablePPO smoke training and behaviour cloning from
the family's paper scheduler (agents.imitation.bc through DecisionEnvConfig)."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest

import hetgym  # noqa: F401
from agents.imitation.bc import BCConfig, DecisionEnvConfig, collect, pretrain
from hetgym import scenarios

#: env id, scenario (name, kwargs), teacher (name, params), small env kwargs
CASES = [("HetClusterPlacement-v0", ("topo-sim", {}), ("topo-aware", {}),
          {"n_jobs": 16, "window": 4}),
         ("HetClusterElastic-v0", ("andreas-sim", {}), ("andreas-rg", {"max_iter": 50}),
          {"n_jobs": 16, "window": 4, "run_window": 4}),
         ("HetClusterRounds-v0", ("hadar-sim", {"n_jobs": 24}), ("hadar", {}),
          {"n_jobs": 6, "window": 6})]
IDS = [c[0] for c in CASES]


@pytest.mark.parametrize("env_id,scenario,teacher,kw", CASES, ids=IDS)
def test_maskable_ppo_smoke(env_id, scenario, teacher, kw):
    from sb3_contrib import MaskablePPO

    env = gym.make(env_id, scenario=scenarios.get(scenario[0], **scenario[1]), **kw)
    model = MaskablePPO("MlpPolicy", env, n_steps=64, batch_size=32, n_epochs=1, seed=0,
                        policy_kwargs={"net_arch": [32]}, device="cpu")
    model.learn(128)
    obs, _ = env.reset(seed=1)
    a, _ = model.predict(obs, action_masks=env.unwrapped.action_masks(), deterministic=True)
    assert env.unwrapped.action_masks()[int(a)]


@pytest.mark.parametrize("env_id,scenario,teacher,kw", CASES, ids=IDS)
def test_behaviour_cloning_from_the_paper_scheduler(env_id, scenario, teacher, kw):
    from sb3_contrib import MaskablePPO

    sc = scenarios.get(scenario[0], **scenario[1])
    cfg = DecisionEnvConfig(env_id, kw)
    data = collect(sc, cfg, teacher[0], teacher[1], episodes=2, seed=0)
    n = len(data["action"])
    assert data["obs"].shape[0] == n == len(data["ret"]) and n > 10
    assert data["mask"][np.arange(n), data["action"]].all()
    done = gym.make(env_id, scenario=sc, **kw).unwrapped.done_action
    assert (data["action"] != done).any() and (data["action"] == done).any()
    env = gym.make(env_id, scenario=sc, **kw)
    model = MaskablePPO("MlpPolicy", env, n_steps=64, batch_size=32, seed=0,
                        policy_kwargs={"net_arch": [64]}, device="cpu")
    stats = pretrain(model, sc, cfg, BCConfig(teacher=teacher[0], teacher_params=teacher[1],
                                              episodes=2, epochs=20, batch_size=64,
                                              learning_rate=3e-3), seed=0)
    # better than a uniform choice among the feasible actions
    chance = float(np.mean(1.0 / data["mask"].sum(axis=1)))
    assert stats["accuracy"] > chance + 0.1, (stats, chance)
    print(env_id, teacher, {k: stats[k] for k in ("samples", "accuracy")}, "chance",
          round(chance, 3), "skipped", int(data["skipped"]))


@pytest.mark.slow
def test_cloned_policy_matches_its_teacher():
    """BC from topo-aware in HetClusterPlacement-v0 (16 windows of 32 jobs): on held-out
    windows the cloned policy's average JCT is the teacher's, and better than random."""
    from sb3_contrib import MaskablePPO

    import baselines
    from hetgym.envs.decision_base import SchedulerAgent, play

    sc = scenarios.get("topo-sim")
    kw = {"n_jobs": 32, "window": 8}
    env = gym.make("HetClusterPlacement-v0", scenario=sc, **kw)
    model = MaskablePPO("MlpPolicy", env, n_steps=64, batch_size=64, seed=0,
                        policy_kwargs={"net_arch": [128, 128]}, device="cpu")
    pretrain(model, sc, DecisionEnvConfig("HetClusterPlacement-v0", kw),
             BCConfig(teacher="topo-aware", episodes=16, epochs=20, batch_size=128,
                      learning_rate=1e-3), seed=0)

    def run(seed, policy):
        obs, _ = env.reset(seed=seed)
        rng = np.random.default_rng(seed)
        while True:
            m = env.unwrapped.action_masks()
            a = (int(model.predict(obs, action_masks=m, deterministic=True)[0])
                 if policy == "bc" else int(rng.choice(np.flatnonzero(m))))
            obs, _, term, trunc, info = env.step(a)
            if term or trunc:
                return info["episode_metrics"]["avg_jct"]

    teacher, bc, rand = [], [], []
    for s in range(1000, 1004):
        agent = SchedulerAgent(baselines.make("topo-aware"), strict=False)
        teacher.append(play(env, agent, seed=s)[1]["episode_metrics"]["avg_jct"])
        bc.append(run(s, "bc"))
        rand.append(run(s, "random"))
    assert np.mean(bc) <= np.mean(teacher) * 1.02, (bc, teacher)
    assert np.mean(bc) < np.mean(rand), (bc, rand)
