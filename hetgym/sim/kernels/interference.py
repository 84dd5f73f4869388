"""Co-location interference (docs/semantics.md, *Interference*): the kernels.

A running job ``j`` with GPU workers is slowed by the other running jobs that share an
*interference domain* with it (``opts.interf_domain``: 0 = a CPU socket of a node,
1 = a node), counted once each however many GPUs they share:

* coefficient model (``opts.interf_mode == 1``):
  ``f(j) = 1 / (1 + coeff * sens[j] * sum_k press[k])``;
* pairwise table (``opts.interf_mode == 2``):
  ``f(j) = 1 / (1 + sum_k (itab[itype[j], itype[k]] - 1))``;
* off (``opts.interf_mode == 0``): exactly 1, and :func:`refresh_rates_nb` does nothing.

Only GPU workers take part (a CPU worker has no socket here). The neighbours are read
from ``ns.gpu_owner``, so a hypothetical placement (``View.rate_of``) is scored against
the jobs running now. :func:`refresh_rates_nb` is called by the event kernels after
every start and release (completion, preemption, end of a grace period, move): every
running job with a GPU on a touched node gets its rate recomputed and its projected
finish moved to ``max(now, resume_at) + remaining / rate``.

Runs without interference leave all of this out of their compiled code: their kernels
take a :data:`~hetgym.sim.state.mirror.PlainParamsK` (chosen in Python by
:func:`~hetgym.sim.state.mirror.mirror`), and the event kernels call :func:`interfered_rate`
and :func:`refresh_rates`, which resolve at compile time, by that type, to
:func:`~hetgym.sim.kernels.rate.job_rate_nb` and to nothing (what the full kernels compute
when ``interf_mode == 0``). Compiling the interference chain into every event kernel
cost about 1.5 s after install.
"""

from __future__ import annotations

import numpy as np
from numba import njit
from numba.extending import overload

from hetgym.sim.kernels.rate import job_rate_nb
from hetgym.sim.state.layout import ACC_NOW
from hetgym.sim.state.mirror import is_plain


@njit(cache=True, inline="always")
def _contains_nb(arr, n, x):
    """Whether ``x`` is among ``arr[:n]``."""
    for q in range(n):
        if arr[q] == x:
            return True
    return False


@njit(cache=True, no_cfunc_wrapper=True)
def interference_factor_nb(job, w, wnodes, wgpus, P, ns):
    """Interference factor (<= 1) of ``job`` on the placement ``wnodes[:w]``,
    ``wgpus[:w]`` next to the jobs holding GPUs in ``ns`` (``job`` itself excluded)."""
    opts, jobs, nodes = P.opts, P.jobs, P.nodes
    mode = opts.interf_mode
    if mode == 0 or (mode == 1 and jobs.sens[job] <= 0.0):
        return 1.0
    seen = np.empty(w * nodes.socket.shape[1], dtype=np.int64)
    n_seen = 0
    tot = 0.0
    for i in range(w):
        n = wnodes[i]
        g = wgpus[i]
        if g < 0:
            continue
        s = nodes.socket[n, g]
        for h in range(nodes.gpus[n]):
            k = ns.gpu_owner[n, h]
            if k < 0 or k == job:
                continue
            if opts.interf_domain == 0 and nodes.socket[n, h] != s:
                continue
            if _contains_nb(seen, n_seen, k):
                continue
            seen[n_seen] = k
            n_seen += 1
            if mode == 1:
                tot += jobs.press[k]
            else:
                tot += P.itab[jobs.itype[job], jobs.itype[k]] - 1.0
    if mode == 1:
        return 1.0 / (1.0 + opts.interf_coeff * jobs.sens[job] * tot)
    return 1.0 / (1.0 + tot)


