"""Numba kernels: placing a gang (the placement policies), checking a given placement,
and taking or giving back its resources (the rules of :mod:`hetgym.sim.kernels` apply)."""

from __future__ import annotations

import numpy as np
from numba import njit

from hetgym.sim.kernels.fit import may_fit_nb, slots_free_nb
from hetgym.sim.rules import EPS, covers_nb

#: Scratch rows of ``run.scr_i``.
SCR_SLOTS, SCR_TAKE, SCR_ORDER = 0, 1, 2


@njit(cache=True, inline="always")
def same_pairs_nb(w, an, ag, bn, bg):
    """Whether the first ``w`` (node, GPU) pairs of ``(an, ag)`` and ``(bn, bg)`` are the
    same multiset (a placement and a job's current one; Hadar's kept-placement test)."""
    for i in range(w):
        ka = 0
        kb = 0
        for t in range(w):
            if an[t] == an[i] and ag[t] == ag[i]:
                ka += 1
            if bn[t] == an[i] and bg[t] == ag[i]:
                kb += 1
        if ka != kb:
            return False
    return True


@njit(cache=True, no_cfunc_wrapper=True)
def _pick_gpus_nb(n, k, topo, gpu_owner, node_gpus, node_dist, out_gpu, start):
    """Choose k free GPUs on node n, write their indices at ``out_gpu[start:start+k]``."""
    g = node_gpus[n]
    if not topo or k <= 1:
        c = 0
        for i in range(g):
            if gpu_owner[n, i] < 0:
                out_gpu[start + c] = i
                c += 1
                if c == k:
                    return
        return
    # Topology: from each free seed GPU grow a set greedily (each step adds the free GPU with
    # the least summed distance to those chosen), in out_gpu[start:start + k]; keep the
    # cheapest seed and grow its set once more (pass g). No scratch arrays: an allocation
    # here compiles np.empty / np.zeros overloads after install.
    best_cost = np.inf
    best_seed = -1
    for it in range(g + 1):
        seed = it if it < g else best_seed
        if it < g and gpu_owner[n, seed] >= 0:
            continue
        out_gpu[start] = seed
        cost = 0.0
        for m in range(1, k):
            bi = -1
            bc = np.inf
            for i in range(g):
                if gpu_owner[n, i] >= 0:
                    continue
                c = 0.0
                taken = False
                for q in range(m):
                    h = out_gpu[start + q]
                    if h == i:
                        taken = True
                        break
                    c += node_dist[n, h, i]
                if taken:
                    continue
                if c < bc - EPS:
                    bc = c
                    bi = i
            out_gpu[start + m] = bi
            cost += bc
        if it < g and cost < best_cost - EPS:
            best_cost = cost
            best_seed = seed
    # ascending GPU indices (insertion sort of k <= G items in place; loops, not slice
    # copies or np.sort, which cost seconds of compilation)
    for m in range(1, k):
        x = out_gpu[start + m]
        q = m
        while q > 0 and out_gpu[start + q - 1] > x:
            out_gpu[start + q] = out_gpu[start + q - 1]
            q -= 1
        out_gpu[start + q] = x


@njit(cache=True, no_cfunc_wrapper=True)
def place_nb(dev, w, cpus, mem, policy, nodes, ns, scr_i, out_node, out_gpu):
    """Find a placement of ``w`` workers on nodes of device ``dev``.

    Policies (codes of :class:`~hetgym.sim.codes.PlacementPolicy`):
    0 pack: the single node that holds all workers with the fewest spare slots
    (lowest index on ties); else nodes by spare slots descending (lowest index
    on ties), each filled as far as it goes. 1 spread: nodes by spare slots
    descending, one worker each, round robin. 2 topology: nodes as pack, GPUs
    on a node chosen greedily to minimise summed pairwise distance.

    Writes ``out_node[:w]`` and ``out_gpu[:w]`` (-1 for CPU workers) and
    returns True, or returns False (outputs undefined) when it does not fit.
    Only nodes of type ``dev`` are visited, and a type without enough free
    units is rejected in O(1). Does not modify ``ns``; ``scr_i`` is scratch.
    """
    if not may_fit_nb(dev, w, cpus, nodes, ns):
        return False
    is_cpu = nodes.dev_is_cpu[dev]
    lo = nodes.dev_start[dev]
    m = nodes.dev_start[dev + 1] - lo
    slots = scr_i[SCR_SLOTS]
    take = scr_i[SCR_TAKE]
    order = scr_i[SCR_ORDER]
    tot = 0
    free_gpus, free_cpus, free_mem = ns.free_gpus, ns.free_cpus, ns.free_mem
    for i in range(m):
        n = nodes.by_dev[lo + i]
        s = slots_free_nb(is_cpu, cpus, mem, free_gpus[n], free_cpus[n], free_mem[n])
        slots[i] = s
        take[i] = 0
        tot += s
    if tot < w:
        return False
    best = -1
    if policy != 1:
        for i in range(m):
            if slots[i] >= w and (best < 0 or slots[i] < slots[best]):
                best = i
    if best >= 0:
        take[best] = w
    else:
        # group positions by spare slots descending, lowest node index first on ties
        for i in range(m):
            k = i
            while k > 0 and slots[order[k - 1]] < slots[i]:
                order[k] = order[k - 1]
                k -= 1
            order[k] = i
        left = w
        if policy != 1:
            for i in range(m):
                p = order[i]
                if left == 0 or slots[p] == 0:
                    break
                t = slots[p] if slots[p] < left else left  # noqa: FURB136 (builtin min/max compile an overload)
                take[p] = t
                left -= t
        else:
            while left > 0:
                for i in range(m):
                    p = order[i]
                    if slots[p] == 0:
                        break
                    if take[p] < slots[p]:
                        take[p] += 1
                        left -= 1
                        if left == 0:
                            break
    c = m - m  # 0, typed int64: a literal 0 would compile _pick_gpus_nb a second time
    for i in range(m):
        k = take[i]
        if k == 0:
            continue
        n = nodes.by_dev[lo + i]
        for q in range(k):
            out_node[c + q] = n
            out_gpu[c + q] = -1
        if not is_cpu:
            _pick_gpus_nb(n, k, policy == 2, ns.gpu_owner, nodes.gpus, nodes.dist, out_gpu, c)
        c += k
    return True


