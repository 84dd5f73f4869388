"""Numba kernels of the job queue, a buffer with tombstones (:mod:`hetgym.sim.state`
describes it; the rules of :mod:`hetgym.sim.kernels` apply)."""

from __future__ import annotations

from numba import njit

from hetgym.sim.state.layout import CTR_Q, CTR_QHEAD, CTR_QTAIL


@njit(cache=True, no_cfunc_wrapper=True)
def _queue_recentre_nb(run, qpos):
    """Move the live queue to the middle of its buffer (rarely: when an end is reached)."""
    q = run.queue
    n = 0
    for i in range(run.ctr[CTR_QHEAD], run.ctr[CTR_QTAIL]):
        if q[i] >= 0:
            run.qtmp[n] = q[i]
            n += 1
        q[i] = -1
    head = (q.shape[0] - n) // 2
    for k in range(n):
        q[head + k] = run.qtmp[k]
        qpos[run.qtmp[k]] = head + k
    run.ctr[CTR_QHEAD] = head
    run.ctr[CTR_QTAIL] = head + n


@njit(cache=True, inline="always")
def queue_push_nb(run, qpos, j):
    """Append job ``j`` at the tail of the queue."""
    if run.ctr[CTR_QTAIL] == run.queue.shape[0]:
        _queue_recentre_nb(run, qpos)
    t = run.ctr[CTR_QTAIL]
    run.queue[t] = j
    qpos[j] = t
    run.ctr[CTR_QTAIL] = t + 1
    run.ctr[CTR_Q] += 1


@njit(cache=True, inline="always")
def queue_push_front_nb(run, qpos, j):
    """Insert job ``j`` at the head of the queue (a suspended job)."""
    if run.ctr[CTR_QHEAD] == 0:
        _queue_recentre_nb(run, qpos)
    h = run.ctr[CTR_QHEAD] - 1
    run.queue[h] = j
    qpos[j] = h
    run.ctr[CTR_QHEAD] = h
    run.ctr[CTR_Q] += 1


@njit(cache=True, inline="always")
def queue_remove_nb(run, qpos, j):
    """Remove job ``j`` from the queue in O(1) (a tombstone; ends are trimmed)."""
    p = qpos[j]
    q = run.queue
    q[p] = -1
    qpos[j] = -1
    run.ctr[CTR_Q] -= 1
    h = run.ctr[CTR_QHEAD]
    t = run.ctr[CTR_QTAIL]
    while h < t and q[h] < 0:
        h += 1
    while t > h and q[t - 1] < 0:
        t -= 1
    run.ctr[CTR_QHEAD] = h
    run.ctr[CTR_QTAIL] = t


@njit(cache=True, no_cfunc_wrapper=True)
def queue_compact_nb(run, qpos):
    """Squeeze tombstones out so the live queue is ``queue[head:head + n]``, in order."""
    h = run.ctr[CTR_QHEAD]
    t = run.ctr[CTR_QTAIL]
    n = run.ctr[CTR_Q]
    if t - h == n:
        return
    q = run.queue
    k = h
    for i in range(h, t):
        j = q[i]
        if j >= 0:
            q[k] = j
            qpos[j] = k
            k += 1
    for i in range(k, t):
        q[i] = -1
    run.ctr[CTR_QTAIL] = k