@njit(cache=True, no_cfunc_wrapper=True)
def _interfered_rate_full_nb(job, w, wnodes, wgpus, P, ns):
    """:func:`interfered_rate_nb` for a run that may have interference."""
    r = job_rate_nb(job, w, wnodes, wgpus, P)
    if P.opts.interf_mode != 0:
        r *= interference_factor_nb(job, w, wnodes, wgpus, P, ns)
    return r


def interfered_rate(job, w, wnodes, wgpus, P, ns):
    """Compiled code only: :func:`interfered_rate_nb` without a call level of its own."""
    raise NotImplementedError("interfered_rate is for compiled code; call interfered_rate_nb")


@overload(interfered_rate)
def _interfered_rate_ol(job, w, wnodes, wgpus, P, ns):
    if is_plain(P):
        return lambda job, w, wnodes, wgpus, P, ns: job_rate_nb(job, w, wnodes, wgpus, P)
    return lambda job, w, wnodes, wgpus, P, ns: _interfered_rate_full_nb(job, w, wnodes, wgpus, P,
                                                                         ns)


@njit(cache=True, no_cfunc_wrapper=True)
def interfered_rate_nb(job, w, wnodes, wgpus, P, ns):
    """The engine's rate of ``job`` on a placement of ``w`` workers:
    :func:`~hetgym.sim.kernels.rate.job_rate_nb` times :func:`interference_factor_nb`
    (exactly ``job_rate_nb`` when interference is off)."""
    return interfered_rate(job, w, wnodes, wgpus, P, ns)


@njit(cache=True, inline="always")
def copies_rate_nb(job, w, k, wnodes, wgpus, P, ns):
    """Pooled rate of ``k`` copies of ``job`` on ``w`` workers (forking: copy c on
    ``wnodes[c w / k:(c + 1) w / k]``): the sum of the copies' :func:`interfered_rate_nb`
    (exactly it when ``k == 1``)."""
    g = w // k
    r = interfered_rate(job, g, wnodes[:g], wgpus[:g], P, ns)
    for c in range(1, k):
        r += interfered_rate(job, g, wnodes[c * g:(c + 1) * g], wgpus[c * g:(c + 1) * g], P, ns)
    return r


@njit(cache=True, no_cfunc_wrapper=True)
def refresh_rates_nb(w, wnodes, P, S):
    """Recompute the rate and projected finish of every running job holding a GPU on one
    of the nodes ``wnodes[:w]`` (no-op when interference is off). ``remaining`` must be
    integrated to now, as it is at every event instant."""
    if P.opts.interf_mode == 0:
        return
    nodes, js, ns = P.nodes, S.job, S.node
    now = S.run.acc[ACC_NOW]
    done = np.empty(w * nodes.socket.shape[1], dtype=np.int64)
    n_done = 0
    for i in range(w):
        n = wnodes[i]
        if _contains_nb(wnodes, i, n):
            continue
        for h in range(nodes.gpus[n]):
            k = ns.gpu_owner[n, h]
            if k < 0 or _contains_nb(done, n_done, k):
                continue
            done[n_done] = k
            n_done += 1
            wk = js.nworkers[k]
            r = copies_rate_nb(k, wk, js.n_copies[k], js.worker_node[k, :wk],
                               js.worker_gpu[k, :wk], P, ns)
            js.rate[k] = r
            ra = js.resume_at[k]
            t0 = ra if ra > now else now  # noqa: FURB136 (builtin min/max compile an overload)
            js.finish[k] = t0 + js.remaining[k] / r


def refresh_rates(w, wnodes, P, S):
    """Compiled code only: :func:`refresh_rates_nb`, or nothing for a run without
    interference (``P`` a :data:`~hetgym.sim.state.mirror.PlainParamsK`)."""
    raise NotImplementedError("refresh_rates is for compiled code; call refresh_rates_nb")


@overload(refresh_rates)
def _refresh_rates_ol(w, wnodes, P, S):
    if is_plain(P):
        return lambda w, wnodes, P, S: None
    return lambda w, wnodes, P, S: refresh_rates_nb(w, wnodes, P, S)
