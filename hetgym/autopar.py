"""Serial or threaded kernel, whichever runs faster here and now (the batched env's step,
ANDREAS RG's search).

On idle cores the threaded batch step (``prange`` over the sub-envs) beats the
serial one from a few envs on, but when another process keeps a core busy a
``prange`` loop waits for its slowest thread, and Numba's worker threads then wait
for the scheduler: a call can take 10-100x longer than the serial loop
(BENCHMARKS.md). Both kernels compute every sub-env the same way, so the choice
changes nothing but speed: :class:`KernelChooser` times the calls of the kernel in
use (wall clock), tries the other one now and then, so that trials cost about
``share`` of the time, and keeps the faster. Where the work of a call varies from call to
call (ANDREAS RG's search: its time moves 2-5x between consecutive calls), ``paired=True``
has the caller run both kernels on the same call during a trial, so that each comparison
is of the same work.
"""

from __future__ import annotations

import statistics
from collections import deque
from collections.abc import Callable
from time import perf_counter

__all__ = ["BOTH", "KernelChooser", "prefer_workqueue"]

BOTH = 2
"""What :meth:`KernelChooser.pick` returns, with ``paired=True``, for a call on which the
caller runs both kernels (one on copies of the inputs) and records each one's time."""


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

    With ``paired=True`` a trial's calls are :data:`BOTH`: the caller runs both kernels on
    each (their order alternating from call to call) and records both times
    (:meth:`record_both`); the other
    kernel wins when the median, over the trial's calls but the first, of its time over
    the kept kernel's on the same call is below 1. Without it, the trial's recent times
    are compared with the kept kernel's recent ones, made on other calls: where the work
    per call swings, as ANDREAS RG's does, five calls a side decide little.

    Args:
        share: Fraction of the time spent trying the kernel not in use: after a trial
            that took ``t`` seconds, the next comes ``t / share`` seconds later.
        probe_len: Calls of a trial.
        keep: Recent call times kept per kernel.
        clock: Time source of the trial schedule (tests pass a fake one).
        paired: Trials time both kernels on the same calls (above).
        max_gap: At most this many calls between trials (None: no bound). The time rule
            alone spaces trials by the length of the last one: one trial made while calls
            were long, or while the other core was busy, can put off the next for
            thousands of short calls.
    """

    def __init__(self, share: float = 0.02, probe_len: int = 6, keep: int = 15,
                 clock: Callable[[], float] = perf_counter, paired: bool = False,
                 max_gap: int | None = None) -> None:
        self.share = float(share)
        self.probe_len = int(probe_len)
        self.paired = bool(paired)
        self.max_gap = None if max_gap is None else int(max_gap)
        self._ratios: list[float] = []  # a paired trial's (other / kept) time ratios
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
        """The kernel for the next call: 0, 1, or :data:`BOTH` (only with ``paired``)."""
        if self._left:
            self._left -= 1
            return BOTH if self.paired else self._trial
        now = self.clock()
        if self._t0 is not None:  # a trial just ended: keep the faster, next trial after t / share
            if self._trial_won():
                self.best = self._trial
            self._next = now + (now - self._t0) / self.share
            self._t0 = None
        other = 1 - self.best
        due = now >= self._next or (self.max_gap is not None and self._used >= self.max_gap)
        if self._used >= 3 and (not self.recent[other] or due):
            self._left = self.probe_len - 1
            self._trial = other
            self._t0 = now
            self._used = 0
            self._ratios = []
            return BOTH if self.paired else other
        self._used += 1
        return self.best

    def _trial_won(self) -> bool:
        """Whether the kernel of the trial that just ended beat the kept one."""
        if self.paired:
            r = self._ratios[1:]  # the first call left out, as after a switch
            return bool(r) and statistics.median(r) < 1.0
        tried, kept = self.median[self._trial], self.median[self.best]
        return tried is not None and (kept is None or tried < kept)

    def first_of_both(self) -> int:
        """On a :data:`BOTH` call, the kernel to run first (alternating over the trial, so
        neither always finds the caches the other left)."""
        return (self._left + self.best) % 2

    def record_both(self, serial: float, threaded: float) -> None:
        """The wall times of both kernels on one :data:`BOTH` call."""
        t = (serial, threaded)
        self.recent[0].append(serial)
        self.recent[1].append(threaded)
        kept = t[self.best]
        self._ratios.append(t[self._trial] / kept if kept > 0.0 else 1.0)

    def record(self, kernel: int, seconds: float) -> None:
        """The wall time of a call of ``kernel`` (the one :meth:`pick` gave)."""
        switched = kernel != self._last
        self._last = kernel
        if not switched:
            self.recent[kernel].append(seconds)
