"""Node binding of the ANDREAS Randomized Greedy search (paper section IV, Algorithm 1;
docs/andreas.md, *Semantics* item 4): Numba kernels.

A job's configuration (class k, g GPUs) is bound to a concrete node during the
construction: (ii) an open node of the class, best fit (``_open_fit_nb``), (iii) the
lowest-index unused node of the class (``_unused_nb``), (iv) the job's other entries on
open nodes and (v) the first entry fitting an unused node of any class (``_bind_same_nb``,
``_bind_other_nb``). A node takes an entry only if it has the entry's GPUs, cores and
memory free in the plan (:mod:`baselines.andreas.fit`). The nodes of class k with f free
GPUs, open or unused, are kept as bitsets over the class's node positions (the *buckets*,
``_bucket_*``), so that a binding step costs O(G x words) instead of a scan (and a sort)
of the class's nodes; ``_any_fits_nb`` and ``_fits_now_nb`` tell at once when no node can
host a job. Randomised picks use :mod:`baselines.andreas.draws`; the search that calls
these is :mod:`baselines.andreas.kernel`.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from baselines.andreas.draws import _below_nb
from baselines.andreas.fit import low_bit_nb as _low_bit_nb
from baselines.andreas.fit import (
    open_count_rc_nb,
    open_nth_rc_nb,
    rc_fits_nb,
    unused_rc_nb,
)

__all__: list[str] = []  # the search's internals (``_bucket_*``, ``_open_fit_nb``, ``_bind_*``, ...)


# ---- node buckets: the nodes of class k with f free GPUs in the plan, open or unused, as
# bitsets over the class's node positions (ascending node index), so that the binding
# steps cost O(G x words) instead of a scan (and a sort) of the class's nodes.

@njit(cache=True, inline="always")
def _bucket_low_nb(bits, k, f):
    """Lowest node position in bucket (k, f), or -1 when empty."""
    for w in range(bits.shape[2]):
        x = bits[k, f, w]
        if x != np.uint64(0):
            return w * 64 + _low_bit_nb(x)
    return -1


@njit(cache=True, inline="always")
def _bucket_nth_nb(bits, k, f, r):
    """Position of the r-th (0-based) node of the non-empty bucket (k, f) in ascending order."""
    for w in range(bits.shape[2]):
        x = bits[k, f, w]
        while x != np.uint64(0):
            if r == 0:
                return w * 64 + _low_bit_nb(x)
            x &= x - np.uint64(1)
            r -= 1
    return -1


@njit(cache=True, inline="always")
def _bucket_flip_nb(bits, cnt, k, f, p, on):
    """Add (``on``) or remove node position p to / from bucket (k, f)."""
    w = p >> 6
    b = np.uint64(1) << np.uint64(p & 63)
    if on:
        bits[k, f, w] |= b
        cnt[k, f] += 1
    else:
        bits[k, f, w] &= ~b
        cnt[k, f] -= 1


@njit(cache=True, inline="always")
def _open_fit_nb(k, g, node_free, node_res, node_open, fast, ob, oc, cls_start, cls_nodes,
                 beta, randomised, scr, cls_free, key, ctr, j, e, rcs, held_rc):
    """Best-fit open node of class k with >= g free GPUs in the plan beyond ``node_res``
    (fewest left, lowest index on ties) and the cores and memory of entry e of row j
    beyond ``held_rc`` (``rcs`` = (cfg_rc, node_rc, rc_all, fs), :mod:`baselines.andreas.fit`);
    randomised: uniform among the first max(1, round(beta x count)) in that order (draw
    ``ctr`` of ``key``). ``cls_free[k]`` (free GPUs of the class) rejects in O(1); with
    ``fast`` (nothing held back) the open buckets ``ob`` / ``oc`` answer (filtered by
    cores and memory unless ``rc_all``), otherwise the class's nodes are scanned."""
    if cls_free[k] < g:
        return -1
    gm = oc.shape[1] - 1
    cfg_rc, node_rc, rc_all, fs = rcs
    need = cfg_rc[j, e]
    if fast and not rc_all:
        c = open_count_rc_nb(k, g, fs[j, e], need, ob, cls_start, cls_nodes, node_rc, held_rc, gm,
                             not randomised)
        if c < 0:
            return -1 if c == -1 else -2 - c
        top = 1 if c <= 1 else max(1, int(np.round(beta * c)))
        r = 0 if top == 1 else _below_nb(key, ctr, top)
        return open_nth_rc_nb(k, g, fs[j, e], need, ob, cls_start, cls_nodes, node_rc, held_rc, gm, r)
    if fast:
        c = 0
        for f in range(g, gm + 1):
            c += oc[k, f]
        if c == 0:
            return -1
        top = 1 if not randomised or c <= 1 else max(1, int(np.round(beta * c)))
        r = 0 if top == 1 else _below_nb(key, ctr, top)
        for f in range(g, gm + 1):
            if r < oc[k, f]:
                return cls_nodes[cls_start[k] + _bucket_nth_nb(ob, k, f, r)]
            r -= oc[k, f]
        return -1
    c = 0
    for p in range(cls_start[k], cls_start[k + 1]):
        n = cls_nodes[p]
        if node_open[n] and node_free[n] - node_res[n] >= g and rc_fits_nb(node_rc, held_rc, n, need):
            scr[c] = n
            c += 1
    if c == 0:
        return -1
    top = 1 if not randomised or c <= 1 else max(1, int(np.round(beta * c)))
    # order the candidates by (free, node) ascending (insertion sort; ascending nodes already)
    for a in range(1, c):
        x = scr[a]
        b = a
        while b > 0 and node_free[scr[b - 1]] > node_free[x]:
            scr[b] = scr[b - 1]
            b -= 1
        scr[b] = x
    return scr[0] if top == 1 else scr[_below_nb(key, ctr, top)]


