"""Serial or threaded batch kernel, whichever runs faster here and now.

On idle cores the threaded batch step (``prange`` over the sub-envs) is 1.6-1.8x the
serial one from 8 envs on, but when another process keeps a core busy, a ``prange``
loop waits for its slowest thread and runs several times *slower* than the serial
loop (BENCHMARKS.md). Both kernels compute every sub-env the same way, so the
choice changes nothing but speed: :class:`KernelChooser` times the calls of the one
in use (wall clock), tries the other one now and then, and keeps the faster.
"""

from __future__ import annotations

__all__ = ["KernelChooser"]


class KernelChooser:
    """Pick kernel 0 (serial) or 1 (threaded) from the wall time of their recent calls.

    Args:
        probe_every: Calls between two trials of the kernel not in use.
        probe_len: Calls of each trial (the first one is not counted, see :meth:`record`).
        alpha: Weight of a new time in the running mean of its kernel.
    """

    def __init__(self, probe_every: int = 256, probe_len: int = 4, alpha: float = 0.1) -> None:
        self.probe_every = int(probe_every)
        self.probe_len = int(probe_len)
        self.alpha = float(alpha)
        self.mean: list[float | None] = [None, None]
        self.best = 1
        self._calls = 0
        self._last = -1

    def pick(self) -> int:
        """The kernel for the next call."""
        self._calls += 1
        other = 1 - self.best
        if self.mean[other] is None and self.mean[self.best] is not None:
            return other  # the other one was never timed: try it once
        if self._calls % self.probe_every < self.probe_len:
            return other
        return self.best

    def record(self, kernel: int, seconds: float) -> None:
        """The wall time of a call of ``kernel`` (the one :meth:`pick` gave); the first call
        after a switch is not counted (a thread pool may be starting, caches are cold)."""
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
