"""Fused Numba paths of the simulator: one call per event instant, per start.

``step_nb`` processes every event of the next instant (completions, grace
ends, arrivals, round boundary); ``start_nb`` / ``place_start_nb`` validate and
start a job; ``release_nb`` gives a job's resources back; ``admit_nb`` is the
greedy admission used by FIFO-like baselines. They compose the small kernels
of :mod:`hetgym.sim.kernels` and follow the same rules (pure, no RNG or I/O).
"""

from __future__ import annotations

import numpy as np
from numba import njit

from hetgym.sim.kernels import (
    alloc_nb,
    check_placement_nb,
    insert_front_nb,
    place_nb,
    rate_nb,
    remove_nb,
)

# ctr (int64[7]):  0 next_arrival, 1 n_queue, 2 n_running, 3 n_done, 4 events, 5 error job,
#                  6 segments logged
# acc (float64[4]): 0 now, 1 energy_j, 2 active power (W), 3 next round (inf if none)
# seg_i (int64[S, 3]): job, device index (-2 mixed), first node of each finished run
# seg_f (float64[S, 2]): start, end of each finished run
CTR_ARR, CTR_Q, CTR_RUN, CTR_DONE, CTR_EV, CTR_ERR, CTR_SEG = 0, 1, 2, 3, 4, 5, 6
ACC_NOW, ACC_ENERGY, ACC_POWER, ACC_ROUND = 0, 1, 2, 3


@njit(cache=True)
def power_busy_nb(job, w, nodes, gpus, sign, cpus_need_row, node_dev, gpu_w, core_w, busy, acc):
    """Add (sign=+1) or remove (-1) a placement's active power and busy units."""
    for i in range(w):
        n = nodes[i]
        d = node_dev[n]
        if gpus[i] >= 0:
            acc[2] += sign * gpu_w[n]
            busy[d] += sign
        else:
            acc[2] += sign * core_w[n] * cpus_need_row[d]
            busy[d] += sign * cpus_need_row[d]


@njit(cache=True)
def release_nb(job, to_queue, lose_progress, ckpt, ctr, acc, queue, running, status, remaining,
               rate, finish, grace_end, run_start, exec_time, resume_at, worker_node,
               worker_gpu, workers, cpus_need, mem, work, node_dev, free_gpus, free_cpus,
               free_mem, gpu_owner, gpu_w, core_w, busy, device, seg_i, seg_f):
    """Give back a running job's resources; to the queue head (suspend) or nowhere (done).

    With ``lose_progress`` and ``ckpt > 0``, the progress made since the last
    checkpoint of this run (``fmod(now - resume_at, ckpt) * rate``) is lost.
    """
    now = acc[0]
    w = workers[job]
    if lose_progress and ckpt > 0.0:
        progressed = now - resume_at[job]
        if progressed > 0.0:
            lost = np.fmod(progressed, ckpt) * rate[job]
            remaining[job] = min(work[job], remaining[job] + lost)
    nodes = worker_node[job, :w]
    gpus = worker_gpu[job, :w]
    alloc_nb(job, w, nodes, gpus, -1, cpus_need[job], mem[job], node_dev, free_gpus, free_cpus,
             free_mem, gpu_owner)
    power_busy_nb(job, w, nodes, gpus, -1, cpus_need[job], node_dev, gpu_w, core_w, busy, acc)
    exec_time[job] += now - run_start[job]
    k = ctr[6]
    seg_i[k, 0] = job
    seg_i[k, 1] = device[job]
    seg_i[k, 2] = worker_node[job, 0]
    seg_f[k, 0] = run_start[job]
    seg_f[k, 1] = now
    ctr[6] = k + 1
    rate[job] = 0.0
    finish[job] = np.inf
    grace_end[job] = np.inf
    ctr[2] = remove_nb(running, ctr[2], job)
    if to_queue:
        status[job] = 1
        ctr[1] = insert_front_nb(queue, ctr[1], job)


@njit(cache=True)
def next_event_nb(round_len, ctr, acc, arrival, running, status, finish, grace_end):
    """Time of the next event (``inf`` if none): the next arrival, the earliest
    projected finish or grace end of a running job, and the next round boundary
    while a job runs or waits."""
    t = np.inf
    if ctr[0] < arrival.shape[0]:
        t = arrival[ctr[0]]
    for i in range(ctr[2]):
        j = running[i]
        if finish[j] < t:
            t = finish[j]
        if status[j] == 3 and grace_end[j] < t:
            t = grace_end[j]
    if round_len > 0.0 and (ctr[2] > 0 or ctr[1] > 0) and acc[3] < t:
        t = acc[3]
    return t


