"""Learned policies (Stable-Baselines3) and the adapter that runs them through ``hetgym.simulate``.

Importing ``agents`` does not import torch; the training modules do.

* :mod:`agents.adapter`: :class:`~agents.adapter.AgentScheduler` (a policy as a
  ``hetgym`` scheduler) and :func:`~agents.adapter.load_scheduler` (a checkpoint).
* :mod:`agents.envtools`: env arguments (:class:`~agents.envtools.EnvConfig`), masks,
  trace windows as scenarios.
* :mod:`agents.sb3`, :mod:`agents.callbacks`, :mod:`agents.training`: MaskablePPO / PPO
  training (``scripts/train.py``).
* :mod:`agents.bc`: behaviour cloning from a baseline.
* :mod:`agents.rollout`, :mod:`agents.dagger`: a rollout teacher (one-step lookahead on env
  copies over a base policy) and DAgger distillation of it (``scripts/dagger.py``).
* :mod:`agents.residual`: a gated residual policy, a baseline's own run left only where a
  network predicts a better action (``scripts/residual.py``).
* :mod:`agents.evaluation`: agents and baselines on the same held-out windows.
* :mod:`agents.heldout`: train / validation / test splits per trace family (no shared jobs).
* :mod:`agents.pretrained`: the shipped models (MaskablePPO or residual policies),
  :func:`pretrained_names` and :func:`load_pretrained` (a scheduler for ``hetgym.simulate``).
"""

from __future__ import annotations

from typing import Any

__all__ = ["AgentScheduler", "EnvConfig", "load_scheduler", "pretrained_names", "load_pretrained"]


def __getattr__(name: str) -> Any:
    if name in ("AgentScheduler", "load_scheduler"):
        from agents import adapter

        return getattr(adapter, name)
    if name in ("pretrained_names", "load_pretrained"):
        from agents import pretrained

        return getattr(pretrained, name)
    if name == "EnvConfig":
        from agents.envtools import EnvConfig

        return EnvConfig
    raise AttributeError(f"module 'agents' has no attribute {name!r}")