@njit(cache=True, inline="always")
def _unused_nb(k, g, node_free, node_res, node_open, fast, ub, cls_start, cls_nodes, cls_free,
               j, e, rcs, held_rc):
    """Lowest-index unused (not open) node of class k with >= g free GPUs beyond
    ``node_res`` and the cores and memory of entry e of row j beyond ``held_rc`` (as
    :func:`_open_fit_nb`), or -1 (``fast``: from the unused buckets ``ub``)."""
    if cls_free[k] < g:
        return -1
    cfg_rc, node_rc, rc_all, fs = rcs
    need = cfg_rc[j, e]
    if fast and not rc_all:
        return unused_rc_nb(k, g, fs[j, e], need, ub, cls_start, cls_nodes, node_rc, held_rc)
    if fast:
        best = -1
        for f in range(g, ub.shape[1]):
            p = _bucket_low_nb(ub, k, f)
            if p >= 0 and (best < 0 or p < best):
                best = p
        return -1 if best < 0 else cls_nodes[cls_start[k] + best]
    for p in range(cls_start[k], cls_start[k + 1]):
        n = cls_nodes[p]
        if not node_open[n] and node_free[n] - node_res[n] >= g and rc_fits_nb(node_rc, held_rc, n, need):
            return n
    return -1


@njit(cache=True, inline="always")
def _bind_same_nb(j, e, cfg_cls, cfg_g, node_free, node_res, node_open, fast, ob, oc, ub,
                  cls_start, cls_nodes, beta, rnd, scr, cls_free, key, ctr, rcs, held_rc):
    """Steps (ii) an open node of the class, best fit, (iii) the lowest-index unused node of
    the class, for entry e of job row j; the node or -1. ``node_res`` holds GPUs back;
    a randomised open-node pick uses draw ``ctr`` of ``key``."""
    k = cfg_cls[j, e]
    g = cfg_g[j, e]
    n = _open_fit_nb(k, g, node_free, node_res, node_open, fast, ob, oc, cls_start, cls_nodes,
                     beta, rnd, scr, cls_free, key, ctr, j, e, rcs, held_rc)
    if n >= 0:
        return n
    return _unused_nb(k, g, node_free, node_res, node_open, fast, ub, cls_start, cls_nodes, cls_free,
                      j, e, rcs, held_rc)


