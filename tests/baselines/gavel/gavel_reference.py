"""The code the faster Gavel paths replaced, kept as the reference they are tested against.

:func:`assign_workers` is ``baselines.gavel.place.assign_workers`` as it was before the
compiled walk (:mod:`baselines.gavel.kernels`): a ``_Free`` table of GPUs, cores and
memory per node, and a Python walk over the type's nodes for each job.
"""

from __future__ import annotations

import numpy as np

from baselines.gavel.lp import (
    _TIE_TOL,
    _check,
    _method,
    _sp,
    linprog,
    proportional_throughput,
)
from baselines.gavel.place import current
from hetgym.decisions import Placement
from hetgym.sim.codes import RUNNING


def base_constraints(sf: np.ndarray, n: np.ndarray, extra: int = 0):
    """(Formerly ``baselines.gavel.lp.base_constraints``.) ``(A_ub, b_ub)`` of Gavel's
    base constraints on ``x`` flattened row-major (job-major), with ``extra`` trailing
    zero columns (for auxiliary variables)."""
    sf = np.asarray(sf, dtype=np.float64)
    n = np.asarray(n, dtype=np.float64)
    m, k = len(sf), len(n)
    rows = _sp().kron(_sp().identity(m, format="csr"), _sp().csr_matrix(np.ones((1, k))))  # sum_k x_jk <= 1
    cols = _sp().kron(_sp().csr_matrix(sf.reshape(1, -1)), _sp().identity(k, format="csr"))  # sum_j sf_j x_jk <= n_k
    a = _sp().vstack([rows, cols]).tocsr()
    if extra:
        a = _sp().hstack([a, _sp().csr_matrix((a.shape[0], extra))]).tocsr()
    return a, np.concatenate([np.ones(m), n])


class _Free:
    """Which GPUs, cores and memory a round's assignment has not given out yet.

    ``nfree[n]`` (free GPUs of node ``n``) and ``type_free[k]`` (of type ``k``) are kept
    with ``gpu`` (and ``cpu_l``, ``mem_l`` with ``cpu``, ``mem``, as Python floats) so
    that :meth:`first` passes over full nodes and nodes without room for one worker, and
    rejects a gang larger than its type's free GPUs, without looking at their GPUs."""

    def __init__(self, view, held: np.ndarray) -> None:
        self.gpu = np.arange(view.node_gpus.max(initial=0))[None, :] < np.asarray(view.node_gpus)[:, None]
        self.cpu = np.asarray(view.node_cpus, dtype=np.float64).copy()
        self.mem = np.asarray(view.node_mem, dtype=np.float64).copy()
        self.view = view
        self.node_dev = np.asarray(view.node_device).tolist()
        self.nfree = self.gpu.sum(axis=1).tolist()
        self.type_free = [0] * len(view.devices)
        for n, f in enumerate(self.nfree):
            self.type_free[self.node_dev[n]] += f
        self._nodes: dict[int, list[int]] = {}
        self.cpu_l, self.mem_l = self.cpu.tolist(), self.mem.tolist()  # the same, as floats
        for j in held.tolist():  # jobs that keep what they hold whatever we decide
            self.take(int(j), *current(view, int(j)))

    def fits(self, job: int, nodes: np.ndarray, gpus: np.ndarray) -> bool:
        v = self.view
        g = gpus >= 0
        pairs = set(zip(nodes[g].tolist(), gpus[g].tolist()))
        if not self.gpu[nodes[g], gpus[g]].all() or len(pairs) < int(g.sum()):
            return False
        need_c: dict[int, float] = {}
        for n in nodes.tolist():
            need_c[n] = need_c.get(n, 0.0) + 1.0
        return all(self.cpu[n] + 1e-9 >= c * v.cpus_need[job, v.node_device[n]]
                   and self.mem[n] + 1e-9 >= c * v.mem[job] for n, c in need_c.items())

    def take(self, job: int, nodes: np.ndarray, gpus: np.ndarray) -> None:
        v = self.view
        for n, g in zip(nodes.tolist(), gpus.tolist()):
            if g >= 0 and self.gpu[n, g]:
                self.gpu[n, g] = False
                self.nfree[n] -= 1
                self.type_free[self.node_dev[n]] -= 1
            self.cpu[n] -= v.cpus_need[job, v.node_device[n]]
            self.mem[n] -= v.mem[job]
            self.cpu_l[n] = float(self.cpu[n])
            self.mem_l[n] = float(self.mem[n])

    def first(self, job: int, dev: int, w: int) -> Placement | None:
        """The first ``w`` free GPUs of type ``dev`` in node, GPU order (room for the job's
        cores and memory on each node; on a CPU type, worker slots node by node), or None."""
        v = self.view
        cpu_type = bool(np.asarray(v.dev_is_cpu)[dev])
        if not cpu_type and self.type_free[dev] < w:
            return None  # fewer free GPUs of the type than workers: the walk finds no room
        of_type = self._nodes.get(dev)
        if of_type is None:
            of_type = self._nodes[dev] = np.flatnonzero(np.asarray(v.node_device) == dev).tolist()
        nodes: list[int] = []
        gpus: list[int] = []
        c, m = float(v.cpus_need[job, dev]), float(v.mem[job])
        nfree = self.nfree
        cpus, mems = self.cpu_l, self.mem_l
        for n in of_type:
            if not cpu_type and nfree[n] == 0:
                continue  # a full node gives no GPU
            cpu, mem = cpus[n], mems[n]
            if cpu + 1e-9 < c or mem + 1e-9 < m:
                continue  # no room for one worker: the node gives nothing
            for g in ([-1] * w if cpu_type else np.flatnonzero(self.gpu[n]).tolist()):
                if len(nodes) == w or cpu + 1e-9 < c or mem + 1e-9 < m:
                    break
                nodes.append(n)
                gpus.append(g)
                cpu -= c
                mem -= m
            if len(nodes) == w:
                break
        if len(nodes) < w:
            return None
        pl = Placement.of(nodes, gpus)
        self.take(job, pl.nodes, pl.gpus)
        return pl


