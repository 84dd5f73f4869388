"""The per-run state of SRPT's compiled decision point (:mod:`baselines.classic.srpt_kernels`) and
its waiting jobs' shape heaps.

:class:`SRPTArrays` (one per run; its kernel mirror :data:`SRPTArraysK`, built by
:func:`pack_arrays`) keeps the waiting jobs between decision points: one binary heap per
*shape* group (as in :class:`baselines.common.parts.WaitingGroups`), ordered by ``(key, tie)``
(:func:`heap_push_nb`, :func:`heap_pop_nb`; ``_join_nb`` / ``_leave_nb`` for one job),
the dense rows of the running jobs, the scratch capacities and the plan's outputs; the
``C_*``, ``O_*`` and ``OUT_*`` constants index its ``ctr``, ``opt`` and ``out`` fields.
:func:`sync_nb` is step 1 of a decision point: the heaps brought in step with the queue.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
from numba import njit

from baselines.common.kernels import job_best_nb
from hetgym.sim.codes import FUTURE, GRACE, QUEUED
from hetgym.sim.fastpath import NodeStateK, packer, struct_of
from hetgym.sim.state.layout import CTR_Q, CTR_QHEAD, CTR_QTAIL

__all__ = ["C_WAIT", "NEED_ROOM", "SYNC_FAILED", "SRPTArrays", "SRPTArraysK", "heap_pop_nb", "heap_push_nb",
           "node_state_k", "pack_arrays", "sync_nb"]


#: :func:`srpt_step_nb`'s result when the heaps may not stand for the queue.
SYNC_FAILED = -1
#: :func:`srpt_step_nb`'s result when the start arrays hold fewer than ``out[OUT_ST]``
#: starts (nothing planned: grow them and call again).
NEED_ROOM = -2
# ctr fields: next job to arrive, tie of the last job put back at the head, jobs preempted
# by us not back yet (in ``away``), jobs in the heaps, running jobs in the dense rows
C_NEXT, C_FRONT, C_AWAY, C_WAIT, C_RUN = range(5)
# opt fields: preemption limit (-1 none), placement policy, exact sums (0/1)
O_LIMIT, O_POLICY, O_EXACT = range(3)
# out fields: preemptions, starts, decisions applied
OUT_PRE, OUT_ST, OUT_DONE = range(3)


class SRPTArrays(NamedTuple):
    """Everything :func:`srpt_step_nb` keeps for one run besides the simulator's state
    (``J`` jobs, ``G`` shape groups, ``C`` device types, ``N`` nodes)."""

    gid: np.ndarray       # int64[J], shape group of each job
    goff: np.ndarray      # int64[G + 1], group g's heap is heap[goff[g]:goff[g] + hn[g]]
    heap: np.ndarray      # int64[J], job indices
    hn: np.ndarray        # int64[G], jobs in each heap
    key: np.ndarray       # float64[J], ranking key while waiting
    tie: np.ndarray       # int64[J], tie while waiting
    inheap: np.ndarray    # bool[J]
    flag: np.ndarray      # bool[J], scratch (jobs coming back)
    away: np.ndarray      # int64[J], preempted by us, not back in the queue yet (ctr[C_AWAY])
    denom: np.ndarray     # float64[J, C], running jobs' rank: remaining / denom where valid
    valid: np.ndarray     # bool[J, C]
    key_den: np.ndarray   # float64[J, C], waiting jobs' key: remaining / key_den where key_valid
    key_valid: np.ndarray  # bool[J, C]
    table: np.ndarray     # int64[J, k], candidate device types, -1 padded
    workers: np.ndarray   # int64[J], gang sizes
    ctr: np.ndarray       # int64[5], C_* fields
    opt: np.ndarray       # int64[3], O_* fields
    plan: object          # NodeStateK, scratch capacity of the walk
    now: object           # NodeStateK, scratch capacity once the preempted jobs left
    scr_f: np.ndarray     # float64[2, N], scratch
    pre: np.ndarray       # int64[R], out: jobs to preempt, in order
    job: np.ndarray       # int64[S], out: jobs to start, in order
    dev: np.ndarray       # int64[S], out: their device types
    nodes: np.ndarray     # int64[S, Wmax], out: their workers' nodes
    gpus: np.ndarray      # int64[S, Wmax], out: their workers' GPUs (-1 on CPU nodes)
    out: np.ndarray       # int64[3], OUT_* fields
    # the running jobs as of the last call, in start order (``ctr[C_RUN]`` of them): what
    # the walk reads of each, kept in dense rows (``R`` = the running list's length)
    rj: np.ndarray        # int64[R], job
    rw: np.ndarray        # int64[R], gang size
    rnode: np.ndarray     # int64[R, Wmax], workers' nodes
    rgpu: np.ndarray      # int64[R, Wmax], workers' GPUs
    rcpu: np.ndarray      # float64[R, Wmax], workers' cores
    rmem: np.ndarray      # float64[R], memory per worker
    rdmax: np.ndarray     # float64[R], largest valid denom (0: none)
    rdmin: np.ndarray     # float64[R], least valid denom
    rrem: np.ndarray      # float64[R], scratch: remaining time on the fastest type
    perm: np.ndarray      # int64[R], positions in rank order (last call's, then updated)
    remap: np.ndarray     # int64[R], scratch: last call's position -> this call's, -1 gone


SRPTArraysK = struct_of(SRPTArrays, module=__name__)
_pack_arrays = packer(SRPTArraysK)
_pack_ns = packer(NodeStateK)


@njit(cache=True)
def pack_arrays(tup):
    """The :data:`SRPTArraysK` over the arrays of an :class:`SRPTArrays` (no copies)."""
    return _pack_arrays(tup)


@njit(cache=True)
def node_state_k(ns):
    """A :class:`~hetgym.sim.state.mirror.NodeStateK` over the arrays of a ``NodeState``."""
    return _pack_ns(ns)


@njit(cache=True, inline="always")
def _before(a, b, key, tie):
    """Whether job ``a`` ranks before job ``b`` by ``(key, tie)``."""
    return key[a] < key[b] or (key[a] == key[b] and tie[a] < tie[b])


@njit(cache=True)
def heap_push_nb(heap, base, n, j, key, tie):
    """Put job ``j`` in the heap ``heap[base:base + n]`` (it becomes ``n + 1`` long)."""
    i = n
    while i > 0:
        p = (i - 1) >> 1
        q = heap[base + p]
        if not _before(j, q, key, tie):
            break
        heap[base + i] = q
        i = p
    heap[base + i] = j


@njit(cache=True)
def heap_pop_nb(heap, base, n, key, tie):
    """Take the first job out of the heap ``heap[base:base + n]`` (``n >= 1``; it becomes
    ``n - 1`` long) and return it."""
    top = heap[base]
    n -= 1
    if n > 0:
        j = heap[base + n]
        i = 0
        while True:
            c = 2 * i + 1
            if c >= n:
                break
            if c + 1 < n and _before(heap[base + c + 1], heap[base + c], key, tie):
                c += 1
            q = heap[base + c]
            if not _before(q, j, key, tie):
                break
            heap[base + i] = q
            i = c
        heap[base + i] = j
    return top


@njit(cache=True)
def _join_nb(A, j, k, t):
    """Job ``j`` starts waiting with key ``k`` and tie ``t``; False if it already waits."""
    if A.inheap[j]:
        return False
    g = A.gid[j]
    A.key[j] = k
    A.tie[j] = t
    heap_push_nb(A.heap, A.goff[g], A.hn[g], j, A.key, A.tie)
    A.hn[g] += 1
    A.inheap[j] = True
    A.ctr[C_WAIT] += 1
    return True


@njit(cache=True)
def _leave_nb(A, g):
    """The first job of group ``g`` stops waiting (it starts); returns it."""
    j = heap_pop_nb(A.heap, A.goff[g], A.hn[g], A.key, A.tie)
    A.hn[g] -= 1
    A.inheap[j] = False
    A.ctr[C_WAIT] -= 1
    return j


@njit(cache=True)
def sync_nb(A, S):
    """Bring the heaps in step with the queue (module docstring, step 1); False if they
    may not stand for it."""
    js, run = S.job, S.run
    status, remaining = js.status, js.remaining
    ctr = A.ctr
    # jobs we preempted: back in the queue, or still in their grace period (kept)
    away, flag = A.away, A.flag
    back = np.empty(ctr[C_AWAY], dtype=np.int64)
    nb = 0
    kept = 0
    for i in range(ctr[C_AWAY]):
        j = away[i]
        s = status[j]
        if s == QUEUED:
            if not flag[j]:
                flag[j] = True
                back[nb] = j
                nb += 1
        elif s == GRACE:
            away[kept] = j
            kept += 1
    ctr[C_AWAY] = kept
    if nb > 0:  # they stand at the head of the queue: the first nb live entries, all flagged
        queue = run.queue
        head = np.empty(nb, dtype=np.int64)
        found = 0
        ok = True
        for p in range(run.ctr[CTR_QHEAD], run.ctr[CTR_QTAIL]):
            j = queue[p]
            if j < 0:
                continue
            ok &= flag[j]
            head[found] = j
            found += 1
            if found == nb:
                break
        for i in range(nb):
            flag[back[i]] = False
        if not ok or found < nb:
            return False
        for i in range(nb - 1, -1, -1):  # the first in the queue gets the lowest tie
            j = head[i]
            ctr[C_FRONT] -= 1
            if not _join_nb(A, j, job_best_nb(j, remaining, A.key_den, A.key_valid), ctr[C_FRONT]):
                return False
    k = ctr[C_NEXT]
    n = status.shape[0]
    while k < n and status[k] != FUTURE:  # arrivals join at the tail
        if not _join_nb(A, k, job_best_nb(k, remaining, A.key_den, A.key_valid), k):
            return False
        k += 1
    ctr[C_NEXT] = k
    return ctr[C_WAIT] == run.ctr[CTR_Q]

