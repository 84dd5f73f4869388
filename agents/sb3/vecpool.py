"""A process pool of batched envs: ``P`` worker processes, each stepping ``M`` envs at once.

SB3's ``SubprocVecEnv`` puts one single env in each process, so every env step costs a
pipe round trip. :class:`BatchedSubprocVecEnv` puts a
:class:`~agents.sb3.vecenv.BatchedVecEnv` of ``M`` copies in each of ``P`` processes: one
round trip moves ``M`` steps, and the ``P`` batches step in parallel while the training
process waits. The worker sends its action masks with every reply, so
``env_method("action_masks")`` (what MaskablePPO calls before each action) needs no
round trip. Env ``p * M + i`` is seeded ``seed + p * M + i`` (as in one batched env of
``P * M`` copies). Measured in docs/agents.md ("Training across processes").

Importing this module imports SB3 (and torch).
"""

from __future__ import annotations

import multiprocessing as mp
from typing import Any, Sequence

import numpy as np
from stable_baselines3.common.vec_env.base_vec_env import VecEnv

__all__ = ["BatchedSubprocVecEnv"]


def _worker(remote: Any, parent: Any, n_envs: int, env_kwargs: dict[str, Any]) -> None:
    import os

    os.environ.setdefault("NUMBA_NUM_THREADS", "1")
    from agents.sb3.vecenv import BatchedVecEnv

    parent.close()
    env = BatchedVecEnv(n_envs, **env_kwargs)
    try:
        while True:
            cmd, data = remote.recv()
            if cmd == "step":
                env.step_async(data)
                obs, rew, done, infos = env.step_wait()
                remote.send((obs, rew, done, infos, env.action_masks()))
            elif cmd == "reset":
                env.seed(data)
                remote.send((env.reset(), env.action_masks()))
            elif cmd == "get_attr":
                try:
                    vals = env.get_attr(data)
                except AttributeError as e:
                    remote.send(e)
                else:  # methods stay in the worker (bound to unpicklable compiled state)
                    remote.send([f"<method {data}>" if callable(v) else v for v in vals])
            elif cmd == "close":
                break
            else:
                raise ValueError(f"BatchedSubprocVecEnv worker: unknown command {cmd!r}")
    finally:
        remote.close()


class BatchedSubprocVecEnv(VecEnv):
    """``n_procs`` processes, each a batched env of ``envs_per_proc`` copies (module docstring).

    Args:
        n_procs: Worker processes.
        envs_per_proc: Envs per process.
        start_method: ``multiprocessing`` start method (default ``forkserver`` where
            available, as SB3's ``SubprocVecEnv``).
        **env_kwargs: Arguments of ``HetCluster-v0``.
    """

    def __init__(self, n_procs: int, envs_per_proc: int, start_method: str | None = None,
                 **env_kwargs: Any) -> None:
        if n_procs < 1 or envs_per_proc < 1:
            raise ValueError(f"BatchedSubprocVecEnv: n_procs and envs_per_proc must be >= 1, "
                             f"got {n_procs}, {envs_per_proc}")
        if start_method is None:
            start_method = "forkserver" if "forkserver" in mp.get_all_start_methods() else "spawn"
        ctx = mp.get_context(start_method)
        self.m = int(envs_per_proc)
        self.remotes, self.procs = [], []
        for _ in range(n_procs):
            remote, work = ctx.Pipe()
            p = ctx.Process(target=_worker, args=(work, remote, self.m, env_kwargs), daemon=True)
            p.start()
            work.close()
            self.remotes.append(remote)
            self.procs.append(p)
        self.remotes[0].send(("get_attr", "observation_space"))
        obs_space = self.remotes[0].recv()[0]
        self.remotes[0].send(("get_attr", "action_space"))
        act_space = self.remotes[0].recv()[0]
        super().__init__(n_procs * self.m, obs_space, act_space)
        self._masks: np.ndarray | None = None
        self._seed0: int | None = None
        self.closed = False

    def seed(self, seed: int | None = None) -> Sequence[None | int]:  # type: ignore[override]
        """Seeds for the next :meth:`reset` (env i: ``seed + i``)."""
        self._seed0 = seed
        return [None if seed is None else seed + i for i in range(self.num_envs)]

    def reset(self) -> np.ndarray:
        """Reset every worker's batch."""
        for p, r in enumerate(self.remotes):
            r.send(("reset", None if self._seed0 is None else self._seed0 + p * self.m))
        out = [r.recv() for r in self.remotes]
        self._seed0 = None
        self._masks = np.concatenate([m for _, m in out])
        return np.concatenate([o for o, _ in out])

    def step_async(self, actions: np.ndarray) -> None:
        """Send each worker its slice of the actions."""
        a = np.asarray(actions).reshape(self.num_envs)
        for p, r in enumerate(self.remotes):
            r.send(("step", a[p * self.m:(p + 1) * self.m]))

    def step_wait(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, list[dict[str, Any]]]:
        """Gather the workers' results (in env order)."""
        out = [r.recv() for r in self.remotes]
        self._masks = np.concatenate([o[4] for o in out])
        infos: list[dict[str, Any]] = [d for o in out for d in o[3]]
        return (np.concatenate([o[0] for o in out]), np.concatenate([o[1] for o in out]),
                np.concatenate([o[2] for o in out]), infos)

    def action_masks(self) -> np.ndarray:
        """(N, A) feasible actions (sent with the last reply)."""
        assert self._masks is not None, "reset() first"
        return self._masks

    def env_method(self, method_name: str, *method_args: Any, indices: Any = None,
                   **method_kwargs: Any) -> list[Any]:
        """Only ``action_masks`` (from the last reply)."""
        if method_name != "action_masks":
            raise NotImplementedError(f"BatchedSubprocVecEnv.env_method({method_name!r})")
        m = self.action_masks()
        return [m[i] for i in self._get_indices(indices)]

    def has_attr(self, attr_name: str) -> bool:
        """Whether the envs have ``attr_name`` (``action_masks``: always)."""
        if attr_name == "action_masks":
            return True
        try:
            self.get_attr(attr_name, indices=[0])
        except AttributeError:
            return False
        return True

    def get_attr(self, attr_name: str, indices: Any = None) -> list[Any]:
        """An attribute of each env (asked of its worker; a method comes back as a
        ``"<method name>"`` placeholder). Raises ``AttributeError`` as the env does."""
        idx = list(self._get_indices(indices))
        vals: dict[int, list[Any]] = {}
        for p in sorted({i // self.m for i in idx}):
            self.remotes[p].send(("get_attr", attr_name))
            got = self.remotes[p].recv()
            if isinstance(got, AttributeError):
                raise got
            vals[p] = got
        return [vals[i // self.m][i % self.m] for i in idx]

    def set_attr(self, attr_name: str, value: Any, indices: Any = None) -> None:
        """Not supported (the envs live in the workers)."""
        raise NotImplementedError("BatchedSubprocVecEnv.set_attr")

    def env_is_wrapped(self, wrapper_class: type, indices: Any = None) -> list[bool]:
        """Sub-envs are never wrapped."""
        return [False for _ in self._get_indices(indices)]

    def get_images(self) -> Sequence[np.ndarray | None]:
        """Not supported."""
        raise NotImplementedError("BatchedSubprocVecEnv.get_images")

    def close(self) -> None:
        """Stop the workers."""
        if self.closed:
            return
        for r in self.remotes:
            r.send(("close", None))
        for p in self.procs:
            p.join()
        self.closed = True
