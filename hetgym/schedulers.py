"""Scheduler plug-ins: ``hetgym.schedulers.names()`` and ``hetgym.schedulers.make(name)``.

``hetgym`` simulates; it ships no scheduler of its own and imports no package that
does. Packages of schedulers plug in through the entry-point group
``hetgym.schedulers``: each entry point loads a *provider*, an object (usually a
module) with ``names() -> list[str]`` and ``make(name, **params) -> Scheduler``.
This project's ``baselines`` package declares itself in ``pyproject.toml``::

    [project.entry-points."hetgym.schedulers"]
    baselines = "baselines"

A provider is loaded (imported) the first time a name is asked for, so
``import hetgym`` stays free of scheduler packages. Providers may also be added at
run time with :func:`register_provider`.

Discovery reads the installed metadata (:func:`importlib.metadata.entry_points`).
A source checkout whose installed metadata predates the group (an editable install
made before the entry point was declared) would find nothing; in that case only, the
group is read from the ``pyproject.toml`` next to the ``hetgym`` package, when that
file is this project's.
"""

from __future__ import annotations

import importlib
import importlib.metadata
import warnings
from pathlib import Path
from typing import Any, Protocol

__all__ = ["GROUP", "Provider", "names", "make", "providers", "register_provider"]

GROUP = "hetgym.schedulers"


class Provider(Protocol):
    """What an entry point of the group ``hetgym.schedulers`` loads."""

    def names(self) -> list[str]:
        """Names of the schedulers it can make."""

    def make(self, name: str, **params: Any) -> Any:
        """Build scheduler ``name`` with its parameters."""


_PROVIDERS: dict[str, Provider] = {}
_discovered = False


def register_provider(name: str, provider: Provider) -> None:
    """Add (or replace) a provider under ``name``."""
    for attr in ("names", "make"):
        if not callable(getattr(provider, attr, None)):
            raise TypeError(f"scheduler provider {name!r} has no callable {attr}()")
    _PROVIDERS[name] = provider


def _declared() -> list[tuple[str, str]]:
    """(name, ``module[:attr]``) of every entry point of :data:`GROUP`."""
    eps = importlib.metadata.entry_points(group=GROUP)
    found = [(ep.name, ep.value) for ep in eps]
    return found or _declared_in_checkout()


def _declared_in_checkout() -> list[tuple[str, str]]:
    """The group as written in the source checkout's ``pyproject.toml`` (stale metadata)."""
    path = Path(__file__).resolve().parent.parent / "pyproject.toml"
    if not path.is_file():
        return []
    try:
        import tomllib
    except ModuleNotFoundError:  # Python 3.10
        return []
    with path.open("rb") as fh:
        project = tomllib.load(fh).get("project", {})
    if project.get("name") != "hetgym":
        return []
    return list(project.get("entry-points", {}).get(GROUP, {}).items())


def _load(value: str) -> Provider:
    module, _, attr = value.partition(":")
    obj: Any = importlib.import_module(module.strip())
    for part in filter(None, attr.strip().split(".")):
        obj = getattr(obj, part)
    return obj


def providers() -> dict[str, Provider]:
    """Every provider, loading the declared ones on the first call.

    A declared provider that fails to load is skipped with a ``RuntimeWarning``.
    """
    global _discovered
    if not _discovered:
        _discovered = True
        for name, value in _declared():
            if name in _PROVIDERS:
                continue
            try:
                register_provider(name, _load(value))
            except Exception as exc:  # a broken plug-in must not hide the others
                warnings.warn(f"scheduler plug-in {name!r} ({value}) failed to load: {exc!r}",
                              RuntimeWarning, stacklevel=2)
    return dict(_PROVIDERS)


def names() -> list[str]:
    """Names of every scheduler of every provider, in provider order."""
    out: list[str] = []
    for p in providers().values():
        out.extend(n for n in p.names() if n not in out)
    return out


def make(name: str, **params: Any) -> Any:
    """Build scheduler ``name`` (the first provider that knows it).

    Raises:
        KeyError: No provider knows ``name`` (the message lists the known names,
            or says that no provider is installed).
    """
    provs = providers()
    for p in provs.values():
        if name.lower() in (n.lower() for n in p.names()):
            return p.make(name, **params)
    if not provs:
        raise KeyError(f"unknown scheduler {name!r}: no scheduler provider is installed "
                       f"(entry-point group {GROUP!r}; see hetgym.schedulers)")
    raise KeyError(f"unknown scheduler {name!r}; known: {', '.join(names())}")
