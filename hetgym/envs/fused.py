"""One Numba call per environment step: advance to the next decision point,
accumulate the reward terms, and write the action mask and the observation.

Composes the simulator's kernels (:func:`hetgym.sim.kernels.step_nb`,
:func:`~hetgym.sim.kernels.mask_nb`) and :func:`hetgym.envs.features.observe_nb`;
the semantics are theirs. ``step_args`` is the simulator's argument tuple of
``step_nb``; ``env_args`` is built by :class:`~hetgym.envs.hetcluster.HetClusterEnv`:

``(tput, dev_is_cpu, job_class, n_preempt, deadline, weight, inv_best, scale,
limit, run_window, win, rwin, mask2d, mask, nwin, rew, cap_dev, max_cap,
max_workers, eff_exp, first_start, free_dev, obs)``

``rew`` (float64[5]) accumulates the terms jct, slowdown, makespan, tardiness
(already signed and scaled, see :mod:`hetgym.envs.reward`) and keeps in [4]
the running sum of 1 / best duration over the jobs in the system.
"""

from __future__ import annotations

from numba import njit

from hetgym.envs.features import observe_nb
from hetgym.sim.events import place_start_nb, step_nb
from hetgym.sim.kernels import mask_nb

__all__ = ["decide_point_nb", "update_mask_nb", "observe_state_nb", "start_and_decide_nb"]


@njit(cache=True)
def update_mask_nb(step_args, env_args):
    """Fill the job window, running window and action mask; True if any start/preempt is feasible."""
    (horizon, round_len, ckpt, ctr, acc, queue, running, arrival, status, remaining, rate,
     finish, grace_end, run_start, exec_time, end, resume_at, worker_node, worker_gpu, workers,
     cpus_need, mem, work, user, service, node_dev, free_gpus, free_cpus, free_mem, gpu_owner,
     idle_power, gpu_w, core_w, busy, busy_time, out_done, out_grace, device, seg_i,
     seg_f) = step_args
    (tput, dev_is_cpu, job_class, n_preempt, deadline, weight, inv_best, scale, limit,
     run_window, win, rwin, mask2d, mask, nwin, rew, cap_dev, max_cap, max_workers, eff_exp,
     first_start, free_dev, obs) = env_args
    k_n = win.shape[0]
    c_n = tput.shape[1]
    nq = min(ctr[1], k_n)
    for k in range(nq):
        win[k] = queue[k]
    mask_nb(win, nq, c_n, dev_is_cpu, workers, tput, cpus_need, mem, node_dev, free_gpus,
            free_cpus, free_mem, mask2d)
    feasible = False
    for k in range(k_n):
        for c in range(c_n):
            m = mask2d[k, c]
            mask[k * c_n + c] = m
            if m:
                feasible = True
    base = k_n * c_n
    r = 0
    for i in range(ctr[2]):
        if r == run_window:
            break
        j = running[i]
        if job_class[j] == 0 and status[j] == 2 and (limit < 0 or n_preempt[j] < limit):
            rwin[r] = j
            mask[base + r] = True
            r += 1
            feasible = True
    for q in range(r, run_window):
        mask[base + q] = False
    # waiting is feasible unless nothing could ever happen after it: nothing runs, every
    # job has arrived, and a start is possible (else "wait" would end the episode early
    # with the waiting jobs' JCT never counted)
    mask[base + run_window] = not (feasible and ctr[2] == 0 and ctr[0] == arrival.shape[0])
    nwin[0] = nq
    nwin[1] = r
    return feasible


@njit(cache=True)
def observe_state_nb(step_args, env_args):
    """Write the observation of the current state into ``env_args``' ``obs``."""
    (horizon, round_len, ckpt, ctr, acc, queue, running, arrival, status, remaining, rate,
     finish, grace_end, run_start, exec_time, end, resume_at, worker_node, worker_gpu, workers,
     cpus_need, mem, work, user, service, node_dev, free_gpus, free_cpus, free_mem, gpu_owner,
     idle_power, gpu_w, core_w, busy, busy_time, out_done, out_grace, device, seg_i,
     seg_f) = step_args
    (tput, dev_is_cpu, job_class, n_preempt, deadline, weight, inv_best, scale, limit,
     run_window, win, rwin, mask2d, mask, nwin, rew, cap_dev, max_cap, max_workers, eff_exp,
     first_start, free_dev, obs) = env_args
    free_dev[:] = 0.0
    for n in range(node_dev.shape[0]):
        d = node_dev[n]
        if dev_is_cpu[d]:
            free_dev[d] += free_cpus[n]
        else:
            free_dev[d] += free_gpus[n]
    observe_nb(acc[0], win, nwin[0], rwin, nwin[1], run_window, queue, ctr[1], ctr[2], ctr[0],
               ctr[3], arrival.shape[0], arrival, workers, max_workers, remaining, tput, eff_exp,
               job_class, deadline, first_start, free_dev, cap_dev, max_cap, n_preempt,
               float(limit if limit >= 0 else 1), obs)


