"""Stable-Baselines3 ``VecEnv`` over the batched ``HetCluster-v0``.

:class:`BatchedVecEnv` gives SB3 (and sb3-contrib's MaskablePPO) the N envs of a
:class:`hetgym.envs.batched.HetClusterVecEnv`, stepped in one compiled call,
with SB3's conventions: ``step_wait`` returns ``dones`` and a list of info dicts;
a finished sub-env is reset in the same step, its last observation in
``info["terminal_observation"]`` and ``info["TimeLimit.truncated"]`` set when it was
truncated; ``env_method("action_masks")`` gives each env's mask; seeds given with
``seed(s)`` apply at the next ``reset`` (``s + i`` for env i).

Importing this module imports SB3 (and torch).
"""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np
from stable_baselines3.common.vec_env.base_vec_env import VecEnv

from hetgym.envs.batched import HetClusterVecEnv

__all__ = ["BatchedVecEnv"]


class BatchedVecEnv(VecEnv):
    """SB3 ``VecEnv`` over :class:`~hetgym.envs.batched.HetClusterVecEnv`.

    Args:
        num_envs: Number of sub-envs.
        **env_kwargs: Arguments of ``HetCluster-v0`` (the same for every sub-env).
    """

    def __init__(self, num_envs: int, **env_kwargs: Any) -> None:
        self.venv = HetClusterVecEnv(num_envs=num_envs, autoreset_mode="same_step", **env_kwargs)
        super().__init__(num_envs, self.venv.single_observation_space,
                         self.venv.single_action_space)
        self._actions: np.ndarray | None = None
        self.render_mode = self.venv.render_mode

    # ---------------------------------------------------------------- VecEnv API
    def reset(self) -> np.ndarray:
        """Reset every sub-env (with the seeds of the last ``seed()`` call, if any)."""
        seeds = list(getattr(self, "_seeds", []) or [None] * self.num_envs)
        obs, _ = self.venv.reset(seed=seeds)
        self._reset_seeds()
        self._reset_options()
        return obs

    def step_async(self, actions: np.ndarray) -> None:
        """Remember the actions for :meth:`step_wait`."""
        self._actions = np.asarray(actions).reshape(self.num_envs).astype(np.int64)

    def step_wait(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, list[dict[str, Any]]]:
        """Step every sub-env; finished ones are reset in the same step (module docstring)."""
        if self._actions is None:
            raise RuntimeError("step_async() must come before step_wait()")
        obs, rew, term, trunc, info = self.venv.step(self._actions)
        self._actions = None
        dones = term | trunc
        infos: list[dict[str, Any]] = [{} for _ in range(self.num_envs)]
        if dones.any():
            final_obs, final_info = info["final_obs"], info["final_info"]
            for i in np.flatnonzero(dones).tolist():
                d = infos[i]
                d["terminal_observation"] = final_obs[i]
                d["TimeLimit.truncated"] = bool(trunc[i] and not term[i])
                d["episode_metrics"] = final_info[i].get("episode_metrics")
        return obs, rew.astype(np.float32), dones, infos

    def close(self) -> None:
        """Nothing to release (one process)."""

    def action_masks(self) -> np.ndarray:
        """(N, A) feasible actions."""
        return self.venv.action_masks()

    def get_attr(self, attr_name: str, indices: Any = None) -> list[Any]:
        """An attribute of each sub-env (``action_masks`` is the batch's own)."""
        return [getattr(self.venv.envs[i], attr_name) for i in self._get_indices(indices)]

    def set_attr(self, attr_name: str, value: Any, indices: Any = None) -> None:
        """Set an attribute on each sub-env."""
        for i in self._get_indices(indices):
            setattr(self.venv.envs[i], attr_name, value)

    def env_method(self, method_name: str, *method_args: Any, indices: Any = None,
                   **method_kwargs: Any) -> list[Any]:
        """Call a method of each sub-env; ``action_masks`` reads the batch's (N, A) masks."""
        idx = list(self._get_indices(indices))
        if method_name == "action_masks":
            m = self.venv.action_masks()
            return [m[i] for i in idx]
        return [getattr(self.venv.envs[i], method_name)(*method_args, **method_kwargs)
                for i in idx]

    def env_is_wrapped(self, wrapper_class: type, indices: Any = None) -> list[bool]:
        """Sub-envs are never wrapped."""
        return [False for _ in self._get_indices(indices)]

    def get_images(self) -> Sequence[np.ndarray | None]:
        """``rgb_array`` renders of the sub-envs."""
        return [e.render() for e in self.venv.envs]
