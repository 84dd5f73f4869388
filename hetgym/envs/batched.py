"""``HetCluster-v0`` batched: N envs stepped in one compiled call.

``gym.make_vec("HetCluster-v0", num_envs=N)`` (the id's ``vector_entry_point``) builds
a :class:`HetClusterVecEnv`. Each sub-env is a full :class:`HetClusterEnv` (its own
seeded RNG, episode windows, simulator, reward tracker); a step applies every
sub-env's action, runs it to its next decision point and writes rewards,
observations and masks with one call of :func:`hetgym.envs.fused.step_batch_nb`,
which uses the single env's own kernels (:func:`~hetgym.envs.fused.act_nb`,
:func:`~hetgym.envs.fused.step_reward_nb`). Env by env, the trajectories are exactly
those of N single envs reset with the same seeds (``seed + i`` for an int seed).

Autoreset follows Gymnasium 1.x: ``"next_step"`` (default: the step after an
episode ends resets that sub-env, ignores its action and returns the first
observation with reward 0) or ``"same_step"`` (the ending step already returns the
next episode's first observation; the last one is in ``info["final_obs"]`` and its
info in ``info["final_info"]``). Rare events (the segment log growing, the end of
an episode: truncation charge and ``episode_metrics``) are handled in Python by
the sub-env's own code.
"""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np
from gymnasium.vector import AutoresetMode, VectorEnv
from gymnasium.vector.utils import batch_space

from hetgym import scenarios as _scenarios
from hetgym.decisions import SchedulingError
from hetgym.envs.args import autoreset_arg, scenario_arg
from hetgym.envs.fused import (
    ACT_INVALID,
    ACT_NOOP,
    finish_row_nb,
    new_batch_nb,
    set_batch_nb,
    step_batch_nb,
    step_batch_par_nb,
)
from hetgym.envs.hetcluster import HetClusterEnv
from hetgym.envs.reward import TERMS
from hetgym.metrics import summarize
from hetgym.sim.engine import InvariantError

__all__ = ["HetClusterVecEnv"]


