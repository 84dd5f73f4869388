"""Compiled core of :meth:`baselines.topo.parts.SubsetSearch.best` (TOPO-AWARE's search).

The same search as the Python definition (``SubsetSearch.best_grouped``), with the
same floating-point operations in the same order, so that every candidate's utilities,
and hence every choice, are the same bits:

* :func:`reps_nb`: the nodes where job ``j``'s gang fits (:func:`~baselines.topo.parts.fit_mask`'s
  test), one per look-alike group (node class, then the free flags, the neighbours'
  ``press``/``sens`` and which GPUs share an owner; the lowest index of each group);
* :func:`scan_nb`: every ``w``-subset of each such node's free GPUs, in
  ``itertools.combinations`` order, node by node; the candidate of highest system
  utility, a later one replacing it only when better by more than 1e-12;
* :func:`best_flat_nb`: both in one call when interference costs nothing (``kappa = 0``:
  every ``n_I`` and ``n_I'`` is the floor ``MIN_COST``);
* :func:`bounds_nb`: ``(t_min, t_max)`` of every node and gang size (assumption
  *normalisation*), once a run.

Interference with ``kappa != 0`` sums over a Python set (its order is the set's), so
the caller computes it in Python per node and socket set and passes the tables
``n_int[k, mask]`` / ``n_sys[k, mask]`` (``mask``: the sockets the subset touches, one bit
each) for the ``k``-th node of the scan.

``params`` (float64[8]): ``w_cc, w_int, w_frag, e_cc, e_int, num_sys, num_job, min_cost``
with ``e_* = w_* (1 + 1/2)`` and ``num_sys = 3 MIN^(1/3)``, ``num_job = 2 MIN^(1/2)``
computed in Python as :class:`~baselines.topo.parts.UtilityModel` does.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from hetgym.sim.rules import covers_nb

__all__ = ["best_flat_nb", "bounds_nb", "reps_nb", "scan_nb", "utilities_nb"]

_TIE = 1e-12


@njit(cache=True)
def _next_combo(idx: np.ndarray, w: int, nf: int) -> bool:
    """Advance ``idx[:w]`` (positions in 0..nf-1, increasing) to the next combination in
    lexicographic order; False after the last."""
    i = w - 1
    while i >= 0 and idx[i] == nf - w + i:
        i -= 1
    if i < 0:
        return False
    idx[i] += 1
    for k in range(i + 1, w):
        idx[k] = idx[k - 1] + 1
    return True


@njit(cache=True)
def _comm(cost: np.ndarray, gpus: np.ndarray, w: int) -> float:
    """t(g): pairwise level costs summed in ``itertools.combinations(g, 2)`` order."""
    t = 0.0
    for a in range(w):
        for b in range(a + 1, w):
            t += cost[gpus[a], gpus[b]]
    return t


@njit(cache=True)
def bounds_nb(cost: np.ndarray, node_gpus: np.ndarray, lo: np.ndarray, hi: np.ndarray) -> None:
    """``lo[n, w]``, ``hi[n, w]``: least and largest :func:`_comm` over every ``w``-subset
    of node ``n``'s GPUs (``w >= 2``; ``cost[n]`` = level costs of its GPU pairs)."""
    idx = np.empty(cost.shape[1], dtype=np.int64)
    for n in range(len(node_gpus)):
        g = node_gpus[n]
        for w in range(2, g + 1):
            for k in range(w):
                idx[k] = k
            first = True
            while True:
                t = _comm(cost[n], idx, w)
                if first or t < lo[n, w]:
                    lo[n, w] = t
                if first or t > hi[n, w]:
                    hi[n, w] = t
                first = False
                if not _next_combo(idx, w, g):
                    break


@njit(cache=True)
def reps_nb(w: int, tput_j: np.ndarray, cpus_j: np.ndarray, mem_j: float,
            node_device: np.ndarray, dev_is_cpu: np.ndarray, node_gpus: np.ndarray,
            cls: np.ndarray, free_gpus: np.ndarray, free_cpus: np.ndarray,
            free_mem: np.ndarray, owner: np.ndarray, press: np.ndarray, sens: np.ndarray,
            out: np.ndarray) -> int:
    """Write into ``out`` the nodes (ascending) where the gang fits, the first of each
    look-alike group of a class ``cls``; return how many."""
    k = 0
    for n in range(len(node_gpus)):
        d = node_device[n]
        if not (free_gpus[n] >= w and tput_j[d] > 0 and not dev_is_cpu[d]
                and covers_nb(free_cpus[n], w * cpus_j[d]) and covers_nb(free_mem[n], w * mem_j)):
            continue
        g = node_gpus[n]
        dup = False
        for r in range(k):
            m = out[r]
            if cls[m] == cls[n] and _alike(owner[n], owner[m], g, press, sens):
                dup = True
                break
        if not dup:
            out[k] = n
            k += 1
    return k


@njit(cache=True)
def _alike(a: np.ndarray, b: np.ndarray, g: int, press: np.ndarray, sens: np.ndarray) -> bool:
    """Whether two nodes' GPU owners look alike: per GPU the owner's ``press`` and
    ``sens`` (-1 when free) and the first GPU of the same owner."""
    for h in range(g):
        oa, ob = a[h], b[h]
        pa = press[oa] if oa >= 0 else -1.0
        pb = press[ob] if ob >= 0 else -1.0
        sa = sens[oa] if oa >= 0 else -1.0
        sb = sens[ob] if ob >= 0 else -1.0
        if pa != pb or sa != sb or _first(a, oa) != _first(b, ob):
            return False
    return True


