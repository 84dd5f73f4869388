"""Numba kernels of the ANDREAS baselines (spec 4.1; paper section IV): the configuration
table of one decision point and the Randomized Greedy search.

Configurations are enumerated per *node class* (nodes of one GPU type, GPU count, cores,
memory and power model are interchangeable, A-A4) and bound to a concrete node during the
construction, which checks the node's free GPUs, cores and memory in the plan
(:mod:`baselines.andreas_fit`). Inputs are plain arrays built by
:mod:`baselines.andreas_parts`; nothing here reads the simulator. Randomness is counter-based (:func:`draw_nb`, splitmix64 of the
call's seed, the iteration and a counter), the seed drawn once per call from the run's RNG
(``view.rng``), so a run repeats.
"""

from __future__ import annotations

import numpy as np
from numba import njit, prange

from baselines.andreas_fit import low_bit_nb as _low_bit_nb
from baselines.andreas_fit import (
    open_count_rc_nb,
    open_nth_rc_nb,
    rc_fits_nb,
    rc_problem_nb,
    unused_rc_nb,
)

__all__ = [
    "config_table_nb",
    "current_configs_nb",
    "draw_nb",
    "iter_key_nb",
    "pinned_nodes_nb",
    "rem_moved_nb",
    "rg_search_nb",
    "rg_search_par_nb",
    "swap_pass_nb",
]


@njit(cache=True, inline="always")
def rem_moved_nb(rem, work, ckpt):
    """Work left if a job with ``rem`` of ``work`` left changed configuration now: with
    checkpoints every ``ckpt`` > 0 work units the completed work rounded down to whole
    checkpoints (a move loses the rest; relative 1e-9 for rounding); else ``rem``."""
    if ckpt <= 0.0:
        return rem
    done = work - rem
    kept = np.floor(done / ckpt + 1e-9 * max(1.0, done / ckpt)) * ckpt
    return max(rem, work - kept)


@njit(cache=True)
def config_table_nb(jobs, remaining, work, ckpt, first_start, restart_delay, tput, scale_exp, min_w,
                    max_w, cpus, mem, deadline, cur_cls, cur_g, cls_dev, cls_gpus, cls_cpus, cls_mem,
                    cls_idle, cls_gpu_w, eur_per_j, now, out_cls, out_g, out_t, out_cost, dl, dlen,
                    cl, clen, delta, mj):
    """Configurations (class k, g) of each job, their times and costs, and the D* lists.

    Row i is job ``jobs[i]`` (the job arrays are the simulator's, indexed by job; ``cur_cls``,
    ``cur_g`` by row): ``t = delta_i + R / (g * tput[j, dev_k] * g ** (e_j - 1))`` with
    ``delta_i`` = ``restart_delay`` if the job ran before (``first_start`` not NaN), else 0,
    and R = the work left after the checkpoint rule of a move (:func:`rem_moved_nb`, with
    ``ckpt`` work units per checkpoint, 0: none) unless (k, g) is the job's current
    configuration (``cur_cls``, ``cur_g``: R = ``remaining[j]``, no delay); cost = t x (idle_w_k + g x gpu_w_k) x ``eur_per_j`` (EUR).
    A configuration must fit an empty node of the class (g GPUs, g x cores, g x memory).
    ``dl[i, :dlen[i]]``: D*_i = {T_c + t < d_i} by cost ascending (ties: t, then entry);
    ``cl[i, :clen[i]]``: the other entries by t ascending. ``delta[i]`` = pressure
    (Eq. 2) = T_c + min t - d_i, ``mj[i]`` = max t. Returns the entries per job written.
    """
    nj = jobs.shape[0]
    nk = cls_dev.shape[0]
    for i in range(nj):
        j = jobs[i]
        rem = remaining[j]
        moved = rem_moved_nb(rem, work[j], ckpt)
        delay = restart_delay if not np.isnan(first_start[j]) else 0.0
        m = 0
        for k in range(nk):
            d = cls_dev[k]
            tp = tput[j, d]
            if tp <= 0.0:
                continue
            hi = min(max_w[j], cls_gpus[k])
            for g in range(min_w[j], hi + 1):
                if g * cpus[j, d] > cls_cpus[k] + 1e-9 or g * mem[j] > cls_mem[k] + 1e-9:
                    continue
                rate = g * tp * g ** (scale_exp[j] - 1.0)
                if k == cur_cls[i] and g == cur_g[i]:
                    t = rem / rate
                else:
                    t = delay + moved / rate
                out_cls[i, m] = k
                out_g[i, m] = g
                out_t[i, m] = t
                out_cost[i, m] = t * (cls_idle[k] + g * cls_gpu_w[k]) * eur_per_j
                m += 1
        tmin = np.inf
        tmax = 0.0
        for q in range(m):
            tmin = min(tmin, out_t[i, q])
            tmax = max(tmax, out_t[i, q])
        delta[i] = now + tmin - deadline[j] if m > 0 else -np.inf
        mj[i] = tmax
        nd = 0
        nc = 0
        for q in range(m):
            if now + out_t[i, q] < deadline[j]:
                dl[i, nd] = q
                nd += 1
            else:
                cl[i, nc] = q
                nc += 1
        # insertion sorts (a handful of entries): D* by (cost, t), the rest by t
        for a in range(1, nd):
            x = dl[i, a]
            b = a
            while b > 0 and (out_cost[i, dl[i, b - 1]] > out_cost[i, x]
                             or (out_cost[i, dl[i, b - 1]] == out_cost[i, x]
                                 and out_t[i, dl[i, b - 1]] > out_t[i, x])):
                dl[i, b] = dl[i, b - 1]
                b -= 1
            dl[i, b] = x
        for a in range(1, nc):
            x = cl[i, a]
            b = a
            while b > 0 and out_t[i, cl[i, b - 1]] > out_t[i, x]:
                cl[i, b] = cl[i, b - 1]
                b -= 1
            cl[i, b] = x
        dlen[i] = nd
        clen[i] = nc
    return 0


