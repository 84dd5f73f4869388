"""Observation features of ``HetCluster-v0`` (one Numba kernel, documented table).

Flat float32 vector, every entry in [-1, 1]. ``K`` = window, ``C`` = device
types, ``R`` = preemption window (0 unless ``preemption=True``).
``squash(x, s) = x / (x + s)`` maps [0, inf) to [0, 1).

========================  =====================================================
block (size)              feature
========================  =====================================================
job k (K x (6 + C))       present (1/0); squash(wait so far, 3600 s);
                          squash(remaining work as best-device duration, 3600 s);
                          workers / max workers of the workload;
                          TE class (1/0); deadline slack tanh((deadline - now -
                          best duration) / 3600 s), 1 if none;
                          per device c: squash(remaining duration on c, 3600 s),
                          -1 if the job cannot run on c
device c (C x 3)          free fraction; capacity / largest capacity;
                          squash(waiting workers whose fastest type is c /
                          capacity, 1)
running r (R x 4)         present; squash(remaining time, 3600 s);
                          workers / max workers; preemptions / (limit or 1), capped at 1
global (4)                squash(queue length, K); squash(running jobs, K);
                          arrived / total jobs; done / total jobs
========================  =====================================================
"""

from __future__ import annotations

import numpy as np
from numba import njit

__all__ = ["obs_size", "observe_nb"]

SCALE = 3600.0


def obs_size(window: int, n_dev: int, run_window: int) -> int:
    """Length of the observation vector."""
    return window * (6 + n_dev) + n_dev * 3 + run_window * 4 + 4


@njit(cache=True)
def _sq(x, s):
    if x <= 0.0:
        return 0.0
    return x / (x + s)


@njit(cache=True)
def observe_nb(now, window, n_win, run_win, n_rwin, r_slots, queue, n_queue, n_running, n_arrived,
               n_done, n_jobs, arrival, workers, max_workers, remaining, tput, eff_exp,
               job_class, deadline, first_start, free_dev, cap_dev, max_cap, n_preempt,
               limit, out):
    """Fill ``out`` with the observation (see the module table)."""
    out[:] = 0.0
    c_n = tput.shape[1]
    f = 6 + c_n
    k_n = window.shape[0]
    for k in range(n_win):
        j = window[k]
        b = k * f
        w = workers[j]
        eff = w ** (eff_exp - 1.0)
        best = np.inf
        for c in range(c_n):
            if tput[j, c] > 0:
                d = remaining[j] / (w * tput[j, c] * eff)
                if d < best:
                    best = d
        out[b] = 1.0
        out[b + 1] = _sq(now - arrival[j], SCALE)
        out[b + 2] = _sq(best, SCALE)
        out[b + 3] = w / max_workers
        out[b + 4] = 1.0 if job_class[j] == 1 else 0.0
        if np.isinf(deadline[j]):
            out[b + 5] = 1.0
        else:
            out[b + 5] = np.tanh((deadline[j] - now - best) / SCALE)
        for c in range(c_n):
            if tput[j, c] > 0:
                out[b + 6 + c] = _sq(remaining[j] / (w * tput[j, c] * eff), SCALE)
            else:
                out[b + 6 + c] = -1.0
    b0 = k_n * f
    pressure = np.zeros(c_n)
    for i in range(n_queue):
        j = queue[i]
        bc = 0
        for c in range(c_n):
            if tput[j, c] > tput[j, bc]:
                bc = c
        pressure[bc] += workers[j]
    for c in range(c_n):
        b = b0 + c * 3
        out[b] = free_dev[c] / cap_dev[c] if cap_dev[c] > 0 else 0.0
        out[b + 1] = cap_dev[c] / max_cap
        out[b + 2] = _sq(pressure[c] / max(cap_dev[c], 1.0), 1.0)
    b0 += c_n * 3
    r_n = r_slots
    for r in range(n_rwin):
        j = run_win[r]
        b = b0 + r * 4
        out[b] = 1.0
        best = np.inf
        w = workers[j]
        eff = w ** (eff_exp - 1.0)
        for c in range(c_n):
            if tput[j, c] > 0:
                d = remaining[j] / (w * tput[j, c] * eff)
                if d < best:
                    best = d
        out[b + 1] = _sq(best, SCALE)
        out[b + 2] = w / max_workers
        out[b + 3] = min(1.0, n_preempt[j] / max(limit, 1.0))
    b0 += r_n * 4
    out[b0] = _sq(float(n_queue), float(k_n))
    out[b0 + 1] = _sq(float(n_running), float(k_n))
    out[b0 + 2] = n_arrived / n_jobs
    out[b0 + 3] = n_done / n_jobs
