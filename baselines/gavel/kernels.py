"""Gavel's per-round worker assignment in one compiled call.

:func:`assign_nb` is :func:`baselines.gavel.place.assign_workers`'s rule written out on
arrays (what the Python ``_Free`` walk did before, kept as the reference in
``tests/baselines/gavel/test_gavel_fast.py``): the resources held jobs keep are taken first;
then, per device type in the round's order, the jobs scheduled there by decreasing gang
size, for each size first every job that ran on this type keeps its exact placement if
all of it is free (GPUs not taken, each node's cores and memory, tolerance ``1e-9``),
then the others take the first free GPUs (CPU type: worker slots) in node, GPU order,
a node giving workers while it has room for one more. Every float is computed with the
same operations in the same order as the Python walk, so the placements are identical.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from hetgym.sim.rules import covers_nb

__all__ = ["assign_nb"]


@njit(cache=True)
def _take(job, nodes, gpus, w, free, nfree, type_free, cpu, mem, node_dev, cpus_need, job_mem):
    """Give ``job``'s ``w`` workers on ``nodes``/``gpus`` their GPU, cores and memory."""
    for i in range(w):
        n, g = nodes[i], gpus[i]
        if g >= 0 and free[n, g]:
            free[n, g] = False
            nfree[n] -= 1
            type_free[node_dev[n]] -= 1
        cpu[n] -= cpus_need[job, node_dev[n]]
        mem[n] -= job_mem[job]


@njit(cache=True)
def _fits(job, nodes, gpus, w, free, cpu, mem, node_dev, cpus_need, job_mem):
    """Whether ``job``'s placement is all free: distinct free GPUs, and on each node room
    for the cores and memory of its workers there."""
    for i in range(w):
        g = gpus[i]
        if g < 0:
            continue
        if not free[nodes[i], g]:
            return False
        for i2 in range(i):
            if gpus[i2] == g and nodes[i2] == nodes[i]:
                return False
    for i in range(w):
        n = nodes[i]
        seen = False
        for i2 in range(i):
            if nodes[i2] == n:
                seen = True
                break
        if seen:
            continue
        c = 0.0
        for i2 in range(i, w):
            if nodes[i2] == n:
                c += 1.0
        if not (covers_nb(cpu[n], c * cpus_need[job, node_dev[n]]) and covers_nb(mem[n], c * job_mem[job])):
            return False
    return True


@njit(cache=True)
def _first(job, dev, w, cpu_type, of_type, free, nfree, type_free, cpu, mem, cpus_need, job_mem,
           out_nodes, out_gpus):
    """The first ``w`` free slots of type ``dev`` into ``out_nodes``/``out_gpus``; whether
    there were ``w``."""
    if not cpu_type and type_free[dev] < w:
        return False
    c, m = cpus_need[job, dev], job_mem[job]
    got = 0
    for n in of_type:
        if not cpu_type and nfree[n] == 0:
            continue
        cc, mm = cpu[n], mem[n]
        if not (covers_nb(cc, c) and covers_nb(mm, m)):
            continue
        if cpu_type:
            for _ in range(w):
                if got == w or not (covers_nb(cc, c) and covers_nb(mm, m)):
                    break
                out_nodes[got] = n
                out_gpus[got] = -1
                got += 1
                cc -= c
                mm -= m
        else:
            for g in range(free.shape[1]):
                if not free[n, g]:
                    continue
                if got == w or not (covers_nb(cc, c) and covers_nb(mm, m)):
                    break
                out_nodes[got] = n
                out_gpus[got] = g
                got += 1
                cc -= c
                mm -= m
        if got == w:
            break
    return got == w


@njit(cache=True)
def assign_nb(node_gpus, node_cpus, node_mem, node_dev, dev_is_cpu, cpus_need, job_mem, workers,
              status, device, worker_node, worker_gpu, held, types, ptr, jobs, running_code, width):
    """One round's placements.

    Args:
        node_gpus, node_cpus, node_mem, node_dev: The cluster's nodes.
        dev_is_cpu: bool[C], whether each device type is a CPU type.
        cpus_need, job_mem, workers, status, device, worker_node, worker_gpu: The jobs
            (the simulator's view).
        held: int64[H], jobs whose current resources stay taken.
        types, ptr, jobs: The schedule: ``jobs[ptr[i]:ptr[i+1]]`` on type ``types[i]``, in
            walk order, each job at most once.
        running_code: ``hetgym.sim.codes.RUNNING``.
        width: Columns of the output (at least every scheduled job's gang size).

    Returns:
        ``(count, out_job, out_type, out_nodes, out_gpus)``: the first ``count`` rows are
        the placed jobs in the order the walk placed them, row ``i`` holding job
        ``out_job[i]``'s type and its ``workers`` nodes and GPUs.
    """
    N = len(node_gpus)
    G = 0
    for n in range(N):
        G = max(G, node_gpus[n])
    free = np.zeros((N, G), dtype=np.bool_)
    nfree = np.zeros(N, dtype=np.int64)
    type_free = np.zeros(len(dev_is_cpu), dtype=np.int64)
    cpu = node_cpus.copy()
    mem = node_mem.copy()
    for n in range(N):
        for g in range(node_gpus[n]):
            free[n, g] = True
        nfree[n] = node_gpus[n]
        type_free[node_dev[n]] += node_gpus[n]
    for j in held:
        _take(j, worker_node[j], worker_gpu[j], workers[j], free, nfree, type_free, cpu, mem,
              node_dev, cpus_need, job_mem)
    M = len(jobs)
    out_job = np.empty(M, dtype=np.int64)
    out_type = np.empty(M, dtype=np.int64)
    out_nodes = np.empty((M, width), dtype=np.int64)
    out_gpus = np.empty((M, width), dtype=np.int64)
    placed = np.zeros(len(workers), dtype=np.bool_)
    count = 0
    for t in range(len(types)):
        k = types[t]
        cpu_type = dev_is_cpu[k]
        of_type = np.flatnonzero(node_dev == k)
        seg = jobs[ptr[t]:ptr[t + 1]]
        if len(seg) == 0:
            continue
        sizes = np.unique(workers[seg])[::-1]
        for size in sizes:
            for j in seg:  # keep the placement of the previous round where all is free
                if workers[j] != size or status[j] != running_code or device[j] != k:
                    continue
                if _fits(j, worker_node[j], worker_gpu[j], size, free, cpu, mem, node_dev,
                         cpus_need, job_mem):
                    _take(j, worker_node[j], worker_gpu[j], size, free, nfree, type_free, cpu,
                          mem, node_dev, cpus_need, job_mem)
                    placed[j] = True
                    out_job[count] = j
                    out_type[count] = k
                    out_nodes[count, :size] = worker_node[j, :size]
                    out_gpus[count, :size] = worker_gpu[j, :size]
                    count += 1
            for j in seg:
                if workers[j] != size or placed[j]:
                    continue
                if _first(j, k, size, cpu_type, of_type, free, nfree, type_free, cpu, mem,
                          cpus_need, job_mem, out_nodes[count], out_gpus[count]):
                    _take(j, out_nodes[count], out_gpus[count], size, free, nfree, type_free,
                          cpu, mem, node_dev, cpus_need, job_mem)
                    placed[j] = True
                    out_job[count] = j
                    out_type[count] = k
                    count += 1
    return count, out_job, out_type, out_nodes, out_gpus
