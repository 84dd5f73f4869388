"""Numba kernels of the baselines (the inner loops of their decisions).

* :func:`best_time_nb` / :func:`job_best_nb`: SRPT's ranking key, remaining time on the
  fastest type; :func:`_place_first_nb`: placing a waiting job on
  its first candidate type with room (SRPT's decision point is in
  :mod:`baselines.classic.srpt_kernels`).
* :func:`group_bounds_nb`: how many jobs of each shape group may fit
  (:class:`baselines.common.parts.WaitingGroups`, SJF's fast path).
* :func:`jsq_omega_nb`: JSQ+'s projected machine free times
  (:class:`baselines.allox.naive.JSQPlus`).
* :func:`pairs_admit_nb`: SJF+'s walk over (job, device type) pairs
  (:class:`baselines.allox.naive.SJFPlus`).
* :func:`share_fill_nb`: ES filling one user's share (:class:`baselines.allox.drf.EqualShare`).
* :func:`any_start_nb`: whether any waiting job could still start on idle machines
  (:class:`baselines.allox.schedulers.AlloX`).
"""

from __future__ import annotations

import numpy as np
from numba import njit

from hetgym.sim.fastpath import alloc_nb, may_fit_arrays_nb, node_slots_nb, place_nb

__all__ = ["any_start_nb", "best_time_nb", "group_bounds_nb", "job_best_nb", "jsq_omega_nb",
           "pairs_admit_nb", "share_fill_nb"]


@njit(cache=True)
def _room_nb(d, w, cpus, mem, nodes, cap):
    """Whether ``place_nb`` finds room for ``w`` workers (``cpus`` cores, ``mem`` GB each) on
    type ``d`` of ``cap``: the same test it makes first (the per-type summary, then the
    workers that fit on all nodes of the type together), with the arrays read once (in
    ``place_nb`` a failed try costs some microseconds)."""
    is_cpu = nodes.dev_is_cpu[d]
    free_gpus, free_cpus, free_mem = cap.free_gpus, cap.free_cpus, cap.free_mem
    if not may_fit_arrays_nb(d, w, cpus, is_cpu, cap.free_dev):
        return False
    by_dev = nodes.by_dev
    tot = 0
    for i in range(nodes.dev_start[d], nodes.dev_start[d + 1]):
        n = by_dev[i]
        if not is_cpu and free_gpus[n] <= 0:
            continue  # no slot there (and no division to find that out)
        tot += node_slots_nb(n, is_cpu, cpus, mem, free_gpus, free_cpus, free_mem)
        if tot >= w:
            return True
    return False


@njit(cache=True)
def _place_first_nb(j, table, workers, cpus_need, mem, policy, nodes, cap, scr_i, tmp_n, tmp_g):
    """Place waiting job ``j`` on the first device type of its ``table`` row where the
    simulator's placement kernel finds room, take it from ``cap``; the placement is in
    ``tmp_n``, ``tmp_g``. Returns the device type, or -1."""
    w = workers[j]
    for k in range(table.shape[1]):
        d = table[j, k]
        if d < 0:
            break
        if _room_nb(d, w, cpus_need[j, d], mem[j], nodes, cap) and \
                place_nb(d, w, cpus_need[j, d], mem[j], policy, nodes, cap, scr_i, tmp_n, tmp_g):
            alloc_nb(j, w, tmp_n, tmp_g, 1, cpus_need[j], mem[j], nodes, cap)
            return d
    return -1


@njit(cache=True, inline="always")
def job_best_nb(j, remaining, den, valid):
    """The least ``remaining[j] / den[j, c]`` over the ``valid`` types of job ``j`` (inf if none)."""
    best = np.inf
    for c in range(den.shape[1]):
        if valid[j, c]:
            best = min(best, remaining[j] / den[j, c])
    return best


