"""The simulator's rules, each defined once, for the kernels and for Python alike.

================================  ==========================================================
rule                              definition
================================  ==========================================================
tolerance                         :data:`EPS` (1e-9) on cores, memory and instants
fit                               :func:`covers` (``free + EPS >= need``) and
                                  :func:`slots` (``floor(free / per + EPS)`` units)
checkpoints                       :func:`kept_work` (whole checkpoints of the work done)
preemptibility                    :func:`may_preempt` (RUNNING and below the limit),
                                  :func:`below_limit`, :func:`limit_code`
scaled rate                       :func:`scaled_rate` (``g x tput x g ** (e - 1)``)
duration / best duration          :func:`duration`, :func:`best_duration`
================================  ==========================================================

Each rule is one plain function, which Python calls on scalars or (where its docstring
does not say "scalars only") NumPy arrays, elementwise with broadcasting. Its compiled
form ``name_nb`` (``covers_nb``, ...) is that same function under
``@njit(cache=True, inline="always")``, for the kernels; a rule that uses another calls
the plain name, which compiled code resolves to the compiled rule (Numba's
``register_jitable``). The compiled forms are made on first use, so that importing this
module does not import Numba. Both forms run the same operations in the same order, so
they give the same bits. The baselines, envs and agents use these rather than writing a
rule out again (a source scan in the tests keeps it so).
"""

from __future__ import annotations

import numpy as np

from hetgym.sim.codes import RUNNING

__all__ = [
    "EPS",
    "below_limit",
    "below_limit_nb",
    "best_duration",
    "best_duration_nb",
    "covers",
    "covers_nb",
    "duration",
    "duration_nb",
    "kept_work",
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

#: The rules, by name; each ``name_nb`` is ``name`` compiled (:func:`__getattr__`).
_RULES: list = []


def _rule(f):
    _RULES.append(f)
    return f


# ------------------------------------------------------------------- fit
@_rule
def covers(free, need):
    """Whether ``free`` cores (or GB of memory) hold ``need``, within :data:`EPS`:
    ``free + EPS >= need``."""
    return free + EPS >= need


@_rule
def slots(free, per):
    """How many units of ``per`` cores (or GB, ``per > 0``) fit in ``free``, within
    :data:`EPS`: ``floor(free / per + EPS)`` (a float). ``slots(free, per) >= w`` is
    the same test as :func:`covers` on ``w`` units up to rounding, and is the one the
    simulator places workers by."""
    return np.floor(free / per + EPS)


@_rule
def kept_work(done, ckpt):
    """Of ``done`` work units, those that whole checkpoints every ``ckpt`` (> 0) units
    kept: ``done / ckpt`` rounded down within a relative :data:`EPS`, times ``ckpt``.
    Scalars only."""
    q = done / ckpt
    return np.floor(q + EPS * (q if q > 1.0 else 1.0)) * ckpt  # noqa: FURB136 (builtin min/max compile an overload)


# ------------------------------------------------------------------- preemptibility
@_rule
def below_limit(n_preempt, limit):
    """Whether a job preempted ``n_preempt`` times may be preempted again under the
    preemption limit ``limit`` (-1: none; :func:`limit_code`). On arrays, ``n_preempt``
    an array and ``limit`` a scalar: an array, or ``True`` when there is no limit."""
    return limit < 0 or n_preempt < limit


@_rule
def may_preempt(status, n_preempt, limit):
    """Whether a ``Preempt`` of a job in state ``status`` (a ``JobStatus`` code) that was
    preempted ``n_preempt`` times is valid: it is RUNNING (not in a grace period, not
    waiting) and :func:`below_limit` (``limit``: -1 for none). Scalars only."""
    return status == RUNNING and below_limit(n_preempt, limit)


def limit_code(max_preemptions: int | None) -> int:
    """The preemption limit as the kernels take it: ``max_preemptions``, or -1 for none."""
    return -1 if max_preemptions is None else int(max_preemptions)


# ------------------------------------------------------------------- scaled rate, duration
@_rule
def scaled_rate(g, tput, e):
    """Rate of ``g`` workers at per-worker throughput ``tput`` with scaling exponent ``e``:
    ``g * tput * g ** (e - 1)`` (in that order; ``g ** 0.0`` is 1 exactly, so at ``e = 1``
    it is ``g * tput``)."""
    return g * tput * g ** (e - 1.0)


@_rule
def duration(amount, w, t, e):
    """Run time of ``amount`` iterations for ``w`` workers at per-worker throughput ``t``
    with scaling exponent ``e``: ``amount /`` :func:`scaled_rate` (``inf`` if
    ``t <= 0``). Scalars only."""
    if t <= 0.0:
        return np.inf
    if e == 1.0:  # w ** 0.0 is 1.0 exactly: the same value without a call of pow
        return amount / (w * t)
    return amount / scaled_rate(w, t, e)


@_rule
def best_duration(amount, j, jobs, e):
    """Run time of ``amount`` iterations of job ``j`` (``jobs``: a ``JobArrays``) on its
    fastest device type that can hold its gang (``jobs.holdable``): the least
    :func:`duration` (the array form is :func:`hetgym.sim.state.jobs.best_durations`)."""
    best = np.inf
    for c in range(jobs.tput.shape[1]):
        if jobs.holdable[j, c]:
            d = duration(amount, jobs.workers[j], jobs.tput[j, c], e)
            if d < best:
                best = d
    return best


# ------------------------------------------------------------------- compiled forms
def _compile() -> None:
    """Compile every rule (``name_nb``), and make the plain ones callable from compiled
    code (a rule that calls another calls the plain name)."""
    from numba import njit
    from numba.extending import register_jitable

    for f in _RULES:
        register_jitable(f)
    for f in _RULES:
        globals()[f.__name__ + "_nb"] = njit(cache=True, inline="always")(f)


def __getattr__(name: str):
    """The compiled rules (``covers_nb``, ...), made on first use so that importing this
    module does not import Numba."""
    if name.endswith("_nb") and any(f.__name__ == name[:-3] for f in _RULES):
        _compile()
        return globals()[name]
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