@njit(cache=True)
def current_configs_nb(jobs, nworkers, status, worker_node, of_node, running, grace, out_node,
                       out_cls, out_g):
    """(node, class, g) of each job's current run when it holds GPUs of one GPU node (status
    ``running`` or ``grace``, g = its gang size > 0, every worker on its first worker's
    node, a node of a class), else (-1, -1, -1), written to the ``out_*`` arrays."""
    for i in range(jobs.shape[0]):
        j = jobs[i]
        g = nworkers[j]
        first = worker_node[j, 0]
        ok = g > 0 and (status[j] == running or status[j] == grace) and first >= 0
        for s in range(1, min(g, worker_node.shape[1])):
            ok = ok and worker_node[j, s] == first
        k = of_node[first] if ok else -1
        ok = ok and k >= 0
        out_node[i] = first if ok else -1
        out_cls[i] = k if ok else -1
        out_g[i] = g if ok else -1
    return 0


@njit(cache=True)
def pinned_nodes_nb(jobs, nworkers, worker_node, worker_gpu, t_left, of_node, rate, free,
                    is_open, first_t, first_c):
    """What the running ``jobs`` (in order) leave on each GPU node: ``free`` GPUs (minus
    their GPUs there), ``is_open``, and the first-ending job's time ``first_t`` (its
    ``t_left``) and cost ``first_c`` = t x ``rate[class, GPUs it uses there]`` (the
    first job wins ties). Updates the arrays in place."""
    for i in range(jobs.shape[0]):
        j = jobs[i]
        g = nworkers[j]
        for s in range(g):
            n = worker_node[j, s]
            seen = False
            for s2 in range(s):
                seen = seen or worker_node[j, s2] == n
            k = of_node[n]
            if seen or k < 0:
                continue
            used = 0
            for s2 in range(g):
                if worker_node[j, s2] == n and worker_gpu[j, s2] >= 0:
                    used += 1
            free[n] -= used
            is_open[n] = True
            t = t_left[i]
            if t < first_t[n]:
                first_t[n] = t
                first_c[n] = t * rate[k, min(used, rate.shape[1] - 1)]
    return 0


# ---- counter-based draws: every draw of an iteration is a pure function of (the call's seed,
# the iteration, a counter), splitmix64's output function on a Weyl sequence, so that the
# iterations do not depend on each other (an abandoned iteration changes no other draw).

