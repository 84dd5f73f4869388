"""The ANDREAS Randomized Greedy search as it was before node buckets (main at b918e40):
every binding step scans (and, randomised, sorts) the open nodes of a class. Kept as the
reference that ``tests/baselines/test_andreas_kernel.py`` checks
:func:`baselines.andreas_kernel.rg_search_nb` against (same plans, same draws)."""

from __future__ import annotations

import numpy as np
from numba import njit

from baselines.andreas_kernel import _pick_nb, swap_pass_nb

__all__ = ["rg_search_ref_nb"]


@njit(cache=True)
def _open_fit_nb(k, g, node_free, node_res, open_list, open_cnt, beta, randomised, scr, cls_free):
    """Best-fit open node of class k (``open_list[k, :open_cnt[k]]``) with >= g free GPUs in
    the plan beyond ``node_res`` (fewest left, lowest index on ties); randomised: uniform
    among the first max(1, round(beta x count)). ``cls_free[k]`` (free GPUs of the class)
    rejects in O(1)."""
    if cls_free[k] < g:
        return -1
    c = 0
    for p in range(open_cnt[k]):
        n = open_list[k, p]
        if node_free[n] - node_res[n] >= g:
            scr[c] = n
            c += 1
    if c == 0:
        return -1
    top = 1 if not randomised or c <= 1 else max(1, int(np.round(beta * c)))
    if top == 1:  # the best fit: fewest GPUs left, lowest index on ties
        b = scr[0]
        for a in range(1, c):
            x = scr[a]
            if node_free[x] < node_free[b] or (node_free[x] == node_free[b] and x < b):
                b = x
        return b
    # order the candidates by (free, node) ascending (insertion sort) and draw among the top
    for a in range(1, c):
        x = scr[a]
        b = a
        while b > 0 and (node_free[scr[b - 1]] > node_free[x]
                         or (node_free[scr[b - 1]] == node_free[x] and scr[b - 1] > x)):
            scr[b] = scr[b - 1]
            b -= 1
        scr[b] = x
    return scr[np.random.randint(0, top)]


@njit(cache=True)
def _unused_nb(k, g, node_free, node_res, node_open, cls_start, cls_nodes, cls_free):
    """Lowest-index unused (not open) node of class k with >= g free GPUs beyond
    ``node_res``, or -1."""
    if cls_free[k] < g:
        return -1
    for p in range(cls_start[k], cls_start[k + 1]):
        n = cls_nodes[p]
        if not node_open[n] and node_free[n] - node_res[n] >= g:
            return n
    return -1


@njit(cache=True)
def _bind_same_nb(j, e, cfg_cls, cfg_g, node_free, node_res, node_open, cls_start, cls_nodes,
                  open_list, open_cnt, beta, rnd, scr, cls_free):
    """Steps (ii) an open node of the class, best fit, (iii) the lowest-index unused node of
    the class, for entry e of job row j; the node or -1. ``node_res`` holds GPUs back."""
    k = cfg_cls[j, e]
    g = cfg_g[j, e]
    n = _open_fit_nb(k, g, node_free, node_res, open_list, open_cnt, beta, rnd, scr, cls_free)
    if n >= 0:
        return n
    return _unused_nb(k, g, node_free, node_res, node_open, cls_start, cls_nodes, cls_free)


@njit(cache=True)
def _bind_other_nb(j, e, cfg_cls, cfg_g, dl, dlen, cl, clen, node_free, node_res, node_open,
                   cls_start, cls_nodes, open_list, open_cnt, scr, cls_free):
    """Steps (iv) ASSIGN_TO_SUBOPTIMAL (the other entries, D* by cost then D*^C by time, on
    open nodes, best fit) and (v) (A-A4: the first entry fitting an unused node of any
    class); returns (node, entry) or (-1, e)."""
    for s in range(dlen[j] + clen[j]):
        e2 = dl[j, s] if s < dlen[j] else cl[j, s - dlen[j]]
        if e2 == e:
            continue
        n = _open_fit_nb(cfg_cls[j, e2], cfg_g[j, e2], node_free, node_res, open_list, open_cnt,
                         0.0, False, scr, cls_free)
        if n >= 0:
            return n, e2
    for s in range(dlen[j] + clen[j]):
        e2 = dl[j, s] if s < dlen[j] else cl[j, s - dlen[j]]
        n = _unused_nb(cfg_cls[j, e2], cfg_g[j, e2], node_free, node_res, node_open, cls_start,
                       cls_nodes, cls_free)
        if n >= 0:
            return n, e2
    return -1, e


