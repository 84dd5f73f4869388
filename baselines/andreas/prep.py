"""The tables of one ANDREAS RG decision point in one compiled call.

:func:`plan_tables_nb` builds everything :func:`~baselines.andreas.kernel.rg_search_nb`
takes from the simulator's own arrays: the running jobs' current configurations
(as :func:`~baselines.andreas.parts.current_configs`), which of them are pinned (a plan
keeps them where they are: in a grace period, with a grace period, so that a preemption
would not free their GPUs now, at the preemption limit, or placed outside ANDREAS' model,
across nodes or on a CPU node), the configuration table of the running and waiting jobs
(as :func:`~baselines.andreas.parts.config_table`), what the pinned jobs leave per node
(GPUs, open flag, first end), the pressure order (Eq. 2) and the cores and memory of
every configuration. :func:`start_walk_nb` carries out a plan that re-plans no running
job: the starts of :func:`~baselines.andreas.parts.plan_decisions` with an empty
``replan``. ``tests/baselines/andreas/test_andreas_prep.py`` keeps the NumPy builders these
replaced (their floating-point operations in the same order) and compares both with
them bit for bit.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from baselines.andreas.configs import (
    config_table_nb,
    current_configs_nb,
    pinned_nodes_nb,
)
from hetgym.sim.rules import below_limit_nb, covers_nb

__all__ = ["plan_tables_nb", "start_walk_nb"]


@njit(cache=True, inline="always")
def _before_nb(a, b):
    """``a < b`` in NumPy's sort order of floats (NaN last)."""
    return a < b or (np.isnan(b) and not np.isnan(a))


@njit(cache=True, inline="always")
def _key_less_nb(neg_delta, arrival, cand, r, s):
    """Whether row r comes before row s in the pressure order: ``-delta`` ascending, then
    arrival, then the job index (``np.lexsort((cand, arrival, -delta))``)."""
    x, y = neg_delta[r], neg_delta[s]
    if not (x == y or (np.isnan(x) and np.isnan(y))):
        return _before_nb(x, y)
    x, y = arrival[r], arrival[s]
    if not (x == y or (np.isnan(x) and np.isnan(y))):
        return _before_nb(x, y)
    return cand[r] < cand[s]


@njit(cache=True)
def _pressure_order_nb(a, b, neg_delta, arrival, cand):
    """The rows ``a`` sorted by (``-delta``, arrival, job) ascending: a stable bottom-up merge
    sort (the keys are distinct, since a job is one row), ``b`` its scratch (as long as a);
    returns whichever of the two holds the sorted rows."""
    n = a.shape[0]
    width = 1
    while width < n:
        for lo in range(0, n, 2 * width):
            mid = min(lo + width, n)
            hi = min(lo + 2 * width, n)
            i, j, k = lo, mid, lo
            while i < mid and j < hi:
                if _key_less_nb(neg_delta, arrival, cand, a[j], a[i]):
                    b[k] = a[j]
                    j += 1
                else:
                    b[k] = a[i]
                    i += 1
                k += 1
            while i < mid:
                b[k] = a[i]
                i += 1
                k += 1
            while j < hi:
                b[k] = a[j]
                j += 1
                k += 1
        a, b = b, a
        width *= 2
    return a


