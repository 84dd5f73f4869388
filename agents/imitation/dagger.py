"""DAgger with a rollout teacher: distil :class:`agents.imitation.rollout.RolloutTeacher` into a policy.

Iteration 0 rolls the teacher itself on training windows; every later iteration rolls
the current *student* (the network, greedy) and asks the teacher what it would do in
each state the student visits (Ross, Gordon, Bagnell, *A reduction of imitation
learning ... to no-regret online learning*, AISTATS 2011). All labelled states are
kept (aggregated) and the policy is refitted on them after each iteration. With the
rollout teacher this is approximate policy iteration: the labels are the actions that
are best after one step of lookahead with the base policy.

A label is the *set* of candidate actions whose rollout value ties with the best
(:meth:`agents.imitation.rollout.RolloutTeacher.label`); the loss is
``-log sum_{a in set} pi(a | s)`` (a start order among equally good starts at one
instant is not forced on the network). After each iteration the student is judged on
the validation windows through :func:`hetgym.simulate` (the adapter); the best
iteration is saved as ``best_model.zip`` (with ``agent.json`` and ``eval.csv``, the
layout :func:`agents.pretrained.registry.ship` reads).
"""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from agents.common.envtools import EnvConfig, policy_mask
from hetgym.specs import Scenario

__all__ = ["DaggerConfig", "dagger", "fit_sets", "student_probs"]


@dataclass(frozen=True)
class DaggerConfig:
    """DAgger settings.

    Attributes:
        base: The rollout teacher's base policy (``baselines.make`` name).
        base_params: Its parameters.
        iterations: Iterations after the teacher's own one (iteration 0).
        episodes: Training windows per iteration (64-job windows of the train rows).
        teacher_episodes: Windows of iteration 0 (the teacher acting); default ``episodes``.
        top_k: Candidates proposed by the student's probabilities (besides the base
            action, "wait" and the shortest job per device type).
        all_actions: Every allowed action is a candidate (slow).
        epochs: Passes over the aggregated data after each iteration.
        batch_size: Minibatch size.
        learning_rate: Adam step size.
        time_limit_s: Wall clock of the run; no new iteration starts after it.
        seed: Seed of the training windows and of the minibatch order.
    """

    base: str = "allox"
    base_params: dict[str, Any] = field(default_factory=dict)
    iterations: int = 3
    episodes: int = 32
    teacher_episodes: int | None = None
    top_k: int = 3
    all_actions: bool = False
    epochs: int = 20
    batch_size: int = 256
    learning_rate: float = 3e-4
    time_limit_s: float = 3600.0
    seed: int = 0

    def __post_init__(self) -> None:
        object.__setattr__(self, "base_params", dict(self.base_params))
        if self.iterations < 0 or self.episodes < 1:
            raise ValueError(f"DaggerConfig: iterations >= 0 and episodes >= 1 expected, got "
                             f"{self.iterations} and {self.episodes}")


def student_probs(model: Any) -> Any:
    """``probs(obs, mask) -> float[A]`` of a MaskablePPO model's policy (greedy proposer)."""
    import torch

    policy = model.policy

    def probs(obs: np.ndarray, mask: np.ndarray) -> np.ndarray:
        with torch.no_grad():
            o = torch.as_tensor(obs[None], dtype=torch.float32, device=policy.device)
            dist = policy.get_distribution(o, action_masks=mask[None])
            return dist.distribution.probs[0].cpu().numpy()

    return probs


def _teacher(cfg: DaggerConfig, model: Any | None) -> Any:
    from agents.imitation.rollout import RolloutTeacher, SchedulerActor

    proposer = student_probs(model) if model is not None and cfg.top_k > 0 else None
    return RolloutTeacher(SchedulerActor(cfg.base, cfg.base_params), proposer=proposer,
                          top_k=cfg.top_k, all_actions=cfg.all_actions)


def _roll(env: Any, teacher: Any, student: Any | None, seed: int, no_idle_wait: bool,
          data: dict[str, list]) -> dict[str, float]:
    """One episode: the student acts (the teacher if None), the teacher labels every state."""
    obs, _ = env.reset(seed=seed)
    teacher.reset(env)
    while True:
        mask = policy_mask(env, no_idle_wait)
        a, best = teacher.label(env, obs, mask)
        data["obs"].append(obs)
        data["mask"].append(mask)
        target = np.zeros(len(mask), dtype=bool)
        target[best] = True
        data["target"].append(target)
        if student is not None:
            a = int(student(obs, mask))
        obs, _, term, trunc, info = env.step(a)
        if term or trunc:
            return info["episode_metrics"]


