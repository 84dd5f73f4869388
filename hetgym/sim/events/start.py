"""Fused Numba paths: starting a job on a given or a policy-chosen placement, moving a
running job, and the greedy admission of FIFO-like baselines (the rules of
:mod:`hetgym.sim.events` apply)."""

from __future__ import annotations

import numpy as np
from numba import njit

from hetgym.sim.codes import (
    GRACE,
    QUEUED,
    RUNNING,
    START_NOT_QUEUED,
    START_NOT_RUNNING,
    START_NO_ROOM,
    START_OK,
    START_TPUT_ZERO,
    START_WRONG_DEVICE,
)
from hetgym.sim.events.release import checkpoint_loss_nb, power_busy_nb, release_nb
from hetgym.sim.kernels.interference import copies_rate_nb, refresh_rates
from hetgym.sim.kernels.place import (
    alloc_call_nb,
    alloc_nb,
    check_placement_nb,
    place_nb,
    same_pairs_nb,
)
from hetgym.sim.kernels.queue import queue_remove_nb
from hetgym.sim.rules import covers_nb
from hetgym.sim.state.layout import ACC_NOW, CTR_RUN


@njit(cache=True, inline="always")
def _check_nb(job, w, wnodes, wgpus, P, S):
    """Validate a placement for ``job`` on the free resources; returns ``(code, dev)``
    with ``dev`` the device type of every worker, or -2 for a mixed placement."""
    jobs, nodes = P.jobs, P.nodes
    code = check_placement_nb(w, wnodes, wgpus, jobs.cpus_need[job], jobs.mem[job], nodes, S.node,
                              S.run.scr_f)
    if code != 0:
        return code, -1
    dev = nodes.dev[wnodes[0]]
    for i in range(w):
        d = nodes.dev[wnodes[i]]
        if jobs.tput[job, d] <= 0.0:
            return START_TPUT_ZERO, -1
        if d != dev:
            dev = -2
    return START_OK, dev


@njit(cache=True, inline="always")
def copies_nb(job, w, jobs):
    """Copies in a placement of ``w`` workers for ``job`` (forking): more workers than
    the job's largest gang means copies of ``workers`` each (forkable jobs have a fixed
    gang); otherwise 1."""
    if w > jobs.max_workers[job]:
        return w // jobs.workers[job]
    return 1


@njit(cache=True, inline="always")
def _occupy_nb(job, w, wnodes, wgpus, dev, P, S):
    """Take a checked placement for ``job`` and run it from now (``resume_at`` set by the
    caller): resources, power, worker slots, rate, projected finish, running list.
    With copies (forking: ``w`` = gang x copies, copy c at ``wnodes[c W:(c + 1) W]``) the rate
    is the sum of the copies' rates."""
    jobs, nodes, js, run = P.jobs, P.nodes, S.job, S.run
    alloc_call_nb(job, w, wnodes, wgpus, np.int64(1), jobs.cpus_need[job], jobs.mem[job], nodes, S.node)
    power_busy_nb(w, wnodes, wgpus, np.int64(1), jobs.cpus_need[job], nodes, run)
    for i in range(w, js.nworkers[job]):  # slots the last run had beyond this one (copies)
        js.worker_node[job, i] = -1
        js.worker_gpu[job, i] = -1
    for i in range(w):
        js.worker_node[job, i] = wnodes[i]
        js.worker_gpu[job, i] = wgpus[i]
    js.nworkers[job] = w
    k = copies_nb(job, w, jobs)
    js.n_copies[job] = k
    r = copies_rate_nb(job, w, k, wnodes, wgpus, P, S.node)
    js.rate[job] = r
    js.finish[job] = js.resume_at[job] + js.remaining[job] / r
    js.run_start[job] = run.acc[ACC_NOW]
    js.device[job] = dev
    js.status[job] = RUNNING
    run.running[run.ctr[CTR_RUN]] = job
    run.ctr[CTR_RUN] += 1
    refresh_rates(w, wnodes, P, S)


@njit(cache=True, no_cfunc_wrapper=True)
def start_nb(job, w, wnodes, wgpus, want, P, S):
    """Validate a placement and start a queued job on it (on device type ``want``, or any
    type if ``want < 0``).

    ``w`` may be the job's gang size times its number of copies (forking): copy c is
    ``wnodes[c W:(c + 1) W]``; the caller checks that copies are allowed and on distinct
    nodes. With >= 2 copies the job makes no progress for ``fork_sync`` seconds (or the
    restart delay if larger).

    Returns ``START_OK``, a code 1-6 of :func:`~hetgym.sim.kernels.place.check_placement_nb`,
    ``START_NOT_QUEUED``, ``START_TPUT_ZERO`` (a worker on a device type where
    the job's throughput is 0) or ``START_WRONG_DEVICE`` (every node in range, but not
    all of type ``want``; tested first).
    """
    js, run = S.job, S.run
    if want >= 0:
        dev, nn = P.nodes.dev, P.nodes.dev.shape[0]
        inside = True
        for i in range(w):
            if wnodes[i] < 0 or wnodes[i] >= nn:
                inside = False
        if inside:
            for i in range(w):
                if dev[wnodes[i]] != want:
                    return START_WRONG_DEVICE
    if js.status[job] != QUEUED:
        return START_NOT_QUEUED
    code, dev = _check_nb(job, w, wnodes, wgpus, P, S)
    if code != START_OK:
        return code
    t = run.acc[ACC_NOW]
    sync = P.opts.fork_sync if copies_nb(job, w, P.jobs) >= 2 else 0.0
    if np.isnan(js.first_start[job]):
        js.first_start[job] = t
        js.resume_at[job] = t + sync
    else:
        js.n_restart[job] += 1
        rd = P.opts.restart_delay
        js.resume_at[job] = t + (sync if sync > rd else rd)  # noqa: FURB136 (builtin min/max compile an overload)
    queue_remove_nb(run, js.qpos, job)
    _occupy_nb(job, w, wnodes, wgpus, dev, P, S)
    return START_OK


