"""Checks the envs share: constructor arguments (a clear ``ValueError`` naming the argument
and what was expected, before anything is built) and a step's action."""

from __future__ import annotations

import numbers
from typing import Any

import numpy as np

from hetgym import scenarios as _scenarios
from hetgym.episodes import EpisodeWindows
from hetgym.specs import Scenario

__all__ = ["ENDED", "MAX_WINDOW", "autoreset_arg", "count_arg", "discrete_action", "episode_args", "positive_arg", "scenario_arg"]


#: Message of ``step`` on an episode that has ended (terminated or truncated).
ENDED = ("step() after the episode ended (terminated or truncated): call reset() first "
         "(the batched env resets finished rows itself)")


def scenario_arg(scenario: str | Scenario, scenario_kwargs: dict[str, Any] | None) -> Scenario:
    """``scenario`` itself, or the registered scenario of that name built with
    ``scenario_kwargs`` (:func:`hetgym.scenarios.get`: unknown names list the known ones).
    ``scenario_kwargs`` with a ``Scenario`` object is an error (they would be ignored)."""
    if isinstance(scenario, Scenario):
        if scenario_kwargs:
            raise ValueError(f"scenario_kwargs {sorted(scenario_kwargs)} apply to a scenario name, "
                             f"not to the Scenario object {scenario.name!r}: pass "
                             f"scenario={scenario.name!r} or build the object with them")
        return scenario
    return _scenarios.get(scenario, **(scenario_kwargs or {}))


#: Largest job window an env accepts (its observation and action sizes grow with it).
MAX_WINDOW = 4096


def count_arg(name: str, value: Any, least: int = 1, most: int | None = None) -> int:
    """``value`` as an int, which must be an integer (not a bool) in ``least..most``."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise ValueError(f"{name} must be an integer >= {least}, got {value!r}")
    if value < least:
        raise ValueError(f"{name} must be >= {least}, got {value}")
    if most is not None and value > most:
        raise ValueError(f"{name} must be <= {most}, got {value}")
    return int(value)


def positive_arg(name: str, value: Any, unit: str) -> float:
    """``value`` as a float, which must be a real number > 0 (in ``unit``)."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real) or not value > 0:
        raise ValueError(f"{name} must be > 0 {unit}, got {value!r}")
    return float(value)


def discrete_action(action: Any, n: int) -> int:
    """A ``Discrete(n)`` action (an int, a numpy integer or a 0-d integer array) as an int,
    or a ``ValueError`` saying what was expected."""
    if type(action) is int and 0 <= action < n:
        return action
    a = action[()] if isinstance(action, np.ndarray) and action.shape == () else action
    if not isinstance(a, (int, np.integer)):
        raise ValueError(f"action must be an integer in 0..{n - 1} (Discrete), got {action!r} "
                         f"of type {type(action).__name__}")
    if not 0 <= int(a) < n:
        raise ValueError(f"action {int(a)} out of range 0..{n - 1}")
    return int(a)


def episode_args(env: Any, n_workload: int, n_jobs: int | None, max_steps: int | None,
                 steps_per_job: int, invalid_action: str, invalid_choices: tuple[str, ...],
                 reward_scale: Any, time_scale: Any, render_mode: str | None) -> None:
    """Check and set the episode arguments every env shares: ``invalid_action`` (one of
    ``invalid_choices``), ``reward_scale`` and ``time_scale`` (seconds, > 0),
    ``render_mode`` (one of ``env.metadata["render_modes"]`` or None), the episode
    ``windows`` (:class:`~hetgym.episodes.EpisodeWindows` over ``n_workload`` jobs) with
    ``n_jobs`` its size, and ``max_steps`` (default ``steps_per_job * n_jobs + 1000``)."""
    if invalid_action not in invalid_choices:
        raise ValueError(f"invalid_action must be {' or '.join(map(repr, invalid_choices))}, "
                         f"got {invalid_action!r}")
    if render_mode is not None and render_mode not in env.metadata["render_modes"]:
        raise ValueError(f"render_mode must be one of {env.metadata['render_modes']}")
    env.invalid_action = invalid_action
    env.reward_scale = positive_arg("reward_scale", reward_scale, "seconds per reward unit")
    env.time_scale = positive_arg("time_scale", time_scale, "seconds")
    env.render_mode = render_mode
    env.windows = EpisodeWindows(n_workload, n_jobs)
    env.n_jobs = env.windows.size
    env.max_steps = (count_arg("max_steps", max_steps) if max_steps is not None
                     else steps_per_job * env.n_jobs + 1000)


def autoreset_arg(mode: Any) -> Any:
    """A vector env's ``autoreset_mode``: ``"next_step"`` / ``"same_step"`` (or Gymnasium's
    ``"NextStep"`` / ``"SameStep"``, or the :class:`gymnasium.vector.AutoresetMode` values)
    as an ``AutoresetMode``; anything else (``DISABLED`` included) is a ``ValueError``."""
    from gymnasium.vector import AutoresetMode

    names = {"next_step": AutoresetMode.NEXT_STEP, "same_step": AutoresetMode.SAME_STEP,
             "NextStep": AutoresetMode.NEXT_STEP, "SameStep": AutoresetMode.SAME_STEP}
    if isinstance(mode, AutoresetMode) and mode != AutoresetMode.DISABLED:
        return mode
    if isinstance(mode, str) and mode in names:
        return names[mode]
    raise ValueError(f"autoreset_mode must be 'next_step' or 'same_step', got {mode!r}")