class HetClusterVecEnv(VectorEnv):
    """N ``HetCluster-v0`` envs stepped together (see the module docstring).

    Args:
        num_envs: Number of sub-envs.
        autoreset_mode: ``"next_step"`` (default) or ``"same_step"`` (or the
            :class:`gymnasium.vector.AutoresetMode` values).
        parallel: Spread the sub-envs over Numba's threads (``None``: when there are
            at least 8 sub-envs and more than one thread).
        **kwargs: Arguments of :class:`HetClusterEnv` (the same for every sub-env).

    ``action_masks()`` gives the (N, A) feasible actions; ``info`` has per-env arrays
    ``time``, ``queued``, ``running``, ``done``, ``invalid_action``, ``action_mask``,
    ``reward_terms`` (a dict of arrays), and ``episode_metrics`` (object array, with
    the mask ``_episode_metrics``) where an episode ended.
    """

    def __init__(self, num_envs: int = 1, autoreset_mode: str | AutoresetMode = "next_step",
                 parallel: bool | None = None, **kwargs: Any) -> None:
        if int(num_envs) < 1:
            raise ValueError(f"num_envs must be >= 1, got {num_envs!r}")
        mode = autoreset_arg(autoreset_mode)
        kwargs.pop("max_episode_steps", None)  # gym.make_vec's, not ours (use max_steps)
        # one scenario object for all: its arrays are cached
        sc = scenario_arg(kwargs.pop("scenario", _scenarios.DEFAULT),
                          kwargs.pop("scenario_kwargs", None))
        self.envs = [HetClusterEnv(scenario=sc, **kwargs) for _ in range(int(num_envs))]
        e0 = self.envs[0]
        self.num_envs = n = len(self.envs)
        self.autoreset_mode = mode
        self.metadata = {"autoreset_mode": mode, "render_modes": e0.metadata["render_modes"]}
        self.render_mode = e0.render_mode
        self.single_action_space = e0.action_space
        self.single_observation_space = e0.observation_space
        self.action_space = batch_space(e0.action_space, n)
        self.observation_space = batch_space(e0.observation_space, n)
        a_n = int(e0.action_space.n)
        self._obs = np.zeros((n,) + e0.observation_space.shape, dtype=np.float32)
        self._mask = np.zeros((n, a_n), dtype=np.bool_)
        self._rew = np.zeros(n)
        self._terms = np.zeros((n, len(TERMS)))
        self._term = np.zeros(n, dtype=np.bool_)
        self._trunc = np.zeros(n, dtype=np.bool_)
        self._codes = np.zeros(n, dtype=np.int64)
        self._steps = np.zeros(n, dtype=np.int64)
        self._stuck = np.zeros(n, dtype=np.bool_)
        self._stat = np.zeros((n, 4))
        self._pending = np.zeros(n, dtype=np.bool_)  # next_step mode: reset at the next step
        self._list: Any = None
        if parallel is None:
            import numba

            parallel = n >= 8 and numba.config.NUMBA_NUM_THREADS > 1
        self.parallel = bool(parallel)
        self._kernel = step_batch_par_nb if self.parallel else step_batch_nb

    def __repr__(self) -> str:
        return f"HetClusterVecEnv(num_envs={self.num_envs}, {self.envs[0]!r})"

    # ------------------------------------------------------------------ internals
    @staticmethod
    def _entry(env: HetClusterEnv) -> tuple:
        sim = env.sim
        return (sim.kP, sim.kS, env._ep, env._es)

    def _sync(self, i: int) -> None:
        """Point slot ``i`` of the compiled list at sub-env ``i``'s current state (unless it
        already holds those very objects: a reset that refilled them in place)."""
        env = self.envs[i]
        env._args()  # rebinds the env's kernels if its state was replaced
        entry = self._entry(env)
        if any(a is not b for a, b in zip(entry, self._slots[i])):
            set_batch_nb(self._list, i, entry)
            self._slots[i] = entry

    def _row(self, i: int) -> None:
        """Outputs of sub-env ``i`` after its action was carried out (compiled, one row)."""
        env = self.envs[i]
        finish_row_nb(i, *self._entry(env), self._steps, self._stuck, env.max_steps, self._rew,
                      self._terms, self._term, self._trunc, self._obs, self._mask, self._stat)

    def _slow_step(self, i: int, a: int, code: int) -> None:
        """Finish a step the batch kernel left (segment log growth, errors) with the sub-env's
        own :meth:`HetClusterEnv._carry_out`; errors name the sub-env."""
        env = self.envs[i]
        try:
            env._carry_out(a, code)
        except (SchedulingError, InvariantError) as exc:
            raise type(exc)(f"env {i}: {exc}") from exc
        if code != ACT_NOOP:
            self._stuck[i] = env._stuck
        self._sync(i)
        self._row(i)

    def _reset_one(self, i: int, seed: int | None, options: dict | None) -> dict[str, Any]:
        env = self.envs[i]
        obs, info = env.reset(seed=seed, options=options)
        self._steps[i] = 0
        self._stuck[i] = env._stuck
        self._obs[i] = obs
        self._mask[i] = env._mask
        self._rew[i] = 0.0
        self._term[i] = self._trunc[i] = False
        self._terms[i] = 0.0
        self._stat[i] = (info["time"], info["queued"], info["running"], info["done"])
        if self._list is not None:
            self._sync(i)
        return info

    def _end_episode(self, i: int) -> dict[str, Any]:
        """Truncation charge and ``episode_metrics`` of sub-env ``i`` (whose episode ended)."""
        env = self.envs[i]
        if self._trunc[i]:
            terms = env.reward.with_truncation_charge(
                env.sim, dict(zip(TERMS, self._terms[i].tolist())))  # the kernel's step terms
            self._terms[i] = [terms[k] for k in TERMS]
            self._rew[i] = env.reward.combine(terms)
        return summarize(env.sim)

    def _infos(self, invalid: np.ndarray, ended: dict[int, dict]) -> dict[str, Any]:
        st = self._stat
        info: dict[str, Any] = {
            "time": st[:, 0].copy(), "queued": st[:, 1].astype(np.int64),
            "running": st[:, 2].astype(np.int64), "done": st[:, 3].astype(np.int64),
            "invalid_action": invalid, "action_mask": self._mask.copy(),
            "reward_terms": {k: self._terms[:, c].copy() for c, k in enumerate(TERMS)},
        }
        if ended:
            m = np.zeros(self.num_envs, dtype=np.bool_)
            vals = np.full(self.num_envs, None, dtype=object)
            for i, metrics in ended.items():
                m[i] = True
                vals[i] = metrics
            info["episode_metrics"], info["_episode_metrics"] = vals, m
        return info

    # -------------------------------------------------------------------- gym API
    def reset(self, *, seed: int | Sequence[int | None] | None = None,
              options: dict[str, Any] | None = None) -> tuple[np.ndarray, dict[str, Any]]:
        """Reset every sub-env (``seed + i`` for an int seed, or one seed per env)."""
        n = self.num_envs
        if seed is None or isinstance(seed, (int, np.integer)):
            seeds = [None if seed is None else int(seed) + i for i in range(n)]
        else:
            seeds = list(seed)
            if len(seeds) != n:
                raise ValueError(f"reset: {len(seeds)} seeds for {n} envs")
        for i, s in enumerate(seeds):
            self._reset_one(i, s, options)
        self._slots = [self._entry(e) for e in self.envs]
        self._list = new_batch_nb(self._slots[0], n)
        for i in range(1, n):
            set_batch_nb(self._list, i, self._slots[i])
        self._pending[:] = False
        return self._obs.copy(), self._infos(np.zeros(n, dtype=np.bool_), {})

    def step(self, actions: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray,
                                           dict[str, Any]]:
        """Step every sub-env with its action (one compiled call; see the module docstring)."""
        if self._list is None:
            raise RuntimeError("call reset() before step()")
        n = self.num_envs
        acts = np.asarray(actions)
        if acts.shape != (n,) or not np.issubdtype(acts.dtype, np.integer):
            raise ValueError(f"actions must be an integer array of shape ({n},), got "
                             f"{acts.dtype} {acts.shape}")
        a_n = self._mask.shape[1]
        bad = np.flatnonzero((acts < 0) | (acts >= a_n))
        if len(bad):
            raise ValueError(f"action {int(acts[bad[0]])} of env {int(bad[0])} out of range "
                             f"0..{a_n - 1}")
        acts = acts.astype(np.int64)
        pending = np.flatnonzero(self._pending)
        invalid = ~self._mask[np.arange(n), acts]
        if len(pending):
            acts[pending] = -1
            invalid[pending] = False
        self._kernel(acts, self._list, self._steps, self._stuck, self.envs[0].max_steps,
                      self._codes, self._rew, self._terms, self._term, self._trunc, self._obs,
                      self._mask, self._stat)
        codes = self._codes
        for i in np.flatnonzero((acts >= 0) & ((codes < 0) | (codes >= ACT_INVALID))).tolist():
            self._slow_step(i, int(acts[i]), int(codes[i]))
        for i in pending.tolist():
            self._reset_one(i, None, None)
        self._pending[:] = False
        ended: dict[int, dict] = {}
        final: dict[int, np.ndarray] = {}
        for i in np.flatnonzero(self._term | self._trunc).tolist():
            ended[i] = self._end_episode(i)
        rew, term, trunc = self._rew.copy(), self._term.copy(), self._trunc.copy()
        if ended and self.autoreset_mode == AutoresetMode.SAME_STEP:
            infos_end = self._infos(invalid, ended)
            for i in ended:
                final[i] = self._obs[i].copy()
                self._reset_one(i, None, None)
            info = self._infos(invalid, {})
            fo = np.full(n, None, dtype=object)
            fi = np.full(n, None, dtype=object)
            m = np.zeros(n, dtype=np.bool_)
            for i, o in final.items():
                fo[i], m[i] = o, True
                fi[i] = {k: (v[i] if isinstance(v, np.ndarray) else {t: a[i] for t, a in v.items()})
                         for k, v in infos_end.items() if not k.startswith("_")}
            info.update(final_obs=fo, _final_obs=m, final_info=fi, _final_info=m.copy())
            return self._obs.copy(), rew, term, trunc, info
        if ended:
            self._pending[list(ended)] = True
        return self._obs.copy(), rew, term, trunc, self._infos(invalid, ended)

    def action_masks(self) -> np.ndarray:
        """(N, A) feasible actions of every sub-env (for MaskablePPO)."""
        return self._mask.copy()

    def render(self) -> tuple | None:
        """Each sub-env's render (see :meth:`HetClusterEnv.render`)."""
        if self.render_mode is None:
            return None
        return tuple(e.render() for e in self.envs)

    def close_extras(self, **kwargs: Any) -> None:
        """Nothing to release (no subprocesses)."""
