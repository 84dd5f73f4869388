"""Observation features of ``HetCluster-v0`` (one Numba kernel, documented table).

Flat float32 vector, every entry in [-1, 1]. ``K`` = window, ``C`` = device
types, ``R`` = preemption window (0 unless ``preemption=True``).
``squash(x, s) = x / (x + s)`` maps [0, inf) to [0, 1). ``T`` is the env's
``time_scale`` (3600 s by default; a day suits traces of multi-day jobs).

========================  =====================================================
block (size)              feature
========================  =====================================================
job k (K x (6 + C))       present (1/0); squash(wait so far, T);
                          squash(remaining work as best-device duration, T);
                          workers / max workers of the whole workload (not the window);
                          TE class (1/0); deadline slack tanh((deadline - now -
                          best duration) / T), 1 if none;
                          per device c: squash(remaining duration on c, T),
                          -1 if the job cannot run on c
device c (C x 5)          free fraction; capacity / largest capacity;
                          squash(waiting workers whose fastest type is c /
                          capacity, 1); fraction of the type's CPU sockets
                          whose GPUs are all free (0 for CPU types);
                          fraction of its sockets with busy GPUs that hold
                          GPUs of two or more jobs (co-location)
running r (R x 4)         present; squash(remaining time, T);
                          workers / max workers; preemptions / (limit or 1), capped at 1
global (4)                squash(queue length, K); squash(running jobs, K);
                          arrived / total jobs; done / total jobs
========================  =====================================================

**The ``scaled`` observation** (``observation="scaled"``; the table above is ``"v0"``,
the default). No feature depends on the episode's job count, the window size or the
env's ``time_scale``, so one model's inputs mean the same on any window, queue length
and cluster. ``lt(x) = min(1, log(1 + x / 1 s) / log(1 + 1e7))`` puts a time on a log
scale (1 min 0.25, 1 h 0.51, 1 day 0.71, 116 days 1); ``slt(x) = sign(x) lt(|x|)``;
``lc(n) = min(1, log2(1 + n) / 10)`` a count (1023 and more: 1).

========================  =====================================================
block (size)              feature
========================  =====================================================
job k (K x (6 + 2C))      present (1/0); lt(wait so far); lt(remaining work as
                          best-device duration); min(1, log2(workers) / 6);
                          TE class (1/0); deadline slack slt(deadline - now -
                          best duration), 1 if none;
                          per device c: lt(remaining duration on c), -1 if the
                          job cannot run on c;
                          per device c: speed-up on c, throughput on c / the
                          job's highest throughput (0 where it cannot run)
device c (C x 5)          free fraction; lc(capacity); pressure, free sockets
                          and shared sockets as in ``v0``
running r (R x 4)         present; lt(remaining time); min(1, log2(workers) / 6);
                          preemptions as in ``v0``
global (3)                lc(queue length); lc(running jobs); lc(queued jobs
                          beyond the window)
========================  =====================================================
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
from numba import njit

from hetgym.sim.rules import best_duration_nb, duration_nb
from hetgym.sim.state.layout import (
    ACC_NOW,
    CTR_ARR,
    CTR_DONE,
    CTR_Q,
    CTR_QHEAD,
    CTR_QTAIL,
    CTR_RUN,
)

__all__ = ["obs_size", "observe_nb", "Feature", "layout", "time_feature_index", "SCALE",
           "OBSERVATIONS", "obs_mode"]

#: Default ``time_scale`` (s) of the time features.
SCALE = 3600.0

#: The observation layouts of ``HetCluster-v0`` (its ``observation`` argument), by mode
#: number (``EnvParams.obs_mode``): ``v0`` (default) and ``scaled`` (module docstring).
OBSERVATIONS = ("v0", "scaled")


def obs_mode(observation: str) -> int:
    """The mode number of ``observation`` (one of :data:`OBSERVATIONS`)."""
    if observation not in OBSERVATIONS:
        raise ValueError(f"observation must be one of {OBSERVATIONS}, got {observation!r}")
    return OBSERVATIONS.index(observation)


class Feature(NamedTuple):
    """One entry of the observation vector: its index, block, slot and name, and whether
    it is ``squash(time, time_scale)`` (a ``time`` feature)."""

    index: int
    block: str   # "job", "device", "running", "global"
    slot: int    # job / device / running slot (0 for global)
    name: str
    time: bool   # a time: squash(time, time_scale) in v0, lt(time) in the scaled layout


_JOB = [("present", False), ("wait", True), ("best_duration", True), ("workers", False),
        ("te_class", False), ("deadline_slack", False)]
_DEV = [("free_fraction", False), ("capacity", False), ("pressure", False),
        ("free_sockets", False), ("shared_sockets", False)]
_RUN = [("present", False), ("remaining_time", True), ("workers", False), ("preemptions", False)]
_GLOBAL = [("queue_length", False), ("running_jobs", False), ("arrived", False), ("done", False)]
_GLOBAL_SCALED = [("queue_length", False), ("running_jobs", False), ("beyond_window", False)]


def layout(window: int, n_dev: int, run_window: int,
           devices: list[str] | None = None, observation: str = "v0") -> list[Feature]:
    """Every entry of the observation, in order (the tables of this module as data)."""
    scaled = obs_mode(observation) == 1
    devices = devices or [str(c) for c in range(n_dev)]
    out: list[Feature] = []

    def add(block: str, slot: int, name: str, time: bool) -> None:
        out.append(Feature(len(out), block, slot, name, time))

    for k in range(window):
        for name, t in _JOB:
            add("job", k, name, t)
        for d in devices:
            add("job", k, f"duration_{d}", True)
        if scaled:
            for d in devices:
                add("job", k, f"speedup_{d}", False)
    for c in range(n_dev):
        for name, t in _DEV:
            add("device", c, name, t)
    for r in range(run_window):
        for name, t in _RUN:
            add("running", r, name, t)
    for name, t in (_GLOBAL_SCALED if scaled else _GLOBAL):
        add("global", 0, name, t)
    return out


def obs_size(window: int, n_dev: int, run_window: int, observation: str = "v0") -> int:
    """Length of the observation vector."""
    if obs_mode(observation) == 1:
        return (window * (len(_JOB) + 2 * n_dev) + n_dev * len(_DEV) + run_window * len(_RUN)
                + len(_GLOBAL_SCALED))
    return window * (len(_JOB) + n_dev) + n_dev * len(_DEV) + run_window * len(_RUN) + len(_GLOBAL)


def time_feature_index(window: int, n_dev: int, run_window: int,
                       observation: str = "v0") -> np.ndarray:
    """Indices of the ``time`` features of :func:`layout`."""
    return np.asarray([f.index for f in layout(window, n_dev, run_window, None, observation)
                       if f.time], dtype=np.int64)


@njit(cache=True)
def _sq(x, s):
    if x <= 0.0:
        return 0.0
    return x / (x + s)


#: ``log(1 + 1e7)``: the time (s) that the scaled layout's ``lt`` maps to 1 (116 days).
_LT_DEN = float(np.log1p(1e7))


@njit(cache=True)
def _lt(x):
    """``lt(x)`` of the scaled layout: a time (s) on a log scale in [0, 1]."""
    if x <= 0.0:
        return 0.0
    return min(1.0, np.log1p(x) / _LT_DEN)


@njit(cache=True)
def _lc(n):
    """``lc(n)`` of the scaled layout: a count on a log scale in [0, 1]."""
    return min(1.0, np.log2(1.0 + max(n, 0.0)) / 10.0)


@njit(cache=True)
def _lw(w):
    """Workers on a log scale: ``min(1, log2(w) / 6)``."""
    return min(1.0, np.log2(max(w, 1.0)) / 6.0)


@njit(cache=True)
def _socket_features_nb(c, dev_start, by_dev, gpus, sockets, socket, gpu_owner):
    """(fully free sockets, shared busy sockets) as fractions, over the nodes of type ``c``
    (given the arrays of :class:`~hetgym.sim.state.layout.NodeArrays` / ``NodeState`` it reads:
    fewer instructions per observation than the two NamedTuples, by callgrind)."""
    n_sock = 0
    n_free = 0
    n_busy = 0
    n_shared = 0
    for i in range(dev_start[c], dev_start[c + 1]):
        n = by_dev[i]
        g_n = gpus[n]
        for s in range(sockets[n]):
            total = 0
            busy = 0
            first = -1
            shared = False
            for g in range(g_n):
                if socket[n, g] != s:
                    continue
                total += 1
                o = gpu_owner[n, g]
                if o >= 0:
                    busy += 1
                    if first < 0:
                        first = o
                    elif o != first:
                        shared = True
            if total == 0:
                continue
            n_sock += 1
            if busy == 0:
                n_free += 1
            else:
                n_busy += 1
                if shared:
                    n_shared += 1
    free = n_free / n_sock if n_sock > 0 else 0.0
    return free, (n_shared / n_busy if n_busy > 0 else 0.0)


@njit(cache=True)
def observe_nb(P, S, EP, ES):
    """Fill ``ES.obs`` with the observation (see the module tables; ``EP.obs_mode`` picks
    the layout) from the state and the windows ``ES.win[:ES.nwin[0]]`` / ``ES.rwin[:ES.nwin[1]]``."""
    if EP.obs_mode == 1:
        observe_scaled_nb(P, S, EP, ES)
        return
    jobs, js, run = P.jobs, S.job, S.run
    out = ES.obs
    now = run.acc[ACC_NOW]
    e = P.opts.scaling_exponent
    ts = EP.time_scale
    out[:] = 0.0
    c_n = jobs.tput.shape[1]
    f = 6 + c_n
    k_n = ES.win.shape[0]
    for k in range(ES.nwin[0]):
        j = ES.win[k]
        b = k * f
        w = jobs.workers[j]
        rem = js.remaining[j]
        # each type's duration once: for the job's best (best_duration_nb's loop: the
        # fastest type that can hold its gang) and for its own feature
        best = np.inf
        for c in range(c_n):
            if jobs.holdable[j, c]:
                d = duration_nb(rem, w, jobs.tput[j, c], e)
                if d < best:  # noqa: PLR1730 (builtin min compiles an overload)
                    best = d
                if jobs.tput[j, c] > 0:
                    out[b + 6 + c] = _sq(d, ts)
                    continue
            out[b + 6 + c] = -1.0
        out[b] = 1.0
        out[b + 1] = _sq(now - jobs.arrival[j], ts)
        out[b + 2] = _sq(best, ts)
        out[b + 3] = w / EP.max_workers
        out[b + 4] = 1.0 if jobs.job_class[j] == 1 else 0.0
        if np.isinf(jobs.deadline[j]):
            out[b + 5] = 1.0
        else:
            out[b + 5] = np.tanh((jobs.deadline[j] - now - best) / ts)
    b0 = k_n * f
    pressure = ES.scratch
    _pressure_nb(P, S, pressure)
    nodes, ns = P.nodes, S.node
    free_dev = ns.free_dev
    for c in range(c_n):
        b = b0 + c * 5
        cap = EP.cap_dev[c]
        out[b] = free_dev[c] / cap if cap > 0 else 0.0
        out[b + 1] = cap / EP.max_cap
        out[b + 2] = _sq(pressure[c] / max(cap, 1.0), 1.0)
        if not nodes.dev_is_cpu[c]:
            out[b + 3], out[b + 4] = _socket_features_nb(c, nodes.dev_start, nodes.by_dev,
                                                         nodes.gpus, nodes.sockets, nodes.socket,
                                                         ns.gpu_owner)
    b0 += c_n * 5
    lim = float(P.opts.limit) if P.opts.limit >= 0 else 1.0
    for r in range(ES.nwin[1]):
        j = ES.rwin[r]
        b = b0 + r * 4
        out[b] = 1.0
        out[b + 1] = _sq(best_duration_nb(js.remaining[j], j, jobs, e), ts)
        out[b + 2] = jobs.workers[j] / EP.max_workers
        out[b + 3] = min(1.0, js.n_preempt[j] / max(lim, 1.0))
    b0 += EP.run_window * 4
    ctr = run.ctr
    out[b0] = _sq(float(ctr[CTR_Q]), float(k_n))
    out[b0 + 1] = _sq(float(ctr[CTR_RUN]), float(k_n))
    out[b0 + 2] = ctr[CTR_ARR] / jobs.arrival.shape[0]
    out[b0 + 3] = ctr[CTR_DONE] / jobs.arrival.shape[0]


@njit(cache=True)
def _pressure_nb(P, S, pressure):
    """Waiting workers per device type, each job counted on its fastest type."""
    jobs, run = P.jobs, S.run
    pressure[:] = 0.0
    q = run.queue
    c_n = jobs.tput.shape[1]
    for i in range(run.ctr[CTR_QHEAD], run.ctr[CTR_QTAIL]):
        j = q[i]
        if j < 0:
            continue
        bc = 0
        for c in range(c_n):
            if jobs.tput[j, c] > jobs.tput[j, bc]:
                bc = c
        pressure[bc] += jobs.workers[j]


@njit(cache=True)
def observe_scaled_nb(P, S, EP, ES):
    """Fill ``ES.obs`` with the ``scaled`` observation (module docstring)."""
    jobs, js, run = P.jobs, S.job, S.run
    out = ES.obs
    now = run.acc[ACC_NOW]
    e = P.opts.scaling_exponent
    out[:] = 0.0
    c_n = jobs.tput.shape[1]
    f = 6 + 2 * c_n
    k_n = ES.win.shape[0]
    for k in range(ES.nwin[0]):
        j = ES.win[k]
        b = k * f
        w = jobs.workers[j]
        rem = js.remaining[j]
        top = 0.0
        for c in range(c_n):
            if jobs.tput[j, c] > top:  # noqa: PLR1730
                top = jobs.tput[j, c]
        best = np.inf
        for c in range(c_n):
            t = jobs.tput[j, c]
            if t > 0:
                out[b + 6 + c_n + c] = t / top
            if jobs.holdable[j, c]:
                d = duration_nb(rem, w, t, e)
                if d < best:  # noqa: PLR1730
                    best = d
                if t > 0:
                    out[b + 6 + c] = _lt(d)
                    continue
            out[b + 6 + c] = -1.0
        out[b] = 1.0
        out[b + 1] = _lt(now - jobs.arrival[j])
        out[b + 2] = _lt(best)
        out[b + 3] = _lw(w)
        out[b + 4] = 1.0 if jobs.job_class[j] == 1 else 0.0
        if np.isinf(jobs.deadline[j]):
            out[b + 5] = 1.0
        else:
            x = jobs.deadline[j] - now - best
            out[b + 5] = _lt(x) if x >= 0 else -_lt(-x)
    b0 = k_n * f
    pressure = ES.scratch
    _pressure_nb(P, S, pressure)
    nodes, ns = P.nodes, S.node
    free_dev = ns.free_dev
    for c in range(c_n):
        b = b0 + c * 5
        cap = EP.cap_dev[c]
        out[b] = free_dev[c] / cap if cap > 0 else 0.0
        out[b + 1] = _lc(cap)
        out[b + 2] = _sq(pressure[c] / max(cap, 1.0), 1.0)
        if not nodes.dev_is_cpu[c]:
            out[b + 3], out[b + 4] = _socket_features_nb(c, nodes.dev_start, nodes.by_dev,
                                                         nodes.gpus, nodes.sockets, nodes.socket,
                                                         ns.gpu_owner)
    b0 += c_n * 5
    lim = float(P.opts.limit) if P.opts.limit >= 0 else 1.0
    for r in range(ES.nwin[1]):
        j = ES.rwin[r]
        b = b0 + r * 4
        out[b] = 1.0
        out[b + 1] = _lt(best_duration_nb(js.remaining[j], j, jobs, e))
        out[b + 2] = _lw(jobs.workers[j])
        out[b + 3] = min(1.0, js.n_preempt[j] / max(lim, 1.0))
    b0 += EP.run_window * 4
    ctr = run.ctr
    out[b0] = _lc(float(ctr[CTR_Q]))
    out[b0 + 1] = _lc(float(ctr[CTR_RUN]))
    out[b0 + 2] = _lc(float(ctr[CTR_Q] - ES.nwin[0]))
