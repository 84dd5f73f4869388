"""Gavel's allocation policies as linear programs (SciPy's HiGHS), pure functions.

Each function takes the active jobs' throughput matrix ``T`` (``m x K``: steps/s of
job ``j`` with its whole gang of ``sf_j`` workers on type ``k``; 0 where it cannot run),
the scale factors ``sf`` (gang sizes), the GPU counts ``n`` per type, and returns
the allocation ``X`` (``m x K``, the fraction of time job ``j`` should spend on type
``k``). Gavel's base constraints (``policies/policy.py::get_base_constraints``) hold
for every returned ``X``: ``X >= 0``, ``sum_k X_jk <= 1``, ``sum_j sf_j X_jk <= n_k``.
hetgym also fixes ``X_jk = 0`` where ``T_jk = 0`` (Gavel has a throughput for every
job on every type; in hetgym a job may not fit a type at all).

Sources (``stanford-futuredata/gavel``, ``scheduler/policies/``): ``max_min_fairness.py``
(LAS, LAS-Perf), ``proportional.py`` (the normalising share), ``max_sum_throughput.py``
(max throughput, without costs and SLOs), ``min_total_duration.py`` (makespan),
``finish_time_fairness.py`` / ``isolated.py`` (FTF); docs/gavel.md.

Departures (documented in docs/gavel.md): Gavel solves with cvxpy (ECOS), whose interior-point
solvers return a point inside the optimal face when it is not unique. Every function
takes ``solution``: ``"vertex"`` (hetgym's tie-break) solves a second LP that
maximises ``sum_jk c_jk X_jk`` (``c`` = the policy's own normalised throughput)
subject to the first objective staying within a relative ``1e-9`` of its optimum, so
the vertex is well defined (the aware LP tie-break example of docs/gavel.md); for the
feasibility LPs of makespan and FTF it takes the feasible vertex of largest normalised
throughput. ``"interior"`` solves the policy's LP alone with HiGHS's interior-point method
(feasibility LPs with no objective, as Gavel's ``cp.Maximize(1)``), which lands, like cvxpy,
inside the face; it is what :class:`baselines.gavel.schedulers.Gavel` uses by default because it
agrees better with Gavel's simulator (docs/gavel.md). FTF is solved by bisection on the
max ratio (the problem is quasi-convex), not by cvxpy's ``inv_pos`` program.

The constraint matrices are built directly in CSC form (:func:`_csc`, the same arrays
the sparse stacking of the replaced code gave ``linprog``; that code is kept as the
reference in ``tests/baselines/gavel/gavel_reference.py``) and handed to HiGHS
by :func:`baselines.gavel.highs.solve` with ``linprog``'s options and acceptance test.
"""

from __future__ import annotations

import numpy as np

from hetgym.sim.rules import EPS


def _sp():
    """``scipy.sparse``, imported on first use (keeps ``import baselines`` fast)."""
    import scipy.sparse

    return scipy.sparse


def linprog(*args, **kwargs):
    """``scipy.optimize.linprog``, imported on first use (SciPy's optimize takes 0.2 s)."""
    from scipy.optimize import linprog as _linprog

    return _linprog(*args, **kwargs)

__all__ = [
    "agnostic",
    "finish_time_fairness",
    "isolated_throughput",
    "las",
    "max_throughput",
    "min_makespan",
    "proportional_throughput",
]

_TIE_TOL = EPS


