"""The base and the deviations of a gated residual policy (:mod:`agents.residual`).

:class:`ResidualConfig` names the base scheduler, the deviations a chooser may take and
how a run is valued (metric, constraint and penalty, myopic or sampled futures). At a
decision point, :func:`base_vector` writes the base's starts in the env's action space
and :func:`candidates` lists the deviations: "wait", per device type the feasible window
job with the shortest duration there and the oldest one, and with ``preempt`` the
preemption of the running job with the longest remaining time
(:func:`longest_remaining_preemption`).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from hetgym.decisions import Decision, Start

if TYPE_CHECKING:  # pragma: no cover
    from hetgym.envs.hetcluster import HetClusterEnv

__all__ = ["ResidualConfig", "base_vector", "candidates", "longest_remaining_preemption"]


@dataclass(frozen=True)
class ResidualConfig:
    """The base and the deviations of a residual policy.

    Attributes:
        base: ``baselines.make`` name of the base scheduler (no rounds, timers or calls
            with an empty queue: its rollouts run as :func:`agents.imitation.rollout.finish_sim`).
        base_params: Its parameters.
        wait: "Wait" (skip the base's decisions at this instant) is a deviation.
        shortest: Per device type, the feasible window job with the shortest duration there.
        oldest: Per device type, the first feasible window job (queue order).
        preempt: The preemption of the running window job (env's run window, allowed by
            the mask) with the longest remaining time is a deviation.
        metric: Episode metric (lower is better) the teacher minimises.
        rel_tol: The teacher deviates only when better by more than this fraction.
        constraint: Summary column bounded by its value in the base's own run of the
            window (None: no constraint).
        penalty: Weight of the constraint's excess over that bound in the value.
        myopic: The rollouts see only the jobs that have arrived (:func:`copy_sim` with
            ``myopic``): the teacher then knows nothing of future arrivals, as a policy
            does, and a rollout's value is over the jobs arrived so far; with a
            constraint, its bound is then the base's figure over the same jobs (the base's
            myopic rollout from that state), not the whole window's.
        futures: K > 0: each rollout copy's not-yet-arrived jobs are replaced by a future
            sampled from ``futures_family``'s training rows (:mod:`agents.residual.futures`), K
            futures per decision point shared by the base and every candidate; a value is
            the mean over the K futures, each bounded (with a constraint) by the base's
            figure in the same future. 0: the copies hold the window's real future.
        futures_seed: Seed of the futures (with the window and the decision point).
        futures_family: The family whose training rows the futures are drawn from
            (``scripts/residual.py`` sets it to its family when ``futures`` > 0).
    """

    base: str = "allox"
    base_params: dict[str, Any] = field(default_factory=dict)
    wait: bool = True
    shortest: bool = True
    oldest: bool = True
    preempt: bool = False
    metric: str = "avg_jct"
    rel_tol: float = 1e-9
    constraint: str | None = None
    penalty: float = 0.0
    myopic: bool = False
    futures: int = 0
    futures_seed: int = 0
    futures_family: str | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "base_params", dict(self.base_params))
        if self.futures < 0 or (self.futures and self.myopic):
            raise ValueError(f"ResidualConfig: futures must be >= 0 and not with myopic, got "
                             f"futures={self.futures}, myopic={self.myopic}")

    def make_base(self) -> Any:
        """A fresh base scheduler."""
        import baselines

        return baselines.make(self.base, **self.base_params)

    def value(self, summary: dict[str, float], bound: float = math.inf) -> float:
        """The value of a run with ``summary`` (lower is better): ``metric``, plus
        ``penalty * max(0, constraint - bound)`` when there is a constraint (a missing or
        NaN constraint, e.g. a window without BE jobs, adds nothing); ``inf`` when the
        metric is not finite."""
        v = float(summary[self.metric])
        if not math.isfinite(v):
            return math.inf
        if self.constraint is not None and self.penalty and math.isfinite(bound):
            c = float(summary.get(self.constraint, math.nan))
            if c > bound:
                v += self.penalty * (c - bound)
        return v


def base_vector(env: HetClusterEnv, decisions: Sequence[Decision]) -> np.ndarray:
    """float32[A]: 1 at ``k*C + c`` for each start of ``decisions`` of window slot ``k``
    on device type ``c`` (the base's decisions in the env's action space), 1 at "wait"
    when the base starts nothing."""
    out = np.zeros(env.action_space.n, dtype=np.float32)
    slot = {int(j): k for k, j in enumerate(env.window_jobs().tolist())}
    started = False
    for d in decisions:
        if isinstance(d, Start):
            started = True
            k = slot.get(int(d.job))
            if k is not None and d.device is not None:
                out[k * env.n_dev + env.sim.device_index(d.device)] = 1.0
    if not started:
        out[env.wait_action] = 1.0
    return out


def candidates(env: HetClusterEnv, mask: np.ndarray, base: np.ndarray, cfg: ResidualConfig) -> list[int]:
    """The deviations allowed by ``mask`` (module docstring), each once, none that the
    base itself takes now (``base``: :func:`base_vector`; the base's own preemptions are
    not marked there, so a preemption the base makes now can be a candidate: it then
    only moves it before the base's other decisions at this instant)."""
    from agents.imitation.rollout import shortest_per_device

    cand: list[int] = []
    if cfg.wait and mask[env.wait_action] and not base[env.wait_action]:
        cand.append(env.wait_action)
    if cfg.shortest:
        cand += shortest_per_device(env, mask)
    if cfg.oldest:
        C = env.n_dev
        starts = mask[: env.n_start_actions].reshape(-1, C)
        for c in range(C):
            ok = np.flatnonzero(starts[:, c])
            if len(ok):
                cand.append(int(ok[0]) * C + c)
    if cfg.preempt:
        cand += longest_remaining_preemption(env, mask)
    seen: set[int] = set()
    return [a for a in cand if not (a in seen or seen.add(a) or base[a])]


def longest_remaining_preemption(env: HetClusterEnv, mask: np.ndarray) -> list[int]:
    """The allowed preemption action of the running window job with the longest remaining
    time (remaining work / rate; ties to the earlier slot), as a list of 0 or 1 action."""
    n_run = env.wait_action - env.n_start_actions
    if n_run <= 0:
        return []
    ok = np.flatnonzero(mask[env.n_start_actions: env.wait_action])
    run = env.running_window_jobs()
    ok = ok[ok < len(run)]
    if not len(ok):
        return []
    view = env.sim.view
    jobs = run[ok]
    rate = np.asarray(view.rate)[jobs]
    with np.errstate(divide="ignore"):
        rem = np.where(rate > 0, np.asarray(view.remaining)[jobs] / rate, np.inf)
    return [env.n_start_actions + int(ok[int(np.argmax(rem))])]
