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

from collections.abc import Sequence
from time import perf_counter
from typing import Any

import numpy as np
from gymnasium.vector import AutoresetMode, VectorEnv
from gymnasium.vector.utils import batch_space

from hetgym import scenarios as _scenarios
from hetgym._internals.dispatch import entry
from hetgym.autopar import KernelChooser, prefer_workqueue
from hetgym.decisions import SchedulingError
from hetgym.envs.args import autoreset_arg, scenario_arg
from hetgym.envs.fused import (
    ACT_INVALID,
    ACT_NOOP,
    finish_row_nb,
    new_batch_nb,
    reset_row_nb,
    set_batch_nb,
    step_batch_nb,
    step_batch_par_nb,
)
from hetgym.envs.hetcluster import HetClusterEnv
from hetgym.envs.lazy_metrics import EpisodeMetrics, MetricsLedger
from hetgym.envs.refill import Refiller
from hetgym.envs.reward import TERMS
from hetgym.sim.engine import InvariantError

__all__ = ["HetClusterVecEnv"]


def _slot_entry(slots: list[Any], i: int, key: tuple, dispatcher: Any, *args: Any) -> Any:
    """``entry(dispatcher, *args)``, memoised in ``slots[i]`` as long as the objects in ``key``
    (those that decide the arguments' Numba types) are the same objects as last time."""
    last = slots[i]
    if last is not None and all(a is b for a, b in zip(key, last[0])):
        return last[1]
    fn = entry(dispatcher, *args)
    slots[i] = (key, fn)
    return fn


