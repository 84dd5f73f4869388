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
"""

from __future__ import annotations

import numpy as np
from numba import njit

from hetgym.sim.state import CTR_Q, CTR_QHEAD, CTR_QTAIL

EPS = 1e-9
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
        k = np.int64(np.floor(cpus_free / cpus + EPS))
        if k < s:
            s = k
    if mem > 0:
        k = np.int64(np.floor(mem_free / mem + EPS))
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
        return cpus <= 0.0 or dev_free + EPS >= w * cpus
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
        if scr_f[0, n] > ns.free_cpus[n] + EPS:
            return 4
        if scr_f[1, n] > ns.free_mem[n] + EPS:
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
    if opts.scaling_exponent != 1.0:
        rate *= w ** (opts.scaling_exponent - 1.0)
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


@njit(cache=True, inline="always")
def duration_nb(amount, w, t, e):
    """Run time of ``amount`` iterations for ``w`` workers at per-worker throughput ``t``
    with scaling exponent ``e`` (``inf`` if ``t <= 0``)."""
    if t <= 0.0:
        return np.inf
    if e == 1.0:  # w ** 0.0 is 1.0 exactly: the same value without a call of pow
        return amount / (w * t)
    return amount / (w * t * w ** (e - 1.0))


@njit(cache=True, inline="always")
def best_duration_nb(amount, j, jobs, e):
    """Run time of ``amount`` iterations of job ``j`` on its fastest device type that can
    hold its gang (the scalar form of :func:`hetgym.sim.state.best_durations`)."""
    best = np.inf
    for c in range(jobs.tput.shape[1]):
        if jobs.holdable[j, c]:
            d = duration_nb(amount, jobs.workers[j], jobs.tput[j, c], e)
            if d < best:
                best = d
    return best


# ------------------------------------------------------------------ queue
@njit(cache=True, no_cfunc_wrapper=True)
def _queue_recentre_nb(run, qpos):
    """Move the live queue to the middle of its buffer (rarely: when an end is reached)."""
    q = run.queue
    n = 0
    for i in range(run.ctr[CTR_QHEAD], run.ctr[CTR_QTAIL]):
        if q[i] >= 0:
            run.qtmp[n] = q[i]
            n += 1
        q[i] = -1
    head = (q.shape[0] - n) // 2
    for k in range(n):
        q[head + k] = run.qtmp[k]
        qpos[run.qtmp[k]] = head + k
    run.ctr[CTR_QHEAD] = head
    run.ctr[CTR_QTAIL] = head + n


@njit(cache=True, inline="always")
def queue_push_nb(run, qpos, j):
    """Append job ``j`` at the tail of the queue."""
    if run.ctr[CTR_QTAIL] == run.queue.shape[0]:
        _queue_recentre_nb(run, qpos)
    t = run.ctr[CTR_QTAIL]
    run.queue[t] = j
    qpos[j] = t
    run.ctr[CTR_QTAIL] = t + 1
    run.ctr[CTR_Q] += 1


@njit(cache=True, inline="always")
def queue_push_front_nb(run, qpos, j):
    """Insert job ``j`` at the head of the queue (a suspended job)."""
    if run.ctr[CTR_QHEAD] == 0:
        _queue_recentre_nb(run, qpos)
    h = run.ctr[CTR_QHEAD] - 1
    run.queue[h] = j
    qpos[j] = h
    run.ctr[CTR_QHEAD] = h
    run.ctr[CTR_Q] += 1


@njit(cache=True, inline="always")
def queue_remove_nb(run, qpos, j):
    """Remove job ``j`` from the queue in O(1) (a tombstone; ends are trimmed)."""
    p = qpos[j]
    q = run.queue
    q[p] = -1
    qpos[j] = -1
    run.ctr[CTR_Q] -= 1
    h = run.ctr[CTR_QHEAD]
    t = run.ctr[CTR_QTAIL]
    while h < t and q[h] < 0:
        h += 1
    while t > h and q[t - 1] < 0:
        t -= 1
    run.ctr[CTR_QHEAD] = h
    run.ctr[CTR_QTAIL] = t


@njit(cache=True, no_cfunc_wrapper=True)
def queue_compact_nb(run, qpos):
    """Squeeze tombstones out so the live queue is ``queue[head:head + n]``, in order."""
    h = run.ctr[CTR_QHEAD]
    t = run.ctr[CTR_QTAIL]
    n = run.ctr[CTR_Q]
    if t - h == n:
        return
    q = run.queue
    k = h
    for i in range(h, t):
        j = q[i]
        if j >= 0:
            q[k] = j
            qpos[j] = k
            k += 1
    for i in range(k, t):
        q[i] = -1
    run.ctr[CTR_QTAIL] = k


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
