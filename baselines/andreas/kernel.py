"""The ANDREAS Randomized Greedy search (paper section IV, Algorithm 1; docs/andreas.md): Numba
kernels.

:func:`rg_search_nb` (and :func:`rg_search_par_nb`, its iterations in parallel chunks)
searches the plans of one decision point: a pressure order, a configuration per job and a
node per configuration, scored by the proxy objective f_OBJ (Eq. 1), the best kept;
``_run_nb`` / ``_iterations_nb`` run the iterations on scratch state. Its parts live next
to it: the configuration table and what running jobs hold
(:mod:`baselines.andreas.configs`), the counter-based draws (:mod:`baselines.andreas.draws`:
splitmix64 of the call's seed, the iteration and a counter, the seed drawn once per call
from the run's RNG, ``view.rng``, so a run repeats), the node binding with its bucket
bitsets (:mod:`baselines.andreas.bind`), what one call's iterations read and the pruning
bounds (:mod:`baselines.andreas.problem`) and cores and memory (:mod:`baselines.andreas.fit`).
Inputs are plain arrays built by :mod:`baselines.andreas.parts` and
:mod:`baselines.andreas.prep`; nothing here reads the simulator. The public names of
:mod:`baselines.andreas.configs` and :mod:`baselines.andreas.draws` are re-exported here.
"""

from __future__ import annotations

import numpy as np
from numba import njit, prange

from baselines.andreas.bind import (
    _any_fits_nb,
    _bind_other_nb,
    _bind_same_nb,
    _bucket_flip_nb,
    _fits_now_nb,
)
from baselines.andreas.configs import (
    config_table_nb,
    current_configs_nb,
    pinned_nodes_nb,
    rem_moved_nb,
)
from baselines.andreas.draws import (
    _bits_nb,
    _pick_nb,
    draw_nb,
    iter_key_nb,
    swap_pass_nb,
    threshold_nb,
)
from baselines.andreas.fit import rc_fits_nb
from baselines.andreas.problem import _node_lb_nb, _problem_nb
from hetgym.sim.rules import EPS

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
    "threshold_nb",
]


@njit(cache=True, inline="always")
def _closed_nb(maxfree, gall):
    """Whether no job of the call fits any node any more (``gall[k]``: fewest GPUs of any
    entry of class k)."""
    for k in range(maxfree.shape[0]):
        if maxfree[k] >= gall[k]:
            return False
    return True


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
    :func:`~baselines.andreas.fit.rc_problem_nb`; scratch ``node_rc``, ``res_rc``): a node
    takes an entry only if it has its cores and memory free in the plan too (assumption *node
    classes and binding*), held back for running jobs like their GPUs."""
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
        tol = EPS * (bound + scale)
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
            # the swap pass (assumption *swap rule*), made lazily: pair (q, q + 1) decides who
            # takes position q
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
                    n = c  # (i) stay (assumption *running jobs stay*)
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
    """Algorithm 1 of the paper with the binding rules of docs/andreas.md (*Semantics* item 4).

    A node takes entry e of row j only if it has the entry's GPUs, cores and memory free
    in the plan (``node_rc0``: cores and memory free at the start, per node; ``cfg_rc``:
    each entry's; ``cur_rc``: what each running row holds now, held back like its GPUs;
    :mod:`baselines.andreas.fit`).

    assumption *running jobs stay* (a running job keeps its node when its configuration still
    fits there) is upheld against jobs placed before it: the GPUs of running jobs (``cur_node``,
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
    ``tests/baselines/andreas/test_andreas_kernel.py`` checks.
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
    ``chunks`` and the thread count (``tests/baselines/andreas/test_andreas_kernel.py``)."""
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
