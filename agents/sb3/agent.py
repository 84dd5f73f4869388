"""Stable-Baselines3 pieces: typed agent config, vectorised envs, callbacks.

Importing this module does not import torch; :meth:`AgentConfig.build` and
the helpers that need SB3 import it when called.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any, Callable, Sequence

import gymnasium as gym
import numpy as np

from agents.common.envtools import EnvConfig, policy_mask, resolve_action
from hetgym.specs import Scenario

if TYPE_CHECKING:  # pragma: no cover
    from stable_baselines3.common.base_class import BaseAlgorithm
    from stable_baselines3.common.vec_env import VecEnv

__all__ = ["ALGOS", "FEATURES", "AgentConfig", "torch_device", "algo_class", "MaskFn", "ResolveAction", "Wrap",
           "make_env",
           "make_vec_env",
           "linear_schedule"]

ALGOS = ("maskable_ppo", "ppo")
#: Policy networks of :class:`AgentConfig` (its ``features``).
FEATURES = ("mlp", "set", "score")


def algo_class(algo: str) -> Any:
    """The SB3 class of ``algo`` (``maskable_ppo`` from sb3-contrib, or ``ppo``)."""
    if algo == "maskable_ppo":
        from sb3_contrib import MaskablePPO

        return MaskablePPO
    if algo == "ppo":
        from stable_baselines3 import PPO

        return PPO
    raise ValueError(f"unknown algo {algo!r}; expected one of {ALGOS}")


def linear_schedule(start: float, end: float) -> Callable[[float], float]:
    """SB3 schedule from ``start`` (progress_remaining=1) to ``end`` (0)."""

    def f(progress_remaining: float) -> float:
        return end + (start - end) * progress_remaining

    return f


@dataclass(frozen=True)
class AgentConfig:
    """Algorithm, policy network and hyper-parameters of an SB3 agent.

    Attributes:
        algo: ``maskable_ppo`` (sb3-contrib, uses the action mask) or ``ppo``
            (plain PPO; a masked action is handled by the env as "wait").
        net_arch: Hidden layers of the policy and value networks.
        activation: ``tanh`` or ``relu``.
        learning_rate: Adam step size (start value when ``lr_final`` is set).
        lr_final: Linear decay of the learning rate to this value (None: constant).
        n_steps: Rollout length per env between updates.
        batch_size: Minibatch size.
        n_epochs: Passes over each rollout.
        gamma: Discount factor.
        gae_lambda: GAE lambda.
        clip_range: PPO clipping.
        ent_coef: Entropy bonus.
        vf_coef: Value loss weight.
        max_grad_norm: Gradient clipping.
        target_kl: Early stop of an update past this KL (None: off).
        normalize_reward: Wrap the vec env in ``VecNormalize`` (rewards only).
        checkpoint: A saved model to evaluate (``scheduler=agent``) or to start from.
        features: ``mlp`` (the flat observation), ``set`` (the permutation-equivariant
            :class:`agents.sb3.policies.SetEncoder` in front of ``net_arch``) or ``score``
            (:mod:`agents.sb3.scoring`: one shared network scores every candidate, the same
            weights for any window and cluster; ``net_arch`` is not used).
        embed_dim: Slot embedding width of the ``set`` encoder, candidate embedding
            width of the ``score`` policy.
    """

    algo: str = "maskable_ppo"
    net_arch: Sequence[int] = (128, 128)
    activation: str = "tanh"
    learning_rate: float = 3e-4
    lr_final: float | None = None
    n_steps: int = 256
    batch_size: int = 256
    n_epochs: int = 10
    gamma: float = 0.99
    gae_lambda: float = 0.95
    clip_range: float = 0.2
    ent_coef: float = 0.01
    vf_coef: float = 0.5
    max_grad_norm: float = 0.5
    target_kl: float | None = None
    normalize_reward: bool = True
    checkpoint: str | None = None
    features: str = "mlp"
    embed_dim: int = 32
    extra: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.algo not in ALGOS:
            raise ValueError(f"AgentConfig.algo must be one of {ALGOS}, got {self.algo!r}")
        if self.activation not in ("tanh", "relu"):
            raise ValueError(f"AgentConfig.activation must be tanh or relu, got {self.activation!r}")
        if self.features not in FEATURES:
            raise ValueError(f"AgentConfig.features must be one of {FEATURES}, got {self.features!r}")
        object.__setattr__(self, "net_arch", tuple(int(x) for x in self.net_arch))
        object.__setattr__(self, "extra", dict(self.extra))

    @property
    def masked(self) -> bool:
        """Whether the algorithm uses the action mask."""
        return self.algo == "maskable_ppo"

    def to_dict(self) -> dict[str, Any]:
        """Plain dict (JSON-serialisable)."""
        d = asdict(self)
        d["net_arch"] = list(self.net_arch)
        return d

    def build(self, env: "VecEnv", seed: int = 0, tensorboard_log: str | None = None,
              verbose: int = 0, device: str = "auto") -> "BaseAlgorithm":
        """Create the model on ``env`` (or load :attr:`checkpoint` and attach ``env``).

        ``device="auto"`` puts the policy on CUDA where there is a GPU, else on the CPU
        (:func:`torch_device`)."""
        import torch

        from agents.common.safe_load import load_sb3

        device = torch_device(device)
        cls = algo_class(self.algo)
        lr: float | Callable[[float], float] = self.learning_rate
        if self.lr_final is not None:
            lr = linear_schedule(self.learning_rate, self.lr_final)
        if self.checkpoint:
            return load_sb3(self.checkpoint, cls, env=env, device=device,
                            overrides={"learning_rate": lr, "clip_range": self.clip_range},
                            tensorboard_log=tensorboard_log)
        act = {"tanh": torch.nn.Tanh, "relu": torch.nn.ReLU}[self.activation]
        pk: dict[str, Any] = {"net_arch": list(self.net_arch), "activation_fn": act}
        policy: Any = "MlpPolicy"
        if self.features == "score":
            from agents.sb3.scoring import MaskableScoringPolicy, ScoringPolicy, policy_kwargs

            policy = MaskableScoringPolicy if self.masked else ScoringPolicy
            pk = policy_kwargs(env, self.embed_dim)
        elif self.features == "set":
            from agents.sb3.policies import SetEncoder

            window, n_dev, run_window = (env.get_attr(a)[0] for a in ("window", "n_dev", "run_window"))
            pk["features_extractor_class"] = SetEncoder
            pk["features_extractor_kwargs"] = {"window": int(window), "n_dev": int(n_dev),
                                               "run_window": int(run_window),
                                               "embed_dim": int(self.embed_dim)}
        return cls(policy, env, learning_rate=lr, n_steps=self.n_steps,
                   batch_size=self.batch_size, n_epochs=self.n_epochs, gamma=self.gamma,
                   gae_lambda=self.gae_lambda, clip_range=self.clip_range,
                   ent_coef=self.ent_coef, vf_coef=self.vf_coef,
                   max_grad_norm=self.max_grad_norm, target_kl=self.target_kl,
                   policy_kwargs=pk,
                   tensorboard_log=tensorboard_log, verbose=verbose, seed=seed, device=device,
                   **self.extra)


def torch_device(device: str = "auto") -> str:
    """``"cuda"`` for ``"auto"`` where torch sees a GPU, ``"cpu"`` for ``"auto"`` elsewhere;
    any other name as it is."""
    if device != "auto":
        return device
    import torch

    return "cuda" if torch.cuda.is_available() else "cpu"


class ResolveAction(gym.ActionWrapper):
    """Carry out :func:`agents.common.envtools.resolve_action` (for policies that ignore the mask)."""

    def __init__(self, env: gym.Env, no_idle_wait: bool = True) -> None:
        super().__init__(env)
        self.no_idle_wait = no_idle_wait

    def action(self, action: Any) -> int:
        env = self.env.unwrapped
        return resolve_action(int(action), policy_mask(env, self.no_idle_wait), env.wait_action)  # type: ignore[arg-type, attr-defined]


class Wrap:
    """Picklable ``wrapper_class`` for ``make_vec_env``: ``ActionMasker`` (masked
    algorithms) or ``ResolveAction`` (the others)."""

    def __init__(self, env_config: EnvConfig, masked: bool) -> None:
        self.env_config = env_config
        self.masked = masked

    def __call__(self, env: gym.Env) -> gym.Env:
        if self.masked:
            from sb3_contrib.common.wrappers import ActionMasker

            env = ActionMasker(env, MaskFn(self.env_config.no_idle_wait))
        else:
            env = ResolveAction(env, self.env_config.no_idle_wait)
        return env


class MaskFn:
    """Picklable ``action_mask_fn`` for sb3-contrib's ``ActionMasker``."""

    def __init__(self, no_idle_wait: bool = True) -> None:
        self.no_idle_wait = no_idle_wait

    def __call__(self, env: gym.Env) -> np.ndarray:
        return policy_mask(env.unwrapped, self.no_idle_wait)  # type: ignore[arg-type]