def assign_workers(view, scheduled: dict[int, list[int]], held: np.ndarray
                   ) -> dict[int, tuple[int, Placement]]:
    """``baselines.gavel.place.assign_workers`` before the compiled walk (same arguments)."""
    free = _Free(view, held)
    status = np.asarray(view.status)
    dev = np.asarray(view.device)
    out: dict[int, tuple[int, Placement]] = {}
    for k, jobs in scheduled.items():
        by_size = sorted(jobs, key=lambda j: -int(view.workers[j]))  # stable: walk order on ties
        for size in sorted({int(view.workers[j]) for j in jobs}, reverse=True):
            same = [j for j in by_size if int(view.workers[j]) == size]
            for j in same:  # keep the GPUs of the previous round where all are free
                if status[j] == RUNNING and dev[j] == k:
                    nodes, gpus = current(view, j)
                    if free.fits(j, nodes, gpus):
                        free.take(j, nodes, gpus)
                        out[j] = (k, Placement(nodes.copy(), gpus.copy()))
            for j in same:
                if j not in out:
                    pl = free.first(j, k, size)
                    if pl is not None:
                        out[j] = (k, pl)
    return out



# ---------------------------------------------------------------- LPs (baselines.gavel.lp)
# The LP functions as they were before the direct HiGHS call (baselines.gavel.highs):
# matrices stacked with scipy.sparse, solved with scipy.optimize.linprog.

def _bounds(T: np.ndarray, extra: list[tuple[float | None, float | None]] | None = None):
    b = [(0.0, 0.0) if t <= 0 else (0.0, 1.0) for t in T.reshape(-1)]
    return b + (extra or [])


def _solve(c, a_ub, b_ub, bounds, what: str, solution: str = "vertex"):
    res = linprog(c, A_ub=a_ub, b_ub=b_ub, bounds=bounds, method=_method(solution))
    if res.status != 0:
        raise RuntimeError(f"Gavel {what} LP failed: {res.message}")
    return res


def _tie_break(T: np.ndarray, sf: np.ndarray, n: np.ndarray, coef: np.ndarray,
               a_obj, b_obj) -> np.ndarray:
    """Second stage: maximise sum(coef * x) keeping the first stage's optimum
    (``a_obj @ [x, aux] <= b_obj`` rows fix it). Returns ``x`` (m x K)."""
    m, k = T.shape
    extra = a_obj.shape[1] - m * k
    a, b = base_constraints(sf, n, extra)
    a = _sp().vstack([a, a_obj]).tocsr()
    b = np.concatenate([b, b_obj])
    c = np.concatenate([-coef.reshape(-1), np.zeros(extra)])
    res = _solve(c, a, b, _bounds(T, [(None, None)] * extra), "tie-break")
    return np.clip(res.x[: m * k].reshape(m, k), 0.0, 1.0)


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
    fair = _sp().hstack([-_block_rows(coef), _sp().csr_matrix(np.ones((ml, 1)))]).tocsr()
    a, b = base_constraints(sfl, n, 1)
    a = _sp().vstack([a, fair]).tocsr()
    b = np.concatenate([b, np.zeros(ml)])
    c = np.zeros(ml * k + 1)
    c[-1] = -1.0
    res = _solve(c, a, b, _bounds(Tl, [(0.0, None)]), "LAS", solution)
    if solution == "interior":
        x[live] = np.clip(res.x[: ml * k].reshape(ml, k), 0.0, 1.0)
        return x
    t_star = float(res.x[-1])
    # second stage: keep t >= t*(1 - tol), i.e. -t <= -t*(1-tol)
    fix_t = _sp().csr_matrix(([-1.0], ([0], [ml * k])), shape=(1, ml * k + 1))
    x[live] = _tie_break(Tl, sfl, n, coef, _sp().vstack([fair, fix_t]).tocsr(),
                         np.concatenate([np.zeros(ml), [-t_star * (1 - _TIE_TOL)]]))
    return x


