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