def make_env(scenario: Scenario | str, env_config: EnvConfig, masked: bool = True) -> gym.Env:
    """One ``HetCluster-v0`` env (with ``ActionMasker`` when ``masked``)."""
    env = gym.make("HetCluster-v0", scenario=scenario, **env_config.env_kwargs())
    return Wrap(env_config, masked)(env)


def make_vec_env(scenario: Scenario | str, env_config: EnvConfig, n_envs: int = 4,
                 seed: int = 0, vec_env: str = "dummy", masked: bool = True,
                 monitor_dir: str | None = None, n_procs: int = 2) -> "VecEnv":
    """``n_envs`` copies in a ``DummyVecEnv`` (``vec_env="dummy"``), a ``SubprocVecEnv``
    (``"subproc"``), the batched env (``"batched"``: all copies stepped in one compiled
    call, :class:`agents.sb3.vecenv.BatchedVecEnv`; masked algorithms only) or ``n_procs``
    processes of batched envs (``"batched_subproc"``, :class:`agents.sb3.vecpool.BatchedSubprocVecEnv`;
    ``n_envs`` must be a multiple of ``n_procs``).

    Each copy is wrapped in ``Monitor`` (episode returns and lengths; ``VecMonitor`` for
    the batched env) and, when ``masked``, in ``ActionMasker`` (else in ``ResolveAction``);
    copy i is seeded ``seed + i``, so copies draw different trace windows.
    """
    from stable_baselines3.common.env_util import make_vec_env as _mve
    from stable_baselines3.common.vec_env import DummyVecEnv, SubprocVecEnv

    if vec_env not in ("dummy", "subproc", "batched", "batched_subproc"):
        raise ValueError(f"vec_env must be 'dummy', 'subproc', 'batched' or 'batched_subproc', "
                         f"got {vec_env!r}")
    if vec_env.startswith("batched"):
        if not masked:
            raise ValueError(f"vec_env={vec_env!r} needs a masked algorithm (maskable_ppo): the "
                             "batched env has no ResolveAction wrapper")
        import os

        from stable_baselines3.common.vec_env import VecMonitor

        from agents.sb3.vecenv import BatchedVecEnv

        if vec_env == "batched_subproc":
            from agents.sb3.vecpool import BatchedSubprocVecEnv

            if n_envs % n_procs:
                raise ValueError(f"vec_env='batched_subproc': n_envs ({n_envs}) must be a multiple "
                                 f"of n_procs ({n_procs})")
            venv = BatchedSubprocVecEnv(n_procs, n_envs // n_procs, scenario=scenario,
                                        **env_config.env_kwargs())
        else:
            venv = BatchedVecEnv(n_envs, scenario=scenario, **env_config.env_kwargs())
        venv.seed(seed)
        path = None if monitor_dir is None else os.path.join(monitor_dir, "batched")
        return VecMonitor(venv, filename=path)
    cls = SubprocVecEnv if vec_env == "subproc" else DummyVecEnv
    return _mve("HetCluster-v0", n_envs=n_envs, seed=seed, monitor_dir=monitor_dir,
                env_kwargs={"scenario": scenario, **env_config.env_kwargs()},
                wrapper_class=Wrap(env_config, masked), vec_env_cls=cls)