def fit_sets(model: Any, obs: np.ndarray, mask: np.ndarray, target: np.ndarray, epochs: int,
             batch_size: int = 256, learning_rate: float = 3e-4, seed: int = 0) -> dict[str, float]:
    """Fit ``model.policy`` by ``-log sum_{a in target} pi(a | s)`` (in place); returns
    the final loss and the share of states whose greedy action is in the target set."""
    import torch

    from agents.imitation.bc import fit_minibatches

    policy = model.policy
    dev = policy.device
    o = torch.as_tensor(obs, dtype=torch.float32, device=dev)
    tgt = torch.as_tensor(target, device=dev)
    n = len(o)

    def loss_of(idx: np.ndarray) -> Any:
        logits = policy.get_distribution(o[idx], action_masks=mask[idx]).distribution.logits
        inset = torch.where(tgt[idx], logits, torch.full_like(logits, -1e8))
        return -(torch.logsumexp(inset, 1) - torch.logsumexp(logits, 1)).mean()

    losses = fit_minibatches(policy, n, loss_of, epochs, batch_size, learning_rate, seed)
    with torch.no_grad():
        pred = policy.get_distribution(o, action_masks=mask).distribution.probs.argmax(1).cpu().numpy()
    return {"loss": float(np.mean(losses[-10:])) if losses else float("nan"),
            "in_set": float(target[np.arange(n), pred].mean()) if n else float("nan")}


def _val_score(model: Any, env_config: EnvConfig, val: Sequence[Scenario], metric: str) -> list[float]:
    from agents.common.adapter import AgentScheduler, SB3Policy
    from agents.evaluation.windows import evaluate_on_windows

    runs = evaluate_on_windows({"student": lambda: AgentScheduler(SB3Policy(model), env_config)}, val)
    return runs[metric].astype(float).tolist()


def dagger(model: Any, train: Scenario, val: Sequence[Scenario], env_config: EnvConfig,
           cfg: DaggerConfig, out_dir: str | Path, metric: str = "avg_jct",
           meta: dict[str, Any] | None = None, log: Any = print) -> dict[str, Any]:
    """Run DAgger (module docstring) on windows of ``train``; select on ``val``.

    Args:
        model: A MaskablePPO model (its policy is trained in place; e.g. a shipped model).
        train: The training workload (episodes draw ``env_config.n_jobs``-job windows).
        val: Validation windows (model selection).
        env_config: The env arguments the model acts with.
        cfg: Settings.
        out_dir: Run folder (``best_model.zip``, ``final_model.zip``, ``agent.json``,
            ``eval.csv``, ``dagger.json``).
        metric: Episode metric the teacher minimises and selection uses.
        meta: More entries for ``agent.json``.
        log: Progress printer.
    """
    import pandas as pd

    from agents.common.adapter import save_meta
    from hetgym.io import write_atomic_bytes, write_atomic_csv

    t0 = time.monotonic()
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    save_meta(out, "maskable_ppo", env_config, {"dagger": asdict(cfg), "scenario": train.name,
                                                 "devices": list(train.cluster.device_types),
                                                 **(meta or {})})
    env = env_config.make(train)
    data: dict[str, list] = {"obs": [], "mask": [], "target": []}
    history: list[dict[str, Any]] = []
    v0 = _val_score(model, env_config, val, metric)
    history.append({"iteration": -1, "timesteps": 0, "wall_s": time.monotonic() - t0,
                    "samples": 0, metric: float(np.mean(v0)), "score": float(np.mean(v0))})
    log(f"[dagger] start: validation {metric} {np.mean(v0):.1f}")
    best = history[0]["score"]
    model.save(str(out / "best_model.zip"))
    for it in range(cfg.iterations + 1):
        if it > 0 and time.monotonic() - t0 > cfg.time_limit_s:
            log(f"[dagger] time limit reached before iteration {it}")
            break
        teacher = _teacher(cfg, model if it > 0 or cfg.top_k > 0 else None)
        from agents.common.adapter import SB3Policy

        student = SB3Policy(model) if it > 0 else None
        n_ep = (cfg.teacher_episodes or cfg.episodes) if it == 0 else cfg.episodes
        scores = []
        for e in range(n_ep):
            seed = cfg.seed + 100_003 * it + 7919 * (e + 1)
            scores.append(float(_roll(env, teacher, student, seed, env_config.no_idle_wait,
                                      data)[metric]))
        fit = fit_sets(model, np.asarray(data["obs"], dtype=np.float32), np.asarray(data["mask"]),
                       np.asarray(data["target"]), cfg.epochs, cfg.batch_size,
                       cfg.learning_rate, seed=cfg.seed + it)
        v = _val_score(model, env_config, val, metric)
        row = {"iteration": it, "timesteps": len(data["obs"]), "wall_s": time.monotonic() - t0,
               "samples": len(data["obs"]), "episodes": n_ep,
               "rollout_mean": float(np.mean(scores)), "teacher_changed": teacher.stats.changed,
               "teacher_decisions": teacher.stats.decisions, **fit,
               metric: float(np.mean(v)), "score": float(np.mean(v))}
        history.append(row)
        log(f"[dagger] {json.dumps(row)}")
        if row["score"] < best:
            best = row["score"]
            model.save(str(out / "best_model.zip"))
        write_atomic_csv(pd.DataFrame(history), out / "eval.csv")
    model.save(str(out / "final_model.zip"))
    summary = {"best_score": best, "wall_s": time.monotonic() - t0, "history": history}
    write_atomic_bytes(json.dumps(summary, indent=1).encode(), out / "dagger.json")
    return summary
