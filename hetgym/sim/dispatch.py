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

from numba import typeof

__all__ = ["entry"]


def entry(dispatcher: Any, *args: Any) -> Callable[..., Any]:
    """Compiled entry point of ``dispatcher`` for the Numba types of ``args`` (loads the cache,
    compiles if needed; runs nothing)."""
    sig = tuple(typeof(a) for a in args)
    dispatcher.compile(sig)
    return dispatcher.overloads[sig].entry_point
