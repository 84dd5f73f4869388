"""Numba kernels of the simulator: small, pure, array in / array out.

Small helpers are ``inline="always"`` (a call that is not inlined would copy a
NamedTuple argument whole; a structref argument costs one pointer). Compile time
after install is part of the cost: inline a helper into one or two callers, but
compile a large one that several kernels (or one kernel at several sites) call
once, as its own dispatcher (:func:`mask_nb` -> :func:`mask_fill_nb`), and never
pass a call-site constant to a non-inlined callee (it is compiled again for the
literal; see :mod:`hetgym.sim.events`). Each compiled function costs a fixed part after
install (its wrappers, its own LLVM module, a cache file), and inlining a large one
deep-copies its IR at every site (about as costly), so: kernels take ``no_cfunc_wrapper=True``
(the C-callable wrapper serves first-class function values, which nothing here uses); and
kernels write ``a if a < b else b`` rather than the builtins ``min``/``max``/``int`` and use
caller-given scratch rather than ``np.empty``/``np.zeros``, each of which compiles an
overload of its own. No kernel draws random numbers,
reads a clock, does I/O or touches globals other than the named constants.
Kernels take the typed
NamedTuples of :mod:`hetgym.sim.state` (``nodes`` = :class:`NodeArrays`,
``jobs`` = :class:`JobArrays`, ``ns`` = :class:`NodeState` or a scratch copy of
it, ``run`` / ``js`` = :class:`RunState` / :class:`JobState`) or plain arrays,
and write into caller-allocated outputs. Names end in ``_nb``.

The kernels are grouped by what they do: :mod:`hetgym.sim.kernels_fit` (free slots,
fit tests, the start mask), :mod:`hetgym.sim.kernels_place` (placement policies,
placement checks, allocation), :mod:`hetgym.sim.kernels_queue` (the job queue) and,
here, rates and durations; every kernel is importable from here.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from hetgym.sim.kernels_fit import (
    fits_arrays_nb,
    fits_nb,
    mask_fill_nb,
    mask_nb,
    may_fit_arrays_nb,
    may_fit_free_nb,
    may_fit_nb,
    node_slots_nb,
    slots_free_nb,
    slots_on_node_nb,
    total_slots_nb,
)
from hetgym.sim.kernels_place import (
    SCR_ORDER,
    SCR_SLOTS,
    SCR_TAKE,
    alloc_call_nb,
    alloc_jobs_nb,
    alloc_nb,
    check_placement_nb,
    place_nb,
    same_pairs_nb,
)
from hetgym.sim.kernels_queue import (
    queue_compact_nb,
    queue_push_front_nb,
    queue_push_nb,
    queue_remove_nb,
)
from hetgym.sim.rules import EPS, scaled_rate_nb

__all__ = [
    "EPS",
    "SCR_ORDER",
    "SCR_SLOTS",
    "SCR_TAKE",
    "alloc_call_nb",
    "alloc_jobs_nb",
    "alloc_nb",
    "check_placement_nb",
    "fits_arrays_nb",
    "fits_nb",
    "job_rate_nb",
    "mask_fill_nb",
    "mask_nb",
    "may_fit_arrays_nb",
    "may_fit_free_nb",
    "may_fit_nb",
    "node_slots_nb",
    "place_nb",
    "queue_compact_nb",
    "queue_push_front_nb",
    "queue_push_nb",
    "queue_remove_nb",
    "rate_nb",
    "same_pairs_nb",
    "slots_free_nb",
    "slots_on_node_nb",
    "total_slots_nb",
]


@njit(cache=True, inline="always")
def rate_nb(w, wnodes, wgpus, tput_row, comm, nodes, opts):
    """Rate (iterations/s) of a job on a placement.

    rate = W x min over workers of per-worker throughput on the worker's device
    x W ** (scaling_exponent - 1) x topology factor. The topology factor is
    1 / (1 + topology_coeff x comm x max(0, mean pairwise distance - 1)), with
    GPU-GPU distances from the node's matrix, 1 between CPU workers of one
    node, and ``network_distance`` across nodes. It is exactly 1 when W = 1,
    comm = 0 or topology_coeff = 0.
    """
    mn = np.inf
    for i in range(w):
        t = tput_row[nodes.dev[wnodes[i]]]
        if t < mn:
            mn = t
    rate = w * mn
    if opts.scaling_exponent != 1.0:  # else the same value without a call of pow
        rate = scaled_rate_nb(w, mn, opts.scaling_exponent)
    if w > 1 and comm > 0.0 and opts.topology_coeff > 0.0:
        s = 0.0
        for a in range(w):
            for b in range(a + 1, w):
                if wnodes[a] != wnodes[b]:
                    s += opts.network_distance
                elif wgpus[a] >= 0 and wgpus[b] >= 0:
                    s += nodes.dist[wnodes[a], wgpus[a], wgpus[b]]
                else:
                    s += 1.0
        mean = s / (w * (w - 1) / 2.0)
        if mean > 1.0:
            rate /= 1.0 + opts.topology_coeff * comm * (mean - 1.0)
    return rate


@njit(cache=True, inline="always")
def job_rate_nb(job, w, wnodes, wgpus, P):
    """Rate of ``job`` on a placement of ``w`` workers: :func:`rate_nb` with the job's own
    scaling exponent ``P.jobs.scale_exp[job]`` (``g * tput * g ** (e_j - 1)``, elastic
    jobs); exactly :func:`rate_nb` when it equals the scenario's."""
    jobs, opts = P.jobs, P.opts
    r = rate_nb(w, wnodes, wgpus, jobs.tput[job], jobs.comm[job], P.nodes, opts)
    e = jobs.scale_exp[job]
    if e != opts.scaling_exponent:
        r *= w ** (e - opts.scaling_exponent)
    return r
