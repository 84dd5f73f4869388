"""The problem of one ANDREAS Randomized Greedy search call (paper section IV, Algorithm 1;
docs/andreas.md): a Numba kernel.

``_problem_nb`` builds once per call what every iteration of the search reads (and never
writes): the swap thresholds of assumption *swap rule*
(:func:`~baselines.andreas.draws.threshold_nb`), the GPUs held back for running jobs, per class
the free GPUs and the most on one node, the node buckets at the start
(:mod:`baselines.andreas.bind`), the postponement costs, the pruning bounds (``_node_lb_nb``: a
lower bound of a node's energy term in f_OBJ, Eq. 1) and the cores and memory tables
(:func:`~baselines.andreas.fit.rc_problem_nb`). The search is :mod:`baselines.andreas.kernel`.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from baselines.andreas.bind import _bucket_flip_nb
from baselines.andreas.draws import threshold_nb
from baselines.andreas.fit import rc_problem_nb

__all__: list[str] = []  # the search's internals (``_problem_nb``, ``_node_lb_nb``)


@njit(cache=True, inline="always")
def _node_lb_nb(is_open, ft, fc, free, k, cmin):
    """A lower bound of a node's final energy term in f_OBJ: 0 unless it is open with a
    first-ending job; then min(that job's cost ``fc``, ``cmin[k, free]``) (a job placed
    later either ends later, and the term stays, or ends first and costs at least the
    cheapest entry of class k with at most ``free`` GPUs, ``cmin[k, free]``)."""
    if not is_open or ft == np.inf or k < 0:
        return 0.0
    return min(fc, cmin[k, free])



@njit(cache=True)
def _problem_nb(base_order, weight, deadline, cfg_cls, cfg_g, cfg_t, dl, dlen, cl, clen, mj,
                cur_node, cur_g, node_cls, node_free0, node_open0, first_t0, first_c0, node_rc0, cfg_rc,
                cur_rc, cls_start, cls_nodes, cls_rate, now, horizon_h, rho, pi, nrow):
    """What every iteration of one search reads: the swap thresholds, the GPUs held back for
    running jobs (``res0``), per class the free GPUs and the most on one node, the node
    buckets at the start, the postponement costs and the pruning bounds (see
    :func:`rg_search_nb`); a tuple, read-only for the iterations."""
    nj = base_order.shape[0]
    nn = node_cls.shape[0]
    nk = cls_start.shape[0] - 1
    thr_gt = threshold_nb(0.5 - pi)  # the swap rule's probabilities (_swap_p_nb)
    thr_lt = threshold_nb(0.5 + pi)
    thr_eq = threshold_nb(0.5)
    res0 = np.zeros(nn, dtype=np.int64)
    res_total0 = 0
    for q in range(nj):
        c = cur_node[base_order[q]]
        if c >= 0:
            res0[c] += cur_g[base_order[q]]
            res_total0 += cur_g[base_order[q]]
    cls_free0 = np.zeros(nk, dtype=np.int64)
    gm = 0
    for n in range(nn):
        if node_cls[n] >= 0:
            cls_free0[node_cls[n]] += node_free0[n]
            gm = max(gm, node_free0[n])
    width = 1
    for k in range(nk):
        width = max(width, cls_start[k + 1] - cls_start[k])
    nw = (width + 63) // 64
    pos = np.zeros(nn, dtype=np.int64)
    ob = np.zeros((nk, gm + 1, nw), dtype=np.uint64)
    oc = np.zeros((nk, gm + 1), dtype=np.int64)
    ub = np.zeros((nk, gm + 1, nw), dtype=np.uint64)
    uc = np.zeros((nk, gm + 1), dtype=np.int64)
    for k in range(nk):
        for a in range(cls_start[k], cls_start[k + 1]):
            n = cls_nodes[a]
            pos[n] = a - cls_start[k]
            if node_open0[n]:
                _bucket_flip_nb(ob, oc, k, node_free0[n], pos[n], True)
            else:
                _bucket_flip_nb(ub, uc, k, node_free0[n], pos[n], True)
    maxfree0 = np.zeros(nk, dtype=np.int64)  # most free GPUs on one node of the class
    for n in range(nn):
        if node_cls[n] >= 0:
            maxfree0[node_cls[n]] = max(maxfree0[node_cls[n]], node_free0[n])
    # per job: the cost of postponing it (``pj``), the fewest GPUs of its entries per class
    # (``gmin``; ``gall``: over all jobs), and for pruning lower bounds of f_OBJ: per job
    # (placed: tardiness at its fastest entry; postponed: rho x that or more) and per node
    # (``cmin[k, f]``: the cheapest first-job cost an entry of class k with at most f GPUs
    # can bring)
    big = 1 << 62
    gmin = np.full((nrow, nk), big, dtype=np.int64)
    gall = np.full(nk, big, dtype=np.int64)
    pj = np.zeros(nrow)
    npos = 0
    lbj = np.zeros(nrow)
    cmin = np.full((nk, gm + 1), np.inf)
    total_lb = 0.0
    term = 0.0
    for q in range(nj):
        j = base_order[q]
        tmin = np.inf
        for s in range(dlen[j] + clen[j]):
            e = dl[j, s] if s < dlen[j] else cl[j, s - dlen[j]]
            k = cfg_cls[j, e]
            tmin = min(tmin, cfg_t[j, e])
            cost = cfg_t[j, e] * cls_rate[k, cfg_g[j, e]]
            term = max(term, cost)  # every energy term is a job's cost
            if cfg_g[j, e] <= gm:
                cmin[k, cfg_g[j, e]] = min(cmin[k, cfg_g[j, e]], cost)
            gmin[j, k] = min(gmin[j, k], cfg_g[j, e])
            gall[k] = min(gall[k], cfg_g[j, e])
        late = now + horizon_h + mj[j] - deadline[j]
        if late > 0.0:
            pj[j] = rho * weight[j] * late
            npos += 1
        late = now + tmin - deadline[j]
        if late > 0.0:
            lbj[j] = min(1.0, rho) * weight[j] * late
            total_lb += lbj[j]
    for k in range(nk):
        for f in range(1, gm + 1):
            cmin[k, f] = min(cmin[k, f], cmin[k, f - 1])
    e_lb0 = 0.0
    for n in range(nn):
        if node_open0[n] and first_t0[n] < np.inf:
            term = max(term, first_c0[n])
        e_lb0 += _node_lb_nb(node_open0[n], first_t0[n], first_c0[n], node_free0[n], node_cls[n], cmin)
    scale = total_lb + (2 * nj + nn) * term
    res_rc0, rc_all, fs, fit0 = rc_problem_nb(base_order, cfg_cls, cfg_g, dl, dlen, cl, clen, cur_node,
                                              cur_g, node_cls, node_free0, node_rc0, cfg_rc, cur_rc,
                                              cls_start, cls_nodes, nrow, nw)
    return (thr_gt, thr_lt, thr_eq, res0, res_total0, cls_free0, maxfree0, pos, gmin, gall, pj, npos,
            lbj, total_lb, cmin, e_lb0, scale, ob, oc, ub, uc, cfg_rc, cur_rc, node_rc0, res_rc0, rc_all,
            fs, fit0)
