"""Hadar's allocation search in compiled code (Hadar on ``fitgpp-lab`` in seconds).

The same search as :meth:`baselines.hadar.parts.FindAlloc.best` (candidates *current*,
*packed*, *non-packed*; cost at the plan's prices; utility through the engine's own
rate kernel ``interfered_rate_nb``, which ``View.rate_of`` calls) and as the greedy pass
and backfill of :func:`~baselines.hadar.parts.payoff_dp` /
:func:`~baselines.hadar.parts.backfill`, with the same floating-point operations in the
same order: the plans, costs and utilities are the same to the last bit
(``tests/baselines/hadar/test_hadar_compiled.py`` compares both paths decision by decision).

Sorting is replaced by selection: the nodes of a candidate are taken one at a time as the
smallest key among those not taken yet, which is the order ``sorted`` gives (every key
ends with the node index, so no two are equal).

Arguments are grouped in tuples (built by :mod:`baselines.hadar.compiled`):

* ``st`` the plan state ``(gpu bool[N, G], nfg int64[N] free GPUs per node, cpus, mem)``,
  changed in place by a take;
* ``jb`` the job arrays ``(tput, cpus_need, mem, workers, work, remaining, arrival,
  first_start)`` of the view;
* ``nd`` ``(node_dev, cpu_node, u_min, ratio, cap, cap_cpus)`` (nodes and prices);
* ``cu`` ``(cur_pos int64[J] (-1: none), cur_nodes, cur_gpus, held_by int64[N, G])``:
  the running jobs' placements (``workers[j]`` entries from ``cur_pos[j]``) and who holds
  each GPU;
* ``opt`` ``float64[4]``: now, restart delay, sticky, normalized utility;
* ``P, ns``: the simulator's parameters and node state (the rate kernel's arguments);
* ``scr`` scratch ``(nfree int64[N], cn, ck int64[3, W] per-node counts in insertion
  order, ncnt int64[3], pn, pg int64[3, W] placements, cf float64[3, 2] cost and
  utility, kind int64[3])``.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from hetgym.sim.fastpath import interfered_rate_nb, same_pairs_nb
from hetgym.sim.rules import EPS, covers_nb, scaled_rate_nb
from hetgym.sim.rules import slots_nb as unit_slots_nb

__all__ = ["any_free_nb", "best_nb", "greedy_nb", "slots_nb", "take_nb"]

_BIG = float(1 << 20)  # a CPU node's GPU count in the slot count (no limit)
_TIE = 1e-12


@njit(cache=True, error_model="numpy")
def slots_nb(j, st, jb, nd, nfree):
    """``nfree[h]`` = workers of job ``j`` that fit on node ``h`` (GPUs, cores, memory):
    :meth:`~baselines.hadar.parts.PlanState.slots`."""
    nfg, cpus, mem = st[1], st[2], st[3]
    cpus_need, m = jb[1], jb[2][j]
    node_dev, cpu_node = nd[0], nd[1]
    for h in range(len(nfree)):
        s = _BIG if cpu_node[h] else float(nfg[h])
        need = cpus_need[j, node_dev[h]]
        if need > 0:
            f = unit_slots_nb(cpus[h], need)
            s = min(s, f)
        if m > 0:
            f = unit_slots_nb(mem[h], m)
            s = min(s, f)
        nfree[h] = np.int64(s)


@njit(cache=True)
def any_free_nb(st, nd):
    """:meth:`~baselines.hadar.parts.PlanState.any`: some GPU, or some core of a CPU node."""
    nfg, cpus, cpu_node = st[1], st[2], nd[1]
    for h in range(len(nfg)):
        if nfg[h] > 0:
            return True
    for h in range(len(nfg)):
        if cpu_node[h] and cpus[h] > EPS:
            return True
    return False


@njit(cache=True)
def take_nb(j, w, nodes, gpus, st, jb, nd):
    """:meth:`~baselines.hadar.parts.PlanState.take` in place (same subtractions, same order)."""
    gpu, nfg, cpus, mem = st
    cpus_need, m, node_dev = jb[1], jb[2][j], nd[0]
    for i in range(w):
        n, g = nodes[i], gpus[i]
        if g >= 0:
            if gpu[n, g]:
                nfg[n] -= 1
            gpu[n, g] = False
        cpus[n] -= cpus_need[j, node_dev[n]]
        mem[n] -= m


@njit(cache=True, inline="always")
def _first(key_a, key_b, h, a, b, g):
    """Whether node ``h`` with keys ``(-key_a, -key_b)`` comes before node ``g``."""
    if key_a != a:
        return key_a > a
    if key_b != b:
        return key_b > b
    return h < g


@njit(cache=True)
def _pick(j, ok, used, by_room, jb, nd, nfree, least):
    """The first node of ``ok`` not ``used`` with ``nfree >= least`` in the order
    ``(-x, -nfree, h)`` (``by_room``: ``(-nfree, -x, h)``), x = job ``j``'s speed; -1 if none."""
    tput, node_dev = jb[0], nd[0]
    best, ba, bb = -1, 0.0, 0.0
    for h in range(len(nfree)):
        if not ok[h] or used[h] or nfree[h] < least:
            continue
        x = tput[j, node_dev[h]]
        a, b = (float(nfree[h]), x) if by_room else (x, float(nfree[h]))
        if best < 0 or _first(a, b, h, ba, bb, best):
            best, ba, bb = h, a, b
    return best


