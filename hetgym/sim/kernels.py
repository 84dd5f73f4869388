"""Numba kernels of the simulator: small, pure, array in / array out.

No kernel draws random numbers, reads a clock, does I/O or touches globals
(STYLE.md item 9). They take the arrays of :mod:`hetgym.sim.state` and write
into caller-allocated outputs. Names end in ``_nb``.

Array conventions (``N`` nodes, ``G`` max GPUs per node, ``C`` device types):

* ``node_dev``   int64[N]       device index of the node's workers
* ``node_gpus``  int64[N]       GPUs of the node (0 for a CPU node)
* ``dev_is_cpu`` bool[C]        whether device index ``c`` is ``cpu``
* ``free_gpus``  int64[N], ``free_cpus`` float64[N], ``free_mem`` float64[N]
* ``gpu_owner``  int64[N, G]    job holding each GPU, -1 free (and for padding)
* ``node_dist``  float64[N, G, G] GPU distances, 0-padded
"""

from __future__ import annotations

import numpy as np
from numba import njit

EPS = 1e-9


@njit(cache=True)
def slots_on_node_nb(n, is_cpu, cpus, mem, free_gpus, free_cpus, free_mem):
    """How many workers (each: 1 GPU unless ``is_cpu``, ``cpus`` cores, ``mem`` GB) fit on node n."""
    big = 1 << 30
    s = big
    if not is_cpu:
        s = free_gpus[n]
    if cpus > 0:
        k = int(np.floor(free_cpus[n] / cpus + EPS))
        if k < s:
            s = k
    if mem > 0:
        k = int(np.floor(free_mem[n] / mem + EPS))
        if k < s:
            s = k
    if s == big:  # a job needing nothing: cap at 1 << 20 workers per node
        s = 1 << 20
    return s


@njit(cache=True)
def total_slots_nb(dev, is_cpu, cpus, mem, node_dev, free_gpus, free_cpus, free_mem):
    """Workers of one job that fit on all nodes of device ``dev`` together."""
    tot = 0
    for n in range(node_dev.shape[0]):
        if node_dev[n] == dev:
            tot += slots_on_node_nb(n, is_cpu, cpus, mem, free_gpus, free_cpus, free_mem)
    return tot


@njit(cache=True)
def _pick_gpus_nb(n, k, topo, gpu_owner, node_gpus, node_dist, out_gpu, start):
    """Choose k free GPUs on node n, write their indices at ``out_gpu[start:start+k]``."""
    g = node_gpus[n]
    if not topo or k <= 1:
        c = 0
        for i in range(g):
            if gpu_owner[n, i] < 0:
                out_gpu[start + c] = i
                c += 1
                if c == k:
                    return
        return
    best_cost = np.inf
    best = np.empty(k, dtype=np.int64)
    chosen = np.empty(k, dtype=np.int64)
    used = np.zeros(g, dtype=np.bool_)
    for seed in range(g):
        if gpu_owner[n, seed] >= 0:
            continue
        used[:] = False
        used[seed] = True
        chosen[0] = seed
        cost = 0.0
        for m in range(1, k):
            bi = -1
            bc = np.inf
            for i in range(g):
                if used[i] or gpu_owner[n, i] >= 0:
                    continue
                c = 0.0
                for q in range(m):
                    c += node_dist[n, chosen[q], i]
                if c < bc - EPS:
                    bc = c
                    bi = i
            used[bi] = True
            chosen[m] = bi
            cost += bc
        if cost < best_cost - EPS:
            best_cost = cost
            best[:] = chosen[:]
    srt = np.sort(best)
    for m in range(k):
        out_gpu[start + m] = srt[m]