class HetClusterVecEnv(VectorEnv):
    """N ``HetCluster-v0`` envs stepped together (see the module docstring).

    Args:
        num_envs: Number of sub-envs.
        autoreset_mode: ``"next_step"`` (default) or ``"same_step"`` (or the
            :class:`gymnasium.vector.AutoresetMode` values).
        parallel: Spread the sub-envs over Numba's threads (True), or not (False);
            ``None`` (default, with 2 or more sub-envs and threads): time both kernels
            as they run and use the faster (:mod:`hetgym.autopar`).
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
        self._refiller = Refiller(e0.scenario, e0.n_jobs)
        self._ledger = MetricsLedger()
        self._spare: list[Any] = [None] * len(self.envs)  # a second simulator per sub-env
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
        for i, env in enumerate(self.envs):
            env.write_outputs_to(self._obs[i], self._mask[i])
        self._rew = np.zeros(n)
        self._terms = np.zeros((n, len(TERMS)))
        self._term = np.zeros(n, dtype=np.bool_)
        self._trunc = np.zeros(n, dtype=np.bool_)
        self._codes = np.zeros(n, dtype=np.int64)
        self._steps = np.zeros(n, dtype=np.int64)
        self._stuck = np.zeros(n, dtype=np.bool_)
        self._stat = np.zeros((n, 4))
        self._pending = np.zeros(n, dtype=np.bool_)  # next_step mode: reset at the next step
        self._n_pending = 0
        self._acts = np.zeros(n, dtype=np.int64)
        self._max_steps = int(e0.max_steps)
        self._list: Any = None
        self._setters: list[Any] = [None] * n  # see _setter
        self._resetters: list[Any] = [None] * n  # see _reset_one
        import numba

        threads = numba.config.NUMBA_NUM_THREADS > 1 and n >= 2
        # None: time both kernels as they run and use the faster (hetgym.autopar)
        self.parallel = (None if threads else False) if parallel is None else bool(parallel)
        self._chooser = KernelChooser() if self.parallel is None else None
        if self.parallel is not False:
            prefer_workqueue()
        self._kernels = (step_batch_nb, step_batch_par_nb)
        self._entries: tuple = ()

    def __repr__(self) -> str:
        return f"HetClusterVecEnv(num_envs={self.num_envs}, {self.envs[0]!r})"

    # ------------------------------------------------------------------ internals
    def _sync(self, i: int) -> None:
        """Point slot ``i`` of the compiled list at sub-env ``i``'s current state (unless it
        already holds those very objects: a reset that refilled them in place)."""
        item = self.envs[i].kernel_args()  # rebinds the env's kernels if its state was replaced
        if any(a is not b for a, b in zip(item, self._slots[i])):
            self._setter(i, item)(self._list, i, item)
            self._slots[i] = item

    def _setter(self, i: int, item: tuple) -> Any:
        """``set_batch_nb``'s entry point for ``item`` in slot ``i``: the dispatcher typed the
        item on every call (some 2 ms, once an episode where the env swaps simulators, when
        the item held NamedTuples of arrays); resolved again only when the item's structref
        types or its env's parameter and state mirrors are other objects than last time."""
        key = (item[0]._type, item[1]._type, item[2], item[3])
        return _slot_entry(self._setters, i, key, set_batch_nb, self._list, i, item)

    def _row(self, i: int) -> None:
        """Outputs of sub-env ``i`` after its action was carried out (compiled, one row)."""
        env = self.envs[i]
        finish_row_nb(i, *env.kernel_args(), self._steps, self._stuck, self._max_steps, self._rew,
                      self._terms, self._term, self._trunc, self._obs, self._mask, self._stat)

    def _slow_step(self, i: int, a: int, code: int) -> None:
        """Finish a step the batch kernel left (segment log growth, errors) with the sub-env's
        own :meth:`HetClusterEnv.finish_action`; errors name the sub-env."""
        env = self.envs[i]
        try:
            env.finish_action(a, code)
        except (SchedulingError, InvariantError) as exc:
            raise type(exc)(f"env {i}: {exc}") from exc
        if code != ACT_NOOP:
            self._stuck[i] = env.stuck
        self._sync(i)
        self._row(i)

    def _reset_one(self, i: int, seed: int | None) -> None:
        """``envs[i].reset(seed=seed)``, its simulator refilled by one compiled call where the
        window fits it (:mod:`hetgym.envs.refill`), and row ``i`` of the outputs."""
        env = self.envs[i]
        rows, sim_seed = env.draw_episode(seed)
        if env.owns_sim and self._ledger.held(env.sim):
            # its episode_metrics are unread: keep that simulator as it is, step the spare
            spare, self._spare[i] = self._spare[i], env.sim
            if spare is None:
                env.leave_sim()  # start_episode makes a second simulator
            else:
                self._ledger.release(spare)
                env.swap_sim(spare)
        if env.owns_sim and self._refiller.reset(env.sim, rows, sim_seed, env.episode_inv_best,
                                                 env.reward_acc):
            env.begin_refilled_episode()
        else:
            env.start_episode(rows, sim_seed)
        self._stuck[i] = env.stuck
        kes = env.kernel_args()[3]
        args = (i, env.sim.kS, kes, self._steps, self._rew, self._terms, self._term,
                self._trunc, self._obs, self._mask, self._stat)
        # the entry point, not the dispatcher (which typed the NamedTuple on every call: 12 ->
        # 3 us a reset), resolved again only for another state type or state tuple
        _slot_entry(self._resetters, i, (args[1]._type, args[2]), reset_row_nb, *args)(*args)
        if self._list is not None:
            self._sync(i)

    def _end_episode(self, i: int) -> EpisodeMetrics:
        """Truncation charge and ``episode_metrics`` of sub-env ``i`` (whose episode ended;
        computed when first read, :mod:`hetgym.envs.lazy_metrics`)."""
        env = self.envs[i]
        if self._trunc[i]:
            terms = env.reward.with_truncation_charge(
                env.sim, dict(zip(TERMS, self._terms[i].tolist())))  # the kernel's step terms
            self._terms[i] = [terms[k] for k in TERMS]
            self._rew[i] = env.reward.combine(terms)
        return self._ledger.issue(env.sim)

    def _infos(self, invalid: np.ndarray, ended: dict[int, EpisodeMetrics]) -> dict[str, Any]:
        st = self._stat.copy()
        counts = st[:, 1:].astype(np.int64)
        terms = self._terms.copy()
        info: dict[str, Any] = {
            "time": st[:, 0], "queued": counts[:, 0], "running": counts[:, 1],
            "done": counts[:, 2], "invalid_action": invalid, "action_mask": self._mask.copy(),
            "reward_terms": {k: terms[:, c] for c, k in enumerate(TERMS)},
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
            self._reset_one(i, s)
        self._slots = [e.kernel_args() for e in self.envs]
        self._list = new_batch_nb(self._slots[0], n)
        for i in range(1, n):
            self._setter(i, self._slots[i])(self._list, i, self._slots[i])
        self._pending[:] = False
        self._n_pending = 0
        args = (self._acts, self._pending, self._list, self._steps, self._stuck, self._max_steps,
                self._codes, self._pending, self._rew, self._terms, self._term, self._trunc,
                self._obs, self._mask, self._stat)
        use = (0, 1) if self.parallel is None else (int(self.parallel),)
        self._entries = tuple(entry(self._kernels[k], *args) if k in use else None for k in (0, 1))
        return self._obs.copy(), self._infos(np.zeros(n, dtype=np.bool_), {})

    def step(self, actions: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray,
                                           dict[str, Any]]:
        """Step every sub-env with its action (one compiled call; see the module docstring)."""
        if self._list is None:
            raise RuntimeError("call reset() before step()")
        n = self.num_envs
        acts = np.asarray(actions)
        if acts.shape != (n,) or acts.dtype.kind not in "iu":
            raise ValueError(f"actions must be an integer array of shape ({n},), got "
                             f"{acts.dtype} {acts.shape}")
        self._acts[:] = acts
        pending = self._pending
        if self._n_pending:  # next_step autoreset: these envs reset, their actions ignored
            for i in np.flatnonzero(pending).tolist():
                self._reset_one(i, None)
        invalid = np.empty(n, dtype=np.bool_)
        chooser = self._chooser
        k = int(self.parallel) if chooser is None else chooser.pick()
        t0 = perf_counter()
        bad, slow, n_end = self._entries[k](self._acts, pending, self._list, self._steps,
                                            self._stuck, self._max_steps, self._codes, invalid,
                                            self._rew, self._terms, self._term, self._trunc,
                                            self._obs, self._mask, self._stat)
        if chooser is not None:
            chooser.record(k, perf_counter() - t0)
        if self._n_pending:
            pending[:] = False
            self._n_pending = 0
        if bad:
            i = bad - 1
            raise ValueError(f"action {int(acts[i])} of env {i} out of range "
                             f"0..{self._mask.shape[1] - 1}")
        if slow:
            codes = self._codes
            for i in np.flatnonzero((codes < 0) | (codes >= ACT_INVALID)).tolist():
                self._slow_step(i, int(self._acts[i]), int(codes[i]))
        ended: dict[int, EpisodeMetrics] = {}
        if slow or n_end:
            for i in np.flatnonzero(self._term | self._trunc).tolist():
                ended[i] = self._end_episode(i)
        rew, term, trunc = self._rew.copy(), self._term.copy(), self._trunc.copy()
        if ended and self.autoreset_mode == AutoresetMode.SAME_STEP:
            infos_end = self._infos(invalid, ended)
            final: dict[int, np.ndarray] = {}
            for i in ended:
                final[i] = self._obs[i].copy()
                self._reset_one(i, None)
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
            pending[list(ended)] = True
            self._n_pending = len(ended)
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