@njit(cache=True)
def decide_point_nb(force, step_args, env_args):
    """Advance events until a start or preemption is feasible (at least one event if ``force``).

    Returns 1 at a decision point or when every job is done, 0 when no event
    is left (or the horizon is reached) with jobs unfinished, or a negative
    code of :func:`~hetgym.sim.kernels.step_nb` (-3: grow the segment log
    and call again with ``force=True``).
    """
    (horizon, round_len, ckpt, ctr, acc, queue, running, arrival, status, remaining, rate,
     finish, grace_end, run_start, exec_time, end, resume_at, worker_node, worker_gpu, workers,
     cpus_need, mem, work, user, service, node_dev, free_gpus, free_cpus, free_mem, gpu_owner,
     idle_power, gpu_w, core_w, busy, busy_time, out_done, out_grace, device, seg_i,
     seg_f) = step_args
    (tput, dev_is_cpu, job_class, n_preempt, deadline, weight, inv_best, scale, limit,
     run_window, win, rwin, mask2d, mask, nwin, rew, cap_dev, max_cap, max_workers, eff_exp,
     first_start, free_dev, obs) = env_args
    n_jobs = arrival.shape[0]
    if not force:
        if update_mask_nb(step_args, env_args) or ctr[3] == n_jobs:
            observe_state_nb(step_args, env_args)
            return 1
    while True:
        t0 = acc[0]
        arrived = ctr[0]
        done = ctr[3]
        code, nd, ng = step_nb(horizon, round_len, ckpt, ctr, acc, queue, running, arrival,
                               status, remaining, rate, finish, grace_end, run_start, exec_time,
                               end, resume_at, worker_node, worker_gpu, workers, cpus_need, mem,
                               work, user, service, node_dev, free_gpus, free_cpus, free_mem,
                               gpu_owner, idle_power, gpu_w, core_w, busy, busy_time, out_done,
                               out_grace, device, seg_i, seg_f)
        if code < 0:
            return code
        dt = acc[0] - t0
        n_sys = arrived - done
        if dt > 0.0:
            rew[0] -= n_sys * dt / scale
            rew[1] -= rew[4] * dt
            if n_sys > 0 or arrived < n_jobs:
                rew[2] -= dt / scale
        for j in range(arrived, ctr[0]):
            rew[4] += inv_best[j]
        for k in range(nd):
            j = out_done[k]
            rew[4] -= inv_best[j]
            late = acc[0] - deadline[j]
            if late > 0.0:
                rew[3] -= weight[j] * late / scale
        feasible = update_mask_nb(step_args, env_args)
        if code == 0:
            observe_state_nb(step_args, env_args)
            return 1 if ctr[3] == n_jobs else 0
        if ctr[3] == n_jobs or feasible:
            observe_state_nb(step_args, env_args)
            return 1


@njit(cache=True)
def start_and_decide_nb(job, dev, policy, out_node, out_gpu, extra, step_args, env_args):
    """Start ``job`` on ``dev`` (default placement), then :func:`decide_point_nb` (not forced).

    ``extra`` = ``(restart_delay, scaling_exponent, topology_coeff, network_distance,
    n_restart, comm, node_gpus, node_dist)``: what a start needs beyond the two
    other tuples (kept small: every tuple element costs dispatch time).
    Returns ``100 + code`` if the start fails (codes of
    :func:`~hetgym.sim.kernels.place_start_nb`), else the code of ``decide_point_nb``.
    """
    (horizon, round_len, ckpt, ctr, acc, queue, running, arrival, status, remaining, rate,
     finish, grace_end, run_start, exec_time, end, resume_at, worker_node, worker_gpu, workers,
     cpus_need, mem, work, user, service, node_dev, free_gpus, free_cpus, free_mem, gpu_owner,
     idle_power, gpu_w, core_w, busy, busy_time, out_done, out_grace, device, seg_i,
     seg_f) = step_args
    (tput, dev_is_cpu, job_class, n_preempt, deadline, weight, inv_best, scale, limit,
     run_window, win, rwin, mask2d, mask, nwin, rew, cap_dev, max_cap, max_workers, eff_exp,
     first_start, free_dev, obs) = env_args
    (restart_delay, scaling_exponent, topology_coeff, network_distance, n_restart, comm,
     node_gpus, node_dist) = extra
    code = place_start_nb(job, dev, policy, workers, out_node, out_gpu, restart_delay,
                          scaling_exponent, topology_coeff, network_distance, ctr, acc, queue,
                          running, status, remaining, rate, finish, run_start, first_start,
                          resume_at, n_restart, device, worker_node, worker_gpu, tput, cpus_need,
                          mem, comm, node_dev, dev_is_cpu, node_gpus, node_dist, free_gpus,
                          free_cpus, free_mem, gpu_owner, gpu_w, core_w, busy)
    if code != 0:
        return 100 + code
    return decide_point_nb(False, step_args, env_args)