@njit(cache=True)
def plan_tables_nb(run, queue, nworkers, status, worker_node, worker_gpu, finish, n_preempt,
                   remaining, first_start, grace, work, tput, scale_exp, min_w, max_w, cpus, mem,
                   deadline, arrival, weight, node_gpus, node_dev, free_cpus, free_mem, of_node,
                   cls_dev, cls_gpus, cls_cpus, cls_mem, cls_idle, cls_gpu_w, cls_rate, kmax, ckpt,
                   restart_delay, eur_per_j, now, max_pre, code_running, code_grace):
    """The search's inputs at one decision point (module docstring).

    ``run``: the running jobs in start order, ``queue``: the waiting jobs in queue order
    (the simulator's); the job and node arrays are the simulator's; ``cls_*`` the node
    classes' (:class:`~baselines.andreas.parts.NodeClasses`), ``kmax`` = max(1, their GPUs
    summed), the configuration table's width; ``max_pre``: the preemption
    limit (-1: none); ``code_*``: the status codes RUNNING and GRACE.

    Rows are the candidates ``cand``: the running jobs not pinned (start order), then the
    waiting ones. Returns ``(cand, n_run, running, outside, base, cur, cur_g, cfg_cls,
    cfg_g, cfg_t, dl, dlen, cl, clen, mj, free, is_open, first_t, first_c, node_rc0,
    cfg_rc, cur_rc, weight_c, deadline_c)`` as :meth:`AndreasRG.plan` had them: ``n_run``
    the count of running rows, ``running`` those of them with a configuration,
    ``outside`` the waiting jobs with none, ``base`` the rows with one in pressure order
    (empty: the search is not called, and the later tables are left empty), ``cur_g``
    clamped at 0.
    """
    nr = run.shape[0]
    # allocations in six forms only (np.empty of int64 / float64 / bool, 1-D, 2-D, 3-D): each
    # form of a NumPy allocation is a compilation of its own (a shorter cold start)
    node_r = np.empty(nr, np.int64)
    cls_r = np.empty(nr, np.int64)
    g_r = np.empty(nr, np.int64)
    current_configs_nb(run, nworkers, status, worker_node, of_node, code_running, code_grace,
                       node_r, cls_r, g_r)
    bad = np.empty(nr, np.bool_)
    n_bad = 0
    for i in range(nr):
        j = run[i]
        b = status[j] == code_grace or grace[j] > 0 or node_r[i] < 0
        b = b or not below_limit_nb(n_preempt[j], max_pre)
        bad[i] = b
        if b:
            n_bad += 1
    n_run = nr - n_bad
    nq = queue.shape[0]
    nc = n_run + nq
    cand = np.empty(nc, np.int64)
    cur = np.empty(nc, np.int64)
    cur_cls = np.empty(nc, np.int64)
    cur_g = np.empty(nc, np.int64)
    out_cls = np.empty((nc, kmax), np.int64)
    out_g = np.empty((nc, kmax), np.int64)
    out_t = np.empty((nc, kmax), np.float64)
    out_cost = np.empty((nc, kmax), np.float64)
    dl = np.empty((nc, kmax), np.int64)
    cl = np.empty((nc, kmax), np.int64)
    dlen = np.empty(nc, np.int64)
    clen = np.empty(nc, np.int64)
    delta = np.empty(nc, np.float64)
    mj = np.empty(nc, np.float64)
    for r in range(nc):
        cur[r] = cur_cls[r] = cur_g[r] = -1
        dlen[r] = clen[r] = 0
        delta[r] = mj[r] = 0.0
        for e in range(kmax):
            out_cls[r, e] = out_g[r, e] = dl[r, e] = cl[r, e] = 0
            out_t[r, e] = out_cost[r, e] = 0.0
    r = 0
    for i in range(nr):
        if not bad[i]:
            cand[r] = run[i]
            cur[r] = node_r[i]
            cur_cls[r] = cls_r[i]
            cur_g[r] = g_r[i]
            r += 1
    for i in range(nq):
        cand[n_run + i] = queue[i]
    if nc > 0:
        config_table_nb(cand, remaining, work, ckpt, first_start, restart_delay, tput, scale_exp,
                        min_w, max_w, cpus, mem, deadline, cur_cls, cur_g, cls_dev, cls_gpus,
                        cls_cpus, cls_mem, cls_idle, cls_gpu_w, eur_per_j, now, out_cls, out_g,
                        out_t, out_cost, dl, dlen, cl, clen, delta, mj)
    n_stuck = 0  # running jobs with no configuration left: pinned (not for ANDREAS jobs)
    n_out = 0
    n_rows = 0
    for r in range(nc):
        if dlen[r] + clen[r] > 0:
            n_rows += 1
        elif r < n_run:
            n_stuck += 1
        else:
            n_out += 1
    pinned = np.empty(n_bad + n_stuck, np.int64)
    running = np.empty(n_run - n_stuck, np.int64)
    outside = np.empty(n_out, np.int64)
    rows = np.empty(n_rows, np.int64)
    p = 0
    for i in range(nr):
        if bad[i]:
            pinned[p] = run[i]
            p += 1
    a = b = c = 0
    for r in range(nc):
        if dlen[r] + clen[r] > 0:
            rows[c] = r
            c += 1
            if r < n_run:
                running[a] = cand[r]
                a += 1
        elif r < n_run:
            pinned[p] = cand[r]
            p += 1
        else:
            outside[b] = cand[r]
            b += 1
    nn = node_gpus.shape[0]
    free = np.empty(nn, np.int64)
    for n in range(nn):
        free[n] = node_gpus[n]
    is_open = np.empty(nn, np.bool_)
    first_t = np.empty(nn, np.float64)
    first_c = np.empty(nn, np.float64)
    for n in range(nn):
        is_open[n] = False
        first_t[n] = np.inf
        first_c[n] = 0.0
    t_left = np.empty(pinned.shape[0], np.float64)
    for i in range(pinned.shape[0]):
        t_left[i] = finish[pinned[i]] - now
    pinned_nodes_nb(pinned, nworkers, worker_node, worker_gpu, t_left, of_node, cls_rate, free,
                    is_open, first_t, first_c)
    for r in range(nc):
        cur_g[r] = max(cur_g[r], 0)
    if n_rows == 0:
        z = np.empty((0, 2), np.float64)
        return (cand, n_run, running, outside, rows, cur, cur_g, out_cls, out_g, out_t, dl, dlen,
                cl, clen, mj, free, is_open, first_t, first_c, z, np.empty((0, kmax, 2), np.float64),
                z, np.empty(0, np.float64), np.empty(0, np.float64))
    neg_delta = np.empty(nc, np.float64)
    arr_c = np.empty(nc, np.float64)
    weight_c = np.empty(nc, np.float64)
    deadline_c = np.empty(nc, np.float64)
    for r in range(nc):
        neg_delta[r] = -delta[r]
        arr_c[r] = arrival[cand[r]]
        weight_c[r] = weight[cand[r]]
        deadline_c[r] = deadline[cand[r]]
    srt = np.empty(n_rows, np.int64)
    for i in range(n_rows):
        srt[i] = rows[i]
    base = _pressure_order_nb(srt, np.empty(n_rows, np.int64), neg_delta, arr_c, cand)
    cfg_rc = np.empty((nc, kmax, 2), np.float64)
    cur_rc = np.empty((nc, 2), np.float64)
    for r in range(nc):
        j = cand[r]
        for e in range(kmax):
            cfg_rc[r, e, 0] = out_g[r, e] * cpus[j, cls_dev[out_cls[r, e]]]
            cfg_rc[r, e, 1] = out_g[r, e] * mem[j]
        cur_rc[r, 0] = cur_rc[r, 1] = 0.0
        if cur[r] >= 0:
            cur_rc[r, 0] = cur_g[r] * cpus[j, node_dev[cur[r]]]
            cur_rc[r, 1] = cur_g[r] * mem[j]
    node_rc0 = np.empty((nn, 2), np.float64)
    for n in range(nn):
        node_rc0[n, 0] = free_cpus[n]
        node_rc0[n, 1] = free_mem[n]
    for i in range(n_rows):  # np.add.at in row order
        r = rows[i]
        if cur[r] >= 0:
            node_rc0[cur[r], 0] += cur_rc[r, 0]
            node_rc0[cur[r], 1] += cur_rc[r, 1]
    return (cand, n_run, running, outside, base, cur, cur_g, out_cls, out_g, out_t, dl, dlen, cl,
            clen, mj, free, is_open, first_t, first_c, node_rc0, cfg_rc, cur_rc, weight_c,
            deadline_c)