@njit(cache=True)
def place_nb(dev, is_cpu, w, cpus, mem, policy, node_dev, node_gpus, node_dist,
             free_gpus, free_cpus, free_mem, gpu_owner, out_node, out_gpu):
    """Find a placement of ``w`` workers on nodes of device ``dev``.

    Policies (codes of :class:`~hetgym.sim.codes.PlacementPolicy`):
    0 pack: the single node that holds all workers with the fewest spare slots
    (lowest index on ties); else nodes by spare slots descending (lowest index
    on ties), each filled as far as it goes. 1 spread: nodes by spare slots
    descending, one worker each, round robin. 2 topology: nodes as pack, GPUs
    on a node chosen greedily to minimise summed pairwise distance.

    Writes ``out_node[:w]`` and ``out_gpu[:w]`` (-1 for CPU workers) and
    returns True, or returns False (outputs undefined) when it does not fit.
    Does not modify the free arrays.
    """
    nn = node_dev.shape[0]
    slots = np.zeros(nn, dtype=np.int64)
    tot = 0
    for n in range(nn):
        if node_dev[n] == dev:
            slots[n] = slots_on_node_nb(n, is_cpu, cpus, mem, free_gpus, free_cpus, free_mem)
            tot += slots[n]
    if tot < w:
        return False
    take = np.zeros(nn, dtype=np.int64)
    if policy != 1:
        best = -1
        for n in range(nn):
            if slots[n] >= w and (best < 0 or slots[n] < slots[best]):
                best = n
        if best >= 0:
            take[best] = w
        else:
            order = np.argsort(-slots, kind="mergesort")
            left = w
            for i in range(nn):
                n = order[i]
                if left == 0 or slots[n] == 0:
                    break
                t = min(left, slots[n])
                take[n] = t
                left -= t
    else:
        order = np.argsort(-slots, kind="mergesort")
        left = w
        while left > 0:
            for i in range(nn):
                n = order[i]
                if slots[n] == 0:
                    break
                if take[n] < slots[n]:
                    take[n] += 1
                    left -= 1
                    if left == 0:
                        break
    c = 0
    for n in range(nn):
        k = take[n]
        if k == 0:
            continue
        for m in range(k):
            out_node[c + m] = n
            out_gpu[c + m] = -1
        if not is_cpu:
            _pick_gpus_nb(n, k, policy == 2, gpu_owner, node_gpus, node_dist, out_gpu, c)
        c += k
    return True


@njit(cache=True)
def check_placement_nb(job, w, nodes, gpus, job_cpus_need, mem, node_dev, dev_is_cpu,
                       node_gpus, free_gpus, free_cpus, free_mem, gpu_owner):
    """Validate an explicit placement; returns 0 if valid, else an error code.

    Codes: 1 node index out of range, 2 GPU index out of range or missing,
    3 GPU busy or used twice, 4 CPU cores exceeded, 5 memory exceeded,
    6 a CPU worker on a GPU index.
    ``job_cpus_need`` is float64[C]: cores per worker on each device type.
    """
    nn = node_dev.shape[0]
    need_c = np.zeros(nn)
    need_m = np.zeros(nn)
    for i in range(w):
        n = nodes[i]
        if n < 0 or n >= nn:
            return 1
        d = node_dev[n]
        if dev_is_cpu[d]:
            if gpus[i] >= 0:
                return 6
        else:
            g = gpus[i]
            if g < 0 or g >= node_gpus[n]:
                return 2
            if gpu_owner[n, g] >= 0:
                return 3
            for k in range(i):
                if nodes[k] == n and gpus[k] == g:
                    return 3
        need_c[n] += job_cpus_need[d]
        need_m[n] += mem
    for n in range(nn):
        if need_c[n] > free_cpus[n] + EPS:
            return 4
        if need_m[n] > free_mem[n] + EPS:
            return 5
    return 0


@njit(cache=True)
def alloc_nb(job, w, nodes, gpus, sign, job_cpus_need, mem, node_dev,
             free_gpus, free_cpus, free_mem, gpu_owner):
    """Take (``sign=+1``) or give back (``sign=-1``) the resources of a placement."""
    for i in range(w):
        n = nodes[i]
        d = node_dev[n]
        free_cpus[n] -= sign * job_cpus_need[d]
        free_mem[n] -= sign * mem
        g = gpus[i]
        if g >= 0:
            free_gpus[n] -= sign
            gpu_owner[n, g] = job if sign > 0 else -1


