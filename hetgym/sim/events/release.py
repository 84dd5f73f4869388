"""Fused Numba paths: giving a job's resources back (release, checkpoint loss, suspend,
preempt) and the power books that starts and releases share (the rules of
:mod:`hetgym.sim.events` apply)."""

from __future__ import annotations

import numpy as np
from numba import njit

from hetgym.sim.codes import GRACE, QUEUED, START_OK, STEP_LOG_FULL
from hetgym.sim.kernels.interference import refresh_rates
from hetgym.sim.kernels.place import alloc_call_nb
from hetgym.sim.kernels.queue import queue_push_front_nb
from hetgym.sim.rules import kept_work_nb
from hetgym.sim.state.layout import ACC_NOW, ACC_POWER, CTR_RUN, CTR_SEG


@njit(cache=True, no_cfunc_wrapper=True)
def power_busy_nb(w, wnodes, wgpus, sign, cpus_row, nodes, run):
    """Add (sign=+1) or remove (-1) a placement's active power and busy units.

    Also keeps the per-node books (``run.node_*``, integrated lazily: a node's energy
    and busy seconds are brought up to now only when its power changes) and switches a
    node's ``switch_w`` (its idle power under ``idle_power="busy_nodes"``) on with its
    first worker and off with its last.

    A kernel of its own, not inlined (like :func:`~hetgym.sim.kernels.place.alloc_call_nb`):
    start, release and move share one compiled copy; ``sign`` is passed as a run-time
    int64 (``np.int64(1)``), never as a literal, which would compile it again."""
    acc, busy = run.acc, run.busy
    node_t, node_e, node_pw, node_units, node_busy = (run.node_t, run.node_e, run.node_pw,
                                                      run.node_units, run.node_busy)
    dev, gpu_w, core_w, switch_w = nodes.dev, nodes.gpu_w, nodes.core_w, nodes.switch_w
    now = acc[ACC_NOW]
    for i in range(w):
        n = wnodes[i]
        d = dev[n]
        el = now - node_t[n]
        if el > 0.0:
            node_e[n] += node_pw[n] * el
            if node_units[n] > 0:
                node_busy[n] += el
            node_t[n] = now
        if wgpus[i] >= 0:
            acc[ACC_POWER] += sign * gpu_w[n]
            busy[d] += sign
            node_pw[n] += sign * gpu_w[n]
        else:
            acc[ACC_POWER] += sign * core_w[n] * cpus_row[d]
            busy[d] += sign * cpus_row[d]
            node_pw[n] += sign * core_w[n] * cpus_row[d]
        before = node_units[n]
        node_units[n] = before + sign
        if (before == 0) != (before + sign == 0):  # the node switches on (0 -> 1) or off (1 -> 0)
            acc[ACC_POWER] += sign * switch_w[n]
            node_pw[n] += sign * switch_w[n]


@njit(cache=True, inline="always")
def _running_remove_nb(run, job):
    """Remove ``job`` from the running list, keeping start order (bounded by the cluster size)."""
    n = run.ctr[CTR_RUN]
    r = run.running
    for i in range(n):
        if r[i] == job:
            for k in range(i, n - 1):
                r[k] = r[k + 1]
            run.ctr[CTR_RUN] = n - 1
            return


@njit(cache=True, no_cfunc_wrapper=True)
def release_nb(job, P, S):
    """Give back a running job's resources and log its run as a segment; the caller sets
    what the job becomes (done, or queued again)."""
    jobs, nodes, js, run = P.jobs, P.nodes, S.job, S.run
    now = run.acc[ACC_NOW]
    w = js.nworkers[job]
    wn = js.worker_node[job, :w]
    wg = js.worker_gpu[job, :w]
    alloc_call_nb(job, w, wn, wg, np.int64(-1), jobs.cpus_need[job], jobs.mem[job], nodes, S.node)
    power_busy_nb(w, wn, wg, np.int64(-1), jobs.cpus_need[job], nodes, run)
    js.exec_time[job] += now - js.run_start[job]
    js.attained[job] += w * (now - js.run_start[job])
    k = run.ctr[CTR_SEG]
    run.seg_i[k, 0] = job
    run.seg_i[k, 1] = js.device[job]
    run.seg_i[k, 2] = js.worker_node[job, 0]
    held = 0
    for i in range(w):
        if wg[i] >= 0:
            held += 1
    run.seg_i[k, 3] = held
    run.seg_f[k, 0] = js.run_start[job]
    run.seg_f[k, 1] = now
    run.ctr[CTR_SEG] = k + 1
    js.rate[job] = 0.0
    js.finish[job] = np.inf
    js.grace_end[job] = np.inf
    _running_remove_nb(run, job)
    refresh_rates(w, wn, P, S)


@njit(cache=True, no_cfunc_wrapper=True)
def checkpoint_loss_nb(job, P, S):
    """The checkpoint-loss rule of a GP=0 preemption (and of a move): bring a running job's
    ``remaining`` back to its last checkpoint.

    ``checkpoint_unit="seconds"`` (``ckpt`` = interval in s): the progress since the last
    checkpoint of this run, ``fmod(now - resume_at, ckpt) * rate``, is lost.
    ``checkpoint_unit="work"`` (``ckpt`` = iterations, e.g. 1 epoch): the completed work
    is rounded down to a multiple of ``ckpt`` (only whole snapshots are kept). No
    interval (0): nothing is lost."""
    js = S.job
    ckpt = P.opts.ckpt
    if ckpt <= 0.0:
        return
    work = P.jobs.work[job]
    if P.opts.ckpt_work:
        done = work - js.remaining[job]
        kept = kept_work_nb(done, ckpt)
        if kept < done:
            left = work - kept
            js.remaining[job] = left if left < work else work  # noqa: FURB136 (builtin min/max compile an overload)
        return
    progressed = S.run.acc[ACC_NOW] - js.resume_at[job]
    if progressed > 0.0:
        lost = np.fmod(progressed, ckpt) * js.rate[job]
        left = js.remaining[job] + lost
        js.remaining[job] = left if left < work else work  # noqa: FURB136 (builtin min/max compile an overload)


@njit(cache=True, inline="always")
def suspend_nb(job, P, S):
    """Suspend a running job to the head of the queue, its progress kept (the end of a
    grace period; a preemption with no grace period applies :func:`checkpoint_loss_nb`
    first)."""
    release_nb(job, P, S)
    S.job.status[job] = QUEUED
    queue_push_front_nb(S.run, S.job.qpos, job)


@njit(cache=True, no_cfunc_wrapper=True)
def preempt_nb(job, P, S):
    """Preempt a running job (the caller checked its status and the preemption limit):
    with a grace period it keeps running until ``now + grace``, else it is suspended at
    once with its progress since the last checkpoint lost. Returns ``START_OK``, or
    ``STEP_LOG_FULL`` (nothing done: grow the segment log and call again)."""
    js, run = S.job, S.run
    gp = P.jobs.grace[job]
    if gp <= 0.0 and run.ctr[CTR_SEG] + 1 > run.seg_i.shape[0]:
        return STEP_LOG_FULL
    js.n_preempt[job] += 1
    if gp > 0.0:
        js.status[job] = GRACE
        js.grace_end[job] = run.acc[ACC_NOW] + gp
    else:
        checkpoint_loss_nb(job, P, S)
        suspend_nb(job, P, S)
    return START_OK
