"""The configuration table of one ANDREAS decision point (paper section IV; docs/andreas.md) and
what the running jobs hold: Numba kernels.

Configurations are enumerated per *node class* (nodes of one GPU type, GPU count, cores,
memory and power model are interchangeable, assumption *node classes and binding*):
:func:`config_table_nb` gives each job's (class, GPUs) entries, their times and costs, the D*
lists and the pressure (Eq. 2);
:func:`rem_moved_nb` the work left after a move under the checkpoint rule;
:func:`current_configs_nb` the configuration each running job holds now and
:func:`pinned_nodes_nb` what the running jobs the plan does not move leave on each node.
Inputs are plain arrays built by :mod:`baselines.andreas.parts` and
:mod:`baselines.andreas.prep`; nothing here reads the simulator. The search over these
tables is :mod:`baselines.andreas.kernel`.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from hetgym.sim.rules import covers_nb, kept_work_nb, scaled_rate_nb

__all__ = ["config_table_nb", "current_configs_nb", "pinned_nodes_nb", "rem_moved_nb"]


@njit(cache=True, inline="always")
def rem_moved_nb(rem, work, ckpt):
    """Work left if a job with ``rem`` of ``work`` left changed configuration now: with
    checkpoints every ``ckpt`` > 0 work units the completed work rounded down to whole
    checkpoints (a move loses the rest; relative 1e-9 for rounding); else ``rem``."""
    if ckpt <= 0.0:
        return rem
    done = work - rem
    kept = kept_work_nb(done, ckpt)
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
                if not (covers_nb(cls_cpus[k], g * cpus[j, d]) and covers_nb(cls_mem[k], g * mem[j])):
                    continue
                rate = scaled_rate_nb(g, tp, scale_exp[j])
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