@njit(cache=True)
def rg_search_ref_nb(base_order, weight, deadline, cfg_cls, cfg_g, cfg_t, dl, dlen, cl, clen, mj,
                 cur_node, cur_g, node_cls, node_free0, node_open0, first_t0, first_c0, cls_start,
                 cls_nodes, cls_rate, now, horizon_h, rho, alpha, beta, pi, max_iter, seed,
                 out_node, out_cfg):
    """Algorithm 1 of the paper with the assignment rules of spec 4.1 step 4 (c).

    A-A5 (a running job keeps its node when its configuration still fits there) is
    upheld against jobs placed before it: the GPUs of running jobs (``cur_node``,
    ``cur_g``) are held back until their own turn: steps (ii)-(v) first bind a job around
    them (another node, or another configuration), and only when nothing fits that way
    again on every free GPU, displacing a running job.

    Iteration 0 is the deterministic greedy (``base_order`` = pressure descending, first
    entry of D* else of D*^C, best-fit node); iterations 1 .. max_iter - 1 randomise
    the order (:func:`swap_pass_nb`), the configuration (uniform among the first
    ``round(alpha x |list|)``) and the open node (``beta``). Each plan is scored by the
    proxy objective f_OBJ (Eq. 1) and the best is kept (ties: the earlier iteration).
    Nodes start with ``node_free0`` free GPUs, ``node_open0`` and a first-ending job of
    duration ``first_t0`` and cost ``first_c0`` (EUR) for jobs the plan does not move.
    ``base_order`` holds row indices of the job arrays (rows not in it stay -1). Writes
    the best plan (``out_node[i]`` = node or -1 postponed, ``out_cfg[i]`` = entry of row
    i's configurations) and returns its f_OBJ (EUR).
    """
    np.random.seed(seed)
    nj = base_order.shape[0]
    nrow = out_node.shape[0]
    nn = node_cls.shape[0]
    order = np.empty(nj, dtype=np.int64)
    node_free = np.empty(nn, dtype=np.int64)
    node_open = np.empty(nn, dtype=np.bool_)
    first_t = np.empty(nn)
    first_c = np.empty(nn)
    plan_node = np.full(nrow, -1, dtype=np.int64)
    plan_cfg = np.full(nrow, -1, dtype=np.int64)
    scr = np.empty(nn, dtype=np.int64)
    node_res = np.zeros(nn, dtype=np.int64)
    zero = np.zeros(nn, dtype=np.int64)
    nk = cls_start.shape[0] - 1
    cls_free0 = np.zeros(nk, dtype=np.int64)
    for n in range(nn):
        if node_cls[n] >= 0:
            cls_free0[node_cls[n]] += node_free0[n]
    cls_free = np.empty(nk, dtype=np.int64)
    width = 1
    for k in range(nk):
        width = max(width, cls_start[k + 1] - cls_start[k])
    open_list = np.empty((nk, width), dtype=np.int64)
    open_cnt0 = np.zeros(nk, dtype=np.int64)
    for p in range(cls_nodes.shape[0]):  # nodes open from the start (pinned jobs), ascending
        n = cls_nodes[p]
        if node_open0[n]:
            k = node_cls[n]
            open_list[k, open_cnt0[k]] = n
            open_cnt0[k] += 1
    open_cnt = np.empty(nk, dtype=np.int64)
    best = np.inf
    for i in range(nrow):
        out_node[i] = -1
        out_cfg[i] = -1
    for it in range(max_iter):
        rnd = it > 0
        order[:] = base_order
        if rnd:
            swap_pass_nb(order, weight, pi)
        node_free[:] = node_free0
        node_open[:] = node_open0
        node_res[:] = 0
        cls_free[:] = cls_free0
        open_cnt[:] = open_cnt0
        for q in range(nj):
            c = cur_node[base_order[q]]
            if c >= 0:
                node_res[c] += cur_g[base_order[q]]
        first_t[:] = first_t0
        first_c[:] = first_c0
        f = 0.0
        free_total = 0
        for n in range(nn):
            free_total += node_free[n]
        for q in range(nj):
            j = order[q]
            plan_node[j] = -1
            plan_cfg[j] = -1
            if free_total == 0:  # the plan has no GPU left: every job from here is postponed
                late = now + horizon_h + mj[j] - deadline[j]
                if late > 0.0:
                    f += rho * weight[j] * late
                continue
            if dlen[j] > 0:
                e = dl[j, _pick_nb(dlen[j], alpha, rnd)]
            elif clen[j] > 0:
                e = cl[j, _pick_nb(clen[j], alpha, rnd)]
            else:
                continue
            k = cfg_cls[j, e]
            g = cfg_g[j, e]
            n = -1
            c = cur_node[j]
            if c >= 0:
                node_res[c] -= cur_g[j]  # its turn: the job's own GPUs are no longer held back
                if node_cls[c] == k and node_free[c] >= g:  # (i) stay (A-A5)
                    n = c
            # (ii)-(v) first on GPUs not held back for running jobs still to come, then
            # (ii)-(v) again on every free GPU (a running job may be displaced)
            for pas in range(2):
                if n >= 0:
                    break
                held = node_res if pas == 0 else zero
                n = _bind_same_nb(j, e, cfg_cls, cfg_g, node_free, held, node_open, cls_start,
                                  cls_nodes, open_list, open_cnt, beta, rnd, scr, cls_free)
                if n < 0:
                    n, e = _bind_other_nb(j, e, cfg_cls, cfg_g, dl, dlen, cl, clen, node_free,
                                          held, node_open, cls_start, cls_nodes, open_list,
                                          open_cnt, scr, cls_free)
            if n < 0:  # (vi) postpone
                late = now + horizon_h + mj[j] - deadline[j]
                if late > 0.0:
                    f += rho * weight[j] * late
                continue
            g = cfg_g[j, e]
            t = cfg_t[j, e]
            plan_node[j] = n
            plan_cfg[j] = e
            node_free[n] -= g
            cls_free[node_cls[n]] -= g
            free_total -= g
            if not node_open[n]:
                k = node_cls[n]
                open_list[k, open_cnt[k]] = n
                open_cnt[k] += 1
            node_open[n] = True
            late = now + t - deadline[j]
            if late > 0.0:
                f += weight[j] * late
            if t < first_t[n]:
                first_t[n] = t
                first_c[n] = t * cls_rate[node_cls[n], g]
        for n in range(nn):
            if node_open[n] and first_t[n] < np.inf:
                f += first_c[n]
        if f < best:
            best = f
            out_node[:] = plan_node
            out_cfg[:] = plan_cfg
    return best