@njit(cache=True)
def step_nb(horizon, round_len, ckpt, ctr, acc, queue, running, arrival, status, remaining,
            rate, finish, grace_end, run_start, exec_time, end, resume_at, worker_node,
            worker_gpu, workers, cpus_need, mem, work, user, service, node_dev, free_gpus,
            free_cpus, free_mem, gpu_owner, idle_power, gpu_w, core_w, busy, busy_time,
            out_done, out_grace, device, seg_i, seg_f):
    """Jump to the next event time and process every event there.

    Order at one instant: completions, grace ends (suspend, progress kept),
    arrivals, round boundary. Returns ``(code, n_done, n_grace)``: code 1 =
    moved, 0 = no event within the horizon (time moved to the horizon if it
    is finite and later), -1 = a job completed with work left (its index in
    ``ctr[5]``), -2 = time would go back, -3 = the segment log is full (nothing
    done; grow it and call again).
    """
    n_jobs = arrival.shape[0]
    now = acc[0]
    if ctr[6] + ctr[2] + 1 > seg_i.shape[0]:
        return -3, 0, 0
    t = next_event_nb(round_len, ctr, acc, arrival, running, status, finish, grace_end)
    n_run = ctr[2]
    if t == np.inf or t > horizon:
        if t < np.inf and t > horizon and horizon > now:  # an unreached horizon changes nothing
            t = horizon
        else:
            return 0, 0, 0
        code = 0
    else:
        code = 1
    if t < now:
        return -2, 0, 0
    dt = t - now
    if dt > 0.0:
        for i in range(n_run):
            j = running[i]
            s = now if now > resume_at[j] else resume_at[j]
            if t > s:
                remaining[j] -= rate[j] * (t - s)
            service[user[j]] += workers[j] * dt
        acc[1] += (idle_power + acc[2]) * dt
        for c in range(busy.shape[0]):
            busy_time[c] += busy[c] * dt
    acc[0] = t
    if code == 0:
        return 0, 0, 0
    nd = 0
    ng = 0
    for i in range(n_run):
        j = running[i]
        if finish[j] <= t:
            out_done[nd] = j
            nd += 1
        elif status[j] == 3 and grace_end[j] <= t:
            out_grace[ng] = j
            ng += 1
    for k in range(nd):
        j = out_done[k]
        if abs(remaining[j]) > 1e-6 * max(1.0, work[j]):
            ctr[5] = j
            return -1, nd, ng
        remaining[j] = 0.0
        release_nb(j, False, False, ckpt, ctr, acc, queue, running, status, remaining, rate,
                   finish, grace_end, run_start, exec_time, resume_at, worker_node, worker_gpu,
                   workers, cpus_need, mem, work, node_dev, free_gpus, free_cpus, free_mem,
                   gpu_owner, gpu_w, core_w, busy, device, seg_i, seg_f)
        status[j] = 4
        end[j] = t
        ctr[3] += 1
    for k in range(ng):
        j = out_grace[k]
        release_nb(j, True, False, ckpt, ctr, acc, queue, running, status, remaining, rate,
                   finish, grace_end, run_start, exec_time, resume_at, worker_node, worker_gpu,
                   workers, cpus_need, mem, work, node_dev, free_gpus, free_cpus, free_mem,
                   gpu_owner, gpu_w, core_w, busy, device, seg_i, seg_f)
    while ctr[0] < n_jobs and arrival[ctr[0]] <= t:
        j = ctr[0]
        status[j] = 1
        queue[ctr[1]] = j
        ctr[1] += 1
        ctr[0] += 1
    if round_len > 0.0:
        while acc[3] <= t:
            acc[3] += round_len
    ctr[4] += 1
    return 1, nd, ng


