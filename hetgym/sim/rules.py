"""The simulator's rules, each defined once, for the kernels and for Python alike.

================================  ==========================================================
rule                              definition
================================  ==========================================================
tolerance                         :data:`EPS` (1e-9) on cores, memory and instants
fit                               :func:`covers_nb` (``free + EPS >= need``) and
                                  :func:`slots_nb` (``floor(free / per + EPS)`` units)
checkpoints                       :func:`kept_work_nb` (whole checkpoints of the work done)
preemptibility                    :func:`may_preempt_nb` (RUNNING and below the limit),
                                  :func:`below_limit_nb`, :func:`limit_code`
scaled rate                       :func:`scaled_rate_nb` (``g x tput x g ** (e - 1)``)
duration / best duration          :func:`duration_nb`, :func:`best_duration_nb`
================================  ==========================================================

Every rule is an ``@njit(cache=True, inline="always")`` function (a kernel calls it like
any helper; it is inlined, so it compiles no dispatcher of its own there). Python calls
the same definition through its plain-Python form, the ``py`` names (``covers``,
``slots``, ...: ``rule_nb.py_func``), which take Python scalars and NumPy arrays alike
(elementwise, with broadcasting) and compile nothing; the operations and their order are
those of the kernel, so both give the same bits. The baselines, envs and agents use these
rather than writing a rule out again (a source scan in the tests keeps it so).
"""

from __future__ import annotations

import numpy as np
from numba import njit

from hetgym.sim.codes import RUNNING

__all__ = [
    "EPS",
    "below_limit",
    "below_limit_nb",
    "best_duration_nb",
    "covers",
    "covers_nb",
    "duration",
    "duration_nb",
    "kept_work_nb",
    "limit_code",
    "may_preempt",
    "may_preempt_nb",
    "scaled_rate",
    "scaled_rate_nb",
    "slots",
    "slots_nb",
]

#: The simulator's tolerance: on cores and memory (a need fits what is free within it),
#: and on instants (a round boundary, a checkpoint, an end before a start).
EPS = 1e-9


# ------------------------------------------------------------------- fit
@njit(cache=True, inline="always")
def covers_nb(free, need):
    """Whether ``free`` cores (or GB of memory) hold ``need``, within :data:`EPS`:
    ``free + EPS >= need``."""
    return free + EPS >= need


@njit(cache=True, inline="always")
def slots_nb(free, per):
    """How many units of ``per`` cores (or GB, ``per > 0``) fit in ``free``, within
    :data:`EPS`: ``floor(free / per + EPS)`` (a float). ``slots_nb(free, per) >= w`` is
    the same test as :func:`covers_nb` on ``w`` units up to rounding, and is the one the
    simulator places workers by."""
    return np.floor(free / per + EPS)


@njit(cache=True, inline="always")
def kept_work_nb(done, ckpt):
    """Of ``done`` work units, those that whole checkpoints every ``ckpt`` (> 0) units
    kept: ``done / ckpt`` rounded down within a relative :data:`EPS`, times ``ckpt``.
    Scalars only."""
    q = done / ckpt
    return np.floor(q + EPS * (q if q > 1.0 else 1.0)) * ckpt  # noqa: FURB136 (builtin min/max compile an overload)


# ------------------------------------------------------------------- preemptibility
@njit(cache=True, inline="always")
def below_limit_nb(n_preempt, limit):
    """Whether a job preempted ``n_preempt`` times may be preempted again under the
    preemption limit ``limit`` (-1: none; :func:`limit_code`). On arrays (the Python
    form), ``n_preempt`` an array and ``limit`` a scalar: an array, or ``True`` when there
    is no limit."""
    return limit < 0 or n_preempt < limit


@njit(cache=True, inline="always")
def may_preempt_nb(status, n_preempt, limit):
    """Whether a ``Preempt`` of a job in state ``status`` (a ``JobStatus`` code) that was
    preempted ``n_preempt`` times is valid: it is RUNNING (not in a grace period, not
    waiting) and :func:`below_limit_nb` (``limit``: -1 for none). Scalars only."""
    return status == RUNNING and below_limit_nb(n_preempt, limit)


def limit_code(max_preemptions: int | None) -> int:
    """The preemption limit as the kernels take it: ``max_preemptions``, or -1 for none."""
    return -1 if max_preemptions is None else int(max_preemptions)


# ------------------------------------------------------------------- scaled rate, duration
@njit(cache=True, inline="always")
def scaled_rate_nb(g, tput, e):
    """Rate of ``g`` workers at per-worker throughput ``tput`` with scaling exponent ``e``:
    ``g * tput * g ** (e - 1)`` (in that order; ``g ** 0.0`` is 1 exactly, so at ``e = 1``
    it is ``g * tput``)."""
    return g * tput * g ** (e - 1.0)


@njit(cache=True, inline="always")
def duration_nb(amount, w, t, e):
    """Run time of ``amount`` iterations for ``w`` workers at per-worker throughput ``t``
    with scaling exponent ``e``: ``amount /`` :func:`scaled_rate_nb` (``inf`` if
    ``t <= 0``). Scalars only."""
    if t <= 0.0:
        return np.inf
    if e == 1.0:  # w ** 0.0 is 1.0 exactly: the same value without a call of pow
        return amount / (w * t)
    return amount / scaled_rate_nb(w, t, e)


@njit(cache=True, inline="always")
def best_duration_nb(amount, j, jobs, e):
    """Run time of ``amount`` iterations of job ``j`` (``jobs``: a ``JobArrays``) on its
    fastest device type that can hold its gang (``jobs.holdable``): the least
    :func:`duration_nb` (the array form is :func:`hetgym.sim.state.best_durations`)."""
    best = np.inf
    for c in range(jobs.tput.shape[1]):
        if jobs.holdable[j, c]:
            d = duration_nb(amount, jobs.workers[j], jobs.tput[j, c], e)
            if d < best:
                best = d
    return best


# ------------------------------------------------------------------- Python forms
covers = covers_nb.py_func
slots = slots_nb.py_func
below_limit = below_limit_nb.py_func
may_preempt = may_preempt_nb.py_func
scaled_rate = scaled_rate_nb.py_func
duration = duration_nb.py_func
