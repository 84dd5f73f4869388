"""Learned policies (Stable-Baselines3) and the adapter that runs them through ``hetgym.simulate``.

Importing ``agents`` does not import torch; the training modules do.

One package per concern:

* :mod:`agents.common`: :class:`~agents.common.adapter.AgentScheduler` (a policy as a
  ``hetgym`` scheduler), :func:`~agents.common.adapter.load_scheduler` (a checkpoint), env
  arguments (:class:`~agents.common.envtools.EnvConfig`), masks, trace windows as scenarios,
  loading model files without unpickling.
* :mod:`agents.sb3`: MaskablePPO / PPO training (:mod:`agents.sb3.training`, ``scripts/train.py``),
  its policy networks, vectorised envs and callbacks.
* :mod:`agents.imitation`: behaviour cloning from a baseline (:mod:`agents.imitation.bc`), a
  rollout teacher (one-step lookahead on env copies over a base policy) and DAgger distillation
  of it (:mod:`agents.imitation.rollout`, :mod:`agents.imitation.dagger`; ``scripts/dagger.py``).
* :mod:`agents.residual`: a gated residual policy, a baseline's own run left only where a
  network predicts a better action (``scripts/residual.py``).
* :mod:`agents.evaluation`: agents and baselines on the same held-out windows
  (:mod:`agents.evaluation.windows`), train / validation / test splits per trace family with no
  shared jobs (:mod:`agents.evaluation.heldout`).
* :mod:`agents.pretrained`: the shipped models (MaskablePPO or residual policies);
  :func:`pretrained_names` and :func:`load_pretrained` (a scheduler for ``hetgym.simulate``)
  come from :mod:`agents.pretrained.registry`.
"""

from __future__ import annotations

from typing import Any

__all__ = ["AgentScheduler", "EnvConfig", "load_scheduler", "pretrained_names", "load_pretrained"]


def __getattr__(name: str) -> Any:
    if name in ("AgentScheduler", "load_scheduler"):
        from agents.common import adapter

        return getattr(adapter, name)
    if name in ("pretrained_names", "load_pretrained"):
        from agents.pretrained import registry as pretrained

        return getattr(pretrained, name)
    if name == "EnvConfig":
        from agents.common.envtools import EnvConfig

        return EnvConfig
    raise AttributeError(f"module 'agents' has no attribute {name!r}")