@njit(cache=True)
def rate_nb(w, nodes, gpus, tput_row, node_dev, node_dist, comm, scaling_exponent,
            topology_coeff, network_distance):
    """Rate (iterations/s) of a job on a placement.

    rate = W x min over workers of per-worker throughput on the worker's device
    x W ** (scaling_exponent - 1) x topology factor. The topology factor is
    1 / (1 + topology_coeff x comm x max(0, mean pairwise distance - 1)), with
    GPU-GPU distances from the node's matrix, 1 between CPU workers of one
    node, and ``network_distance`` across nodes. It is exactly 1 when W = 1,
    comm = 0 or topology_coeff = 0.
    """
    mn = np.inf
    for i in range(w):
        t = tput_row[node_dev[nodes[i]]]
        if t < mn:
            mn = t
    rate = w * mn
    if scaling_exponent != 1.0:
        rate *= w ** (scaling_exponent - 1.0)
    if w > 1 and comm > 0.0 and topology_coeff > 0.0:
        s = 0.0
        for a in range(w):
            for b in range(a + 1, w):
                if nodes[a] != nodes[b]:
                    s += network_distance
                elif gpus[a] >= 0 and gpus[b] >= 0:
                    s += node_dist[nodes[a], gpus[a], gpus[b]]
                else:
                    s += 1.0
        mean = s / (w * (w - 1) / 2.0)
        if mean > 1.0:
            rate /= 1.0 + topology_coeff * comm * (mean - 1.0)
    return rate


@njit(cache=True)
def next_times_nb(running, n_run, status, finish, grace_end):
    """(earliest finish time, earliest grace end) over the running set."""
    tf = np.inf
    tg = np.inf
    for i in range(n_run):
        j = running[i]
        if finish[j] < tf:
            tf = finish[j]
        if status[j] == 3 and grace_end[j] < tg:
            tg = grace_end[j]
    return tf, tg


@njit(cache=True)
def advance_nb(running, n_run, t0, t1, rate, resume_at, remaining, workers, user, service):
    """Move running jobs' progress from t0 to t1 (> t0); credit per-user service.

    Progress accrues only after ``resume_at`` (restart delay). Service is
    worker-seconds held, whether or not the job progresses.
    """
    dt = t1 - t0
    for i in range(n_run):
        j = running[i]
        s = t0 if t0 > resume_at[j] else resume_at[j]
        if t1 > s:
            remaining[j] -= rate[j] * (t1 - s)
        service[user[j]] += workers[j] * dt


@njit(cache=True)
def due_nb(running, n_run, status, finish, grace_end, t, out_done, out_grace):
    """Collect running jobs finishing at or before t, and grace periods ending by t.

    Returns (number done, number of grace ends); ids in running order. A job
    that finishes during its grace period counts as done only.
    """
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
    return nd, ng


@njit(cache=True)
def remove_nb(arr, n, x):
    """Remove the first ``x`` from ``arr[:n]`` keeping order; returns the new length."""
    for i in range(n):
        if arr[i] == x:
            for k in range(i, n - 1):
                arr[k] = arr[k + 1]
            return n - 1
    return n


@njit(cache=True)
def insert_front_nb(arr, n, x):
    """Insert ``x`` at the head of ``arr[:n]``; returns the new length."""
    for k in range(n, 0, -1):
        arr[k] = arr[k - 1]
    arr[0] = x
    return n + 1


@njit(cache=True)
def mask_nb(window, n_win, n_dev, dev_is_cpu, workers, tput, cpus_need, mem, node_dev,
            free_gpus, free_cpus, free_mem, out):
    """Feasibility of starting window job k on device c, written to ``out[k, c]``."""
    for k in range(out.shape[0]):
        for c in range(n_dev):
            out[k, c] = False
    for k in range(n_win):
        j = window[k]
        for c in range(n_dev):
            if tput[j, c] <= 0.0:
                continue
            s = total_slots_nb(c, dev_is_cpu[c], cpus_need[j, c], mem[j], node_dev,
                               free_gpus, free_cpus, free_mem)
            out[k, c] = s >= workers[j]


# ---------------------------------------------------------------- fused paths
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
    t = np.inf
    if ctr[0] < n_jobs:
        t = arrival[ctr[0]]
    n_run = ctr[2]
    for i in range(n_run):
        j = running[i]
        if finish[j] < t:
            t = finish[j]
        if status[j] == 3 and grace_end[j] < t:
            t = grace_end[j]
    if round_len > 0.0 and (n_run > 0 or ctr[1] > 0) and acc[3] < t:
        t = acc[3]
    if t == np.inf or t > horizon:
        if horizon < np.inf and t > horizon and horizon > now:
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