@njit(cache=True)
def best_time_nb(jobs, remaining, den, valid, out):
    """``out[i]``: :func:`job_best_nb` of job ``jobs[i]``: ``View.durations(jobs,
    remaining=True).min(axis=1)`` with the divisors computed once (the same floating-point
    operations)."""
    for i in range(jobs.shape[0]):
        out[i] = job_best_nb(jobs[i], remaining, den, valid)


@njit(cache=True)
def group_bounds_nb(groups, dcol, valid, has_c, has_m, inv_c, inv_m, wf, cpu_col, tol, node_dev,
                    n_dev, free_gpus, free_cpus, free_mem, with_max, out):
    """``out[i]``: an upper bound on how many jobs of shape group ``groups[i]`` fit on the free
    capacity (:meth:`baselines.common.parts.WaitingGroups.bounds`): per candidate type ``d`` of the
    group (column ``k``: ``dcol[g, k]``, ``valid[g, k]``), the workers that the type's free
    GPUs (unless ``cpu_col``), cores and memory hold in total, plus ``tol[g, k]``, floored,
    divided by the gang (``wf[g]``) and floored, summed over the candidates (``n_dev``
    device types; node ``n`` is of type ``node_dev[n]``). With
    ``with_max``, a type whose best node has not the cores or memory of one worker counts 0."""
    tg = np.zeros(n_dev)
    tc = np.zeros(n_dev)
    tm = np.zeros(n_dev)
    mc = np.full(n_dev, -np.inf)
    mm = np.full(n_dev, -np.inf)
    for n in range(node_dev.shape[0]):
        d = node_dev[n]
        tg[d] += free_gpus[n]
        tc[d] += free_cpus[n]
        tm[d] += free_mem[n]
        mc[d] = max(mc[d], free_cpus[n])
        mm[d] = max(mm[d], free_mem[n])
    for i in range(groups.shape[0]):
        g = groups[i]
        s = 0.0
        for k in range(dcol.shape[1]):
            if not valid[g, k]:
                continue
            d = dcol[g, k]
            slots = np.inf
            if has_c[g, k]:
                slots = min(slots, tc[d] * inv_c[g, k])
            if has_m[g, k]:
                slots = min(slots, tm[d] * inv_m[g, k])
            if not cpu_col[g, k]:
                slots = min(slots, tg[d])
            if with_max and not ((not has_c[g, k] or mc[d] * inv_c[g, k] + 1e-6 >= 1.0)
                                 and (not has_m[g, k] or mm[d] * inv_m[g, k] + 1e-6 >= 1.0)):
                slots = 0.0
            s += np.floor(np.floor(slots + tol[g, k]) / wf[g])
        out[i] = s


@njit(cache=True)
def jsq_omega_nb(omega, lo, hi, alive, off, machines, dur):
    """JSQ+: walk the jobs queued at machines in the order they joined (entries ``lo``
    to ``hi`` that are ``alive``; entry ``e`` waits for ``machines[off[e]:off[e + 1]]``
    and runs ``dur[e]``): each starts when the last of its machines frees, and they
    free again ``dur[e]`` later. ``omega`` (when each machine frees) is updated in place."""
    for e in range(lo, hi):
        if not alive[e]:
            continue
        start = -np.inf
        for i in range(off[e], off[e + 1]):
            start = max(start, omega[machines[i]])
        for i in range(off[e], off[e + 1]):
            omega[machines[i]] = start + dur[e]