@njit(cache=True, no_cfunc_wrapper=True)
def check_placement_nb(w, wnodes, wgpus, cpus_row, mem, nodes, ns, scr_f):
    """Validate an explicit placement; returns 0 if valid, else an error code.

    Codes: 1 node index out of range, 2 GPU index out of range or missing,
    3 GPU busy or used twice, 4 CPU cores exceeded, 5 memory exceeded,
    6 a CPU worker on a GPU index. ``cpus_row`` is float64[C]: cores per worker
    on each device type; ``scr_f`` (float64[2, N]) is scratch.
    """
    nn = nodes.dev.shape[0]
    for i in range(w):
        n = wnodes[i]
        if n < 0 or n >= nn:
            return 1
        scr_f[0, n] = 0.0
        scr_f[1, n] = 0.0
    for i in range(w):
        n = wnodes[i]
        d = nodes.dev[n]
        if nodes.dev_is_cpu[d]:
            if wgpus[i] >= 0:
                return 6
        else:
            g = wgpus[i]
            if g < 0 or g >= nodes.gpus[n]:
                return 2
            if ns.gpu_owner[n, g] >= 0:
                return 3
            for k in range(i):
                if wnodes[k] == n and wgpus[k] == g:
                    return 3
        scr_f[0, n] += cpus_row[d]
        scr_f[1, n] += mem
    for i in range(w):
        n = wnodes[i]
        if not covers_nb(ns.free_cpus[n], scr_f[0, n]):
            return 4
        if not covers_nb(ns.free_mem[n], scr_f[1, n]):
            return 5
    return 0


@njit(cache=True, inline="always")
def alloc_nb(job, w, wnodes, wgpus, sign, cpus_row, mem, nodes, ns):
    """Take (``sign=+1``) or give back (``sign=-1``) the resources of a placement,
    keeping the per-type summary ``ns.free_dev`` in step."""
    dev, dev_is_cpu = nodes.dev, nodes.dev_is_cpu
    free_cpus, free_mem, free_gpus, free_dev, gpu_owner = (ns.free_cpus, ns.free_mem, ns.free_gpus,
                                                           ns.free_dev, ns.gpu_owner)
    for i in range(w):
        n = wnodes[i]
        d = dev[n]
        free_cpus[n] -= sign * cpus_row[d]
        free_mem[n] -= sign * mem
        g = wgpus[i]
        if g >= 0:
            free_gpus[n] -= sign
            free_dev[d] -= sign
            gpu_owner[n, g] = job if sign > 0 else -1
        elif dev_is_cpu[d]:
            free_dev[d] -= sign * cpus_row[d]


@njit(cache=True, no_cfunc_wrapper=True)
def alloc_call_nb(job, w, wnodes, wgpus, sign, cpus_row, mem, nodes, ns):
    """:func:`alloc_nb` as a kernel of its own, for the event kernels' start, release and
    move (one compiled copy, not one per site; ``sign`` a run-time int64, never a
    literal: see the module docstring)."""
    alloc_nb(job, w, wnodes, wgpus, sign, cpus_row, mem, nodes, ns)


@njit(cache=True, no_cfunc_wrapper=True)
def alloc_jobs_nb(idx, sign, jobs, nodes, js, ns):
    """:func:`alloc_nb` for the current placements of the jobs ``idx``, one after another
    (the same floating-point operations, in the same order, as one call per job)."""
    for i in range(idx.shape[0]):
        j = idx[i]
        w = js.nworkers[j]
        alloc_nb(j, w, js.worker_node[j, :w], js.worker_gpu[j, :w], sign, jobs.cpus_need[j],
                 jobs.mem[j], nodes, ns)