@njit(cache=True)
def _bind_other_nb(j, e, cfg_cls, cfg_g, dl, dlen, cl, clen, node_free, node_res, node_open,
                   fast, ob, oc, ub, cls_start, cls_nodes, scr, cls_free, rcs, held_rc):
    """Steps (iv) ASSIGN_TO_SUBOPTIMAL (the other entries, D* by cost then D*^C by time, on
    open nodes, best fit) and (v) (assumption *node classes and binding*: the first entry
    fitting an unused node of any class); returns (node, entry) or (-1, e)."""
    for s in range(dlen[j] + clen[j]):
        e2 = dl[j, s] if s < dlen[j] else cl[j, s - dlen[j]]
        if e2 == e:
            continue
        n = _open_fit_nb(cfg_cls[j, e2], cfg_g[j, e2], node_free, node_res, node_open, fast, ob,
                         oc, cls_start, cls_nodes, 0.0, False, scr, cls_free, np.uint64(0), 0, j, e2,
                         rcs, held_rc)
        if n >= 0:
            return n, e2
    for s in range(dlen[j] + clen[j]):
        e2 = dl[j, s] if s < dlen[j] else cl[j, s - dlen[j]]
        n = _unused_nb(cfg_cls[j, e2], cfg_g[j, e2], node_free, node_res, node_open, fast, ub,
                       cls_start, cls_nodes, cls_free, j, e2, rcs, held_rc)
        if n >= 0:
            return n, e2
    return -1, e


@njit(cache=True, inline="always")
def _any_fits_nb(j, gmin, maxfree):
    """Whether some entry of job row j has a node with enough free GPUs: ``gmin[j, k]``
    (fewest GPUs of its entries of class k) <= ``maxfree[k]`` (the most free GPUs on one
    node of class k in the plan) for some class k."""
    for k in range(maxfree.shape[0]):
        if maxfree[k] >= gmin[j, k]:
            return True
    return False


@njit(cache=True)
def _fits_now_nb(j, dl, dlen, cl, clen, cfg_cls, cfg_g, cfg_rc, fs, tb, cls_start, cls_nodes,
                 node_free, node_rc, zero_rc):
    """Whether some entry e of job row j has a node that can host it now (its GPUs, cores
    and memory free in the plan, nothing held back), where no running job is re-planned
    so that an iteration only takes from nodes: a node of ``fs[j, e]`` (those that could
    at the start) the iteration has not touched (``tb``: bitsets of touched positions per
    class) still can; a touched one is tested. False: steps (ii)-(v) would fail."""
    ne = dlen[j] + clen[j]
    for s in range(ne):
        e = dl[j, s] if s < dlen[j] else cl[j, s - dlen[j]]
        k = cfg_cls[j, e]
        for w in range(tb.shape[1]):
            if fs[j, e, w] & ~tb[k, w] != np.uint64(0):
                return True
    for s in range(ne):
        e = dl[j, s] if s < dlen[j] else cl[j, s - dlen[j]]
        k = cfg_cls[j, e]
        for w in range(tb.shape[1]):
            x = fs[j, e, w] & tb[k, w]
            while x != np.uint64(0):
                n = cls_nodes[cls_start[k] + w * 64 + _low_bit_nb(x)]
                x &= x - np.uint64(1)
                if node_free[n] >= cfg_g[j, e] and rc_fits_nb(node_rc, zero_rc, n, cfg_rc[j, e]):
                    return True
    return False
