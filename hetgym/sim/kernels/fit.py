"""Numba kernels: how many workers fit where, and the start mask built on it (the rules of
:mod:`hetgym.sim.kernels` apply)."""

from __future__ import annotations

import numpy as np
from numba import njit

from hetgym.sim.rules import covers_nb, slots_nb


@njit(cache=True, inline="always")
def slots_free_nb(is_cpu, cpus, mem, gpus_free, cpus_free, mem_free):
    """How many workers (each: 1 GPU unless ``is_cpu``, ``cpus`` cores, ``mem`` GB) fit in
    a node's free GPUs, cores and memory (scalars: an array handed to an inlined helper
    costs a reference count increment and decrement per call, in the innermost loops)."""
    big = 1 << 30
    s = big
    if not is_cpu:
        s = gpus_free
    if cpus > 0:
        k = np.int64(slots_nb(cpus_free, cpus))
        if k < s:
            s = k
    if mem > 0:
        k = np.int64(slots_nb(mem_free, mem))
        if k < s:
            s = k
    if s == big:  # a job needing nothing: cap at 1 << 20 workers per node
        s = 1 << 20
    return s


@njit(cache=True, inline="always")
def node_slots_nb(n, is_cpu, cpus, mem, free_gpus, free_cpus, free_mem):
    """How many workers (each: 1 GPU unless ``is_cpu``, ``cpus`` cores, ``mem`` GB) fit on
    node n, from the free arrays (:func:`slots_free_nb`)."""
    return slots_free_nb(is_cpu, cpus, mem, free_gpus[n], free_cpus[n], free_mem[n])


@njit(cache=True, inline="always")
def slots_on_node_nb(n, is_cpu, cpus, mem, ns):
    """:func:`node_slots_nb` on a :class:`NodeState`."""
    return node_slots_nb(n, is_cpu, cpus, mem, ns.free_gpus, ns.free_cpus, ns.free_mem)


@njit(cache=True, inline="always")
def may_fit_free_nb(w, cpus, is_cpu, dev_free):
    """Cheap necessary condition (O(1), from a type's free units ``dev_free``, an entry of
    the per-type summary ``free_dev``) for ``w`` workers of ``cpus`` cores each."""
    if is_cpu:
        return cpus <= 0.0 or covers_nb(dev_free, w * cpus)
    return dev_free >= w


@njit(cache=True, inline="always")
def may_fit_arrays_nb(dev, w, cpus, is_cpu, free_dev):
    """:func:`may_fit_free_nb` for type ``dev``."""
    return may_fit_free_nb(w, cpus, is_cpu, free_dev[dev])


@njit(cache=True, inline="always")
def may_fit_nb(dev, w, cpus, nodes, ns):
    """:func:`may_fit_arrays_nb` on a :class:`NodeState`."""
    return may_fit_arrays_nb(dev, w, cpus, nodes.dev_is_cpu[dev], ns.free_dev)


@njit(cache=True, no_cfunc_wrapper=True)
def total_slots_nb(dev, cpus, mem, nodes, ns):
    """Workers of one job that fit on all nodes of device ``dev`` together."""
    is_cpu = nodes.dev_is_cpu[dev]
    tot = 0
    for i in range(nodes.dev_start[dev], nodes.dev_start[dev + 1]):
        tot += slots_on_node_nb(nodes.by_dev[i], is_cpu, cpus, mem, ns)
    return tot


@njit(cache=True, inline="always")
def fits_arrays_nb(dev, w, cpus, mem, is_cpu, dev_start, by_dev, free_gpus, free_cpus, free_mem,
                   free_dev):
    """Whether ``w`` workers fit on the free nodes of type ``dev`` (quick reject by the
    per-type summary, then node by node, stopping once they fit)."""
    if not may_fit_arrays_nb(dev, w, cpus, is_cpu, free_dev):
        return False
    tot = 0
    for i in range(dev_start[dev], dev_start[dev + 1]):
        tot += node_slots_nb(by_dev[i], is_cpu, cpus, mem, free_gpus, free_cpus, free_mem)
        if tot >= w:
            return True
    return False


@njit(cache=True, no_cfunc_wrapper=True)
def fits_nb(dev, w, cpus, mem, nodes, ns):
    """Whether ``w`` workers fit on the free nodes of type ``dev`` (see :func:`fits_arrays_nb`)."""
    return fits_arrays_nb(dev, w, cpus, mem, nodes.dev_is_cpu[dev], nodes.dev_start, nodes.by_dev,
                          ns.free_gpus, ns.free_cpus, ns.free_mem, ns.free_dev)


# ------------------------------------------------------------------- mask
@njit(cache=True, inline="always")
def mask_nb(window, n_win, n_rows, jobs, nodes, ns, out):
    """Feasibility of starting window job k on device c, written to ``out[k, c]`` for the
    ``n_win`` window jobs; rows ``n_win .. n_rows - 1`` are cleared, and rows from
    ``max(n_win, n_rows)`` on are left as they are (the caller keeps them False: the env
    passes the last call's ``n_win``, so a short window costs its own rows, not the
    whole window's).

    A call of the compiled :func:`mask_fill_nb` (not inlined: the env's decision kernel
    calls it at several sites), with ``n_win`` / ``n_rows`` as plain int64 so that a
    constant at a call site does not compile it again."""
    mask_fill_nb(window, np.int64(n_win), np.int64(n_rows), jobs, nodes, ns, out)


@njit(cache=True, no_cfunc_wrapper=True)
def mask_fill_nb(window, n_win, n_rows, jobs, nodes, ns, out):
    """The body of :func:`mask_nb`."""
    n_dev = out.shape[1]
    tput, workers, cpus_need, mem = jobs.tput, jobs.workers, jobs.cpus_need, jobs.mem
    is_cpu, dev_start, by_dev = nodes.dev_is_cpu, nodes.dev_start, nodes.by_dev
    free_gpus, free_cpus, free_mem, free_dev = ns.free_gpus, ns.free_cpus, ns.free_mem, ns.free_dev
    for k in range(n_rows if n_rows > n_win else n_win):  # noqa: FURB136 (builtin max compiles an overload)
        for c in range(n_dev):
            out[k, c] = False
    # fits_arrays_nb on every (job, type), written out on scalars: its seven array arguments
    # would cost seven reference count increments and decrements per call
    for k in range(n_win):
        j = window[k]
        w = workers[j]
        m = mem[j]
        for c in range(n_dev):
            if tput[j, c] <= 0.0:
                continue
            cpus = cpus_need[j, c]
            c_cpu = is_cpu[c]
            if not may_fit_free_nb(w, cpus, c_cpu, free_dev[c]):
                continue
            tot = 0
            for i in range(dev_start[c], dev_start[c + 1]):
                n = by_dev[i]
                tot += slots_free_nb(c_cpu, cpus, m, free_gpus[n], free_cpus[n], free_mem[n])
                if tot >= w:
                    out[k, c] = True
                    break
