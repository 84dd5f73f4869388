"""Serial or threaded batch kernel, whichever runs faster here and now.

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

    Args:
        share: Fraction of the time spent trying the kernel not in use: after a trial
            that took ``t`` seconds, the next comes ``t / share`` seconds later.
        probe_len: Calls of a trial (the first is not counted, see :meth:`record`).
        alpha: Weight of a new time in the running mean of the kernel in use.
        clock: Time source of the trial schedule (tests pass a fake one).
    """

    def __init__(self, share: float = 0.02, probe_len: int = 3, alpha: float = 0.1,
                 clock: Callable[[], float] = perf_counter) -> None:
        self.share = float(share)
        self.probe_len = int(probe_len)
        self.alpha = float(alpha)
        self.clock = clock
        self.mean: list[float | None] = [None, None]
        self.best = 1
        self._last = -1
        self._used = 0  # calls of the kernel in use since the last trial
        self._left = 0  # calls of the current trial still to make
        self._trial = 0  # the kernel tried
        self._t0: float | None = None  # start of the last trial
        self._next = 0.0  # earliest start of the next trial

    def pick(self) -> int:
        """The kernel for the next call."""
        if self._left:
            self._left -= 1
            return self._trial
        other = 1 - self.best
        now = self.clock()
        if self._t0 is not None:  # a trial just ended: the next one after t / share
            self._next = now + (now - self._t0) / self.share
            self._t0 = None
        if self._used >= 2 and (self.mean[other] is None or now >= self._next):
            self._left = self.probe_len - 1
            self._trial = other
            self._t0 = now
            self._used = 0
            return other
        self._used += 1
        return self.best

    def record(self, kernel: int, seconds: float) -> None:
        """The wall time of a call of ``kernel`` (the one :meth:`pick` gave). The first call
        after a switch is not counted (a thread pool may be waking up, caches are cold)."""
        switched = kernel != self._last
        self._last = kernel
        if switched:
            return
        m = self.mean[kernel]
        a = 1.0 if m is None else (self.alpha if kernel == self.best else 0.5)
        self.mean[kernel] = seconds if m is None else (1 - a) * m + a * seconds
        s, t = self.mean
        if s is not None and t is not None:
            self.best = 0 if s <= t else 1
