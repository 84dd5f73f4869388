"""Argument checks shared by every entry point (specs, scenarios, envs, loaders, CLI).

Each check takes the value and the name to report (``"SimOptions.horizon"``,
``"NodeSpec 'v100': count"``, ``"philly.csv line 3, column 'gpus'"``), returns the value
in its canonical type, and raises :class:`ValueError` (a bad value) or :class:`TypeError`
(a value of the wrong kind) whose message names the field, says what was expected and
shows what was given. What is coerced on purpose is listed in docs/semantics.md
(*Accepted inputs*): integral floats (``4.0``) as ints, numpy numbers as Python numbers,
the texts ``"true"``/``"false"``/``"1"``/``"0"`` as booleans.
"""

from __future__ import annotations

import math
import numbers
from typing import Any, Iterable

import numpy as np

__all__ = ["boolean", "choice", "integer", "number", "optional"]


def _bounds_text(lo: float | None, hi: float | None, lo_open: bool, hi_open: bool) -> str:
    parts = []
    if lo is not None:
        parts.append(f"{'>' if lo_open else '>='} {lo:g}")
    if hi is not None:
        parts.append(f"{'<' if hi_open else '<='} {hi:g}")
    return " and ".join(parts)


def number(value: Any, name: str, *, lo: float | None = None, hi: float | None = None,
           lo_open: bool = False, hi_open: bool = False, finite: bool = False) -> float:
    """``value`` as a float: a real number (not a bool, not NaN) within the bounds.

    Args:
        value: The value given.
        name: Field name for the message.
        lo, hi: Bounds (None: none).
        lo_open, hi_open: Strict bounds.
        finite: Refuse infinities too.
    """
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name} must be a number, got {value!r} ({type(value).__name__})")
    x = float(value)
    if math.isnan(x) or (finite and math.isinf(x)):
        raise ValueError(f"{name} must be a {'finite ' if finite else ''}number, got {value!r}")
    bad = ((lo is not None and (x <= lo if lo_open else x < lo))
           or (hi is not None and (x >= hi if hi_open else x > hi)))
    if bad:
        raise ValueError(f"{name} must be {_bounds_text(lo, hi, lo_open, hi_open)}, got {value!r}")
    return x


def integer(value: Any, name: str, *, lo: int | None = None, hi: int | None = None) -> int:
    """``value`` as an int: an integer or an integral float (``4.0``), within the bounds."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name} must be an integer, got {value!r} ({type(value).__name__})")
    if not isinstance(value, numbers.Integral):
        x = float(value)
        if not math.isfinite(x) or x != int(x):
            raise ValueError(f"{name} must be an integer, got {value!r}")
    i = int(value)
    if (lo is not None and i < lo) or (hi is not None and i > hi):
        raise ValueError(f"{name} must be an integer {_bounds_text(lo, hi, False, False)}, got {value!r}")
    return i


def optional(check: Any, value: Any, name: str, **kw: Any) -> Any:
    """``None`` as it is, else ``check(value, name, **kw)``."""
    return None if value is None else check(value, name, **kw)


_TEXT_BOOL = {"true": True, "false": False, "1": True, "0": False}


def boolean(value: Any, name: str) -> bool:
    """``value`` as a bool: a bool, 0/1, or the text true/false/1/0 (any case)."""
    if isinstance(value, (bool, np.bool_)):
        return bool(value)
    if isinstance(value, numbers.Real) and not isinstance(value, bool) and float(value) in (0.0, 1.0):
        return bool(value)
    if isinstance(value, str) and value.strip().lower() in _TEXT_BOOL:
        return _TEXT_BOOL[value.strip().lower()]
    raise ValueError(f"{name} must be a boolean (True/False, 0/1, or the text true/false), got {value!r}")


def choice(value: Any, name: str, options: Iterable[Any]) -> Any:
    """``value`` if it is one of ``options``."""
    opts = list(options)
    if value not in opts:
        raise ValueError(f"{name} must be one of {opts}, got {value!r}")
    return value
