"""Registering hetgym's environments with Gymnasium without importing Gymnasium first.

``import hetgym`` promises that ``gym.make("HetCluster-v0")`` works afterwards. Importing
Gymnasium only to call its ``register`` costs more than the rest of ``import hetgym``
(its core, spaces, vector and wrappers modules), and a process that only simulates never
needs it. :func:`register_envs` therefore registers at once when Gymnasium's registry is
already imported, and otherwise registers the moment it is: a one-shot finder on
``sys.meta_path`` (Python's documented import hook) lets ``gymnasium.envs.registration``
load as usual and calls the registration right after its module body has run, before
``import gymnasium`` returns to anyone. Either way every id is registered once.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Sequence
from importlib.abc import MetaPathFinder
from importlib.machinery import ModuleSpec
from types import ModuleType
from typing import Any

__all__ = ["register_envs"]

_REGISTRY = "gymnasium.envs.registration"


class _RegisterOnImport(MetaPathFinder):
    """Finds nothing itself; wraps the loader of Gymnasium's registry module so that
    ``callback(module)`` runs once that module has executed. Removes itself on first use."""

    def __init__(self, callback: Callable[[ModuleType], None]) -> None:
        self.callback = callback

    def find_spec(self, name: str, path: Sequence[str] | None, target: Any = None) -> ModuleSpec | None:
        if name != _REGISTRY:
            return None
        if self in sys.meta_path:
            sys.meta_path.remove(self)
        spec = None
        for finder in sys.meta_path:
            find = getattr(finder, "find_spec", None)
            spec = None if find is None else find(name, path, target)
            if spec is not None:
                break
        loader = None if spec is None else spec.loader
        if loader is None or not hasattr(loader, "exec_module"):
            return spec  # nothing to wrap: Gymnasium is imported as it would be without us
        run = loader.exec_module
        callback = self.callback

        def exec_module(module: ModuleType) -> None:
            run(module)
            del loader.exec_module  # back to the loader's own method
            callback(module)

        loader.exec_module = exec_module  # type: ignore[method-assign]
        return spec


def register_envs(callback: Callable[[ModuleType], None]) -> None:
    """Call ``callback(gymnasium.envs.registration)`` now if that module is imported, else
    right after it is first imported (see the module docstring)."""
    module = sys.modules.get(_REGISTRY)
    if module is not None:
        callback(module)
        return
    sys.meta_path.insert(0, _RegisterOnImport(callback))
