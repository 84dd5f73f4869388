"""SRPT's decision point in one compiled call: waiting jobs in shape heaps, plan, apply.

:class:`SRPTArrays` (one per run, its kernel mirror :data:`SRPTArraysK`) keeps the
waiting jobs between decision points: one binary heap per *shape* group (as in
:class:`baselines.parts.WaitingGroups`: jobs of one shape fit, or do not, alike), ordered
by ``(key, tie)`` (remaining time on the fastest type when the job started waiting, and
its arrival index, or a tie below every earlier one for a job we preempted that came
back). :func:`srpt_step_nb` does one whole decision point:

1. **sync**: the jobs that arrived since the last call join their heaps; the jobs we
   preempted that are back in the queue join theirs, in the order they stand at the
   head of the queue; if the heaps then do not hold exactly the queue's number of jobs
   (someone else decides too), it returns :data:`SYNC_FAILED` and the caller ranks the
   whole queue from then on;
2. **plan** (:func:`decide_nb`): SRPT's rule (below) on the running jobs and the heaps'
   heads merged in rank order; a group's head is taken from its heap when it starts, and
   the group is dropped at its first job that finds no room (capacity only shrinks
   during the walk, and the rest of the group has the same shape);
3. **apply** (optional): the plan through :func:`hetgym.sim.batch.apply_plan_nb`, the
   kernel behind :meth:`hetgym.sim.engine.Simulator.apply_plan` (a refused decision, or
   a full segment log, is left to that method: ``out[OUT_DONE]`` says how far it got).

A decision point costs the running jobs, what starts and one job per group, plus
``log(queue)`` per job that joins or leaves a heap; nothing in it is a Python loop.

SRPT's rule (see :class:`baselines.classic.SRPT`) at one decision point: movable
running jobs (not in a grace period, under the preemption limit) and waiting jobs are
walked in order of remaining time on their fastest type (running jobs first on ties,
waiting jobs by ``(key, tie)``), on a scratch copy of free capacity from which every
movable job's resources were given back. A running job keeps its placement if it is
still free there; a waiting job takes the first device type of its ``table`` row with
room (the simulator's placement kernel). Then the movable jobs not kept are preempted,
and the planned starts are placed on what is free once the preempted jobs without a
grace period have left.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
from numba import njit

from baselines.kernels import _place_first_nb, job_best_nb
from hetgym.sim.batch import PLAN_OK, apply_plan_nb
from hetgym.sim.codes import FUTURE, GRACE, QUEUED
from hetgym.sim.mirror import NodeStateK, packer, struct_of
from hetgym.sim.state import CTR_Q, CTR_QHEAD, CTR_QTAIL, CTR_RUN, CTR_SEG

__all__ = ["C_WAIT", "NEED_ROOM", "SYNC_FAILED", "SRPTArrays", "SRPTArraysK", "decide_nb", "node_state_k",
           "pack_arrays", "srpt_step_nb"]

#: :func:`srpt_step_nb`'s result when the heaps may not stand for the queue.
SYNC_FAILED = -1
#: :func:`srpt_step_nb`'s result when the start arrays hold fewer than ``out[OUT_ST]``
#: starts (nothing planned: grow them and call again).
NEED_ROOM = -2
# ctr fields: next job to arrive, tie of the last job put back at the head, jobs preempted
# by us not back yet (in ``away``), jobs in the heaps, running jobs in the dense rows
C_NEXT, C_FRONT, C_AWAY, C_WAIT, C_RUN = range(5)
# opt fields: preemption limit (-1 none), placement policy, exact sums (0/1)
O_LIMIT, O_POLICY, O_EXACT = range(3)
# out fields: preemptions, starts, decisions applied
OUT_PRE, OUT_ST, OUT_DONE = range(3)


class SRPTArrays(NamedTuple):
    """Everything :func:`srpt_step_nb` keeps for one run besides the simulator's state
    (``J`` jobs, ``G`` shape groups, ``C`` device types, ``N`` nodes)."""

    gid: np.ndarray       # int64[J], shape group of each job
    goff: np.ndarray      # int64[G + 1], group g's heap is heap[goff[g]:goff[g] + hn[g]]
    heap: np.ndarray      # int64[J], job indices
    hn: np.ndarray        # int64[G], jobs in each heap
    key: np.ndarray       # float64[J], ranking key while waiting
    tie: np.ndarray       # int64[J], tie while waiting
    inheap: np.ndarray    # bool[J]
    flag: np.ndarray      # bool[J], scratch (jobs coming back)
    away: np.ndarray      # int64[J], preempted by us, not back in the queue yet (ctr[C_AWAY])
    denom: np.ndarray     # float64[J, C], running jobs' rank: remaining / denom where valid
    valid: np.ndarray     # bool[J, C]
    key_den: np.ndarray   # float64[J, C], waiting jobs' key: remaining / key_den where key_valid
    key_valid: np.ndarray  # bool[J, C]
    table: np.ndarray     # int64[J, k], candidate device types, -1 padded
    workers: np.ndarray   # int64[J], gang sizes
    ctr: np.ndarray       # int64[5], C_* fields
    opt: np.ndarray       # int64[3], O_* fields
    plan: object          # NodeStateK, scratch capacity of the walk
    now: object           # NodeStateK, scratch capacity once the preempted jobs left
    scr_f: np.ndarray     # float64[2, N], scratch
    pre: np.ndarray       # int64[R], out: jobs to preempt, in order
    job: np.ndarray       # int64[S], out: jobs to start, in order
    dev: np.ndarray       # int64[S], out: their device types
    nodes: np.ndarray     # int64[S, Wmax], out: their workers' nodes
    gpus: np.ndarray      # int64[S, Wmax], out: their workers' GPUs (-1 on CPU nodes)
    out: np.ndarray       # int64[3], OUT_* fields
    # the running jobs as of the last call, in start order (``ctr[C_RUN]`` of them): what
    # the walk reads of each, kept in dense rows (``R`` = the running list's length)
    rj: np.ndarray        # int64[R], job
    rw: np.ndarray        # int64[R], gang size
    rnode: np.ndarray     # int64[R, Wmax], workers' nodes
    rgpu: np.ndarray      # int64[R, Wmax], workers' GPUs
    rcpu: np.ndarray      # float64[R, Wmax], workers' cores
    rmem: np.ndarray      # float64[R], memory per worker
    rdmax: np.ndarray     # float64[R], largest valid denom (0: none)
    rdmin: np.ndarray     # float64[R], least valid denom
    rrem: np.ndarray      # float64[R], scratch: remaining time on the fastest type
    perm: np.ndarray      # int64[R], positions in rank order (last call's, then updated)
    remap: np.ndarray     # int64[R], scratch: last call's position -> this call's, -1 gone


SRPTArraysK = struct_of(SRPTArrays, module=__name__)
_pack_arrays = packer(SRPTArraysK)
_pack_ns = packer(NodeStateK)


@njit(cache=True)
def pack_arrays(tup):
    """The :data:`SRPTArraysK` over the arrays of an :class:`SRPTArrays` (no copies)."""
    return _pack_arrays(tup)


@njit(cache=True)
def node_state_k(ns):
    """A :class:`~hetgym.sim.mirror.NodeStateK` over the arrays of a ``NodeState``."""
    return _pack_ns(ns)


@njit(cache=True, inline="always")
def _before(a, b, key, tie):
    """Whether job ``a`` ranks before job ``b`` by ``(key, tie)``."""
    return key[a] < key[b] or (key[a] == key[b] and tie[a] < tie[b])


@njit(cache=True)
def heap_push_nb(heap, base, n, j, key, tie):
    """Put job ``j`` in the heap ``heap[base:base + n]`` (it becomes ``n + 1`` long)."""
    i = n
    while i > 0:
        p = (i - 1) >> 1
        q = heap[base + p]
        if not _before(j, q, key, tie):
            break
        heap[base + i] = q
        i = p
    heap[base + i] = j


@njit(cache=True)
def heap_pop_nb(heap, base, n, key, tie):
    """Take the first job out of the heap ``heap[base:base + n]`` (``n >= 1``; it becomes
    ``n - 1`` long) and return it."""
    top = heap[base]
    n -= 1
    if n > 0:
        j = heap[base + n]
        i = 0
        while True:
            c = 2 * i + 1
            if c >= n:
                break
            if c + 1 < n and _before(heap[base + c + 1], heap[base + c], key, tie):
                c += 1
            q = heap[base + c]
            if not _before(q, j, key, tie):
                break
            heap[base + i] = q
            i = c
        heap[base + i] = j
    return top


@njit(cache=True)
def _join_nb(A, j, k, t):
    """Job ``j`` starts waiting with key ``k`` and tie ``t``; False if it already waits."""
    if A.inheap[j]:
        return False
    g = A.gid[j]
    A.key[j] = k
    A.tie[j] = t
    heap_push_nb(A.heap, A.goff[g], A.hn[g], j, A.key, A.tie)
    A.hn[g] += 1
    A.inheap[j] = True
    A.ctr[C_WAIT] += 1
    return True


@njit(cache=True)
def _leave_nb(A, g):
    """The first job of group ``g`` stops waiting (it starts); returns it."""
    j = heap_pop_nb(A.heap, A.goff[g], A.hn[g], A.key, A.tie)
    A.hn[g] -= 1
    A.inheap[j] = False
    A.ctr[C_WAIT] -= 1
    return j


@njit(cache=True)
def sync_nb(A, S):
    """Bring the heaps in step with the queue (module docstring, step 1); False if they
    may not stand for it."""
    js, run = S.job, S.run
    status, remaining = js.status, js.remaining
    ctr = A.ctr
    # jobs we preempted: back in the queue, or still in their grace period (kept)
    away, flag = A.away, A.flag
    back = np.empty(ctr[C_AWAY], dtype=np.int64)
    nb = 0
    kept = 0
    for i in range(ctr[C_AWAY]):
        j = away[i]
        s = status[j]
        if s == QUEUED:
            if not flag[j]:
                flag[j] = True
                back[nb] = j
                nb += 1
        elif s == GRACE:
            away[kept] = j
            kept += 1
    ctr[C_AWAY] = kept
    if nb > 0:  # they stand at the head of the queue: the first nb live entries, all flagged
        queue = run.queue
        head = np.empty(nb, dtype=np.int64)
        found = 0
        ok = True
        for p in range(run.ctr[CTR_QHEAD], run.ctr[CTR_QTAIL]):
            j = queue[p]
            if j < 0:
                continue
            ok &= flag[j]
            head[found] = j
            found += 1
            if found == nb:
                break
        for i in range(nb):
            flag[back[i]] = False
        if not ok or found < nb:
            return False
        for i in range(nb - 1, -1, -1):  # the first in the queue gets the lowest tie
            j = head[i]
            ctr[C_FRONT] -= 1
            if not _join_nb(A, j, job_best_nb(j, remaining, A.key_den, A.key_valid), ctr[C_FRONT]):
                return False
    k = ctr[C_NEXT]
    n = status.shape[0]
    while k < n and status[k] != FUTURE:  # arrivals join at the tail
        if not _join_nb(A, k, job_best_nb(k, remaining, A.key_den, A.key_valid), k):
            return False
        k += 1
    ctr[C_NEXT] = k
    return ctr[C_WAIT] == run.ctr[CTR_Q]


@njit(cache=True)
def srpt_step_nb(A, P, S, grace_code, apply):
    """One decision point of SRPT (module docstring): sync, plan, and with ``apply`` carry
    the plan out. Returns :data:`SYNC_FAILED`, :data:`NEED_ROOM`, or the number of
    decisions planned (``A.out``: preemptions in ``A.pre``, starts in ``A.job``,
    ``A.dev``, ``A.nodes``, ``A.gpus``, decisions applied). Does nothing when no job waits."""
    out = A.out
    out[OUT_PRE] = 0
    out[OUT_ST] = 0
    out[OUT_DONE] = 0
    run = S.run
    if run.ctr[CTR_Q] == 0:
        return 0
    if not sync_nb(A, S):
        return SYNC_FAILED
    n_st = decide_nb(A, P, S, grace_code)
    if n_st < 0:
        return NEED_ROOM
    n_pre = out[OUT_PRE]
    away = A.away
    for i in range(n_pre):  # preempted by us: they come back at the head of the queue
        away[A.ctr[C_AWAY]] = A.pre[i]
        A.ctr[C_AWAY] += 1
    if apply and n_pre + n_st > 0 and run.ctr[CTR_SEG] + n_pre <= run.seg_i.shape[0]:
        code, i = apply_plan_nb(A.pre, n_pre, A.opt[O_LIMIT], A.job, A.dev, A.nodes, A.gpus, n_st,
                                P, S)
        out[OUT_DONE] = i if code != PLAN_OK else n_pre + n_st
    return n_pre + n_st


@njit(cache=True, inline="always")
def _alloc_row_nb(p, j, sign, A, node_dev, dev_is_cpu, cap):
    """Give back (``sign`` -1) or take again (+1) running job ``j``'s resources (dense row
    ``p``) on the arrays of ``cap`` (free_gpus, free_cpus, free_mem, free_dev, gpu_owner):
    the floating-point operations of ``alloc_nb``."""
    free_gpus, free_cpus, free_mem, free_dev, gpu_owner = cap
    rnode, rgpu, rcpu = A.rnode, A.rgpu, A.rcpu
    m = A.rmem[p]
    for q in range(A.rw[p]):
        n = rnode[p, q]
        d = node_dev[n]
        free_cpus[n] -= sign * rcpu[p, q]
        free_mem[n] -= sign * m
        g = rgpu[p, q]
        if g >= 0:
            free_gpus[n] -= sign
            free_dev[d] -= sign
            gpu_owner[n, g] = j if sign > 0 else -1
        elif dev_is_cpu[d]:
            free_dev[d] -= sign * rcpu[p, q]


@njit(cache=True)
def rows_nb(A, P, S):
    """Bring the dense rows of the running jobs (``A.rj`` ...) in step with the simulator's
    running list and rank them: ``A.rrem`` (remaining time on the fastest type, as
    :func:`baselines.kernels.job_best_nb`) and ``A.perm`` (positions by ``(rrem, position)``).

    The running list keeps start order: jobs leave it anywhere and join at its end, so a
    merge of the rows with the list keeps the rows of the jobs still running (their
    placements do not change while they run) and builds rows for the jobs that started
    since. The last call's rank order is nearly this one's: an insertion sort mends it."""
    jobs, js, run, node_dev = P.jobs, S.job, S.run, P.nodes.dev
    running, nr = run.running, run.ctr[CTR_RUN]
    rj, rw, rnode, rgpu, rcpu, rmem = A.rj, A.rw, A.rnode, A.rgpu, A.rcpu, A.rmem
    rdmax, rdmin, rrem, perm, remap = A.rdmax, A.rdmin, A.rrem, A.perm, A.remap
    nm = A.ctr[C_RUN]
    r = 0
    for i in range(nm):
        if r < nr and rj[i] == running[r]:
            if r != i:
                rj[r] = rj[i]
                rw[r] = rw[i]
                for q in range(rw[i]):
                    rnode[r, q] = rnode[i, q]
                    rgpu[r, q] = rgpu[i, q]
                    rcpu[r, q] = rcpu[i, q]
                rmem[r] = rmem[i]
                rdmax[r] = rdmax[i]
                rdmin[r] = rdmin[i]
            remap[i] = r
            r += 1
        else:
            remap[i] = -1
    kept = r
    worker_node, worker_gpu, cpus_need = js.worker_node, js.worker_gpu, jobs.cpus_need
    denom, valid = A.denom, A.valid
    for r in range(kept, nr):  # started since the last call
        j = running[r]
        rj[r] = j
        w = A.workers[j]
        rw[r] = w
        for q in range(w):
            n = worker_node[j, q]
            rnode[r, q] = n
            rgpu[r, q] = worker_gpu[j, q]
            rcpu[r, q] = cpus_need[j, node_dev[n]]
        rmem[r] = jobs.mem[j]
        hi = 0.0
        lo = np.inf
        for c in range(denom.shape[1]):
            if valid[j, c]:
                hi = max(hi, denom[j, c])
                lo = min(lo, denom[j, c])
        rdmax[r] = hi
        rdmin[r] = lo
    A.ctr[C_RUN] = nr
    remaining = js.remaining
    for p in range(nr):
        # min over the valid types of x / denom: x / (largest denom) for x >= 0, x / (least)
        # for x < 0 (correctly rounded division is monotone: the same number)
        x = remaining[rj[p]]
        if rdmax[p] <= 0.0:
            rrem[p] = np.inf
        elif x >= 0.0:
            rrem[p] = x / rdmax[p]
        else:
            rrem[p] = x / rdmin[p]
    c = 0
    for t in range(nm):
        q = remap[perm[t]]
        if q >= 0:
            perm[c] = q
            c += 1
    for r in range(kept, nr):
        perm[c] = r
        c += 1
    for t in range(1, nr):  # insertion sort by (rrem, position)
        p = perm[t]
        x = rrem[p]
        u = t - 1
        while u >= 0 and (rrem[perm[u]] > x or (rrem[perm[u]] == x and perm[u] > p)):
            perm[u + 1] = perm[u]
            u -= 1
        perm[u + 1] = p



@njit(cache=True)
def decide_nb(A, P, S, grace_code):
    """SRPT's plan at this decision point (module docstring) on the
    running jobs and the heaps: writes ``A.out[OUT_PRE]`` preemptions to ``A.pre`` and
    returns the number of starts written to ``A.job``, ``A.dev``, ``A.nodes[k, :W]``,
    ``A.gpus[k, :W]``; the jobs started leave their heaps. Returns -1 (nothing changed,
    ``A.out[OUT_ST]`` the number of starts) when the start arrays are too short."""
    jobs, js, run, nodes, free = P.jobs, S.job, S.run, P.nodes, S.node
    status, n_preempt, worker_node = js.status, js.n_preempt, js.worker_node
    cpus_need, mem, grace = jobs.cpus_need, jobs.mem, jobs.grace
    workers, table = A.workers, A.table
    key, tie, heap, goff, hn = A.key, A.tie, A.heap, A.goff, A.hn
    plan, now, scr_f, scr_i = A.plan, A.now, A.scr_f, run.scr_i
    limit, policy, exact_sums = A.opt[O_LIMIT], A.opt[O_POLICY], A.opt[O_EXACT] != 0
    for cap in (plan, now):  # the scratch copies of free capacity
        cap.free_gpus[:] = free.free_gpus
        cap.free_cpus[:] = free.free_cpus
        cap.free_mem[:] = free.free_mem
        cap.gpu_owner[:, :] = free.gpu_owner
        cap.free_dev[:] = free.free_dev
    rows_nb(A, P, S)
    nr = run.ctr[CTR_RUN]
    rj, rw, rnode, rgpu, rcpu, rmem, rrem, perm = A.rj, A.rw, A.rnode, A.rgpu, A.rcpu, A.rmem, \
        A.rrem, A.perm
    movable = np.empty(nr, dtype=np.bool_)  # by position in the rows (start order)
    for p in range(nr):
        j = rj[p]
        movable[p] = not (status[j] == grace_code or (limit >= 0 and n_preempt[j] >= limit))
    n_groups = hn.shape[0]
    keep = np.zeros(nr, dtype=np.bool_)
    # With exact sums, the running jobs that rank before every waiting job (remaining time
    # <= the least key) are left out of the walk: nothing can have taken their places
    # before them, so each would keep its place, and giving back and taking again the
    # same integral amounts leaves the scratch capacity as it was.
    first = -np.inf  # nothing left out
    if exact_sums:
        first = np.inf
        for g in range(n_groups):
            if hn[g] > 0:
                first = min(first, key[heap[goff[g]]])
    order = np.empty(nr, dtype=np.int64)  # positions walked, in rank order (ties: start order)
    mt = 0
    for t in range(nr):
        p = perm[t]
        if not movable[p]:
            continue
        if rrem[p] <= first:
            keep[p] = True
        else:
            order[mt] = p
            mt += 1
    node_dev, dev_is_cpu = nodes.dev, nodes.dev_is_cpu
    pc = (plan.free_gpus, plan.free_cpus, plan.free_mem, plan.free_dev, plan.gpu_owner)
    free_cpus, free_mem, gpu_owner = plan.free_cpus, plan.free_mem, plan.gpu_owner
    for i in range(mt):  # every movable job walked gives back what it holds
        _alloc_row_nb(order[i], rj[order[i]], -1, A, node_dev, dev_is_cpu, pc)
    alive = np.ones(n_groups, dtype=np.bool_)
    starts = np.empty(A.ctr[C_WAIT], dtype=np.int64)
    n_st = 0
    wmax = worker_node.shape[1]
    tmp_n = np.empty(wmax, dtype=np.int64)
    tmp_g = np.empty(wmax, dtype=np.int64)
    i = 0
    while True:
        best = -1
        bj = -1
        for g in range(n_groups):
            if not alive[g] or hn[g] == 0:
                continue
            h = heap[goff[g]]
            if best < 0 or _before(h, bj, key, tie):
                best = g
                bj = h
        k = key[bj] if best >= 0 else np.inf
        while i < mt and rrem[order[i]] <= k:  # running jobs that rank first keep their place
            p = order[i]  # if it is free (written out here: as a helper call it costs 10x)
            w = rw[p]
            for q in range(w):
                scr_f[0, rnode[p, q]] = 0.0
                scr_f[1, rnode[p, q]] = 0.0
            ok = True
            for q in range(w):
                n = rnode[p, q]
                g = rgpu[p, q]
                if g >= 0 and gpu_owner[n, g] >= 0:
                    ok = False
                    break
                scr_f[0, n] += rcpu[p, q]
                scr_f[1, n] += rmem[p]
            if ok:
                for q in range(w):
                    n = rnode[p, q]
                    if free_cpus[n] + 1e-9 < scr_f[0, n] or free_mem[n] + 1e-9 < scr_f[1, n]:
                        ok = False
                        break
            if ok:
                keep[p] = True
                _alloc_row_nb(p, rj[p], 1, A, node_dev, dev_is_cpu, pc)
            i += 1
        if best < 0:
            break
        if _place_first_nb(bj, table, workers, cpus_need, mem, policy, nodes, plan, scr_i, tmp_n,
                           tmp_g) >= 0:
            starts[n_st] = _leave_nb(A, best)
            n_st += 1
        else:
            alive[best] = False  # the rest of the group has the same shape: no room either
    if n_st > A.job.shape[0]:  # no room for the plan: put the starts back, nothing changed
        for s in range(n_st):
            _join_nb(A, starts[s], key[starts[s]], tie[starts[s]])
        A.out[OUT_ST] = n_st
        return -1
    n_pre = 0
    out_pre = A.pre
    nc = (now.free_gpus, now.free_cpus, now.free_mem, now.free_dev, now.gpu_owner)
    for p in range(nr):
        if keep[p] or not movable[p]:
            continue
        j = rj[p]
        out_pre[n_pre] = j
        n_pre += 1
        if grace[j] <= 0:
            _alloc_row_nb(p, j, -1, A, node_dev, dev_is_cpu, nc)
    A.out[OUT_PRE] = n_pre
    out_job, out_dev, out_nodes, out_gpus = A.job, A.dev, A.nodes, A.gpus
    k_out = 0
    for s in range(n_st):
        j = starts[s]
        d = _place_first_nb(j, table, workers, cpus_need, mem, policy, nodes, now, scr_i, tmp_n,
                            tmp_g)
        if d >= 0:
            out_job[k_out] = j
            out_dev[k_out] = d
            out_nodes[k_out, : workers[j]] = tmp_n[: workers[j]]
            out_gpus[k_out, : workers[j]] = tmp_g[: workers[j]]
            k_out += 1
        else:  # no room once the preempted jobs left: it waits on
            _join_nb(A, j, key[j], tie[j])
    A.out[OUT_ST] = k_out
    return k_out
