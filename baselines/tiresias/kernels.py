"""Compiled part of Tiresias' walk (:meth:`baselines.tiresias.schedulers.Tiresias._decide_all`).

In the walk, a waiting job starts if ``CapacityModel.place`` finds room for it on one of
its device types (:class:`~baselines.common.unaware.AnyType`: the types of its
``preference`` row, in a random order). ``place`` fails exactly when the type's
throughput is 0 or its gang does not fit (:func:`hetgym.sim.kernels.fit.fits_nb`: the
same per-type quick reject and the same per-node slot count as the placement kernel),
and between two starts or takes nothing changes the scratch capacity. So the waiting
jobs that would fail one after another can be passed over in one call,
:func:`next_fit_nb`, which returns where the walk has work to do again. Once a job has
been placed, the running jobs met up to the next waiting job each keep their placement
if it is still free (:func:`keep_running_nb`: ``_free_in`` then ``take``, in one call).
"""

from __future__ import annotations

import numpy as np
from numba import njit

from hetgym.sim.fastpath import alloc_nb, fits_nb
from hetgym.sim.rules import covers_nb

__all__ = ["keep_running_nb", "next_fit_nb"]


@njit(cache=True)
def next_fit_nb(key: np.ndarray, start: int, waiting: np.ndarray, workers: np.ndarray,
                pref: np.ndarray, tput: np.ndarray, cpus_need: np.ndarray, mem: np.ndarray,
                nodes, ns) -> int:
    """The first position ``i >= start`` of the walk ``key`` where the job is running
    (``waiting[i]`` False) or is a waiting job that fits on one of its device types
    (``pref`` row entries >= 0, throughput > 0) in the capacity ``ns``; ``len(key)`` if
    none."""
    for i in range(start, len(key)):
        if not waiting[i]:
            return i
        j = key[i]
        for c in range(pref.shape[1]):
            d = pref[j, c]
            if d >= 0 and tput[j, d] > 0 and fits_nb(d, workers[j], cpus_need[j, d], mem[j],
                                                     nodes, ns):
                return i
    return len(key)


@njit(cache=True)
def _free_in_nb(j: int, wn: np.ndarray, wg: np.ndarray, cpus_need: np.ndarray,
                mem: np.ndarray, node_device: np.ndarray, ns) -> bool:
    """:func:`baselines.classic.schedulers._free_in` on the workers' nodes ``wn`` and GPUs ``wg``:
    the GPUs free, and per node (in order of first appearance) the cores and memory of
    its workers, summed in worker order, within the free ones plus 1e-9."""
    w = len(wn)
    for q in range(w):
        if wg[q] >= 0 and ns.gpu_owner[wn[q], wg[q]] >= 0:
            return False
    for q in range(w):
        n = wn[q]
        seen = False
        for r in range(q):
            if wn[r] == n:
                seen = True
                break
        if seen:
            continue
        c = 0.0
        m = 0.0
        for r in range(q, w):
            if wn[r] == n:
                c += cpus_need[j, node_device[n]]
                m += mem[j]
        if not (covers_nb(ns.free_cpus[n], c) and covers_nb(ns.free_mem[n], m)):
            return False
    return True


@njit(cache=True)
def keep_running_nb(key: np.ndarray, start: int, waiting: np.ndarray, workers: np.ndarray,
                    worker_node: np.ndarray, worker_gpu: np.ndarray, cpus_need: np.ndarray,
                    mem: np.ndarray, node_device: np.ndarray, nodes, ns,
                    kept: np.ndarray) -> int:
    """From walk position ``start`` to the next waiting job: each running job keeps its
    current placement (``workers[j]`` workers) if it is free in ``ns`` (:func:`_free_in_nb`),
    taking it there (:func:`hetgym.sim.kernels.place.alloc_nb`, as ``CapacityModel.take``);
    ``kept[i]`` is set for those. Returns the position of the next waiting job, or
    ``len(key)``."""
    for i in range(start, len(key)):
        if waiting[i]:
            return i
        j = key[i]
        w = workers[j]
        wn = worker_node[j, :w]
        wg = worker_gpu[j, :w]
        if _free_in_nb(j, wn, wg, cpus_need, mem, node_device, ns):
            alloc_nb(j, w, wn, wg, 1, cpus_need[j], mem[j], nodes, ns)
            kept[i] = True
    return len(key)
