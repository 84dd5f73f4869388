"""Hand-written schedulers (baselines), one package per family.

``baselines.names()`` lists them and ``baselines.make(name, **params)`` builds
one. Each is a :class:`hetgym.decisions.Scheduler`: ``reset(view)`` and
``decide(view) -> list[Decision]``.
"""

from __future__ import annotations

import importlib
import importlib.util
import pkgutil
from typing import Any, Callable

from baselines.classic.schedulers import FIFO, SJF, SRPT, PolicyScheduler
from hetgym._lazy import lazy_attributes
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


#: The paper families: module -> the names of its ``BASELINES`` (in its order). They are
#: registered by name and the module is imported on the first ``make`` of one of them, so
#: that ``import baselines`` loads only the classic schedulers
#: (tests/baselines/test_registry.py checks these lists against the modules).
FAMILIES: dict[str, tuple[str, ...]] = {
    "baselines.allox.schedulers": ("allox", "allox+", "es", "drff", "drfs", "drfa", "bf", "jsq+",
                                   "sjf+"),
    "baselines.fitgpp.schedulers": ("fitgpp", "lrtp", "rand"),
    "baselines.andreas.schedulers": ("andreas-rg", "andreas-fifo", "andreas-edf", "andreas-ps"),
    "baselines.gavel.schedulers": ("gavel-las", "gavel-las-perf", "gavel-fifo", "gavel-fifo-perf",
                                   "gavel-ftf", "gavel-ftf-perf", "gavel-makespan", "gavel-maxtput"),
    "baselines.tiresias.schedulers": ("tiresias",),
    "baselines.tiresias.yarn": ("yarn-cs",),
    "baselines.topo.schedulers": ("topo-aware", "topo-aware-p", "topo-fcfs", "topo-bf"),
    "baselines.hadar.schedulers": ("hadar", "hadare"),
}


class _FamilyFactory:
    """Factory of ``name`` from its family's ``BASELINES``, importing the module on first call."""

    def __init__(self, module: str, name: str) -> None:
        self.module, self.name = module, name

    def __call__(self, **params: Any) -> Any:
        return importlib.import_module(self.module).BASELINES[self.name](**params)

    def __repr__(self) -> str:
        return f"<{self.module}.BASELINES[{self.name!r}]>"


def _register_optional() -> None:
    """Register the paper families whose modules are present (found, not imported)."""
    for mod, family in FAMILIES.items():
        if importlib.util.find_spec(mod) is None:
            continue
        for n in family:
            register(n, _FamilyFactory(mod, n))


_register_optional()

# ``baselines.<module>`` as an attribute imports the module (``import baselines`` used to
# import every family, which made their modules attributes)
__getattr__, __dir__ = lazy_attributes(__name__, globals(), {},
                                       {m.name for m in pkgutil.iter_modules(__path__)})