_GOLDEN = np.uint64(0x9E3779B97F4A7C15)
_M1 = np.uint64(0xBF58476D1CE4E5B9)
_M2 = np.uint64(0x94D049BB133111EB)


@njit(cache=True, inline="always")
def _mix_nb(z):
    """splitmix64's finaliser of the uint64 z."""
    z = (z ^ (z >> np.uint64(30))) * _M1
    z = (z ^ (z >> np.uint64(27))) * _M2
    return z ^ (z >> np.uint64(31))


@njit(cache=True, inline="always")
def iter_key_nb(seed, it):
    """Key of iteration ``it`` of the search seeded with ``seed``."""
    return _mix_nb(_mix_nb(np.uint64(seed)) + np.uint64(it) * _GOLDEN)


@njit(cache=True, inline="always")
def _bits_nb(key, ctr):
    """Draw number ``ctr`` of the iteration with key ``key``: 53 uniform bits (int64)."""
    return np.int64(_mix_nb(key + (np.uint64(ctr) + np.uint64(1)) * _GOLDEN) >> np.uint64(11))


@njit(cache=True, inline="always")
def draw_nb(key, ctr):
    """Uniform [0, 1) double number ``ctr`` of the iteration with key ``key`` (53 bits)."""
    return float(_bits_nb(key, ctr)) * (1.0 / 9007199254740992.0)


@njit(cache=True)
def threshold_nb(p):
    """The integer T with ``_bits_nb(...) < T`` exactly when ``draw_nb(...) < p`` (x / 2^53
    < p for an integer x < 2^53 is x < ceil(p x 2^53), the product exact)."""
    return np.int64(min(max(np.ceil(p * 9007199254740992.0), 0.0), 9007199254740992.0))


@njit(cache=True, inline="always")
def _below_nb(key, ctr, top):
    """Uniform integer in [0, top) from draw ``ctr``."""
    return min(int(draw_nb(key, ctr) * top), top - 1)


@njit(cache=True, inline="always")
def _swap_p_nb(a, b, pi):
    """A-A2: probability of swapping an adjacent pair of weights (a ahead, b behind)."""
    return 0.5 - pi if a > b else (0.5 + pi if a < b else 0.5)


@njit(cache=True)
def swap_pass_nb(order, weight, pi, key):
    """One randomised pass over adjacent pairs from the head (A-A2): swap (i, i+1) with
    probability 0.5 - pi if w_i > w_{i+1}, 0.5 + pi if w_i < w_{i+1}, else 0.5 (heavier
    jobs tend to stay ahead); pair i uses draw 4 i of the iteration ``key``. The search
    makes the same pass lazily (position by position); this is its reference."""
    for i in range(order.shape[0] - 1):
        if draw_nb(key, 4 * i) < _swap_p_nb(weight[order[i]], weight[order[i + 1]], pi):
            x = order[i]
            order[i] = order[i + 1]
            order[i + 1] = x


