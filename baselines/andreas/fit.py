"""Cores and memory in the ANDREAS Randomized Greedy search (docs/andreas.md, *Semantics* item 4).

The paper's construction assigns a job to a node "if it has g* free GPUs" (Algorithm 1):
in its model GPUs are a node's only scarce resource. hetgym's nodes also have cores and
memory, which the simulator enforces; so the search's binding steps take a node only if
it can host the configuration now *in the plan*: g free GPUs, g x cores and g x memory
free after the jobs the plan already put there and those it does not touch (pinned).
Without that (the configurations were only checked against an *empty* node), plans
placed jobs where they could not start, and the plan's f_OBJ counted them as running.

Resources per node are ``node_rc[n, 0]`` (cores) and ``node_rc[n, 1]`` (memory) free in
the plan; an entry e of row j needs ``cfg_rc[j, e]`` (g x per-worker demand on the class's
device). These kernels are the parts of the search that read them; nothing here reads the
simulator. Node positions and buckets are those of :mod:`baselines.andreas.bind`.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from hetgym.sim.rules import covers_nb

__all__ = ["low_bit_nb", "open_count_rc_nb", "open_nth_rc_nb", "rc_fits_nb", "rc_problem_nb",
           "unused_rc_nb"]


_DEBRUIJN = np.array([0, 1, 48, 2, 57, 49, 28, 3, 61, 58, 50, 42, 38, 29, 17, 4, 62, 55, 59, 36,
                      53, 51, 43, 22, 45, 39, 33, 30, 24, 18, 12, 5, 63, 47, 56, 27, 60, 41, 37,
                      16, 54, 35, 52, 21, 44, 32, 23, 11, 46, 26, 40, 15, 34, 20, 31, 10, 25, 14,
                      19, 9, 13, 8, 7, 6], dtype=np.int64)


@njit(cache=True, inline="always")
def low_bit_nb(x):
    """Position of the lowest set bit of the non-zero uint64 x (de Bruijn)."""
    lsb = x & (~x + np.uint64(1))
    return _DEBRUIJN[(lsb * np.uint64(0x03F79D71B4CB0A89)) >> np.uint64(58)]


@njit(cache=True, inline="always")
def rc_fits_nb(node_rc, held_rc, n, need):
    """Whether node n has the cores and memory ``need`` (2,) free beyond ``held_rc[n]``."""
    return (covers_nb(node_rc[n, 0] - held_rc[n, 0], need[0])
            and covers_nb(node_rc[n, 1] - held_rc[n, 1], need[1]))


@njit(cache=True)
def rc_problem_nb(base_order, cfg_cls, cfg_g, dl, dlen, cl, clen, cur_node, cur_g, node_cls,
                  node_free0, node_rc0, cfg_rc, cur_rc, cls_start, cls_nodes, nrow, nw):
    """What the search needs to know about cores and memory at one decision point.

    Returns ``(res_rc0, rc_all, fs, fit0)``: ``res_rc0[n]`` = cores and memory of the
    re-planned running jobs on node n (held back like their GPUs); ``rc_all`` = whether
    cores and memory can never bind in this call: every node of a class k has at least
    its free GPUs x the most any entry (or running job) of the call needs per GPU on k,
    which a placement keeps true, so a node with g free GPUs then always has the cores
    and memory of any g-GPU entry (the binding steps can skip the test and use the
    buckets as before). Otherwise (``rc_all`` False): ``fs[j, e]`` = bitset over the
    class's node positions of the nodes that can host entry e of row j at the start
    (free GPUs and cores and memory; a superset of those that can later, since a plan
    only takes resources), and ``fit0[j]`` = whether any entry of row j has such a node.
    """
    nn = node_cls.shape[0]
    nk = cls_start.shape[0] - 1
    nj = base_order.shape[0]
    res_rc0 = np.zeros((nn, 2))
    per = np.zeros((nk, 2))  # the most cores / memory per GPU of any entry on class k
    for q in range(nj):
        j = base_order[q]
        c = cur_node[j]
        if c >= 0:
            res_rc0[c, 0] += cur_rc[j, 0]
            res_rc0[c, 1] += cur_rc[j, 1]
            if node_cls[c] >= 0 and cur_g[j] > 0:
                for x in range(2):
                    per[node_cls[c], x] = max(per[node_cls[c], x], cur_rc[j, x] / cur_g[j])
        for s in range(dlen[j] + clen[j]):
            e = dl[j, s] if s < dlen[j] else cl[j, s - dlen[j]]
            k = cfg_cls[j, e]
            for x in range(2):
                if cfg_g[j, e] > 0:
                    per[k, x] = max(per[k, x], cfg_rc[j, e, x] / cfg_g[j, e])
                elif cfg_rc[j, e, x] > 0.0:  # needs cores or memory without a GPU
                    per[k, x] = np.inf
    rc_all = True
    for n in range(nn):
        k = node_cls[n]
        if k >= 0:
            for x in range(2):
                rc_all = rc_all and node_rc0[n, x] >= node_free0[n] * per[k, x]
    kmax = cfg_cls.shape[1]
    fs = np.zeros((nrow if not rc_all else 0, kmax, nw), dtype=np.uint64)
    fit0 = np.ones(nrow, dtype=np.bool_)
    if rc_all:
        return res_rc0, rc_all, fs, fit0
    for q in range(nj):
        j = base_order[q]
        any_fit = False
        for s in range(dlen[j] + clen[j]):
            e = dl[j, s] if s < dlen[j] else cl[j, s - dlen[j]]
            k = cfg_cls[j, e]
            for a in range(cls_start[k], cls_start[k + 1]):
                n = cls_nodes[a]
                if (node_free0[n] >= cfg_g[j, e] and covers_nb(node_rc0[n, 0], cfg_rc[j, e, 0])
                        and covers_nb(node_rc0[n, 1], cfg_rc[j, e, 1])):
                    p = a - cls_start[k]
                    fs[j, e, p >> 6] |= np.uint64(1) << np.uint64(p & 63)
                    any_fit = True
        fit0[j] = any_fit
    return res_rc0, rc_all, fs, fit0


@njit(cache=True, inline="always")
def _walk_nb(bits, k, f, fsw, w, base, cls_nodes, node_rc, zero_rc, need):
    """The nodes of bucket (k, f) word w that are in ``fsw`` and have ``need`` free now:
    their bits (a uint64)."""
    x = bits[k, f, w] & fsw
    out = np.uint64(0)
    while x != np.uint64(0):
        b = low_bit_nb(x)
        x &= x - np.uint64(1)
        if rc_fits_nb(node_rc, zero_rc, cls_nodes[base + w * 64 + b], need):
            out |= np.uint64(1) << np.uint64(b)
    return out


@njit(cache=True, inline="always")
def _popcount_nb(x):
    """Set bits of the uint64 x."""
    c = 0
    while x != np.uint64(0):
        x &= x - np.uint64(1)
        c += 1
    return c


@njit(cache=True, inline="always")
def open_count_rc_nb(k, g, fsj, need, ob, cls_start, cls_nodes, node_rc, zero_rc, gm, first):
    """Open nodes of class k with >= g free GPUs in the plan and the cores and memory
    ``need`` free now (nothing held back), from the open buckets ``ob`` filtered by
    ``fsj`` (the row's entry bitset, :func:`rc_problem_nb`): their count, or with
    ``first`` the first of them in best-fit order (fewest free GPUs, then position) as
    ``-2 - node`` (-1: none either way)."""
    base = cls_start[k]
    nw = ob.shape[2]
    c = 0
    for f in range(g, gm + 1):
        for w in range(nw):
            x = _walk_nb(ob, k, f, fsj[w], w, base, cls_nodes, node_rc, zero_rc, need)
            if x != np.uint64(0):
                if first:
                    return -2 - cls_nodes[base + w * 64 + low_bit_nb(x)]
                c += _popcount_nb(x)
    return c if c > 0 else -1


@njit(cache=True, inline="always")
def open_nth_rc_nb(k, g, fsj, need, ob, cls_start, cls_nodes, node_rc, zero_rc, gm, r):
    """The r-th (0-based) node of :func:`open_count_rc_nb`'s nodes in best-fit order, or -1."""
    base = cls_start[k]
    nw = ob.shape[2]
    for f in range(g, gm + 1):
        for w in range(nw):
            x = _walk_nb(ob, k, f, fsj[w], w, base, cls_nodes, node_rc, zero_rc, need)
            while x != np.uint64(0):
                if r == 0:
                    return cls_nodes[base + w * 64 + low_bit_nb(x)]
                x &= x - np.uint64(1)
                r -= 1
    return -1


@njit(cache=True, inline="always")
def unused_rc_nb(k, g, fsj, need, ub, cls_start, cls_nodes, node_rc, zero_rc):
    """Lowest-index unused node of class k with >= g free GPUs and the cores and memory
    ``need`` (nothing held back; unused buckets ``ub``, filtered by ``fsj``), or -1."""
    base = cls_start[k]
    best = -1
    for f in range(g, ub.shape[1]):
        for w in range(ub.shape[2]):
            if best >= 0 and w * 64 >= best:
                break
            x = _walk_nb(ub, k, f, fsj[w], w, base, cls_nodes, node_rc, zero_rc, need)
            if x != np.uint64(0):
                p = w * 64 + low_bit_nb(x)
                if best < 0 or p < best:
                    best = p
                break
    return -1 if best < 0 else cls_nodes[base + best]