@njit(cache=True)
def _fill(j, w, ok, used, by_room, jb, nd, nfree, cn, ck, c):
    """``_fill``: workers from nodes in order, each as far as it goes, until ``w``; the
    counts go to row ``c`` of ``cn``/``ck`` (insertion order); returns their number."""
    left, m = w, 0
    used[:] = False
    while left > 0:
        h = _pick(j, ok, used, by_room, jb, nd, nfree, 1)
        if h < 0:
            break
        used[h] = True
        t = min(left, nfree[h])
        cn[c, m], ck[c, m] = h, t
        m += 1
        left -= t
    return m


@njit(cache=True)
def _same_counts(cn, ck, ncnt, a, b):
    """Whether candidates ``a`` and ``b`` give the same workers per node (dict equality)."""
    if ncnt[a] != ncnt[b]:
        return False
    for s in range(ncnt[a]):
        hit = False
        for t in range(ncnt[b]):
            if cn[b, t] == cn[a, s]:
                hit = ck[b, t] == ck[a, s]
                break
        if not hit:
            return False
    return True


@njit(cache=True)
def _fits(j, w, p, st, jb, nd, cu):
    """``FindAlloc._fits``: whether the current placement (from ``cur_pos``) is still free."""
    gpu, cpus, mem = st[0], st[2], st[3]
    cpus_need, m, node_dev = jb[1], jb[2][j], nd[0]
    cn, cg = cu[1], cu[2]
    for i in range(w):
        if cg[p + i] >= 0 and not gpu[cn[p + i], cg[p + i]]:
            return False
    for i in range(w):
        n = cn[p + i]
        first = True
        for t in range(i):
            if cn[p + t] == n:
                first = False
                break
        if not first:
            continue
        c = 0.0
        for t in range(i, w):
            if cn[p + t] == n:
                c += cpus_need[j, node_dev[n]]
        k = c / max(cpus_need[j, node_dev[n]], 1e-300)
        if not (covers_nb(cpus[n], c) and covers_nb(mem[n], k * m)):
            return False
    return True


@njit(cache=True)
def _placement(j, c, st, nd, cu, scr):
    """``FindAlloc._placement`` of candidate ``c``: nodes ascending; on a node, the job's
    own GPUs, then GPUs no running job holds, then the others, lowest first."""
    gpu, cpu_node, held = st[0], nd[1], cu[3]
    cn, ck, ncnt, pn, pg = scr[1], scr[2], scr[3], scr[4], scr[5]
    i = 0
    last = -1
    for _ in range(ncnt[c]):
        t_min = -1
        for t in range(ncnt[c]):  # next node in ascending order
            if cn[c, t] > last and (t_min < 0 or cn[c, t] < cn[c, t_min]):
                t_min = t
        h, k = cn[c, t_min], ck[c, t_min]
        last = h
        if cpu_node[h]:
            for _ in range(k):
                pn[c, i], pg[c, i] = h, -1
                i += 1
            continue
        got = 0
        for key in range(3):
            for g in range(gpu.shape[1]):
                if got == k:
                    break
                if not gpu[h, g]:
                    continue
                o = held[h, g]
                if (0 if o == j else (1 if o < 0 else 2)) == key:
                    pn[c, i], pg[c, i] = h, g
                    i += 1
                    got += 1
    return i


@njit(cache=True, error_model="numpy")
def _cost(c, st, nd, scr):
    """``PriceBook.cost`` of candidate ``c``: ``sum_h k_h(gamma_h) w_h`` in insertion order."""
    nfg, cpus = st[1], st[2]
    node_dev, cpu_node, u_min, ratio, cap, cap_cpus = nd
    cn, ck, ncnt = scr[1], scr[2], scr[3]
    total = 0.0
    for t in range(ncnt[c]):
        h, k = cn[c, t], ck[c, t]
        r = node_dev[h]
        if cpu_node[h]:
            frac = (cap_cpus[h] - cpus[h]) / cap_cpus[h] if cap_cpus[h] > 0 else 1.0
        else:
            frac = (cap[h] - float(nfg[h])) / cap[h]
        total += u_min[r] * ratio[r] ** frac * k
    return total


@njit(cache=True, error_model="numpy")
def _utility(j, w, same, nodes, gpus, jb, opt, P, ns):
    """``FindAlloc.utility_of``: ``U_j`` on the placement from now."""
    tput, workers, work, remaining, arrival, first_start = jb[0], jb[3], jb[4], jb[5], jb[6], jb[7]
    rho = interfered_rate_nb(j, w, nodes, gpus, P, ns)
    if rho <= 0:
        return 0.0
    ran = not np.isnan(first_start[j])
    d = 0.0 if (same or not ran) else opt[1]
    f = opt[0] + d + remaining[j] / rho
    span = f - arrival[j]
    span = max(span, EPS)
    if opt[3] == 0:
        return work[j] / span
    t_min = work[j] / scaled_rate_nb(float(workers[j]), np.max(tput[j]), 1.0)
    return t_min / span


