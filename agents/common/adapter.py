"""Run a trained policy through :func:`hetgym.simulate`, exactly like a baseline.

:class:`AgentScheduler` is a :class:`hetgym.decisions.Scheduler`. At each
decision point it builds the observation and the action mask of
``HetCluster-v0`` from the simulator that ``hetgym.simulate`` drives (through
a ``HetClusterEnv`` bound to it, :func:`agents.common.envtools.bind`) and asks the
policy for actions until the policy waits or only "wait" is feasible, just
as the env loops over decisions at one simulated instant. Starts and
preemptions are carried out on the simulator at once (the next observation
must see them), so ``decide`` returns an empty list; the run, its jobs and
its metrics are those of ``hetgym.simulate``.

A policy is any callable ``policy(obs, mask) -> int``; :class:`SB3Policy`
wraps a Stable-Baselines3 model, :func:`load_scheduler` loads a checkpoint
saved by ``scripts/train.py`` (with its ``agent.json``)::

    sched = agents.common.adapter.load_scheduler("outputs/train/.../best_model.zip")
    result = hetgym.simulate(scenario, sched, seed=0)
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable

import numpy as np

from agents.common.envtools import EnvConfig, bind, policy_mask, refresh, resolve_action
from hetgym.decisions import Cadence, Decision, SchedulingError

if TYPE_CHECKING:  # pragma: no cover
    from hetgym.envs.hetcluster import HetClusterEnv
    from hetgym.sim.view import View

__all__ = ["Policy", "AgentScheduler", "SB3Policy", "load_scheduler", "load_model",
           "save_meta", "load_meta", "META_FILE"]

Policy = Callable[[np.ndarray, np.ndarray], int]
META_FILE = "agent.json"


class AgentScheduler:
    """A :class:`~hetgym.decisions.Scheduler` that asks a policy, one action at a time.

    Args:
        policy: ``policy(obs, mask) -> action`` (an int in the env's action space).
        env_config: The env arguments the policy was trained with (window,
            preemption, ...); the scenario is the one being simulated.
        max_actions: Most actions per decision point (guards against a policy
            that starts and preempts for ever at one instant); default
            ``4 x (jobs in the system) + 16``.
        name: Label shown in ``repr``.
    """

    def __init__(self, policy: Policy, env_config: EnvConfig | None = None,
                 max_actions: int | None = None, name: str = "agent") -> None:
        self.policy = policy
        self.env_config = env_config or EnvConfig()
        self.max_actions = max_actions
        self.name = name
        self.env: "HetClusterEnv | None" = None
        self.actions: list[int] = []

    @property
    def cadence(self) -> Cadence:
        """Events only; decision points with an empty queue too when the policy may preempt."""
        return Cadence(call_when_queue_empty=bool(self.env_config.preemption))

    def __repr__(self) -> str:
        return f"AgentScheduler(name={self.name!r}, policy={self.policy!r}, env_config={self.env_config})"

    def reset(self, view: "View") -> None:
        """Build an env on the simulated scenario and bind it to the simulator."""
        env = self.env_config.make(view.scenario, n_jobs=None)
        bind(env, view)
        self.env = env
        self.actions = []

    def decide(self, view: "View") -> list[Decision]:
        """Act until the policy waits (decisions are applied directly; returns [])."""
        env = self.env
        if env is None or not env.attached_to(view):
            self.reset(view)
            env = self.env
        assert env is not None and env.sim is not None
        sim = env.sim
        limit = self.max_actions or 4 * (sim.n_queue + sim.n_running) + 16
        wait = env.wait_action
        for _ in range(limit):
            feasible, obs = refresh(env)
            if sim.finished or not feasible:
                break
            mask = policy_mask(env, self.env_config.no_idle_wait)
            a = int(self.policy(obs, mask))
            self.actions.append(a)
            if not 0 <= a < env.action_space.n:
                raise ValueError(f"policy returned action {a}, outside 0..{env.action_space.n - 1}")
            if not env.action_masks()[a] and env.invalid_action == "raise":
                raise SchedulingError(env.why_invalid(a))
            a = resolve_action(a, mask, wait)
            kind, job, dev = env.decode(a)
            if kind == "wait":
                break
            if kind == "start":
                sim.start(job, dev)
            else:
                sim.preempt(job)
        return []


class SB3Policy:
    """``policy(obs, mask) -> action`` from a Stable-Baselines3 model.

    Args:
        model: A ``MaskablePPO`` (the mask is passed) or any SB3 model (the
            mask is ignored; an infeasible action is then handled as the
            env's ``invalid_action`` says).
        deterministic: Greedy actions (True) or sampled ones.
    """

    def __init__(self, model: Any, deterministic: bool = True) -> None:
        self.model = model
        self.deterministic = deterministic
        self.masked = "action_masks" in _predict_params(model)

    def __repr__(self) -> str:
        return f"SB3Policy({type(self.model).__name__}, deterministic={self.deterministic})"

    def __call__(self, obs: np.ndarray, mask: np.ndarray) -> int:
        if self.masked:
            a, _ = self.model.predict(obs, action_masks=mask, deterministic=self.deterministic)
        else:
            a, _ = self.model.predict(obs, deterministic=self.deterministic)
        return int(a)


def _predict_params(model: Any) -> set[str]:
    import inspect

    return set(inspect.signature(model.predict).parameters)


def save_meta(directory: str | Path, algo: str, env_config: EnvConfig,
              extra: dict[str, Any] | None = None) -> Path:
    """Write ``agent.json`` (algorithm and env arguments) beside checkpoints."""
    from hetgym.io import write_atomic_json

    meta = {"algo": algo, "env": env_config.to_dict(), **(extra or {})}
    return write_atomic_json(meta, Path(directory) / META_FILE)


def load_meta(checkpoint: str | Path) -> dict[str, Any]:
    """``agent.json`` of a checkpoint: in its folder or a parent folder (up to 3 levels)."""
    p = Path(checkpoint).resolve()
    for d in [p.parent, *list(p.parents)[1:4]]:
        f = d / META_FILE
        if f.is_file():
            return json.loads(f.read_text())
    raise FileNotFoundError(f"no {META_FILE} beside {checkpoint} or in its parent folders; "
                            "checkpoints written by scripts/train.py have one")


def load_model(checkpoint: str | Path, algo: str | None = None, device: str = "cpu",
               trusted: bool = False) -> Any:
    """Load an SB3 model (``maskable_ppo`` or ``ppo``; read from ``agent.json`` if None).

    Nothing in the file is unpickled (:func:`agents.common.safe_load.load_sb3`): a file whose
    settings cannot be rebuilt from its plain text is refused with
    :class:`agents.common.safe_load.UnsafeModelError` unless ``trusted=True``.
    """
    from agents.common.safe_load import load_sb3
    from agents.sb3.agent import algo_class

    if algo is None:
        algo = load_meta(checkpoint)["algo"]
    return load_sb3(checkpoint, algo_class(algo), device=device, trusted=trusted)


def load_scheduler(checkpoint: str | None, deterministic: bool = True,
                   device: str = "cpu", name: str = "agent", trusted: bool = False) -> AgentScheduler:
    """An :class:`AgentScheduler` for a checkpoint written by ``scripts/train.py``.

    Args:
        checkpoint: Path of a ``.zip`` model (``best_model.zip``, ``final_model.zip``,
            ``checkpoints/*.zip``); its ``agent.json`` gives the algorithm and env arguments.
        deterministic: Greedy actions.
        device: Torch device.
        name: Label.
        trusted: Load pickled entries as they are (only for files you made; see
            :func:`load_model`).
    """
    if checkpoint is None:
        raise ValueError("scheduler=agent needs agent.checkpoint=<path to a model .zip>")
    if not Path(checkpoint).is_file():
        raise FileNotFoundError(f"agent checkpoint {checkpoint} does not exist")
    meta = load_meta(checkpoint)
    model = load_model(checkpoint, meta["algo"], device=device, trusted=trusted)
    return AgentScheduler(SB3Policy(model, deterministic), EnvConfig.from_dict(meta["env"]),
                          name=name)
