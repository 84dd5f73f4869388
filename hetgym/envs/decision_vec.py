"""``gym.make_vec`` of the decision envs (``HetClusterPlacement-v0``, ``HetClusterElastic-v0``,
``HetClusterRounds-v0``): their ``vector_entry_point``.

:class:`DecisionVecEnv` is Gymnasium's :class:`~gymnasium.vector.SyncVectorEnv` over N
bare sub-envs (no per-env wrappers) plus ``action_masks()`` of shape (N, A), so
MaskablePPO-style code reads every mask in one call. Seeds, autoreset (``"next_step"``
default, or ``"same_step"``) and infos are SyncVectorEnv's: env by env, the trajectories
are those of N single envs reset with ``seed + i``.

It steps the sub-envs one after another in Python: the decision envs compute their
candidates and features in Python, so, unlike ``HetCluster-v0``'s batched env
(:mod:`hetgym.envs.batched`, one compiled call), it saves the wrappers' overhead, not
the per-step cost of the simulation.
"""

from __future__ import annotations

import functools
from typing import Any

import numpy as np
from gymnasium.vector import AutoresetMode, SyncVectorEnv

from hetgym.envs.args import autoreset_arg, count_arg
from hetgym.envs.elastic import HetClusterElasticEnv
from hetgym.envs.placement import HetClusterPlacementEnv
from hetgym.envs.rounds import HetClusterRoundsEnv

__all__ = ["DecisionVecEnv", "ElasticVecEnv", "PlacementVecEnv", "RoundsVecEnv"]


class DecisionVecEnv(SyncVectorEnv):
    """N decision envs of class :attr:`env_cls` (module docstring).

    Args:
        num_envs: Number of sub-envs.
        autoreset_mode: ``"next_step"`` (default) or ``"same_step"``.
        **kwargs: Arguments of the env (the same for every sub-env).
    """

    env_cls: type | None = None  # set by the subclasses below

    def __init__(self, num_envs: int = 1, autoreset_mode: str | AutoresetMode = "next_step",
                 **kwargs: Any) -> None:
        kwargs.pop("max_episode_steps", None)  # gym.make_vec's, not ours (use max_steps)
        if self.env_cls is None:
            raise TypeError("DecisionVecEnv is abstract: use PlacementVecEnv, ElasticVecEnv or "
                            "RoundsVecEnv (or gym.make_vec of their env ids)")
        n = count_arg("num_envs", num_envs)
        super().__init__([functools.partial(self.env_cls, **kwargs) for _ in range(n)],
                         autoreset_mode=autoreset_arg(autoreset_mode))

    def action_masks(self) -> np.ndarray:
        """(N, A) bool: the feasible actions of each sub-env now."""
        return np.stack([env.action_masks() for env in self.envs])


class PlacementVecEnv(DecisionVecEnv):
    """``gym.make_vec("HetClusterPlacement-v0", num_envs=N)``."""

    env_cls = HetClusterPlacementEnv


class ElasticVecEnv(DecisionVecEnv):
    """``gym.make_vec("HetClusterElastic-v0", num_envs=N)``."""

    env_cls = HetClusterElasticEnv


class RoundsVecEnv(DecisionVecEnv):
    """``gym.make_vec("HetClusterRounds-v0", num_envs=N)``."""

    env_cls = HetClusterRoundsEnv