@njit(cache=True, inline="always")
def _node_fits_nb(g, cores, mem, free_g, free_c, free_m):
    """Whether g workers, each needing ``cores`` and ``mem``, fit a node with ``free_g``
    GPUs, ``free_c`` cores and ``free_m`` memory free (the rule of
    :func:`~baselines.andreas.parts.fits_node` and ``may_fit``, on scalars)."""
    return free_g >= g and covers_nb(free_c, g * cores) and covers_nb(free_m, g * mem)


@njit(cache=True)
def start_walk_nb(jobs, nodes, gs, free_gpus, free_cpus, free_mem, gpu_owner, node_gpus, node_dev,
                  cpus, mem, out_gpus):
    """Which planned jobs start, when the plan re-plans no running job: job ``jobs[i]`` with
    ``gs[i]`` GPUs on node ``nodes[i]``, in order, each if it fits the node's free GPUs,
    cores and memory left by the starts before it (the simulator's free arrays, not
    changed: a scratch copy is taken); its GPUs are the g lowest free ids (written to
    ``out_gpus[i, :g]``). Returns a bool per job (``plan_decisions`` with nothing re-planned,
    and ``take_gpus``' arithmetic: per worker, its cores and memory taken off)."""
    nt = jobs.shape[0]
    started = np.empty(nt, np.bool_)
    may = np.empty(nt, np.bool_)
    for i in range(nt):  # before any start, as may_fit
        started[i] = False
        j, n, g = jobs[i], nodes[i], gs[i]
        d = node_dev[n]
        may[i] = _node_fits_nb(g, cpus[j, d], mem[j], free_gpus[n], free_cpus[n], free_mem[n])
    nn, gm = gpu_owner.shape
    fg = np.empty(nn, np.int64)
    fc = np.empty(nn, np.float64)
    fm = np.empty(nn, np.float64)
    own = np.empty((nn, gm), np.int64)
    for n in range(nn):
        fg[n] = free_gpus[n]
        fc[n] = free_cpus[n]
        fm[n] = free_mem[n]
        for q in range(gm):
            own[n, q] = gpu_owner[n, q]
    for i in range(nt):
        j, n, g = jobs[i], nodes[i], gs[i]
        d = node_dev[n]
        if not (may[i] and _node_fits_nb(g, cpus[j, d], mem[j], fg[n], fc[n], fm[n])):
            continue
        started[i] = True
        k = 0
        for q in range(node_gpus[n]):
            if k == g:
                break
            if own[n, q] < 0:
                out_gpus[i, k] = q
                k += 1
        for s in range(k):
            fc[n] -= cpus[j, d]
            fm[n] -= mem[j]
            fg[n] -= 1
            own[n, out_gpus[i, s]] = j
    return started
