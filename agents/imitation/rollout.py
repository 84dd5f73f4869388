"""A rollout teacher: one step of policy iteration on copies of ``HetCluster-v0``.

At a decision point the teacher tries candidate actions on *copies* of the env
(``copy.deepcopy``: the env and its simulator pickle), finishes each copy's episode
with a *base policy* and takes the action whose finished episode scores best on the
episode metric (``avg_jct`` by default, lower is better). The env is deterministic
given its state, so these are exact action values ``Q_base(s, a)`` of the base
policy. When the base policy's own action is a candidate (always, here) and ties go
to it, the teacher is at least as good as its base at every state it acts from, and
so over the episode (rollout policy improvement, Bertsekas, *Rollout algorithms*):
the test ``tests/agents/test_rollout.py`` checks this on small windows.

Pieces:

* an *actor* is ``actor(env, obs, mask) -> action`` with ``reset(env)``, acting in
  the env: :class:`SchedulerActor` (a baseline, through
  :func:`agents.imitation.bc.teacher_action`: its first expressible start at each step) or
  :class:`NetActor` (any ``policy(obs, mask)``, e.g. :class:`agents.common.adapter.SB3Policy`);
* :func:`finish`: play an episode to its end with an actor, return its metrics;
* :class:`RolloutTeacher`: the one-step lookahead over candidates (the base action,
  "wait", the ``top_k`` actions of an optional *proposer* policy's probabilities,
  and per device type the feasible job with the shortest duration there).

The base policy is the baseline *acting in the env*, one start per step on the env's
placement; it is not exactly :func:`hetgym.simulate` with the same baseline (AlloX
matches several jobs per instant and places them itself), so the teacher's guarantee
is against the in-env base; its score against the simulated baseline is measured
(docs/agents.md, "Rollout teacher and DAgger").
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from agents.common.envtools import policy_mask
from hetgym.decisions import cadence_of
from hetgym.driver import ask_wakeup, decide_once, drive
from hetgym.sim.view import View

if TYPE_CHECKING:  # pragma: no cover
    from hetgym.envs.hetcluster import HetClusterEnv

__all__ = [
    "NetActor",
    "RolloutTeacher",
    "SchedulerActor",
    "TeacherStats",
    "WindowView",
    "copy_env",
    "finish",
    "finish_sim",
    "play",
    "shortest_per_device",
]


class SchedulerActor:
    """A ``baselines`` scheduler acting in the env (its first expressible start, or wait).

    The env's action space shows only the ``window`` oldest waiting jobs. A scheduler that
    picks jobs anywhere in the queue (AlloX's matching picks short ones) then often has
    no expressible start, and the actor waits with machines idle (on hetero-small's test
    window 17 in-env AlloX waits at 67 of 168 steps while 18-34 jobs queue: 869,392 s
    against AlloX's 137,708 s through ``hetgym.simulate``). With ``window_only`` the
    scheduler decides on a view whose queue is the env's window (:class:`WindowView`):
    every start it makes is expressible (the baseline restricted to what the agent sees).

    Args:
        name: ``baselines.make`` name.
        params: Its parameters.
        window_only: Show the scheduler only the env's window of waiting jobs.
    """

    def __init__(self, name: str, params: dict[str, Any] | None = None,
                 window_only: bool = False) -> None:
        self.name = name
        self.params = dict(params or {})
        self.window_only = bool(window_only)
        self.sched: Any = None

    def __repr__(self) -> str:
        return f"SchedulerActor({self.name!r})"

    def reset(self, env: HetClusterEnv) -> None:
        """A fresh scheduler, reset on the env's simulator."""
        import baselines

        self.sched = baselines.make(self.name, **self.params)
        self.sched.reset(env.sim.view)

    def __call__(self, env: HetClusterEnv, obs: np.ndarray, mask: np.ndarray) -> int:
        from agents.imitation.bc import teacher_action

        if self.sched is None:
            self.reset(env)
        if self.window_only:
            return teacher_action(env, _WindowSched(self.sched, env), mask)
        return teacher_action(env, self.sched, mask)


class WindowView(View):
    """A simulator's view whose queue is the given jobs (an env's window) only."""

    def __init__(self, sim: Any, jobs: np.ndarray) -> None:
        super().__init__(sim)
        self._jobs = np.asarray(jobs, dtype=np.int64)
        self._jobs.flags.writeable = False

    @property
    def queue(self) -> np.ndarray:
        """The given waiting jobs, in the order given."""
        return self._jobs


@dataclass
class _WindowSched:
    """``sched`` deciding on the :class:`WindowView` of ``env``'s window."""

    sched: Any
    env: Any

    def decide(self, view: Any) -> Any:
        return self.sched.decide(WindowView(self.env.sim, self.env.window_jobs()))


@dataclass
class NetActor:
    """Any ``policy(obs, mask) -> action`` (a network) as an actor (no state)."""

    policy: Callable[[np.ndarray, np.ndarray], int]

    def reset(self, env: HetClusterEnv) -> None:
        """Nothing to reset."""

    def __call__(self, env: HetClusterEnv, obs: np.ndarray, mask: np.ndarray) -> int:
        return int(self.policy(obs, mask))


def copy_env(env: HetClusterEnv, actor: Any = None) -> tuple[HetClusterEnv, Any]:
    """Deep copies of ``env`` and ``actor`` (together, so shared objects stay shared) whose
    simulator's view reads the copied arrays.

    ``copy.deepcopy`` of a :class:`~hetgym.sim.engine.Simulator` copies its
    :class:`~hetgym.sim.view.View`, whose arrays are read-only *views* of the state
    arrays; numpy copies a view as an independent array, so the copied view would go on
    showing the state at copy time while the copied simulator runs. The view is
    therefore rebuilt on the copied simulator (as ``Simulator.reset_window`` does).
    """
    e, a = copy.deepcopy((env, actor))
    if e.sim is not None:
        e.sim.view = e.sim.view.__class__(e.sim)
    return e, a


def _step(env: HetClusterEnv, a: int) -> tuple[np.ndarray, bool, dict[str, Any]]:
    obs, _, term, trunc, info = env.step(a)
    return obs, bool(term or trunc), info


def finish(env: HetClusterEnv, actor: Any, obs: np.ndarray,
           no_idle_wait: bool = True) -> dict[str, float]:
    """Play ``env`` (in place) to the end of its episode with ``actor``; the episode's
    metrics (:func:`hetgym.metrics.summarize`)."""
    while True:
        a = actor(env, obs, policy_mask(env, no_idle_wait))
        obs, done, info = _step(env, a)
        if done:
            return info["episode_metrics"]


def finish_sim(sim: Any, sched: Any, decide_now: bool = True) -> dict[str, float]:
    """Run ``sim`` (in place) to its end with scheduler ``sched`` as :func:`hetgym.simulate`
    does from here (the one driver, :mod:`hetgym.driver`): ``decide`` now (unless
    ``decide_now`` is False: nothing more starts at this instant), then at every later
    decision point of the scheduler's cadence; the metrics of
    :func:`hetgym.metrics.summarize`. A scheduler with rounds needs a simulator built with
    the same round length (an env copy has none: use the env finisher, ``mode='env'``)."""
    from hetgym.metrics import summarize

    cadence = cadence_of(sched)
    rounds = cadence.rounds(sim.options.round_length)
    if rounds != (float(sim.round_length) if sim.round_length else None):
        raise ValueError(f"finish_sim: {type(sched).__name__} decides in rounds of {rounds} s but "
                         f"the simulator has round_length={sim.round_length!r}; use the env "
                         "finisher (mode='env')")
    view = sim.view
    if decide_now and (sim.n_queue or cadence.every_instant):
        decide_once(sim, view, sched, cadence)
        ask_wakeup(sim, view, sched, cadence)
    drive(sim, view, sched, cadence)
    return summarize(sim)


def shortest_per_device(env: HetClusterEnv, mask: np.ndarray) -> list[int]:
    """Per device type, the feasible start of the window job with the shortest duration
    there (ties to the earlier slot)."""
    sim = env.sim
    jobs = env.window_jobs()
    if not len(jobs):
        return []
    dur = sim.view.durations(jobs)  # (k, C)
    C = env.n_dev
    out = []
    for c in range(C):
        ok = mask[np.arange(len(jobs)) * C + c]
        if ok.any():
            d = np.where(ok, dur[:, c], np.inf)
            out.append(int(np.argmin(d)) * C + c)
    return out


@dataclass
class TeacherStats:
    """Counters of a :class:`RolloutTeacher`: decisions, rollouts, decisions where the
    teacher left its base action (and the metric it gained there, summed)."""

    decisions: int = 0
    rollouts: int = 0
    changed: int = 0
    gain: float = 0.0


@dataclass
class RolloutTeacher:
    """One-step lookahead with a base policy (module docstring).

    Attributes:
        base: The actor that finishes every rollout (and whose action is always a candidate).
        metric: Episode metric to minimise (a key of ``summarize``).
        proposer: Optional ``probs(obs, mask) -> float[A]``: its ``top_k`` actions are candidates.
        top_k: How many of the proposer's actions.
        shortest: Add, per device type, the feasible job with the shortest duration there.
        wait: Add "wait" when allowed.
        all_actions: Every allowed action is a candidate (the full one-step lookahead;
            the other candidate options are then moot).
        no_idle_wait: The policy mask's rule (:func:`agents.common.envtools.policy_mask`).
        mode: How a rollout finishes: ``"env"`` (the base actor steps the env copy, one
            action at a time) or ``"sim"`` (the base scheduler drives the simulator copy
            as :func:`hetgym.simulate` does, :func:`finish_sim`: for a
            :class:`SchedulerActor`, the baseline's own run from that state).
        rel_tol: A candidate replaces the base action only if it is better by more than
            this fraction of the base action's value (ties go to the base).
    """

    base: Any
    metric: str = "avg_jct"
    proposer: Callable[[np.ndarray, np.ndarray], np.ndarray] | None = None
    top_k: int = 4
    shortest: bool = True
    wait: bool = True
    all_actions: bool = False
    no_idle_wait: bool = True
    mode: str = "env"
    rel_tol: float = 1e-9
    stats: TeacherStats = field(default_factory=TeacherStats)

    def reset(self, env: HetClusterEnv) -> None:
        """Reset the base actor on the env's new episode."""
        self.base.reset(env)

    def candidates(self, env: HetClusterEnv, obs: np.ndarray, mask: np.ndarray,
                   base_a: int) -> list[int]:
        """The base action first, then the others (each once, all allowed by ``mask``)."""
        cand = [base_a]
        if self.all_actions:
            return cand + [int(a) for a in np.flatnonzero(mask) if a != base_a]
        if self.wait and mask[env.wait_action]:
            cand.append(env.wait_action)
        if self.shortest:
            cand += shortest_per_device(env, mask)
        if self.proposer is not None and self.top_k > 0:
            p = np.where(mask, self.proposer(obs, mask), -np.inf)
            cand += [int(a) for a in np.argsort(-p, kind="stable")[: self.top_k] if mask[a]]
        seen: set[int] = set()
        return [a for a in cand if not (a in seen or seen.add(a))]

    def value(self, env: HetClusterEnv, a: int) -> float:
        """The metric of the episode that takes ``a`` now, then follows the base (on copies)."""
        e, actor = copy_env(env, self.base)
        obs, done, info = _step(e, a)
        self.stats.rollouts += 1
        if done:
            m = info["episode_metrics"]
        elif self.mode == "sim":
            sched = actor.sched
            sched.reset(e.sim.view)
            m = finish_sim(e.sim, sched)
        else:
            m = finish(e, actor, obs, self.no_idle_wait)
        v = float(m[self.metric])
        return v if np.isfinite(v) else np.inf

    def label(self, env: HetClusterEnv, obs: np.ndarray, mask: np.ndarray) -> tuple[int, list[int]]:
        """The teacher's action (the best candidate, ties to the base action) and every
        candidate whose value ties with the best (within ``rel_tol``)."""
        base_a = int(self.base(env, obs, mask))
        self.stats.decisions += 1
        cand = self.candidates(env, obs, mask, base_a)
        if len(cand) == 1:
            return base_a, [base_a]
        vals = np.asarray([self.value(env, a) for a in cand])
        v0, vb = vals[0], float(vals.min())
        tol = self.rel_tol * abs(vb) if np.isfinite(vb) else 0.0
        ties = [a for a, v in zip(cand, vals) if v <= vb + tol]
        if vb < v0 - self.rel_tol * abs(v0):
            self.stats.changed += 1
            self.stats.gain += float(v0 - vb)
            return cand[int(np.argmin(vals))], ties
        return base_a, ties

    def __call__(self, env: HetClusterEnv, obs: np.ndarray, mask: np.ndarray) -> int:
        """The best candidate (ties to the base action)."""
        return self.label(env, obs, mask)[0]


def play(env: HetClusterEnv, actor: Any, seed: int = 0, no_idle_wait: bool = True,
         record: list[tuple[np.ndarray, np.ndarray]] | None = None) -> dict[str, float]:
    """Reset ``env`` (``seed``), reset ``actor`` on it and play the episode; its metrics.

    ``record``, if given, receives the ``(obs, mask)`` of every state visited."""
    obs, _ = env.reset(seed=seed)
    actor.reset(env)
    while True:
        mask = policy_mask(env, no_idle_wait)
        if record is not None:
            record.append((obs, mask))
        a = actor(env, obs, mask)
        obs, done, info = _step(env, a)
        if done:
            return info["episode_metrics"]