@njit(cache=True)
def _first(own: np.ndarray, o: int) -> int:
    """The first GPU whose owner is ``o`` (-1: free)."""
    h = 0
    while own[h] != o:
        h += 1
    return h


@njit(cache=True)
def _slot(a: np.ndarray, k: int, x: int) -> int:
    """The position of ``x`` in ``a[:k]``, or -1."""
    for i in range(k):
        if a[i] == x:
            return i
    return -1


@njit(cache=True)
def utilities_nb(n_cc: float, n_int: float, n_sys: float, n_frag: float,
                 params: np.ndarray) -> tuple[float, float]:
    """(system utility, job utility): :class:`~baselines.topo.parts.UtilityModel`'s
    formulas, operation by operation."""
    cost_sys = n_cc ** params[0] + n_sys ** params[1] + n_frag ** params[2]
    cost_job = n_cc ** params[3] + n_int ** params[4]
    return params[5] / cost_sys, params[6] / cost_job


@njit(cache=True)
def scan_nb(nodes: np.ndarray, w: int, owner: np.ndarray, node_gpus: np.ndarray,
            socket: np.ndarray, cost: np.ndarray, lo: np.ndarray, hi: np.ndarray,
            n_int: np.ndarray, n_sys: np.ndarray, flat: bool, params: np.ndarray,
            out_gpus: np.ndarray) -> tuple[int, float, float]:
    """The best ``w``-subset over ``nodes`` in order: ``(node, u_sys, u_job)`` with its
    GPUs in ``out_gpus[:w]``, node -1 if none. ``n_int[k, mask]``, ``n_sys[k, mask]``:
    interference costs on the ``k``-th node (unused when ``flat``: all ``MIN``)."""
    mc = params[7]
    best_n, best_sys, best_job = -1, 0.0, 0.0
    g_max = owner.shape[1]
    free = np.empty(g_max, dtype=np.int64)
    idx = np.empty(g_max, dtype=np.int64)
    gpus = np.empty(g_max, dtype=np.int64)
    order = np.empty(g_max, dtype=np.int64)  # sockets in order of first appearance
    total = np.zeros(g_max + 1, dtype=np.int64)
    nfree = np.zeros(g_max + 1, dtype=np.int64)
    taken = np.zeros(g_max + 1, dtype=np.int64)
    for k in range(len(nodes)):
        n = nodes[k]
        g = node_gpus[n]
        own = owner[n]
        sock = socket[n]
        ns = 0
        nf = 0
        for h in range(g):
            p = _slot(order, ns, sock[h])
            if p < 0:
                p = ns
                order[p] = sock[h]
                total[p] = 0
                nfree[p] = 0
                ns += 1
            total[p] += 1
            if own[h] < 0:
                nfree[p] += 1
                free[nf] = h
                nf += 1
        if nf < w:
            continue
        for i in range(w):
            idx[i] = i
        while True:
            mask = 0
            for i in range(ns):
                taken[i] = 0
            for i in range(w):
                h = free[idx[i]]
                gpus[i] = h
                mask |= 1 << sock[h]
                taken[_slot(order, ns, sock[h])] += 1
            frag = 0.0
            for i in range(ns):
                frag += (nfree[i] - taken[i]) / total[i]
            frag = frag / ns
            n_frag = mc if (frag == 0.0 or frag == 1.0) else frag
            cc = mc
            if w > 1 and hi[n, w] > lo[n, w]:
                x = (_comm(cost[n], gpus, w) - lo[n, w]) / (hi[n, w] - lo[n, w])
                # as Python's max(MIN, x) then min(1.0, y): which side wins a comparison
                y = x if x > mc else mc  # noqa: FURB136
                cc = y if y < 1.0 else 1.0  # noqa: FURB136
            if flat:
                u_sys, u_job = utilities_nb(cc, mc, mc, n_frag, params)
            else:
                u_sys, u_job = utilities_nb(cc, n_int[k, mask], n_sys[k, mask], n_frag, params)
            if best_n < 0 or u_sys > best_sys + _TIE:
                best_n, best_sys, best_job = n, u_sys, u_job
                out_gpus[:w] = gpus[:w]
            if not _next_combo(idx, w, nf):
                break
    return best_n, best_sys, best_job


@njit(cache=True)
def best_flat_nb(w: int, tput_j: np.ndarray, cpus_j: np.ndarray, mem_j: float,
                 node_device: np.ndarray, dev_is_cpu: np.ndarray, node_gpus: np.ndarray,
                 cls: np.ndarray, free_gpus: np.ndarray, free_cpus: np.ndarray,
                 free_mem: np.ndarray, owner: np.ndarray, press: np.ndarray,
                 sens: np.ndarray, socket: np.ndarray, cost: np.ndarray, lo: np.ndarray,
                 hi: np.ndarray, params: np.ndarray, nodes: np.ndarray,
                 out_gpus: np.ndarray) -> tuple[int, float, float]:
    """:func:`reps_nb` then :func:`scan_nb` with no interference cost (``kappa = 0``)."""
    k = reps_nb(w, tput_j, cpus_j, mem_j, node_device, dev_is_cpu, node_gpus, cls, free_gpus,
                free_cpus, free_mem, owner, press, sens, nodes)
    none = np.empty((0, 0))
    return scan_nb(nodes[:k], w, owner, node_gpus, socket, cost, lo, hi, none, none, True,
                   params, out_gpus)
