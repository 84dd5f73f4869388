"""SB3 callbacks of ``scripts/train.py``: held-out evaluation and a wall-clock limit."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Sequence

import numpy as np
import pandas as pd
from stable_baselines3.common.callbacks import BaseCallback

from agents.common.adapter import AgentScheduler, SB3Policy
from agents.common.envtools import EnvConfig
from agents.evaluation.windows import Score, evaluate_on_windows
from hetgym.specs import Scenario

__all__ = ["WallClockLimit", "HeldOutEval", "CriticWarmup"]


class WallClockLimit(BaseCallback):
    """Stop training after ``seconds`` of wall clock (checked every step).

    Args:
        seconds: Budget from the start of ``learn``.
        t0: Start time (``time.monotonic()``) to count from instead, e.g. that of a
            behaviour-cloning phase before ``learn``.
    """

    def __init__(self, seconds: float, t0: float | None = None) -> None:
        super().__init__()
        self.seconds = float(seconds)
        self.t0 = t0
        self.stopped = False

    def _on_training_start(self) -> None:
        if self.t0 is None:
            self.t0 = time.monotonic()

    def _on_step(self) -> bool:
        assert self.t0 is not None
        if time.monotonic() - self.t0 > self.seconds:
            self.stopped = True
            return False
        return True


class CriticWarmup(BaseCallback):
    """Freeze the actor (policy network and action head) for the first ``steps`` steps.

    After behaviour cloning the critic does not yet know the cloned policy's
    values; updating the actor with its noisy advantages first undoes the
    cloning. Only the value network learns until ``steps``.
    """

    def __init__(self, steps: int) -> None:
        super().__init__()
        self.steps = int(steps)
        self.frozen = False

    def _actor_params(self) -> list:
        pol = self.model.policy
        return [*pol.mlp_extractor.policy_net.parameters(), *pol.action_net.parameters()]

    def _on_training_start(self) -> None:
        if self.steps > 0:
            for p in self._actor_params():
                p.requires_grad_(False)
            self.frozen = True

    def _on_step(self) -> bool:
        if self.frozen and self.num_timesteps >= self.steps:
            for p in self._actor_params():
                p.requires_grad_(True)
            self.frozen = False
        return True


class HeldOutEval(BaseCallback):
    """Evaluate the policy on held-out trace windows every ``every`` steps.

    The policy runs deterministically through :func:`hetgym.simulate` (the
    adapter), on the same windows each time. The mean average JCT over the
    windows is logged (``eval/avg_jct``), appended to ``<out_dir>/eval.csv``
    (atomically rewritten), and the best model so far is saved to
    ``<out_dir>/best_model.zip``.

    Args:
        windows: Held-out scenarios (windows of a workload not trained on).
        env_config: The env arguments of the training env.
        every: Evaluation period in environment steps (all envs together).
        out_dir: Where ``eval.csv`` and ``best_model.zip`` go.
        t0: Wall-clock origin (``time.monotonic()``) for the ``wall_s`` column.
        verbose: Print a line per evaluation.
        score: Model-selection score (default: mean avg JCT, inf if a job is left).
    """

    def __init__(self, windows: Sequence[Scenario], env_config: EnvConfig, every: int,
                 out_dir: str | Path, t0: float | None = None, verbose: int = 1,
                 score: Score | None = None) -> None:
        super().__init__(verbose)
        self.windows = list(windows)
        self.env_config = env_config
        self.every = int(every)
        self.out_dir = Path(out_dir)
        self.t0 = time.monotonic() if t0 is None else t0
        self.history: list[dict[str, float]] = []
        self.best = float("inf")
        self.score = score or Score()
        self._next = 0

    def _on_training_start(self) -> None:
        self._next = self.num_timesteps
        self._evaluate()
        self._next = self.num_timesteps + self.every

    def _on_step(self) -> bool:
        if self.num_timesteps >= self._next:
            self._evaluate()
            self._next = self.num_timesteps + self.every
        return True

    def _on_training_end(self) -> None:
        if not self.history or self.history[-1]["timesteps"] != self.num_timesteps:
            self._evaluate()

    def evaluate(self) -> pd.DataFrame:
        """Per-window runs of the current policy."""
        cfg = self.env_config

        def factory() -> AgentScheduler:
            return AgentScheduler(SB3Policy(self.model, deterministic=True), cfg)

        return evaluate_on_windows({"agent": factory}, self.windows)

    def _evaluate(self) -> None:
        from hetgym.io import write_atomic_csv

        runs = self.evaluate()
        jct = Score()(runs, "agent")
        score = self.score(runs, "agent")
        row = {"timesteps": float(self.num_timesteps),
               "wall_s": time.monotonic() - self.t0,
               "avg_jct": jct,
               "avg_jct_finite": float(np.nanmean(runs["avg_jct"])),
               "unfinished_jobs": float(runs["unfinished_jobs"].sum()),
               "avg_slowdown": float(np.nanmean(runs["avg_slowdown"])),
               "score": score}
        if self.score.metric != "avg_jct":
            row[self.score.metric] = float(np.nanmean(runs[self.score.metric]))
        if self.score.constraint is not None:
            row[self.score.constraint] = float(np.nanmean(runs[self.score.constraint]))
        self.history.append(row)
        self.logger.record("eval/avg_jct", row["avg_jct_finite"])
        self.logger.record("eval/unfinished_jobs", row["unfinished_jobs"])
        if score < self.best or not self.history[:-1]:
            self.best = min(score, self.best)
            self.model.save(str(self.out_dir / "best_model.zip"))
        self.logger.record("eval/best_avg_jct", self.best)
        write_atomic_csv(pd.DataFrame(self.history), self.out_dir / "eval.csv")
        if self.verbose:
            print(f"[eval] t={row['wall_s']:.0f}s steps={self.num_timesteps} "
                  f"avg_jct={row['avg_jct_finite']:.0f} unfinished={row['unfinished_jobs']:.0f} "
                  f"score={score:.4g} best={self.best:.4g}", flush=True)