@njit(cache=True, error_model="numpy")
def best_nb(j, st, jb, nd, cu, opt, P, ns, scr, ok, used):
    """``FindAlloc.best``: the index (0-2) in ``scr`` of job ``j``'s chosen candidate on
    the plan state ``st`` when its payoff is positive, else -1 (``ok``, ``used``: bool[N]
    scratch)."""
    tput, workers = jb[0], jb[3]
    node_dev = nd[0]
    cur_pos, cur_nodes, cur_gpus = cu[0], cu[1], cu[2]
    nfree, cn, ck, ncnt, pn, pg, cf, kind = scr
    w = workers[j]
    slots_nb(j, st, jb, nd, nfree)
    tot = 0
    for h in range(len(nfree)):
        ok[h] = tput[j, node_dev[h]] > 0 and nfree[h] > 0
        if ok[h]:
            tot += nfree[h]
    if tot < w:
        return -1
    p = cur_pos[j] if opt[2] != 0 else -1
    nc = 0
    if p >= 0 and _fits(j, w, p, st, jb, nd, cu):
        m = 0
        for i in range(w):
            h = cur_nodes[p + i]
            pn[0, i], pg[0, i] = h, cur_gpus[p + i]
            hit = False
            for t in range(m):
                if cn[0, t] == h:
                    ck[0, t] += 1
                    hit = True
                    break
            if not hit:
                cn[0, m], ck[0, m] = h, 1
                m += 1
        ncnt[0], kind[0] = m, 0
        nc = 1
    for kd in (1, 2):
        h = -1
        if kd == 1:  # packed: the first node (in the job's order) holding the whole gang
            used[:] = False
            h = _pick(j, ok, used, False, jb, nd, nfree, w)
        if h >= 0:
            cn[nc, 0], ck[nc, 0] = h, w
            ncnt[nc] = 1
        else:
            ncnt[nc] = _fill(j, w, ok, used, kd == 1, jb, nd, nfree, cn, ck, nc)
        dup = False
        for c in range(nc):
            if _same_counts(cn, ck, ncnt, nc, c):
                dup = True
                break
        if dup:
            continue
        _placement(j, nc, st, nd, cu, scr)
        kind[nc] = kd
        nc += 1
    b = -1
    for c in range(nc):
        same = p >= 0 and same_pairs_nb(w, pn[c], pg[c], cur_nodes[p:p + w], cur_gpus[p:p + w])
        if same:
            kind[c] = 0
        cf[c, 0] = _cost(c, st, nd, scr)
        cf[c, 1] = _utility(j, w, same, pn[c, :w], pg[c, :w], jb, opt, P, ns)
        if b < 0:
            b = c
            continue
        tol = _TIE * max(1.0, abs(cf[b, 0]))
        if cf[c, 0] < cf[b, 0] - tol or (abs(cf[c, 0] - cf[b, 0]) <= tol and (
                cf[c, 1] > cf[b, 1] or (cf[c, 1] == cf[b, 1] and kind[c] < kind[b]))):
            b = c
    if cf[b, 1] - cf[b, 0] > 0:
        return b
    return -1


@njit(cache=True, error_model="numpy")
def greedy_nb(jobs, chosen, greedy, fill, st, jb, nd, cu, opt, P, ns, scr, ok, used, out):
    """The greedy pass of ``payoff_dp`` (``greedy``: jobs in order, take whenever the
    payoff is positive, stop when nothing is left) then ``backfill`` (``fill``: the jobs
    not ``chosen`` yet, in order), taking from ``st`` in place. ``out = (seq int64[Q] (the
    positions chosen, in order; returns their number), nodes, gpus int64[Q, W], cn, ck
    int64[Q, W], ncnt, kind int64[Q], cf float64[Q, 2])``."""
    seq, on, og, ocn, ock, oncnt, okind, ocf = out
    workers = jb[3]
    pn, pg = scr[4], scr[5]
    k = 0
    for pas in range(2):
        if (pas == 0 and not greedy) or (pas == 1 and not fill):
            continue
        for i in range(len(jobs)):
            if chosen[i]:
                continue
            if not any_free_nb(st, nd):
                break
            j = jobs[i]
            b = best_nb(j, st, jb, nd, cu, opt, P, ns, scr, ok, used)
            if b < 0:
                continue
            w = workers[j]
            chosen[i] = True
            seq[k] = i
            k += 1
            on[i, :w] = pn[b, :w]
            og[i, :w] = pg[b, :w]
            ocn[i] = scr[1][b]
            ock[i] = scr[2][b]
            oncnt[i] = scr[3][b]
            okind[i] = scr[7][b]
            ocf[i] = scr[6][b]
            take_nb(j, w, pn[b], pg[b], st, jb, nd)
    return k
