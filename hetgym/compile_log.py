"""Numba compilations as they happen: ``numba:compile`` listeners.

* :func:`compile_listener`: one row per compilation (used by
  ``scripts/bench_startup.py --compiles`` and the test suite's ``HETGYM_COMPILE_LOG``,
  ``tests/conftest.py``).
* :func:`install_notice`: installed before the first compiled call of a process (by
  :func:`hetgym.sim.state.mirror.mirror`, which every run and every env reset calls). When
  Numba actually compiles (a fresh install, or a cache made stale by an edit) it logs
  one line on the ``hetgym.compile`` logger at WARNING, saying that it compiles, that
  this happens once and roughly how long it takes, then a progress line at most every
  :data:`PROGRESS_EVERY_S` seconds while compilations keep coming. Loads from Numba's
  file cache are not compilations and log nothing, so a warm start is silent. Silence
  it with ``HETGYM_COMPILE_NOTICE=0`` in the environment or
  ``logging.getLogger("hetgym.compile").setLevel(logging.ERROR)``; compile ahead with
  ``python -m hetgym.precompile``.
* :func:`kernel_loads`: how many times so far Numba compiled or loaded a kernel from
  its cache (each takes Numba's compiler lock): :func:`hetgym.simulate` leaves the
  ``decide`` calls during which it changed out of ``decision_time_p50/p99``, so those
  measure warm calls only.

Numba is imported only when a listener is made.
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Callable
from typing import Any

__all__ = ["compile_listener", "install_notice", "kernel_loads", "NOTICE_ENV",
           "PROGRESS_EVERY_S", "logger"]

#: Environment variable that silences the compile notice when set to 0, off, false or no.
NOTICE_ENV = "HETGYM_COMPILE_NOTICE"
#: Seconds between two progress lines of the compile notice.
PROGRESS_EVERY_S = 10.0
#: The logger of the compile notice.
logger = logging.getLogger("hetgym.compile")

_WATCH: Any = None  # the process's notice / counter listener once installed


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


def _notice_enabled() -> bool:
    return os.environ.get(NOTICE_ENV, "1").strip().lower() not in ("0", "off", "false", "no")


def _watch_listener(clock: Callable[[], float]) -> Any:
    """The listener behind :func:`install_notice` and :func:`kernel_loads`: counts the
    compiler lock's releases; on compilations, logs the notice and its progress."""
    from numba.core import event

    class Watch(event.Listener):
        def __init__(self) -> None:
            self.loads = 0          # compiler-lock releases: compilations and cache loads
            self.compiled = 0       # finished compilations (nested ones included)
            self.t0: float | None = None
            self.last = 0.0

        def on_start(self, ev: Any) -> None:
            if ev.kind != "numba:compile" or self.t0 is not None:
                return
            self.t0 = self.last = clock()
            if _notice_enabled():
                logger.warning(
                    "hetgym: compiling its Numba kernels (first run after install or after "
                    "an edit; about 1-3 min of CPU, once: later runs load them from the "
                    "cache). To do it ahead: python -m hetgym.precompile; to silence: %s=0",
                    NOTICE_ENV)

        def on_end(self, ev: Any) -> None:
            if ev.kind == "numba:compiler_lock":
                self.loads += 1
                return
            self.compiled += 1
            now = clock()
            if self.t0 is not None and now - self.last >= PROGRESS_EVERY_S:
                self.last = now
                if _notice_enabled():
                    logger.warning("hetgym: still compiling: %d kernels in %.0f s",
                                   self.compiled, now - self.t0)

    return Watch()


def install_notice(clock: Callable[[], float] = time.perf_counter) -> None:
    """Install, once per process, the listener of the compile notice and of
    :func:`kernel_loads` (module docstring). Cheap after the first call; imports Numba."""
    global _WATCH
    if _WATCH is not None:
        return
    from numba.core import event

    watch = _watch_listener(clock)
    event.register("numba:compile", watch)
    event.register("numba:compiler_lock", watch)
    _WATCH = watch


def kernel_loads() -> int:
    """How many times Numba took its compiler lock (compiled or loaded a kernel) since
    :func:`install_notice`; 0 before it."""
    return 0 if _WATCH is None else _WATCH.loads
