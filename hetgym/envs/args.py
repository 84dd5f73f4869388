"""Checks of the constructor arguments the envs share: a clear ``ValueError`` naming the
argument and what was expected, before anything is built."""

from __future__ import annotations

import numbers
from typing import Any

from hetgym import scenarios as _scenarios
from hetgym.specs import Scenario

__all__ = ["count_arg", "positive_arg", "scenario_arg"]


def scenario_arg(scenario: str | Scenario, scenario_kwargs: dict[str, Any] | None) -> Scenario:
    """``scenario`` itself, or the registered scenario of that name built with
    ``scenario_kwargs`` (:func:`hetgym.scenarios.get`: unknown names list the known ones)."""
    if isinstance(scenario, Scenario):
        return scenario
    return _scenarios.get(scenario, **(scenario_kwargs or {}))


def count_arg(name: str, value: Any, least: int = 1) -> int:
    """``value`` as an int, which must be an integer (not a bool) of at least ``least``."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise ValueError(f"{name} must be an integer >= {least}, got {value!r}")
    if value < least:
        raise ValueError(f"{name} must be >= {least}, got {value}")
    return int(value)


def positive_arg(name: str, value: Any, unit: str) -> float:
    """``value`` as a float, which must be a real number > 0 (in ``unit``)."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real) or not value > 0:
        raise ValueError(f"{name} must be > 0 {unit}, got {value!r}")
    return float(value)
