"""Environment helpers shared by training, evaluation and the adapter (no torch here).

* :class:`EnvConfig`: typed keyword arguments of ``HetCluster-v0`` plus the
  agent-side masking rule ``no_idle_wait``.
* :func:`policy_mask`: the mask a policy acts under (the env's, optionally
  without "wait" when waiting would end the episode with jobs left).
* :func:`bind` / :func:`refresh`: point a :class:`~hetgym.envs.hetcluster.HetClusterEnv`
  at a simulator it did not create (the one ``hetgym.simulate`` drives), and
  recompute its mask and observation there, so that the env's own code serves
  the adapter.
* :func:`window_rows`, :func:`window_scenario`, :func:`heldout_windows`: the
  trace windows an episode draws, as stand-alone scenarios that
  ``hetgym.simulate`` runs for baselines and agents alike.

:func:`resolve_action` maps an action the policy mask forbids (plain PPO
ignores the mask) to the action carried out, in training and in the adapter.

Why ``no_idle_wait``: ``HetCluster-v0`` truncates an episode when the agent
waits although no event is left (nothing runs, every job has arrived). The
truncated return then leaves out the future JCT of the jobs still waiting, so
waiting for ever looks better than scheduling. With ``no_idle_wait`` the
policy may not wait in that state when a start is feasible; the env itself is
unchanged, and the adapter applies the same rule so that env and
``hetgym.simulate`` agree.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, fields
from typing import TYPE_CHECKING, Any

import numpy as np

from hetgym.specs import Scenario

if TYPE_CHECKING:  # pragma: no cover
    from hetgym.envs.hetcluster import HetClusterEnv
    from hetgym.sim import View

__all__ = ["EnvConfig", "policy_mask", "resolve_action", "time_feature_index",
           "bind", "refresh", "window_rows", "window_scenario", "heldout_windows"]


@dataclass(frozen=True)
class EnvConfig:
    """Keyword arguments of ``HetCluster-v0`` that an agent is trained with.

    Attributes:
        window: K, pending jobs visible to the agent.
        n_jobs: Jobs per episode window (None: the whole workload).
        placement: Placement policy (None: the scenario's).
        invalid_action: ``"wait"`` or ``"raise"`` for a masked action.
        preemption: Offer preemption actions.
        run_window: R, running jobs offered for preemption.
        reward_scale: Seconds per reward unit.
        max_steps: Truncation (None: the env's default).
        no_idle_wait: Forbid "wait" when no event is left and a start is feasible
            (see the module docstring).
        time_scale: The env's ``time_scale``: seconds of the squashed time
            features (None: the env's 3600 s; jobs of days want 10 h or more).
        observation: The env's observation layout, ``"v0"`` or ``"scaled"``
            (:mod:`hetgym.envs.features`; a card without it was trained on ``v0``).
    """

    window: int = 16
    n_jobs: int | None = 64
    placement: str | None = None
    invalid_action: str = "wait"
    preemption: bool = False
    run_window: int = 8
    reward_scale: float = 3600.0
    max_steps: int | None = None
    no_idle_wait: bool = True
    time_scale: float | None = None
    observation: str = "v0"

    def env_kwargs(self) -> dict[str, Any]:
        """Keyword arguments for ``HetClusterEnv`` (everything but ``no_idle_wait``)."""
        kw = asdict(self)
        kw.pop("no_idle_wait")
        if kw["time_scale"] is None:
            kw.pop("time_scale")
        return kw

    def make(self, scenario: Scenario | str, **overrides: Any) -> "HetClusterEnv":
        """A ``HetClusterEnv`` on ``scenario`` with these arguments (and ``overrides``)."""
        from hetgym.envs.hetcluster import HetClusterEnv

        kw = self.env_kwargs()
        kw.update(overrides)
        return HetClusterEnv(scenario=scenario, **kw)

    def to_dict(self) -> dict[str, Any]:
        """Plain dict (JSON-serialisable)."""
        return asdict(self)

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "EnvConfig":
        """Inverse of :meth:`to_dict`; unknown keys are ignored."""
        names = {f.name for f in fields(cls)}
        return cls(**{k: v for k, v in d.items() if k in names})


def policy_mask(env: "HetClusterEnv", no_idle_wait: bool = True) -> np.ndarray:
    """Feasible actions for the policy (a copy of the env's mask, see module docstring)."""
    m = env.action_masks()
    if no_idle_wait and env.sim is not None and m[: env.wait_action].any() \
            and env.sim.next_event_time() == math.inf:
        m[env.wait_action] = False
    return m


def resolve_action(action: int, mask: np.ndarray, wait_action: int) -> int:
    """The action carried out for a policy's ``action`` under the policy ``mask``.

    An allowed action is kept; otherwise "wait" if it is allowed (the env's own
    rule for an invalid action), else the first allowed action (``no_idle_wait``
    forbids waiting). Only policies that ignore the mask (plain PPO) need this.
    """
    if mask[action]:
        return int(action)
    if mask[wait_action]:
        return int(wait_action)
    return int(np.flatnonzero(mask)[0])


def time_feature_index(window: int, n_dev: int, run_window: int) -> np.ndarray:
    """Indices of the observation entries that are ``squash(time, time_scale)``: the ``time``
    features of the env's published layout (:func:`hetgym.envs.features.layout`)."""
    from hetgym.envs.features import time_feature_index as index

    return index(window, n_dev, run_window)


def bind(env: "HetClusterEnv", view: "View") -> None:
    """Make ``env`` read masks and observations from the simulator behind ``view`` (a
    scheduler's view of a foreign run).

    After this, :func:`refresh` computes ``env``'s window, action mask and
    observation for that simulator's current state, exactly as an episode on the same
    jobs would at that state; ``env.sim`` is that simulator. ``env.step`` must not be
    used afterwards. (:meth:`HetClusterEnv.attach_view
    <hetgym.envs.hetcluster.HetClusterEnv.attach_view>`.)
    """
    env.attach_view(view)


def refresh(env: "HetClusterEnv") -> tuple[bool, np.ndarray]:
    """Recompute ``env``'s window, mask and observation from its (bound) simulator.

    Returns whether a start or preemption is feasible, and the observation (a copy).
    (:meth:`HetClusterEnv.refresh <hetgym.envs.hetcluster.HetClusterEnv.refresh>`.)
    """
    return env.refresh()


def window_rows(env: "HetClusterEnv", reset_seed: int) -> np.ndarray:
    """Workload rows of the window that ``env.reset(seed=reset_seed)`` draws (asked of
    the env's :class:`~hetgym.episodes.EpisodeWindows`; the env is not reset)."""
    return env.windows.rows_for_seed(reset_seed)


def window_scenario(scenario: Scenario, rows: np.ndarray) -> Scenario:
    """``scenario`` restricted to workload ``rows``, arrivals and deadlines shifted so the
    first arrives at 0 (:meth:`hetgym.episodes.EpisodeWindows.scenario`).

    Simulating it is simulating the env episode on those rows (same jobs,
    same arrival times, same deadlines).
    """
    from hetgym.episodes import EpisodeWindows

    return EpisodeWindows.scenario(scenario, rows)


def heldout_windows(scenario: Scenario, env_config: EnvConfig, n: int,
                    reset_seed: int = 0) -> list[Scenario]:
    """``n`` episode windows of ``scenario`` (env resets with seeds ``reset_seed + i``)."""
    env = env_config.make(scenario)
    return [window_scenario(scenario, window_rows(env, reset_seed + i)) for i in range(n)]