@njit(cache=True)
def start_nb(job, w, nodes, gpus, restart_delay, scaling_exponent, topology_coeff,
             network_distance, ctr, acc, queue, running, status, remaining, rate, finish,
             run_start, first_start, resume_at, n_restart, device, worker_node, worker_gpu,
             tput, cpus_need, mem, comm, node_dev, dev_is_cpu, node_gpus, node_dist,
             free_gpus, free_cpus, free_mem, gpu_owner, gpu_w, core_w, busy):
    """Validate a placement and start a queued job on it.

    Returns 0 on success, else an error code: 1-6 as :func:`check_placement_nb`,
    7 the job is not queued, 8 a worker sits on a device type where the job's
    throughput is 0.
    """
    if status[job] != 1:
        return 7
    code = check_placement_nb(job, w, nodes, gpus, cpus_need[job], mem[job], node_dev,
                              dev_is_cpu, node_gpus, free_gpus, free_cpus, free_mem, gpu_owner)
    if code != 0:
        return code
    dev = node_dev[nodes[0]]
    for i in range(w):
        d = node_dev[nodes[i]]
        if tput[job, d] <= 0.0:
            return 8
        if d != dev:
            dev = -2
    alloc_nb(job, w, nodes, gpus, 1, cpus_need[job], mem[job], node_dev, free_gpus, free_cpus,
             free_mem, gpu_owner)
    power_busy_nb(job, w, nodes, gpus, 1, cpus_need[job], node_dev, gpu_w, core_w, busy, acc)
    for i in range(w):
        worker_node[job, i] = nodes[i]
        worker_gpu[job, i] = gpus[i]
    r = rate_nb(w, nodes, gpus, tput[job], node_dev, node_dist, comm[job], scaling_exponent,
                topology_coeff, network_distance)
    t = acc[0]
    if np.isnan(first_start[job]):
        first_start[job] = t
        resume_at[job] = t
    else:
        n_restart[job] += 1
        resume_at[job] = t + restart_delay
    rate[job] = r
    finish[job] = resume_at[job] + remaining[job] / r
    run_start[job] = t
    device[job] = dev
    status[job] = 2
    ctr[1] = remove_nb(queue, ctr[1], job)
    running[ctr[2]] = job
    ctr[2] += 1
    return 0


@njit(cache=True)
def admit_nb(order, pref, blocking, policy, workers, cpus_need, mem, node_dev, dev_is_cpu,
             node_gpus, node_dist, free_gpus, free_cpus, free_mem, gpu_owner, out_job,
             out_dev, out_nodes, out_gpus):
    """Greedy admission of ordered jobs on (scratch copies of) free resources.

    Each job in ``order`` takes the first device type in its row of ``pref``
    (device indices, -1 padded) where the placement policy finds room; the
    resources are taken from the given arrays. With ``blocking`` the walk stops
    at the first job that fits nowhere. Returns the number of starts written
    to ``out_job``, ``out_dev``, ``out_nodes[k, :W]``, ``out_gpus[k, :W]``.
    """
    ns = 0
    wmax = out_nodes.shape[1]
    tmp_n = np.empty(wmax, dtype=np.int64)
    tmp_g = np.empty(wmax, dtype=np.int64)
    for i in range(order.shape[0]):
        j = order[i]
        w = workers[j]
        placed = False
        for k in range(pref.shape[1]):
            d = pref[j, k]
            if d < 0:
                break
            ok = place_nb(d, dev_is_cpu[d], w, cpus_need[j, d], mem[j], policy, node_dev,
                          node_gpus, node_dist, free_gpus, free_cpus, free_mem, gpu_owner,
                          tmp_n, tmp_g)
            if ok:
                alloc_nb(j, w, tmp_n, tmp_g, 1, cpus_need[j], mem[j], node_dev, free_gpus,
                         free_cpus, free_mem, gpu_owner)
                out_job[ns] = j
                out_dev[ns] = d
                for m in range(w):
                    out_nodes[ns, m] = tmp_n[m]
                    out_gpus[ns, m] = tmp_g[m]
                ns += 1
                placed = True
                break
        if not placed and blocking:
            break
    return ns


@njit(cache=True)
def place_start_nb(job, dev, policy, workers, out_node, out_gpu, restart_delay,
                   scaling_exponent, topology_coeff, network_distance, ctr, acc, queue, running,
                   status, remaining, rate, finish, run_start, first_start, resume_at, n_restart,
                   device, worker_node, worker_gpu, tput, cpus_need, mem, comm, node_dev,
                   dev_is_cpu, node_gpus, node_dist, free_gpus, free_cpus, free_mem, gpu_owner,
                   gpu_w, core_w, busy):
    """Place a queued job on device ``dev`` with the default policy and start it.

    Returns 0, 9 if it does not fit, or an error code of :func:`start_nb`.
    """
    w = workers[job]
    ok = place_nb(dev, dev_is_cpu[dev], w, cpus_need[job, dev], mem[job], policy, node_dev,
                  node_gpus, node_dist, free_gpus, free_cpus, free_mem, gpu_owner, out_node,
                  out_gpu)
    if not ok:
        return 9
    return start_nb(job, w, out_node, out_gpu, restart_delay, scaling_exponent, topology_coeff,
                    network_distance, ctr, acc, queue, running, status, remaining, rate, finish,
                    run_start, first_start, resume_at, n_restart, device, worker_node,
                    worker_gpu, tput, cpus_need, mem, comm, node_dev, dev_is_cpu, node_gpus,
                    node_dist, free_gpus, free_cpus, free_mem, gpu_owner, gpu_w, core_w, busy)