@njit(cache=True)
def pairs_admit_nb(pairs, n_dev, q, p, free, workers, cpus_need, mem, policy, nodes, cap, scr_i,
                   out_job, out_dev, out_nodes, out_gpus):
    """Walk ``(job, device type)`` pairs in order (pair ``f`` is ``q[f // n_dev]`` on type
    ``f % n_dev``): a pair whose job has not started, whose type has free machines
    (``free[d] > 0``) and whose time ``p`` is finite starts if the placement kernel finds
    room on ``cap`` (taken from it; ``free[d]`` drops by the job's workers). Stops once no
    type's ``free`` is nonzero. Returns the number of starts written to ``out_*``."""
    started = np.zeros(q.shape[0], dtype=np.bool_)
    wmax = out_nodes.shape[1]
    tmp_n = np.empty(wmax, dtype=np.int64)
    tmp_g = np.empty(wmax, dtype=np.int64)
    n = 0
    for f in pairs:
        k = f // n_dev
        d = f % n_dev
        if started[k] or free[d] <= 0 or not np.isfinite(p[k, d]):
            continue
        j = q[k]
        w = workers[j]
        if not (_room_nb(d, w, cpus_need[j, d], mem[j], nodes, cap)
                and place_nb(d, w, cpus_need[j, d], mem[j], policy, nodes, cap, scr_i, tmp_n,
                             tmp_g)):
            continue
        alloc_nb(j, w, tmp_n, tmp_g, 1, cpus_need[j], mem[j], nodes, cap)
        out_job[n] = j
        out_dev[n] = d
        out_nodes[n, :w] = tmp_n[:w]
        out_gpus[n, :w] = tmp_g[:w]
        n += 1
        started[k] = True
        free[d] -= w
        if not (free != 0).any():
            break
    return n


@njit(cache=True)
def share_fill_nb(u, jobs, dur, order, w, may, used, quota, cpus_need, mem, policy, nodes, cap,
                  scr_i, out_job, out_dev, out_nodes, out_gpus):
    """ES (``order="sjf"``) for user ``u``: for each device type in ``order`` while her
    share ``quota[u, d]`` has room (``used``, updated), her jobs that can run there
    (finite ``dur[:, d]``) shortest first (stable) start if they fit her share (or she
    holds nothing there) and the placement kernel finds room on ``cap``. A job is tried
    on one type at most; ``may[k, d]`` False: it surely does not fit (used up untried).
    Returns the number of starts written to ``out_*``."""
    n = jobs.shape[0]
    left = np.ones(n, dtype=np.bool_)
    wmax = out_nodes.shape[1]
    tmp_n = np.empty(wmax, dtype=np.int64)
    tmp_g = np.empty(wmax, dtype=np.int64)
    fin = np.empty(n, dtype=np.int64)
    keys = np.empty(n)
    out = 0
    for d in order:
        if used[u, d] >= quota[u, d]:
            continue
        m = 0
        for k in range(n):
            if np.isfinite(dur[k, d]):
                fin[m] = k
                keys[m] = dur[k, d]
                m += 1
        srt = np.argsort(keys[:m], kind="mergesort")
        for i in range(m):
            if used[u, d] >= quota[u, d]:
                break
            k = fin[srt[i]]
            if not left[k] or not (used[u, d] + w[k] <= quota[u, d] or used[u, d] == 0):
                continue
            left[k] = False
            if not may[k, d]:
                continue
            j = jobs[k]
            if _room_nb(d, w[k], cpus_need[j, d], mem[j], nodes, cap) and \
                    place_nb(d, w[k], cpus_need[j, d], mem[j], policy, nodes, cap, scr_i, tmp_n,
                             tmp_g):
                alloc_nb(j, w[k], tmp_n, tmp_g, 1, cpus_need[j], mem[j], nodes, cap)
                out_job[out] = j
                out_dev[out] = d
                out_nodes[out, : w[k]] = tmp_n[: w[k]]
                out_gpus[out, : w[k]] = tmp_g[: w[k]]
                out += 1
                used[u, d] += w[k]
    return out


@njit(cache=True)
def any_start_nb(q, alive, p, idle, workers, cpus_need, mem, nodes, cap):
    """Whether some job ``q[k]`` with ``alive[k]`` could start on a device type ``d``: it can
    run there (finite ``p[k, d]``), ``idle[d]`` machines of the type are free for its
    ``W`` workers, and the placement kernel would find room on ``cap``."""
    for k in range(q.shape[0]):
        if not alive[k]:
            continue
        j = q[k]
        for d in range(p.shape[1]):
            if np.isfinite(p[k, d]) and workers[j] <= idle[d] and \
                    _room_nb(d, workers[j], cpus_need[j, d], mem[j], nodes, cap):
                return True
    return False