@njit(cache=True, inline="always")
def _pick_nb(n, frac, randomised, key, ctr):
    """Index among the first max(1, round(frac * n)) entries: 0, or uniform (draw ``ctr``)
    if randomised."""
    if not randomised or n <= 1:
        return 0
    top = max(1, int(np.round(frac * n)))
    return 0 if top == 1 else _below_nb(key, ctr, top)


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
    beyond ``held_rc`` (``rcs`` = (cfg_rc, node_rc, rc_all, fs), :mod:`baselines.andreas_fit`);
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
    open nodes, best fit) and (v) (A-A4: the first entry fitting an unused node of any
    class); returns (node, entry) or (-1, e)."""
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


@njit(cache=True, inline="always")
def _closed_nb(maxfree, gall):
    """Whether no job of the call fits any node any more (``gall[k]``: fewest GPUs of any
    entry of class k)."""
    for k in range(maxfree.shape[0]):
        if maxfree[k] >= gall[k]:
            return False
    return True


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
def _iterations_nb(it0, it1, step, seed, best, prune, scale, scan, base_order, weight, deadline, cfg_cls,
                   cfg_g, cfg_t, dl, dlen, cl, clen, cur_node, cur_g, node_cls, node_free0,
                   node_open0, first_t0, first_c0, cls_start, cls_nodes, cls_rate, now, alpha, beta,
                   thr_gt, thr_lt, thr_eq, res0, res_total0, cls_free0, maxfree0, pos, gmin, gall,
                   pj, npos, lbj, total_lb, cmin, e_lb0, node_free, node_open, first_t, first_c,
                   node_res, cls_free, maxfree, ob, oc, ub, uc, plan_node, plan_cfg, scr, tn, tflag, tb,
                   placed, rn, zero, rcp, node_rc, res_rc, zero_rc, out_node, out_cfg):
    """Iterations ``it0``, ``it0`` + ``step``, ... below ``it1`` of Algorithm 1 (draws of iteration ``it`` from
    :func:`iter_key_nb` (seed, it); ``thr_*``: the swap probabilities as
    :func:`threshold_nb`), each a construction scored by f_OBJ; a plan better than ``best``
    (strictly: ties keep the earlier iteration) is written to ``out_node`` / ``out_cfg``;
    returns the best f_OBJ and its iteration (-1: none beat ``best``). With ``prune`` an iteration is abandoned as soon as a lower
    bound of its f_OBJ exceeds the best so far by 1e-9 x (best + ``scale``) (it could not
    be kept). Once no job of the call fits any node (:func:`_closed_nb`) every job left is
    postponed: it only adds its cost ``pj`` (``npos`` jobs have ``pj > 0``; none left: the
    iteration stops there). Each iteration starts from and restores the scratch state
    (the nodes it touched, listed in ``tn``; the running jobs' held GPUs, ``rn``).
    Cores and memory (``rcp`` = (cfg_rc, cur_rc, node_rc0, res_rc0, rc_all, fs, fit0) of
    :func:`~baselines.andreas_fit.rc_problem_nb`; scratch ``node_rc``, ``res_rc``): a node
    takes an entry only if it has its cores and memory free in the plan too (A-A4), held
    back for running jobs like their GPUs."""
    nj = base_order.shape[0]
    nn = node_cls.shape[0]
    best_it = -1
    cfg_rc, cur_rc, node_rc0, res_rc0, rc_all, fs, fit0 = rcp
    rcs = (cfg_rc, node_rc, rc_all, fs)
    # no running job re-planned (pinned) and cores or memory can bind: a row that no node
    # can host now is postponed at once (_fits_now_nb), exactly as steps (ii)-(v) would
    sharp = not scan and not rc_all
    for q in range(nj):
        sharp = sharp and cur_node[base_order[q]] < 0
    for it in range(it0, it1, step):
        key = iter_key_nb(seed, it)
        bound = best if prune else np.inf
        tol = 1e-9 * (bound + scale)
        rnd = it > 0
        res_total = res_total0
        closed = _closed_nb(maxfree, gall)
        f = 0.0
        rem_lb = total_lb
        rem_pos = npos
        e_lb = e_lb0
        nt = 0
        m = 0
        nr = 0
        done = True
        carry = base_order[0] if nj > 0 else -1
        for q in range(nj):
            if closed and rem_pos == 0:  # every job left is postponed at no cost
                break
            # the swap pass (A-A2), made lazily: pair (q, q + 1) decides who takes position q
            if q + 1 < nj:
                b = base_order[q + 1]
                a = carry
                if rnd:  # draw_nb(key, 4 q) < _swap_p_nb(weight[a], weight[b], pi), in integers
                    wa = weight[a]
                    wb = weight[b]
                    sw = _bits_nb(key, 4 * q) < (thr_gt if wa > wb else (thr_lt if wa < wb else thr_eq))
                else:
                    sw = False
                j = b if sw else a
                carry = a if sw else b
            else:
                j = carry
            if q > 0 and f + rem_lb + e_lb > bound + tol:
                done = False
                break
            rem_lb -= lbj[j]
            if pj[j] > 0.0:
                rem_pos -= 1
            if closed:  # no entry of any job fits any node: postponed
                f += pj[j]
                continue
            if dlen[j] > 0:
                e = dl[j, _pick_nb(dlen[j], alpha, rnd, key, 4 * q + 1)]
            elif clen[j] > 0:
                e = cl[j, _pick_nb(clen[j], alpha, rnd, key, 4 * q + 1)]
            else:
                continue
            k = cfg_cls[j, e]
            g = cfg_g[j, e]
            n = -1
            c = cur_node[j]
            if c >= 0:
                node_res[c] -= cur_g[j]  # its turn: the job's own GPUs are no longer held back
                res_rc[c, 0] -= cur_rc[j, 0]
                res_rc[c, 1] -= cur_rc[j, 1]
                res_total -= cur_g[j]
                rn[nr] = c
                nr += 1
                if node_cls[c] == k and node_free[c] >= g and rc_fits_nb(node_rc, zero_rc, c, cfg_rc[j, e]):
                    n = c  # (i) stay (A-A5)
            if n < 0 and not scan and not (fit0[j] and _any_fits_nb(j, gmin, maxfree) and (
                    not sharp or _fits_now_nb(j, dl, dlen, cl, clen, cfg_cls, cfg_g, cfg_rc, fs, tb,
                                              cls_start, cls_nodes, node_free, node_rc, zero_rc))):
                # no entry fits any node of its class, held-back GPUs or not: steps
                # (ii)-(v) would fail, and a failed binding draws nothing
                f += pj[j]
                continue
            # (ii)-(v) first on GPUs not held back for running jobs still to come, then
            # (ii)-(v) again on every free GPU (a running job may be displaced); with
            # nothing held back the second pass would repeat the first (a failed pass
            # draws nothing), so it is skipped
            for pas in range(2):
                if n >= 0 or (pas == 1 and res_total == 0 and not scan):
                    break
                held = node_res if pas == 0 else zero
                held_rc = res_rc if pas == 0 else zero_rc
                fast = not scan and (pas == 1 or res_total == 0)
                n = _bind_same_nb(j, e, cfg_cls, cfg_g, node_free, held, node_open, fast, ob, oc,
                                  ub, cls_start, cls_nodes, beta, rnd, scr, cls_free, key,
                                  4 * q + 2 + pas, rcs, held_rc)
                if n < 0:
                    n, e = _bind_other_nb(j, e, cfg_cls, cfg_g, dl, dlen, cl, clen, node_free,
                                          held, node_open, fast, ob, oc, ub, cls_start,
                                          cls_nodes, scr, cls_free, rcs, held_rc)
            if n < 0:  # (vi) postpone
                f += pj[j]
                continue
            g = cfg_g[j, e]
            t = cfg_t[j, e]
            k = node_cls[n]
            plan_node[j] = n
            plan_cfg[j] = e
            placed[m] = j
            m += 1
            if not tflag[n]:
                tflag[n] = True
                tn[nt] = n
                nt += 1
                tb[k, pos[n] >> 6] |= np.uint64(1) << np.uint64(pos[n] & 63)
            e_lb -= _node_lb_nb(node_open[n], first_t[n], first_c[n], node_free[n], k, cmin)
            if node_open[n]:
                _bucket_flip_nb(ob, oc, k, node_free[n], pos[n], False)
            else:
                _bucket_flip_nb(ub, uc, k, node_free[n], pos[n], False)
            node_free[n] -= g
            node_rc[n, 0] -= cfg_rc[j, e, 0]
            node_rc[n, 1] -= cfg_rc[j, e, 1]
            _bucket_flip_nb(ob, oc, k, node_free[n], pos[n], True)
            cls_free[k] -= g
            while maxfree[k] > 0 and oc[k, maxfree[k]] + uc[k, maxfree[k]] == 0:
                maxfree[k] -= 1
            closed = _closed_nb(maxfree, gall)
            node_open[n] = True
            late = now + t - deadline[j]
            if late > 0.0:
                f += weight[j] * late
            if t < first_t[n]:
                first_t[n] = t
                first_c[n] = t * cls_rate[k, g]
            e_lb += _node_lb_nb(True, first_t[n], first_c[n], node_free[n], k, cmin)
        if done:
            for n in range(nn):
                if node_open[n] and first_t[n] < np.inf:
                    f += first_c[n]
        else:
            f = np.inf
        # restore the scratch: the nodes placed on, the held-back GPUs, the class counters
        for a in range(nt):
            n = tn[a]
            k = node_cls[n]
            _bucket_flip_nb(ob, oc, k, node_free[n], pos[n], False)
            if node_open0[n]:
                _bucket_flip_nb(ob, oc, k, node_free0[n], pos[n], True)
            else:
                _bucket_flip_nb(ub, uc, k, node_free0[n], pos[n], True)
            node_free[n] = node_free0[n]
            node_rc[n, 0] = node_rc0[n, 0]
            node_rc[n, 1] = node_rc0[n, 1]
            node_open[n] = node_open0[n]
            first_t[n] = first_t0[n]
            first_c[n] = first_c0[n]
            tflag[n] = False
            tb[k, pos[n] >> 6] = np.uint64(0)
        for a in range(nr):
            node_res[rn[a]] = res0[rn[a]]
            res_rc[rn[a], 0] = res_rc0[rn[a], 0]
            res_rc[rn[a], 1] = res_rc0[rn[a], 1]
        cls_free[:] = cls_free0
        maxfree[:] = maxfree0
        if f < best:
            best = f
            best_it = it
            out_node[:] = -1
            out_cfg[:] = -1
            for a in range(m):
                out_node[placed[a]] = plan_node[placed[a]]
                out_cfg[placed[a]] = plan_cfg[placed[a]]
    return best, best_it


@njit(cache=True)
def rg_search_nb(base_order, weight, deadline, cfg_cls, cfg_g, cfg_t, dl, dlen, cl, clen, mj,
                 cur_node, cur_g, node_cls, node_free0, node_open0, first_t0, first_c0, node_rc0, cfg_rc,
                 cur_rc, cls_start, cls_nodes, cls_rate, now, horizon_h, rho, alpha, beta, pi, max_iter,
                 seed, out_node, out_cfg, scan=False, prune=True):
    """Algorithm 1 of the paper with the assignment rules of spec 4.1 step 4 (c).

    A node takes entry e of row j only if it has the entry's GPUs, cores and memory free
    in the plan (``node_rc0``: cores and memory free at the start, per node; ``cfg_rc``:
    each entry's; ``cur_rc``: what each running row holds now, held back like its GPUs;
    :mod:`baselines.andreas_fit`).

    A-A5 (a running job keeps its node when its configuration still fits there) is
    upheld against jobs placed before it: the GPUs of running jobs (``cur_node``,
    ``cur_g``) are held back until their own turn: steps (ii)-(v) first bind a job around
    them (another node, or another configuration), and only when nothing fits that way
    again on every free GPU, displacing a running job.

    Iteration 0 is the deterministic greedy (``base_order`` = pressure descending, first
    entry of D* else of D*^C, best-fit node); iterations 1 .. max_iter - 1 randomise
    the order (the swap pass of :func:`swap_pass_nb`), the configuration (uniform among
    the first ``round(alpha x |list|)``) and the open node (``beta``). Each plan is scored
    by the proxy objective f_OBJ (Eq. 1) and the best is kept (ties: the earlier iteration).
    Nodes start with ``node_free0`` free GPUs, ``node_open0`` and a first-ending job of
    duration ``first_t0`` and cost ``first_c0`` (EUR) for jobs the plan does not move.
    ``base_order`` holds row indices of the job arrays (rows not in it stay -1). Writes
    the best plan (``out_node[i]`` = node or -1 postponed, ``out_cfg[i]`` = entry of row
    i's configurations) and returns its f_OBJ (EUR).

    Randomness: counter-based (:func:`draw_nb`): the draws of iteration ``it`` are a pure
    function of (``seed``, ``it``, position in the order, kind of draw), not a stream
    shared by the iterations. So ``prune`` can abandon an iteration as soon as a lower
    bound of its f_OBJ (tardiness and postponement so far, at least w x max(0, pressure)
    for each job still to place, and a lower bound of each node's energy term,
    :func:`_node_lb_nb`) exceeds the best so far by a relative 1e-9 (well above rounding):
    such a plan could not be kept, and no other iteration's draws change, so the result
    is the same with and without ``prune``.

    Cost: everything is allocated once per call (:func:`_problem_nb`, :func:`_run_nb`); an iteration costs O(jobs x G x words)
    (node buckets by free GPUs, :func:`_open_fit_nb`) while no GPU is held back for a
    running job, which is every iteration when no running job is re-planned, and restores
    only the nodes it touched. Where no running job is re-planned and cores or memory can
    bind, a job that no node can host any more is postponed without the binding steps
    (:func:`_fits_now_nb`: its start nodes the iteration has not touched, then the touched
    ones). ``scan=True`` does every binding step as a scan (and sort)
    of the class's nodes, without the shortcuts: the same draws and results, which
    ``tests/baselines/test_andreas_kernel.py`` checks.
    """
    p = _problem_nb(base_order, weight, deadline, cfg_cls, cfg_g, cfg_t, dl, dlen, cl, clen, mj,
                    cur_node, cur_g, node_cls, node_free0, node_open0, first_t0, first_c0, node_rc0, cfg_rc,
                    cur_rc, cls_start, cls_nodes, cls_rate, now, horizon_h, rho, pi, out_node.shape[0])
    for i in range(out_node.shape[0]):
        out_node[i] = -1
        out_cfg[i] = -1
    # typed (not literal) constants and flags: one compilation of _run_nb / _iterations_nb
    # serves this kernel (scan / prune given or defaulted) and rg_search_par_nb
    return _run_nb(np.int64(0), max_iter, np.int64(1), seed, np.inf, bool(prune), bool(scan), p,
                   base_order, weight, deadline, cfg_cls,
                   cfg_g, cfg_t, dl, dlen, cl, clen, cur_node, cur_g, node_cls, node_free0,
                   node_open0, first_t0, first_c0, cls_start, cls_nodes, cls_rate, now, alpha, beta,
                   out_node, out_cfg)[0]


@njit(cache=True, parallel=True)
def rg_search_par_nb(base_order, weight, deadline, cfg_cls, cfg_g, cfg_t, dl, dlen, cl, clen, mj,
                     cur_node, cur_g, node_cls, node_free0, node_open0, first_t0, first_c0, node_rc0, cfg_rc,
                     cur_rc, cls_start, cls_nodes, cls_rate, now, horizon_h, rho, alpha, beta, pi, max_iter,
                     seed, out_node, out_cfg, scan, prune, chunks):
    """:func:`rg_search_nb` (the same arguments, then ``chunks``) with the iterations
    1 .. ``max_iter`` - 1 dealt to ``chunks`` interleaved sets (chunk c: 1 + c, 1 + c +
    chunks, ...) run in parallel (``prange``), each from its own scratch state and pruning
    against its own best, which starts at iteration 0's f_OBJ (interleaved, each chunk's
    best improves about as fast as the serial loop's, so pruning abandons as much). The
    draws of an iteration depend on (seed, iteration) only and pruning abandons only
    iterations that could not be kept, so each chunk's best (ties: its earliest iteration)
    is what the serial loop would keep among them; the lowest f_OBJ over the chunks, ties
    to the earliest iteration, is the serial loop's result, bit for bit, whatever
    ``chunks`` and the thread count (``tests/baselines/test_andreas_kernel.py``)."""
    nrow = out_node.shape[0]
    p = _problem_nb(base_order, weight, deadline, cfg_cls, cfg_g, cfg_t, dl, dlen, cl, clen, mj,
                    cur_node, cur_g, node_cls, node_free0, node_open0, first_t0, first_c0, node_rc0, cfg_rc,
                    cur_rc, cls_start, cls_nodes, cls_rate, now, horizon_h, rho, pi, nrow)
    for i in range(nrow):
        out_node[i] = -1
        out_cfg[i] = -1
    best = _run_nb(np.int64(0), min(1, max_iter), np.int64(1), seed, np.inf, bool(prune), bool(scan),
                   p, base_order, weight,
                   deadline, cfg_cls, cfg_g, cfg_t, dl, dlen, cl, clen, cur_node, cur_g, node_cls,
                   node_free0, node_open0, first_t0, first_c0, cls_start, cls_nodes, cls_rate, now,
                   alpha, beta, out_node, out_cfg)[0]
    rest = max_iter - 1
    if rest <= 0:
        return best
    nc = max(1, min(chunks, rest))
    fc = np.full(nc, np.inf)
    fi = np.full(nc, -1, dtype=np.int64)
    on = np.full((nc, nrow), -1, dtype=np.int64)
    oc = np.full((nc, nrow), -1, dtype=np.int64)
    for c in prange(nc):  # chunk c: iterations 1 + c, 1 + c + nc, ...
        fc[c], fi[c] = _run_nb(1 + c, max_iter, nc, seed, best, bool(prune), bool(scan), p, base_order, weight,
                               deadline, cfg_cls, cfg_g, cfg_t, dl, dlen, cl, clen, cur_node, cur_g,
                               node_cls, node_free0, node_open0, first_t0, first_c0, cls_start,
                               cls_nodes, cls_rate, now, alpha, beta, on[c], oc[c])
    bi = 0
    for c in range(nc):  # the lowest f_OBJ below iteration 0's; ties: the earliest iteration
        if fi[c] >= 0 and (fc[c] < best or (fc[c] == best and fi[c] < bi)):
            best = fc[c]
            bi = fi[c]
            out_node[:] = on[c]
            out_cfg[:] = oc[c]
    return best


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
    thr_gt = threshold_nb(0.5 - pi)  # A-A2's swap probabilities (_swap_p_nb)
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


@njit(cache=True)
def _run_nb(it0, it1, step, seed, best, prune, scan, p, base_order, weight, deadline, cfg_cls, cfg_g,
            cfg_t, dl, dlen, cl, clen, cur_node, cur_g, node_cls, node_free0, node_open0, first_t0,
            first_c0, cls_start, cls_nodes, cls_rate, now, alpha, beta, out_node, out_cfg):
    """Iterations ``it0``, ``it0`` + ``step``, ... below ``it1`` (:func:`_iterations_nb`) on
    a scratch state of their own, from the problem ``p`` of :func:`_problem_nb`; returns
    the best f_OBJ below ``best`` (or ``best``) and its iteration (or -1), its plan in
    ``out_node`` / ``out_cfg``."""
    (thr_gt, thr_lt, thr_eq, res0, res_total0, cls_free0, maxfree0, pos, gmin, gall, pj, npos,
     lbj, total_lb, cmin, e_lb0, scale, ob0, oc0, ub0, uc0, cfg_rc, cur_rc, node_rc0, res_rc0, rc_all,
     fs, fit0) = p
    rcp = (cfg_rc, cur_rc, node_rc0, res_rc0, rc_all, fs, fit0)
    nj = base_order.shape[0]
    nrow = out_node.shape[0]
    nn = node_cls.shape[0]
    return _iterations_nb(it0, it1, step, seed, best, prune, scale, scan, base_order, weight, deadline,
                          cfg_cls, cfg_g, cfg_t, dl, dlen, cl, clen, cur_node, cur_g, node_cls,
                          node_free0, node_open0, first_t0, first_c0, cls_start, cls_nodes, cls_rate,
                          now, alpha, beta, thr_gt, thr_lt, thr_eq, res0, res_total0, cls_free0,
                          maxfree0, pos, gmin, gall, pj, npos, lbj, total_lb, cmin, e_lb0,
                          node_free0.copy(), node_open0.copy(), first_t0.copy(), first_c0.copy(),
                          res0.copy(), cls_free0.copy(), maxfree0.copy(), ob0.copy(), oc0.copy(),
                          ub0.copy(), uc0.copy(), np.full(nrow, -1, dtype=np.int64),
                          np.full(nrow, -1, dtype=np.int64), np.empty(nn, dtype=np.int64),
                          np.empty(nn, dtype=np.int64), np.zeros(nn, dtype=np.bool_),
                          np.zeros((cls_start.shape[0] - 1, ob0.shape[2]), dtype=np.uint64),
                          np.empty(max(nj, 1), dtype=np.int64), np.empty(max(nj, 1), dtype=np.int64),
                          np.zeros(nn, dtype=np.int64), rcp, node_rc0.copy(), res_rc0.copy(),
                          np.zeros((nn, 2)), out_node, out_cfg)