def _check(T: np.ndarray, sf: np.ndarray, n: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    T = np.asarray(T, dtype=np.float64)
    sf = np.asarray(sf, dtype=np.float64).reshape(-1)
    n = np.asarray(n, dtype=np.float64).reshape(-1)
    if T.ndim != 2 or T.shape != (len(sf), len(n)):
        raise ValueError(f"Gavel LP: T must be (jobs={len(sf)}, types={len(n)}), got {T.shape}")
    if (T < 0).any() or (sf <= 0).any() or (n < 0).any():
        raise ValueError("Gavel LP: throughputs and GPU counts must be >= 0, scale factors > 0")
    return T, sf, n


def agnostic(T: np.ndarray) -> np.ndarray:
    """Heterogeneity-agnostic throughputs (Gavel's non-Perf policies): 1 wherever the
    job can run, 0 elsewhere."""
    return (np.asarray(T) > 0).astype(np.float64)


def _lu(T: np.ndarray, extra: list[tuple[float, float]] = ()) -> tuple[np.ndarray, np.ndarray]:
    """Column bounds as arrays: ``x_jk`` in ``[0, 1]``, fixed at 0 where ``T_jk = 0``;
    then ``extra`` (auxiliary variables)."""
    lb = np.concatenate([np.zeros(T.size), [e[0] for e in extra]])
    ub = np.concatenate([np.where(T.reshape(-1) <= 0, 0.0, 1.0), [e[1] for e in extra]])
    return lb, ub


def _csc(sf: np.ndarray, k: int, blocks: list[np.ndarray],
         aux: list[tuple[np.ndarray, np.ndarray]] = ()) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """CSC parts ``(indptr, indices, data)`` of the matrix the sparse ``vstack`` /
    ``hstack`` of this module used to build: Gavel's base constraints (rows
    ``0..m-1``: ``sum_k x_jk <= 1`` per job; ``m..m+k-1``: ``sum_j sf_j x_jk <= n_k`` per
    type), then one
    row per job for each ``m x k`` block of ``blocks`` (row ``j`` of a block holds
    ``block[j]`` in job ``j``'s columns, explicit zeros included), on the ``m * k``
    columns of ``x``; then the auxiliary columns ``aux`` (``(rows, values)`` each).
    Rows are sorted in each column, as ``linprog``'s CSC conversion leaves them. With one
    or two types, ``scipy.sparse.kron`` builds the per-type rows from dense blocks, so
    each column holds every type row, ``0.0`` on the other types: kept here too."""
    m = len(sf)
    kt = k if 2 * k >= k * k else 1  # type rows per column (kron's dense-block rule)
    nb = 1 + kt + len(blocks)
    idx = np.empty((m, k, nb), dtype=np.int32)
    val = np.empty((m, k, nb))
    idx[:, :, 0] = np.arange(m)[:, None]
    val[:, :, 0] = 1.0
    if kt == 1:
        idx[:, :, 1] = m + np.arange(k)[None, :]
        val[:, :, 1] = sf[:, None]
    else:
        idx[:, :, 1:1 + kt] = m + np.arange(k)[None, None, :]
        val[:, :, 1:1 + kt] = sf[:, None, None] * np.eye(k)[None, :, :]
    for b, block in enumerate(blocks):
        idx[:, :, 1 + kt + b] = m + k + b * m + np.arange(m)[:, None]
        val[:, :, 1 + kt + b] = block
    counts = [len(r) for r, _ in aux]
    indptr = np.concatenate([np.arange(m * k + 1) * nb,
                             m * k * nb + np.cumsum(counts, dtype=np.int64)]).astype(np.int32)
    indices = np.concatenate([idx.reshape(-1)] + [np.asarray(r, dtype=np.int32) for r, _ in aux])
    data = np.concatenate([val.reshape(-1)] + [np.asarray(v, dtype=np.float64) for _, v in aux])
    return indptr, indices, data


def _run(c: np.ndarray, a: tuple, b: np.ndarray, lu: tuple, solution: str) -> np.ndarray | None:
    """:func:`baselines.gavel.highs.solve` on CSC parts ``a`` (None: not solved); ``linprog``
    where SciPy lacks the bindings it uses (:func:`baselines.gavel.highs.available`)."""
    from baselines.gavel.highs import available, solve

    if not available():
        res = _scipy(c, a, b, lu, solution)
        return res.x if res.status == 0 else None
    return solve(np.asarray(c, dtype=np.float64), *a, np.asarray(b, dtype=np.float64), *lu,
                 ipm=_method(solution) == "highs-ipm")


def _scipy(c, a: tuple, b, lu: tuple, solution: str):
    """``linprog`` on the same LP (for its message when :func:`_run` finds no solution)."""
    indptr, indices, data = a
    shape = (len(b), len(c))
    mat = _sp().csc_matrix((data, indices, indptr), shape=shape)
    return linprog(c, A_ub=mat, b_ub=b, bounds=np.column_stack(lu), method=_method(solution))


SOLUTIONS = ("vertex", "interior")


def _method(solution: str) -> str:
    if solution not in SOLUTIONS:
        raise ValueError(f"Gavel LP: solution must be one of {SOLUTIONS}, got {solution!r}")
    return "highs" if solution == "vertex" else "highs-ipm"


def _solve(c, a: tuple, b_ub, lu: tuple, what: str, solution: str = "vertex") -> np.ndarray:
    """``x`` of the LP (CSC parts ``a``), or RuntimeError with ``linprog``'s message."""
    x = _run(c, a, b_ub, lu, solution)
    if x is None:
        raise RuntimeError(f"Gavel {what} LP failed: {_scipy(c, a, b_ub, lu, solution).message}")
    return x


def _tie_break(T: np.ndarray, sf: np.ndarray, n: np.ndarray, coef: np.ndarray,
               fair: np.ndarray, t_star: float) -> np.ndarray:
    """Second stage of :func:`las`: maximise sum(coef * x) keeping the first stage's
    optimum (rows ``t - sum_k fair_jk x_jk <= 0`` and ``-t <= -t*(1 - tol)``). Returns
    ``x`` (m x K)."""
    m, k = T.shape
    rows = np.concatenate([m + k + np.arange(m), [m + k + m]])
    a = _csc(sf, k, [fair], [(rows, np.concatenate([np.ones(m), [-1.0]]))])
    b = np.concatenate([np.ones(m), n, np.zeros(m), [-t_star * (1 - _TIE_TOL)]])
    c = np.concatenate([-coef.reshape(-1), np.zeros(1)])
    x = _solve(c, a, b, _lu(T, [(-np.inf, np.inf)]), "tie-break")
    return np.clip(x[: m * k].reshape(m, k), 0.0, 1.0)


def proportional_throughput(T: np.ndarray, n: np.ndarray) -> np.ndarray:
    """``P_j = sum_k T_jk n_k / sum_k n_k`` (``proportional.py``: ``n_k/m`` per row,
    divided by the largest row sum)."""
    T = np.asarray(T, dtype=np.float64)
    n = np.asarray(n, dtype=np.float64)
    tot = n.sum()
    return T @ n / tot if tot > 0 else np.zeros(len(T))


def isolated_throughput(T: np.ndarray, sf: np.ndarray, n: np.ndarray) -> np.ndarray:
    """``T_j^iso = sum_k T_jk x^iso_jk`` with ``x^iso_jk = (n_k/m)/sf_j``, each row divided by
    ``max(1, row sum)`` (``isolated.py``)."""
    T, sf, n = _check(T, sf, n)
    m = len(sf)
    if m == 0:
        return np.zeros(0)
    x = (n[None, :] / m) / sf[:, None]
    x = x / np.maximum(1.0, x.sum(axis=1, keepdims=True))
    return (T * x).sum(axis=1)


def las(T: np.ndarray, sf: np.ndarray, n: np.ndarray, w: np.ndarray | None = None,
        solution: str = "vertex") -> np.ndarray:
    """Max-min fairness with performance (``MaxMinFairnessPolicyWithPerf``): maximise ``t``
    s.t. ``sum_k T_jk sf_j / (w_j P_j) x_jk >= t`` for every job, base constraints.

    For Gavel's heterogeneity-agnostic LAS (``MaxMinFairnessPolicy``) pass
    ``agnostic(T)``. Jobs that can run nowhere get a zero row (they are left out of the
    LP). ``w`` = priority weights (default 1). ``solution="vertex"``: HiGHS simplex, then
    the second-stage tie-break (module docstring); ``"interior"``: HiGHS's interior-point
    method on the LP alone (a point like the one cvxpy gives Gavel, no second stage).
    """
    T, sf, n = _check(T, sf, n)
    m, k = T.shape
    x = np.zeros((m, k))
    w = np.ones(m) if w is None else np.asarray(w, dtype=np.float64)
    p = proportional_throughput(T, n)
    live = np.flatnonzero((p > 0) & (T.sum(axis=1) > 0))
    if len(live) == 0:
        return x
    Tl, sfl = T[live], sf[live]
    coef = Tl * (sfl / (w[live] * p[live]))[:, None]
    ml = len(live)
    # variables: x (ml*k), t. Rows: t - sum_k coef_jk x_jk <= 0.
    fair = -coef
    a = _csc(sfl, k, [fair], [(ml + k + np.arange(ml), np.ones(ml))])
    b = np.concatenate([np.ones(ml), n, np.zeros(ml)])
    c = np.zeros(ml * k + 1)
    c[-1] = -1.0
    res_x = _solve(c, a, b, _lu(Tl, [(0.0, np.inf)]), "LAS", solution)
    if solution == "interior":
        x[live] = np.clip(res_x[: ml * k].reshape(ml, k), 0.0, 1.0)
        return x
    x[live] = _tie_break(Tl, sfl, n, coef, fair, float(res_x[-1]))
    return x


def max_throughput(T: np.ndarray, sf: np.ndarray, n: np.ndarray,
                   solution: str = "vertex") -> np.ndarray:
    """Maximise total throughput ``sum_jk T_jk x_jk`` (``max_sum_throughput.py``'s
    ``ThroughputNormalizedByCostSumWithPerfSLOs`` without costs or SLOs). Ties: the
    HiGHS vertex (no second stage; the objective is already a throughput sum), or the
    interior-point solution (``solution="interior"``)."""
    T, sf, n = _check(T, sf, n)
    m, k = T.shape
    if m == 0:
        return np.zeros((0, k))
    x = _solve(-T.reshape(-1), _csc(sf, k, []), np.concatenate([np.ones(m), n]), _lu(T),
               "max-throughput", solution)
    return np.clip(x.reshape(m, k), 0.0, 1.0)


def _feasible(T: np.ndarray, sf: np.ndarray, n: np.ndarray, need: np.ndarray,
              solution: str = "vertex") -> np.ndarray | None:
    """An ``x`` with ``sum_k T_jk x_jk >= need_j`` under the base constraints, or None.
    ``"vertex"``: the feasible vertex of largest total normalised throughput;
    ``"interior"``: HiGHS's interior-point answer to the feasibility problem itself
    (no objective, as Gavel's ``cp.Maximize(1)``)."""
    m, k = T.shape
    b = np.concatenate([np.ones(m), n, -need])
    norm = T / np.maximum(need, 1e-300)[:, None]
    c = np.zeros(m * k) if solution == "interior" else -norm.reshape(-1)
    x = _run(c, _csc(sf, k, [-T]), b, _lu(T), solution)
    return None if x is None else np.clip(x.reshape(m, k), 0.0, 1.0)


def min_makespan(T: np.ndarray, sf: np.ndarray, n: np.ndarray, remaining: np.ndarray,
                 lo: float = 100.0, hi: float = 1e6, solution: str = "vertex") -> np.ndarray:
    """Smallest makespan ``M`` such that every job can finish its ``remaining`` steps by
    ``M`` (``sum_k T_jk x_jk >= R_j / M``), by Gavel's bisection (``min_total_duration.py``):
    on ``[lo, hi]`` until ``hi <= 1.05 lo``; if nothing is feasible, the next decade
    ``[hi, 10 hi]``. Returns the last feasible ``x``. Jobs that can run nowhere (or have
    nothing left) get a zero row."""
    T, sf, n = _check(T, sf, n)
    m, k = T.shape
    x = np.zeros((m, k))
    rem = np.asarray(remaining, dtype=np.float64)
    live = np.flatnonzero((T.sum(axis=1) > 0) & (rem > 0))
    if len(live) == 0:
        return x
    Tl, sfl, rl = T[live], sf[live], rem[live]
    best = None
    last_hi = hi
    for _ in range(60):
        while 1.05 * lo < hi:
            mid = (lo + hi) / 2.0
            cand = _feasible(Tl, sfl, n, rl / mid, solution)
            if cand is not None:
                best, hi = cand, mid
            else:
                lo = mid
        if best is not None:
            break
        lo, hi, last_hi = last_hi, last_hi * 10.0, last_hi * 10.0
    if best is None:
        raise RuntimeError("Gavel makespan LP: no feasible makespan below 1e66 s")
    x[live] = best
    return x


def finish_time_fairness(T: np.ndarray, sf: np.ndarray, n: np.ndarray, remaining: np.ndarray,
                         since_start: np.ndarray, isolated_time: np.ndarray,
                         t_iso: np.ndarray | None = None, rtol: float = 1e-4,
                         solution: str = "vertex") -> np.ndarray:
    """Finish-time fairness (Themis-style, ``FinishTimeFairnessPolicyWithPerf``): minimise
    ``max_j rho_j``, ``rho_j = (s_j + R_j / sum_k T_jk x_jk) / (I_j + R_j / T_j^iso)``,
    with ``s_j`` = time since arrival, ``I_j`` = isolated time already accrued
    (``isolated_time``), ``T_j^iso`` from :func:`isolated_throughput` (or ``t_iso``).

    Solved by bisection on ``rho`` (relative tolerance ``rtol``): ``rho`` is feasible iff
    an ``x`` under the base constraints gives ``sum_k T_jk x_jk >= R_j / (rho (I_j +
    R_j/T_j^iso) - s_j)`` for every job (infeasible where that denominator is <= 0).
    Returns the ``x`` of the smallest feasible ``rho`` found.
    """
    T, sf, n = _check(T, sf, n)
    m, k = T.shape
    x = np.zeros((m, k))
    rem = np.asarray(remaining, dtype=np.float64)
    s = np.asarray(since_start, dtype=np.float64)
    iso_t = np.asarray(isolated_time, dtype=np.float64)
    tiso = isolated_throughput(T, sf, n) if t_iso is None else np.asarray(t_iso, dtype=np.float64)
    live = np.flatnonzero((T.sum(axis=1) > 0) & (rem > 0) & (tiso > 0))
    if len(live) == 0:
        return x
    Tl, sfl = T[live], sf[live]
    base = iso_t[live] + rem[live] / tiso[live]
    sl, rl = s[live], rem[live]

    def attempt(rho: float) -> np.ndarray | None:
        den = rho * base - sl
        if (den <= 0).any():
            return None
        return _feasible(Tl, sfl, n, rl / den, solution)

    hi = 1.0
    best = attempt(hi)
    for _ in range(80):
        if best is not None:
            break
        hi *= 2.0
        best = attempt(hi)
    if best is None:
        raise RuntimeError("Gavel FTF: no feasible finish-time ratio below 2^80")
    lo = 0.0
    while hi - lo > rtol * hi:
        mid = (lo + hi) / 2.0
        cand = attempt(mid)
        if cand is not None:
            best, hi = cand, mid
        else:
            lo = mid
    x[live] = best
    return x
