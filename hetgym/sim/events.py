"""Fused Numba paths of the simulator over the typed state: one call per event instant, per start.

Every kernel takes ``P`` (:class:`~hetgym.sim.state.Params`) and ``S``
(:class:`~hetgym.sim.state.State`) whole, as the simulator passes them: their
structref mirrors (:mod:`hetgym.sim.mirror`; the NamedTuples work too, at a cost in
reference counting and compile time). ``step_nb`` processes every event of
the next instant (completions, grace ends, arrivals, round boundary) and is the
one step function that both :func:`hetgym.simulate` and ``HetCluster-v0`` drive;
``start_nb`` / ``place_start_nb`` validate and start a job; ``move_nb``
re-allocates a running job in one instant; ``release_nb`` gives a job's resources back; ``admit_nb`` is the greedy admission of FIFO-like
baselines. They compose the small kernels of :mod:`hetgym.sim.kernels` and
follow the same rules (pure, no RNG or I/O).

Flags are never passed to a compiled callee as constants: Numba types a constant
argument as a literal and compiles the callee again for it (several seconds for a
kernel over the whole state), so call sites pass run-time values instead. A
mechanism a run does not use is left out of its compiled kernels by type, chosen
in Python: a run without interference passes a
:data:`~hetgym.sim.mirror.PlainParamsK`, for which :func:`refresh_rates` and the
interfered rate resolve to nothing and to the plain rate at compile time
(:mod:`hetgym.sim.interference`).

Compile time after install grows with every inlined copy of a helper (Numba types and
lowers it again at each site, and LLVM optimises each copy): the resource and power
books (:func:`~hetgym.sim.kernels.alloc_call_nb`, :func:`power_busy_nb`), which start,
release and move all take, are kernels of their own, compiled once and linked into
each. Helpers with one site per kernel stay inlined: as kernels of their own they
measured more compile work, not less (instruction counts of a cold run).
"""

from __future__ import annotations

import numpy as np
from numba import njit

from hetgym.sim.codes import DONE, GRACE, QUEUED, RUNNING
from hetgym.sim.interference import copies_rate_nb, refresh_rates
from hetgym.sim.kernels import (
    alloc_call_nb,
    alloc_nb,
    check_placement_nb,
    place_nb,
    queue_push_front_nb,
    queue_push_nb,
    queue_remove_nb,
    same_pairs_nb,
)
from hetgym.sim.state import (
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

#: Return codes of :func:`step_nb`.
STEP_MOVED, STEP_NONE, STEP_WORK_LEFT, STEP_TIME_BACK, STEP_LOG_FULL = 1, 0, -1, -2, -3
#: Return codes of :func:`start_nb` / :func:`place_start_nb` / :func:`move_nb` besides
#: those of :func:`~hetgym.sim.kernels.check_placement_nb` (1-6).
START_OK, START_NOT_QUEUED, START_TPUT_ZERO, START_NO_ROOM, START_NOT_RUNNING = 0, 7, 8, 9, 10
START_WRONG_DEVICE = 11


@njit(cache=True, no_cfunc_wrapper=True)
def power_busy_nb(w, wnodes, wgpus, sign, cpus_row, nodes, run):
    """Add (sign=+1) or remove (-1) a placement's active power and busy units.

    Also keeps the per-node books (``run.node_*``, integrated lazily: a node's energy
    and busy seconds are brought up to now only when its power changes) and switches a
    node's ``switch_w`` (its idle power under ``idle_power="busy_nodes"``) on with its
    first worker and off with its last.

    A kernel of its own, not inlined (like :func:`~hetgym.sim.kernels.alloc_call_nb`):
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
        q = done / ckpt
        kept = np.floor(q + 1e-9 * (q if q > 1.0 else 1.0)) * ckpt  # noqa: FURB136 (builtin min/max compile an overload)
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
    """Copies in a placement of ``w`` workers for ``job`` (forking, M4): more workers than
    the job's largest gang means copies of ``workers`` each (forkable jobs have a fixed
    gang); otherwise 1."""
    if w > jobs.max_workers[job]:
        return w // jobs.workers[job]
    return 1


@njit(cache=True, inline="always")
def fork_sync_nb(t, P, S):
    """Round boundary at ``t``: every job holding >= 2 copies makes no progress for
    ``fork_sync`` seconds (model consolidation, M4; a pending restart delay overlaps)."""
    js, run = S.job, S.run
    sync = P.opts.fork_sync
    for i in range(run.ctr[CTR_RUN]):
        j = run.running[i]
        if js.n_copies[j] >= 2 and js.resume_at[j] < t + sync:
            js.resume_at[j] = t + sync
            js.finish[j] = js.resume_at[j] + js.remaining[j] / js.rate[j]


@njit(cache=True, inline="always")
def _occupy_nb(job, w, wnodes, wgpus, dev, P, S):
    """Take a checked placement for ``job`` and run it from now (``resume_at`` set by the
    caller): resources, power, worker slots, rate, projected finish, running list.
    With copies (M4: ``w`` = gang x copies, copy c at ``wnodes[c W:(c + 1) W]``) the rate
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

    ``w`` may be the job's gang size times its number of copies (forking, M4): copy c is
    ``wnodes[c W:(c + 1) W]``; the caller checks that copies are allowed and on distinct
    nodes. With >= 2 copies the job makes no progress for ``fork_sync`` seconds (or the
    restart delay if larger).

    Returns ``START_OK``, a code 1-6 of :func:`~hetgym.sim.kernels.check_placement_nb`,
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
    With copies (M4) the job waits for the larger of the restart delay and ``fork_sync``.
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
        if ns.free_dev[c] + 1e-9 >= unit[c]:
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
