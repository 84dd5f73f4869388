"""Cheap calls into Numba kernels that take the whole typed state.

A Numba dispatcher types every argument on each call; for nested NamedTuples of
some 60 arrays that costs about 5 us, more than a small event step itself.
:func:`entry` resolves the compiled overload once for the types of example
arguments and returns its entry point, which only unboxes (about 1.5 us).
Only call it with arguments of exactly those types (the simulator's own state,
or a state of the same layout, e.g. after the segment log grew).
"""

from __future__ import annotations

from typing import Any, Callable

import numpy as np
from numba import typeof
from numba.experimental.structref import StructRefProxy

__all__ = ["entry", "Binder"]

_ENTRIES: dict[tuple, Callable[..., Any]] = {}


def _shape_key(a: Any) -> Any:
    """What decides the Numba type of ``a`` (cheaper than ``typeof`` on a big NamedTuple)."""
    t = type(a)
    if t is np.ndarray:
        return (a.dtype.num, a.ndim, a.flags.num)  # flags: contiguity, writeable, aligned, ...
    if isinstance(a, tuple):
        return (t, tuple([_shape_key(x) for x in a]))
    if isinstance(a, StructRefProxy):
        return a._type
    return t


def _resolve(key: tuple, dispatcher: Any, args: tuple) -> Callable[..., Any]:
    """The memoised entry point under ``key``, compiled (or loaded) for ``args`` on a miss."""
    hit = _ENTRIES.get(key)
    if hit is None:
        sig = tuple(typeof(a) for a in args)
        dispatcher.compile(sig)
        hit = _ENTRIES[key] = dispatcher.overloads[sig].entry_point
    return hit


def entry(dispatcher: Any, *args: Any) -> Callable[..., Any]:
    """Compiled entry point of ``dispatcher`` for the Numba types of ``args`` (loads the cache,
    compiles if needed; runs nothing). Memoised on the arguments' dtypes, ranks and layouts."""
    return _resolve((dispatcher, _shape_key(args)), dispatcher, args)


class Binder:
    """Entry points for kernels whose trailing arguments are the same state objects.

    The shape key of ``state`` (e.g. ``(params, state)``) is computed once, so that
    binding several kernels to a new simulator costs one fingerprint, not one each.
    """

    def __init__(self, *state: Any) -> None:
        self.state = state
        self.key = _shape_key(state)

    def entry(self, dispatcher: Any, *lead: Any) -> Callable[..., Any]:
        """Entry point of ``dispatcher`` for ``(*lead, *state)``."""
        return _resolve((dispatcher, _shape_key(lead), self.key), dispatcher, lead + self.state)
