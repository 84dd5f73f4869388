"""Serial or threaded kernel, whichever runs faster here and now (the batched env's step,
ANDREAS RG's search).

On idle cores the threaded batch step (``prange`` over the sub-envs) beats the
serial one from a few envs on, but when another process keeps a core busy a
``prange`` loop waits for its slowest thread, and Numba's worker threads then wait
for the scheduler: a call can take 10-100x longer than the serial loop
(BENCHMARKS.md). Both kernels compute every sub-env the same way, so the choice
changes nothing but speed: :class:`KernelChooser` times the calls of the kernel in
use (wall clock), tries the other one now and then, so that trials cost about
``share`` of the time, and keeps the faster.
"""

from __future__ import annotations

import statistics
from collections import deque
from collections.abc import Callable
from time import perf_counter

__all__ = ["KernelChooser", "prefer_workqueue"]


def prefer_workqueue() -> str:
    """Make Numba's own ``workqueue`` the threading layer of this process, unless the user
    chose one (``NUMBA_THREADING_LAYER``) or a parallel kernel already ran; returns the
    layer set or in use.

    Numba picks OpenMP where it finds it; its worker threads spin and wait at a barrier
    after every ``prange`` loop, which on a machine whose other core is busy made the
    threaded batch step 10x slower than the serial one (and slowed torch, which runs
    its own OpenMP, in the same process). With ``workqueue`` the threaded step kept
    close to the serial one on such a machine (BENCHMARKS.md). ``workqueue`` runs one
    parallel kernel at a time: a program that steps batched envs from several Python
    threads at once should set ``NUMBA_THREADING_LAYER=omp`` (or ``tbb``)."""
    import os

    import numba

    try:
        return numba.threading_layer()  # a parallel kernel ran: the layer is fixed
    except ValueError:
        pass
    if "NUMBA_THREADING_LAYER" not in os.environ and numba.config.THREADING_LAYER == "default":
        numba.config.THREADING_LAYER = "workqueue"
    return numba.config.THREADING_LAYER


class KernelChooser:
    """Pick kernel 0 (serial) or 1 (threaded) from the wall time of their recent calls.

    Each kernel's recent call times are kept (the first call after a switch left out: a
    thread pool may be waking up, caches are cold); at the end of a trial the kernel with
    the lower *median* wins. A median, not a mean: on a busy machine a call now and then
    spans a time slice of another process (a 40 us call taking 4 ms), which would decide
    a mean of a few calls.

    Args:
        share: Fraction of the time spent trying the kernel not in use: after a trial
            that took ``t`` seconds, the next comes ``t / share`` seconds later.
        probe_len: Calls of a trial.
        keep: Recent call times kept per kernel.
        clock: Time source of the trial schedule (tests pass a fake one).
    """

    def __init__(self, share: float = 0.02, probe_len: int = 6, keep: int = 15,
                 clock: Callable[[], float] = perf_counter) -> None:
        self.share = float(share)
        self.probe_len = int(probe_len)
        self.clock = clock
        self.recent: list[deque] = [deque(maxlen=keep), deque(maxlen=keep)]
        self.best = 1
        self._last = -1
        self._used = 0  # calls of the kernel in use since the last trial
        self._left = 0  # calls of the current trial still to make
        self._trial = 0  # the kernel tried
        self._t0: float | None = None  # start of the last trial
        self._next = 0.0  # earliest start of the next trial

    @property
    def median(self) -> list[float | None]:
        """Median recent call time (s) of each kernel (None: not timed yet)."""
        return [statistics.median(r) if r else None for r in self.recent]

    def pick(self) -> int:
        """The kernel for the next call."""
        if self._left:
            self._left -= 1
            return self._trial
        now = self.clock()
        if self._t0 is not None:  # a trial just ended: keep the faster, next trial after t / share
            tried, kept = self.median[self._trial], self.median[self.best]
            if tried is not None and (kept is None or tried < kept):
                self.best = self._trial
            self._next = now + (now - self._t0) / self.share
            self._t0 = None
        other = 1 - self.best
        if self._used >= 3 and (not self.recent[other] or now >= self._next):
            self._left = self.probe_len - 1
            self._trial = other
            self._t0 = now
            self._used = 0
            return other
        self._used += 1
        return self.best

    def record(self, kernel: int, seconds: float) -> None:
        """The wall time of a call of ``kernel`` (the one :meth:`pick` gave)."""
        switched = kernel != self._last
        self._last = kernel
        if not switched:
            self.recent[kernel].append(seconds)
