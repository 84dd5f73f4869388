"""Hand-written schedulers (baselines), one module per family.

``baselines.names()`` lists them and ``baselines.make(name, **params)`` builds
one. Each is a :class:`hetgym.decisions.Scheduler`: ``reset(view)`` and
``decide(view) -> list[Decision]``.
"""

from __future__ import annotations

from typing import Any, Callable

from baselines.classic import FIFO, SJF, SRPT, PolicyScheduler
from hetgym.decisions import Scheduler

__all__ = ["names", "make", "register", "Scheduler", "PolicyScheduler"]

_REGISTRY: dict[str, Callable[..., Any]] = {}


def register(name: str, factory: Callable[..., Any]) -> None:
    """Add a scheduler factory under ``name`` (lower case)."""
    _REGISTRY[name.lower()] = factory


def names() -> list[str]:
    """Names of every registered baseline."""
    return list(_REGISTRY)


def make(name: str, **params: Any) -> Any:
    """Build the baseline ``name`` with its parameters.

    Raises:
        KeyError: unknown name (the message lists the known ones).
        TypeError: a parameter the baseline does not take.
    """
    key = name.lower()
    if key not in _REGISTRY:
        raise KeyError(f"unknown baseline {name!r}; known: {', '.join(names())}")
    return _REGISTRY[key](**params)


register("fifo", FIFO)
register("sjf", SJF)
register("srpt", SRPT.make)


def _register_optional() -> None:
    """Register the paper families whose modules are present."""
    import importlib

    for mod in ("baselines.allox", "baselines.fitgpp", "baselines.andreas", "baselines.gavel",
                "baselines.tiresias", "baselines.yarn", "baselines.topo", "baselines.hadar"):
        try:
            m = importlib.import_module(mod)
        except ModuleNotFoundError as exc:
            if exc.name != mod:
                raise
            continue
        for n, f in getattr(m, "BASELINES", {}).items():
            register(n, f)


_register_optional()
