"""Fused Numba path: the event step, one call per event instant (the rules of
:mod:`hetgym.sim.events` apply)."""

from __future__ import annotations

import numpy as np
from numba import njit

from hetgym.sim.codes import (
    DONE,
    GRACE,
    QUEUED,
    STEP_LOG_FULL,
    STEP_MOVED,
    STEP_NONE,
    STEP_TIME_BACK,
    STEP_WORK_LEFT,
)
from hetgym.sim.events.release import release_nb, suspend_nb
from hetgym.sim.kernels.queue import queue_push_nb
from hetgym.sim.state.layout import (
    ACC_ENERGY,
    ACC_NOW,
    ACC_POWER,
    ACC_ROUND,
    ACC_WAKE,
    CTR_ARR,
    CTR_DONE,
    CTR_ERR,
    CTR_EV,
    CTR_Q,
    CTR_RUN,
    CTR_SEG,
)

__all__ = ["fork_sync_nb", "next_event_nb", "step_nb"]


@njit(cache=True, no_cfunc_wrapper=True)
def next_event_nb(P, S):
    """Time of the next event (``inf`` if none): the next arrival, the earliest
    projected finish or grace end of a running job, and, while a job runs or waits,
    the next round boundary and the scheduler's wake-up."""
    run, js = S.run, S.job
    ctr = run.ctr
    arrival = P.jobs.arrival
    running, finish, grace_end, status = run.running, js.finish, js.grace_end, js.status
    t = np.inf
    if ctr[CTR_ARR] < arrival.shape[0]:
        t = arrival[ctr[CTR_ARR]]
    for i in range(ctr[CTR_RUN]):
        j = running[i]
        if finish[j] < t:
            t = finish[j]
        if status[j] == GRACE and grace_end[j] < t:
            t = grace_end[j]
    if ctr[CTR_RUN] > 0 or ctr[CTR_Q] > 0:
        if P.opts.round_len > 0.0 and run.acc[ACC_ROUND] < t:
            t = run.acc[ACC_ROUND]
        if run.acc[ACC_WAKE] < t:
            t = run.acc[ACC_WAKE]
    return t


@njit(cache=True, no_cfunc_wrapper=True)
def step_nb(P, S):
    """Jump to the next event time and process every event there.

    Order at one instant: completions, grace ends (suspend, progress kept),
    arrivals, round boundary, wake-up (a wake-up changes nothing but time). Returns ``(code, n_done, n_grace)`` with the jobs in
    ``run.out_done[:n_done]`` / ``run.out_grace[:n_grace]``; code
    ``STEP_MOVED``, ``STEP_NONE`` (no event within the horizon; time moved to
    the horizon if it is finite and later), ``STEP_WORK_LEFT`` (a job completed
    with work left, its index in ``ctr[CTR_ERR]``), ``STEP_TIME_BACK``, or
    ``STEP_LOG_FULL`` (nothing done; grow the segment log and call again).
    """
    jobs, js, run = P.jobs, S.job, S.run
    ctr, acc = run.ctr, run.acc
    n_jobs = jobs.arrival.shape[0]
    now = acc[ACC_NOW]
    if ctr[CTR_SEG] + ctr[CTR_RUN] + 1 > run.seg_i.shape[0]:
        return STEP_LOG_FULL, 0, 0
    t = next_event_nb(P, S)
    n_run = ctr[CTR_RUN]
    horizon = P.opts.horizon
    code = STEP_MOVED
    if t == np.inf or t > horizon:
        if t < np.inf and t > horizon and horizon > now:  # an unreached horizon changes nothing
            t = horizon
            code = STEP_NONE
        else:
            return STEP_NONE, 0, 0
    if t < now:
        return STEP_TIME_BACK, 0, 0
    dt = t - now
    running = run.running
    if dt > 0.0:
        remaining, rate, resume_at = js.remaining, js.rate, js.resume_at
        service, user, workers = run.service, jobs.user, js.nworkers
        for i in range(n_run):
            j = running[i]
            s = now if now > resume_at[j] else resume_at[j]
            if t > s:
                remaining[j] -= rate[j] * (t - s)
            service[user[j]] += workers[j] * dt
        acc[ACC_ENERGY] += (P.opts.idle_power + acc[ACC_POWER]) * dt
        for c in range(run.busy.shape[0]):
            run.busy_time[c] += run.busy[c] * dt
    acc[ACC_NOW] = t
    if code == STEP_NONE:
        return STEP_NONE, 0, 0
    nd = 0
    ng = 0
    finish, status, grace_end = js.finish, js.status, js.grace_end
    out_done, out_grace = run.out_done, run.out_grace
    for i in range(n_run):
        j = running[i]
        if finish[j] <= t:
            out_done[nd] = j
            nd += 1
        elif status[j] == GRACE and grace_end[j] <= t:
            out_grace[ng] = j
            ng += 1
    for k in range(nd):
        j = run.out_done[k]
        wk = jobs.work[j]
        if abs(js.remaining[j]) > 1e-6 * (wk if wk > 1.0 else 1.0):  # noqa: FURB136 (builtin min/max compile an overload)
            ctr[CTR_ERR] = j
            return STEP_WORK_LEFT, nd, ng
        js.remaining[j] = 0.0
        release_nb(j, P, S)
        js.status[j] = DONE
        js.end[j] = t
        ctr[CTR_DONE] += 1
    for k in range(ng):
        suspend_nb(run.out_grace[k], P, S)
    while ctr[CTR_ARR] < n_jobs and jobs.arrival[ctr[CTR_ARR]] <= t:
        j = ctr[CTR_ARR]
        js.status[j] = QUEUED
        queue_push_nb(run, js.qpos, j)
        ctr[CTR_ARR] += 1
    if P.opts.round_len > 0.0:
        if acc[ACC_ROUND] <= t and P.opts.max_copies > 1 and P.opts.fork_sync > 0.0:
            fork_sync_nb(t, P, S)
        while acc[ACC_ROUND] <= t:
            acc[ACC_ROUND] += P.opts.round_len
    if acc[ACC_WAKE] <= t:
        acc[ACC_WAKE] = np.inf  # consumed; the scheduler asks again after deciding
    ctr[CTR_EV] += 1
    return STEP_MOVED, nd, ng


@njit(cache=True, inline="always")
def fork_sync_nb(t, P, S):
    """Round boundary at ``t``: every job holding >= 2 copies makes no progress for
    ``fork_sync`` seconds (model consolidation, forking; a pending restart delay overlaps)."""
    js, run = S.job, S.run
    sync = P.opts.fork_sync
    for i in range(run.ctr[CTR_RUN]):
        j = run.running[i]
        if js.n_copies[j] >= 2 and js.resume_at[j] < t + sync:
            js.resume_at[j] = t + sync
            js.finish[j] = js.resume_at[j] + js.remaining[j] / js.rate[j]