@njit(cache=True, inline="always")
def _same_placement_nb(job, w, wnodes, wgpus, P, S):
    """Whether ``(wnodes, wgpus)`` is the job's current placement, as a multiset of
    (node, GPU) pairs."""
    js = S.job
    if w != js.nworkers[job]:
        return False
    return same_pairs_nb(w, wnodes, wgpus, js.worker_node[job], js.worker_gpu[job])


@njit(cache=True, no_cfunc_wrapper=True)
def move_nb(job, w, wnodes, wgpus, P, S):
    """Re-allocate a running job (or one in its grace period) to a new placement in one
    instant.

    The placement is checked against the free resources plus the job's own. The
    old run ends (segment logged), the progress since the last checkpoint is lost
    (:func:`checkpoint_loss_nb`), and the job runs on the new placement after the
    restart delay: one restart, no preemption, any grace period cancelled. A move
    to the job's current placement only cancels a grace period (no delay, no loss).
    With copies (forking) the job waits for the larger of the restart delay and ``fork_sync``.
    Returns ``START_OK``, ``START_NOT_RUNNING`` or a placement code of
    :func:`start_nb` (then nothing changed).
    """
    jobs, nodes, js, run = P.jobs, P.nodes, S.job, S.run
    st = js.status[job]
    if st != RUNNING and st != GRACE:
        return START_NOT_RUNNING
    if _same_placement_nb(job, w, wnodes, wgpus, P, S):
        js.status[job] = RUNNING
        js.grace_end[job] = np.inf
        return START_OK
    ow = js.nworkers[job]
    on = js.worker_node[job, :ow]
    og = js.worker_gpu[job, :ow]
    alloc_call_nb(job, ow, on, og, np.int64(-1), jobs.cpus_need[job], jobs.mem[job], nodes, S.node)
    code, dev = _check_nb(job, w, wnodes, wgpus, P, S)
    alloc_call_nb(job, ow, on, og, np.int64(1), jobs.cpus_need[job], jobs.mem[job], nodes, S.node)
    if code != START_OK:
        return code
    checkpoint_loss_nb(job, P, S)
    release_nb(job, P, S)
    js.n_restart[job] += 1
    sync = P.opts.fork_sync if copies_nb(job, w, jobs) >= 2 else 0.0
    rd = P.opts.restart_delay
    js.resume_at[job] = run.acc[ACC_NOW] + (sync if sync > rd else rd)  # noqa: FURB136 (builtin min/max compile an overload)
    _occupy_nb(job, w, wnodes, wgpus, dev, P, S)
    return START_OK


@njit(cache=True, no_cfunc_wrapper=True)
def place_start_nb(job, dev, P, S):
    """Place a queued job on device ``dev`` with the run's placement policy and start it.

    Returns ``START_OK``, ``START_NO_ROOM`` if it does not fit, or a code of :func:`start_nb`.
    """
    jobs, run = P.jobs, S.run
    w = jobs.workers[job]
    ok = place_nb(dev, w, jobs.cpus_need[job, dev], jobs.mem[job], P.opts.policy, P.nodes,
                  S.node, run.scr_i, run.out_node, run.out_gpu)
    if not ok:
        return START_NO_ROOM
    return start_nb(job, w, run.out_node, run.out_gpu, dev, P, S)


@njit(cache=True, inline="always")
def no_room_nb(unit, ns):
    """True when no device type has room for even one worker of any job."""
    for c in range(unit.shape[0]):
        if covers_nb(ns.free_dev[c], unit[c]):
            return False
    return True


@njit(cache=True, no_cfunc_wrapper=True)
def admit_nb(order, pref, blocking, policy, P, cap, scr_i, out_job, out_dev, out_nodes,
             out_gpus):
    """Greedy admission of ordered jobs on a scratch copy ``cap`` of the node state.

    Each job in ``order`` takes the first device type in its row of ``pref``
    (device indices, -1 padded) where the placement policy finds room; the
    resources are taken from ``cap``. With ``blocking`` the walk stops at the
    first job that fits nowhere; it also stops as soon as no device type has
    room for one worker of any job (so a full cluster costs O(1), not O(queue)).
    Returns the number of starts written to ``out_job``, ``out_dev``,
    ``out_nodes[k, :W]``, ``out_gpus[k, :W]``.
    """
    jobs, nodes = P.jobs, P.nodes
    ns = 0
    for i in range(order.shape[0]):
        if no_room_nb(P.min_unit, cap):
            break
        j = order[i]
        w = jobs.workers[j]
        placed = False
        for k in range(pref.shape[1]):
            d = pref[j, k]
            if d < 0:
                break
            # placed straight into row ns (a failed try's writes there are overwritten or
            # past the count); no scratch arrays to allocate
            row_n, row_g = out_nodes[ns], out_gpus[ns]
            if place_nb(d, w, jobs.cpus_need[j, d], jobs.mem[j], policy, nodes, cap, scr_i,
                        row_n, row_g):
                alloc_nb(j, w, row_n, row_g, 1, jobs.cpus_need[j], jobs.mem[j], nodes, cap)
                out_job[ns] = j
                out_dev[ns] = d
                ns += 1
                placed = True
                break
        if not placed and blocking:
            break
    return ns
