"""Behaviour cloning: pre-train a policy on a baseline's decisions before PPO.

A baseline (the *teacher*, any ``baselines.make`` name) plays episodes of
``HetCluster-v0``: at each decision point its ``decide(view)`` runs on the
env's simulator and the first of its starts that the action space can express
(job in the visible window, device feasible) becomes the action ``k*C + c``;
a preemption of a job in the running window becomes ``K*C + r``; otherwise
the teacher waits. In a decision env (``HetClusterPlacement-v0`` ...,
:mod:`hetgym.envs.decision_base`; configured by :class:`DecisionEnvConfig`) the
teacher acts through :class:`~hetgym.envs.decision_base.SchedulerAgent`: every
decision it makes is an action (its whole run, exactly as in :func:`hetgym.simulate`,
when the window holds the jobs it starts). The policy is then fitted by cross-entropy on these
(observation, mask, action) triples for a few epochs, and the value head by
regression on the discounted returns of the same episodes (so that PPO starts
with a critic that matches the cloned policy).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from agents.common.envtools import EnvConfig, policy_mask
from hetgym.decisions import Placement, Preempt, Start
from hetgym.specs import Scenario

if TYPE_CHECKING:  # pragma: no cover
    from hetgym.envs.hetcluster import HetClusterEnv

__all__ = ["BCConfig", "DecisionEnvConfig", "teacher_action", "collect", "pretrain", "fit_minibatches"]


@dataclass(frozen=True)
class BCConfig:
    """Behaviour-cloning settings.

    Attributes:
        teacher: Baseline name (None: no pre-training).
        teacher_params: Its parameters (``baselines.make(teacher, **teacher_params)``).
        episodes: Teacher episodes (trace windows of the training workload).
        epochs: Passes over the collected data.
        batch_size: Minibatch size.
        learning_rate: Adam step size.
        value_weight: Weight of the value regression (0: policy only).
    """

    teacher: str | None = None
    teacher_params: dict[str, Any] = field(default_factory=dict)
    episodes: int = 32
    epochs: int = 10
    batch_size: int = 256
    learning_rate: float = 1e-3
    value_weight: float = 0.5

    def __post_init__(self) -> None:
        object.__setattr__(self, "teacher_params", dict(self.teacher_params))


@dataclass(frozen=True)
class DecisionEnvConfig:
    """A decision env (``env_id``, e.g. ``"HetClusterPlacement-v0"``) and its keyword
    arguments, for :func:`collect` / :func:`pretrain`; the teacher's decision points
    (``round_length``, ``every_event``) are added from the teacher."""

    env_id: str
    kwargs: dict[str, Any] = field(default_factory=dict)

    def make(self, scenario: Scenario | str, **overrides: Any) -> Any:
        """The env (unwrapped) on ``scenario``."""
        import gymnasium as gym

        import hetgym  # noqa: F401  (registers the ids)

        return gym.make(self.env_id, scenario=scenario, **{**self.kwargs, **overrides}).unwrapped


def _device_of(env: "HetClusterEnv", d: Start) -> int | None:
    sim = env.sim
    assert sim is not None
    if d.device is not None:
        return sim.device_index(d.device)
    pl: Placement | None = d.placement
    if pl is None:
        return None
    devs = set(sim.nodes.dev[pl.nodes].tolist())
    return devs.pop() if len(devs) == 1 else None


def teacher_action(env: Any, teacher: Any, mask: np.ndarray) -> int:
    """The action index of the teacher's first expressible decision (or wait).

    In a decision env ``teacher`` is a :class:`~hetgym.envs.decision_base.SchedulerAgent`
    (it calls ``decide`` once per decision point) and its next action is returned
    (``SchedulingError`` if the action space cannot express the decision)."""
    from hetgym.envs.decision_base import DecisionEnv, SchedulerAgent

    if isinstance(env.unwrapped, DecisionEnv):
        if not isinstance(teacher, SchedulerAgent):
            raise TypeError("teacher_action in a decision env needs a SchedulerAgent(scheduler), "
                            f"got {type(teacher).__name__}")
        return teacher.act(env.unwrapped)
    sim = env.sim
    assert sim is not None
    decisions = teacher.decide(sim.view) or []
    slot = {int(j): k for k, j in enumerate(env.window_jobs().tolist())}
    rslot = {int(j): r for r, j in enumerate(env.running_window_jobs().tolist())}
    for d in decisions:
        if isinstance(d, Start):
            k = slot.get(int(d.job))
            c = _device_of(env, d)
            if k is None or c is None:
                continue
            a = k * env.n_dev + c
            if mask[a]:
                return a
        elif isinstance(d, Preempt) and env.run_window:
            r = rslot.get(int(d.job))
            if r is not None and mask[env.n_start_actions + r]:
                return env.n_start_actions + r
    if mask[env.wait_action]:
        return env.wait_action
    return int(np.flatnonzero(mask)[0])


def collect(scenario: Scenario, env_config: EnvConfig | DecisionEnvConfig, teacher: str,
            teacher_params: dict[str, Any] | None = None, episodes: int = 32, seed: int = 0,
            gamma: float = 0.99) -> dict[str, np.ndarray]:
    """Roll the teacher in the env; arrays ``obs``, ``mask``, ``action``, ``ret`` and stats
    (``teacher_avg_jct``; ``skipped``: decisions a decision env could not express).

    Episode ``i`` is ``env.reset(seed=seed + 7919 * (i + 1))`` (windows unlike
    the first PPO episodes, which use ``seed + env index``).
    """
    import baselines
    from hetgym.envs.decision_base import SchedulerAgent, decision_point_kwargs

    decision = isinstance(env_config, DecisionEnvConfig)
    if decision:
        points = decision_point_kwargs(baselines.make(teacher, **(teacher_params or {})))
        env = env_config.make(scenario, **points)
    else:
        env = env_config.make(scenario)
    obs_l, mask_l, act_l, ret_l = [], [], [], []
    jcts = []
    skipped = 0
    for i in range(episodes):
        sched = baselines.make(teacher, **(teacher_params or {}))
        if decision:
            sched = SchedulerAgent(sched, strict=False)  # skip what the window cannot show
            obs, _ = env.reset(seed=seed + 7919 * (i + 1), options=sched.reset_options())
        else:
            obs, _ = env.reset(seed=seed + 7919 * (i + 1))
            sched.reset(env.sim.view)  # type: ignore[union-attr]
        rewards = []
        done = False
        info: dict[str, Any] = {}
        while not done:
            mask = env.action_masks() if decision else policy_mask(env, env_config.no_idle_wait)
            a = teacher_action(env, sched, mask)
            obs_l.append(obs)
            mask_l.append(mask)
            act_l.append(a)
            obs, r, term, trunc, info = env.step(a)
            rewards.append(r)
            done = term or trunc
        g = 0.0
        rets = np.empty(len(rewards))
        for t in range(len(rewards) - 1, -1, -1):
            g = rewards[t] + gamma * g
            rets[t] = g
        ret_l.append(rets)
        jcts.append(info["episode_metrics"]["avg_jct"])
        skipped += getattr(sched, "skipped", 0)
    return {"skipped": np.asarray(skipped),"obs": np.asarray(obs_l, dtype=np.float32), "mask": np.asarray(mask_l),
            "action": np.asarray(act_l, dtype=np.int64),
            "ret": np.concatenate(ret_l).astype(np.float32),
            "teacher_avg_jct": np.asarray(jcts)}


def fit_minibatches(policy: Any, n: int, loss_of: Any, epochs: int, batch_size: int,
                    learning_rate: float, seed: int = 0) -> list[float]:
    """Adam on ``policy``'s parameters: ``epochs`` passes over ``n`` samples in shuffled
    minibatches, ``loss_of(indices)`` the loss of one (gradients clipped at norm 0.5);
    the policy is left in evaluation mode. Returns the minibatch losses."""
    import torch

    policy.set_training_mode(True)
    opt = torch.optim.Adam(policy.parameters(), lr=learning_rate)
    rng = np.random.default_rng(seed)
    losses: list[float] = []
    for _ in range(epochs):
        perm = rng.permutation(n)
        for s in range(0, n, batch_size):
            loss = loss_of(perm[s: s + batch_size])
            opt.zero_grad()
            loss.backward()
            torch.nn.utils.clip_grad_norm_(policy.parameters(), 0.5)
            opt.step()
            losses.append(float(loss.detach()))
    policy.set_training_mode(False)
    return losses


def pretrain(model: Any, scenario: Scenario, env_config: EnvConfig | DecisionEnvConfig, cfg: BCConfig,
             seed: int = 0) -> dict[str, Any]:
    """Collect teacher data and fit ``model.policy`` on it (in place); returns statistics.

    When the model's env normalises rewards (``VecNormalize``), the value head
    is fitted on the returns divided by their standard deviation, which is
    what the normalised rewards of PPO will roughly sum to.
    """
    import torch
    from stable_baselines3.common.vec_env import VecNormalize

    assert cfg.teacher
    data = collect(scenario, env_config, cfg.teacher, cfg.teacher_params, cfg.episodes,
                   seed=seed, gamma=float(model.gamma))
    policy = model.policy
    masked = "action_masks" in policy.evaluate_actions.__code__.co_varnames
    dev = policy.device
    obs = torch.as_tensor(data["obs"], device=dev)
    act = torch.as_tensor(data["action"], device=dev)
    ret_np = data["ret"]
    if isinstance(model.get_env(), VecNormalize):
        ret_np = ret_np / max(float(np.std(ret_np)), 1e-8)
    ret = torch.as_tensor(ret_np, device=dev)
    masks = data["mask"]
    n = len(act)

    def loss_of(idx: np.ndarray) -> Any:
        kw = {"action_masks": masks[idx]} if masked else {}
        values, logp, _ = policy.evaluate_actions(obs[idx], act[idx], **kw)
        loss = -logp.mean()
        if cfg.value_weight > 0:
            loss = loss + cfg.value_weight * torch.nn.functional.mse_loss(values.flatten(), ret[idx])
        return loss

    losses = fit_minibatches(policy, n, loss_of, cfg.epochs, cfg.batch_size, cfg.learning_rate, seed)
    with torch.no_grad():
        kw = {"action_masks": masks} if masked else {}
        dist = policy.get_distribution(obs, **kw) if masked else policy.get_distribution(obs)
        pred = dist.distribution.probs.argmax(dim=1).cpu().numpy()
    return {"teacher": cfg.teacher, "samples": int(n),
            "teacher_avg_jct": float(np.mean(data["teacher_avg_jct"])),
            "accuracy": float((pred == data["action"]).mean()),
            "final_loss": float(np.mean(losses[-10:])) if losses else float("nan")}