def _block_rows(coef: np.ndarray):
    """Sparse ``m x (m*k)`` matrix whose row ``j`` holds ``coef[j]`` in job ``j``'s columns."""
    m, k = coef.shape
    rows = np.repeat(np.arange(m), k)
    cols = np.arange(m * k)
    return _sp().csr_matrix((coef.reshape(-1), (rows, cols)), shape=(m, m * k))


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
    a, b = base_constraints(sf, n)
    res = _solve(-T.reshape(-1), a, b, _bounds(T), "max-throughput", solution)
    return np.clip(res.x.reshape(m, k), 0.0, 1.0)


def _feasible(T: np.ndarray, sf: np.ndarray, n: np.ndarray, need: np.ndarray,
              solution: str = "vertex") -> np.ndarray | None:
    """An ``x`` with ``sum_k T_jk x_jk >= need_j`` under the base constraints, or None.
    ``"vertex"``: the feasible vertex of largest total normalised throughput;
    ``"interior"``: HiGHS's interior-point answer to the feasibility problem itself
    (no objective, as Gavel's ``cp.Maximize(1)``)."""
    m, k = T.shape
    a, b = base_constraints(sf, n)
    req = -_block_rows(T)
    a = _sp().vstack([a, req]).tocsr()
    b = np.concatenate([b, -need])
    norm = T / np.maximum(need, 1e-300)[:, None]
    c = np.zeros(m * k) if solution == "interior" else -norm.reshape(-1)
    res = linprog(c, A_ub=a, b_ub=b, bounds=_bounds(T), method=_method(solution))
    if res.status != 0:
        return None
    return np.clip(res.x.reshape(m, k), 0.0, 1.0)


# ---------------------------------------------------------------- the walk (baselines.gavel.schedulers)
# Gavel._plan as it was before the walk stopped at a full type (it then skipped every job).

def plan(self, view, t: float) -> dict[int, list[int]]:
    """``Gavel._plan`` (steps 2-4 of :mod:`baselines.gavel.schedulers`'s docstring) as written before."""
    if self._need and (self._t_reset == 0.0 or t - self._t_reset >= self.min_reset_interval):
        if self.fixed_allocation is None or self._resets == 0:
            self._reset_time(t)
        self._compute(view, t)
        self._need = False
    active = np.flatnonzero(self._known)
    if len(active) == 0:
        return {}
    X = self._X[active]
    T = self._T[active]
    with np.errstate(divide="ignore", invalid="ignore"):
        frac = np.where(self._W[None, :] > 0, self._tau[active] / self._W[None, :], 0.0)
        p = np.where(frac > 0, X / frac, X * 1e9)
    p = np.where((X == 0) | (T == 0) | ~self._in_x[active][:, None], 0.0, p)
    order = list(self._order)
    if not self.perf and self.type_order is None:
        order = [order[i] for i in view.rng.permutation(len(order))]
    left = {k: int(self._n[k]) - int(self._grace_gpus(view, k)) for k in order}
    done: set[int] = set()
    out: dict[int, list[int]] = {k: [] for k in order}
    fifo = self.policy.startswith("fifo")
    workers = np.asarray(view.workers)
    for k in order:
        keys = np.lexsort((-X[:, k], -self._deficit[active, k], -p[:, k]))  # stable
        for i in keys.tolist():
            j = int(active[i])
            if left[k] == 0 or j in done or T[i, k] <= 0 or (fifo and p[i, k] <= 0):
                continue
            if int(workers[j]) > left[k]:
                continue
            left[k] -= int(workers[j])
            done.add(j)
            if self._in_x[j] or self.absent_jobs == "run":
                out[k].append(j)
    return {k: v for k, v in out.items() if v}
