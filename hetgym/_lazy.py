"""Lazy package attributes (PEP 562): public names and submodules loaded on first use."""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any


def lazy_attributes(package: str, namespace: dict[str, Any], names: dict[str, str],
                    submodules: set[str]) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """``__getattr__`` and ``__dir__`` for the package ``package`` whose globals are
    ``namespace``: ``names`` maps a public name to the module that defines it (absolute),
    ``submodules`` are loaded as ``package.<name>``; a loaded value is kept in ``namespace``."""

    def __getattr__(name: str) -> Any:
        if name in names:
            value = getattr(importlib.import_module(names[name]), name)
        elif name in submodules:
            value = importlib.import_module(f"{package}.{name}")
        else:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        namespace[name] = value
        return value

    def __dir__() -> list[str]:
        return sorted(set(namespace) | set(names) | submodules)

    return __getattr__, __dir__
