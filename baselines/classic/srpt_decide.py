"""SRPT's plan at one decision point (step 2 of :mod:`baselines.classic.srpt_kernels`): the running
jobs in dense rows ranked by remaining time (:func:`rows_nb`) and the walk that keeps,
preempts and starts jobs (:func:`decide_nb`, SRPT's rule as in the module docstring of
:mod:`baselines.classic.srpt_kernels`), on the state of :mod:`baselines.classic.srpt_arrays`.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from baselines.classic.srpt_arrays import (
    C_RUN,
    C_WAIT,
    OUT_PRE,
    OUT_ST,
    O_EXACT,
    O_LIMIT,
    O_POLICY,
    _before,
    _join_nb,
    _leave_nb,
)
from baselines.common.kernels import _place_first_nb
from hetgym.sim.rules import below_limit_nb, covers_nb
from hetgym.sim.state.layout import CTR_RUN

__all__ = ["decide_nb", "rows_nb"]


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
    :func:`baselines.common.kernels.job_best_nb`) and ``A.perm`` (positions by ``(rrem, position)``).

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
        movable[p] = not (status[j] == grace_code or not below_limit_nb(n_preempt[j], limit))
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
        # typed, not literal: a literal -1 here made Numba compile _place_first_nb and
        # _leave_nb once more, for Literal[int](-1) (the runtime value is the job found)
        best = np.int64(-1)
        bj = np.int64(-1)
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
                    if not (covers_nb(free_cpus[n], scr_f[0, n]) and covers_nb(free_mem[n], scr_f[1, n])):
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
