"""Numba compilations as they happen: a ``numba:compile`` listener.

Used by ``scripts/bench_startup.py --compiles`` and by the test suite's
``HETGYM_COMPILE_LOG`` (``tests/conftest.py``). Loads from Numba's file cache are not
compilations and fire no event. Numba is imported only when a listener is made.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

__all__ = ["compile_listener"]


def compile_listener(clock: Callable[[], float] = time.perf_counter) -> Any:
    """A ``numba:compile`` listener (install it with ``numba.core.event.install_listener``
    or ``register``) whose ``rows`` are ``(own s, inclusive s, function, signature, tag)``
    per compilation, timed by ``clock``: nested compilations (callees typed on the way) are
    taken out of their caller's own time; ``tag`` is the listener's ``tag`` attribute when
    the compilation ended (e.g. the running test)."""
    from numba.core import event

    class CompileTimes(event.Listener):
        def __init__(self) -> None:
            self.stack: list[list[float]] = []
            self.rows: list[tuple[float, float, str, str, str]] = []
            self.tag = ""

        def on_start(self, ev: Any) -> None:
            self.stack.append([clock(), 0.0])

        def on_end(self, ev: Any) -> None:
            t0, inner = self.stack.pop()
            total = clock() - t0
            if self.stack:
                self.stack[-1][1] += total
            f = ev.data["dispatcher"].py_func
            sig = ",".join(str(a) for a in ev.data["args"])
            self.rows.append((total - inner, total, f"{f.__module__}.{f.__qualname__}", sig, self.tag))

    return CompileTimes()
