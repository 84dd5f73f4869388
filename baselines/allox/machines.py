"""Machines of the AlloX family: what a machine is, the pool at a decision point, the matching.

AlloX (Le et al., EuroSys'20) reasons about *machines*: one machine is one slot
of a device type, i.e. one GPU of a GPU type, or one CPU slot of a CPU node
(``SimOptions.cpu_slot_cores`` cores, or the jobs' median ``cpus`` when that
option is unset). Here:

* :func:`slot_cores`, :func:`slots_per_device`, :func:`may_fit`: machines per device
  type and a quick "surely does not fit" test;
* :func:`admit_pairs`, :func:`run_start_kernel`: start (job, device type) pairs through
  the Numba kernels of :mod:`baselines.common.kernels`;
* :class:`MachinePool`: the machines of the cluster at a decision point, each
  with its device type and the time ``omega`` at which it frees (``now`` if idle;
  a busy machine frees when the job holding it is expected to end);
* :func:`match_first_jobs`: AlloX's min-cost bipartite matching (sec. 3.1-3.2):
  which job each machine should run first; :func:`no_first_job`: a cheap proof that it
  puts no job first on the idle machines of a type (the matching need not be solved).

Placement stays the simulator's (``CapacityModel.place``); these parts only
choose which job goes to which device type, and when.
"""

from __future__ import annotations

import weakref
from dataclasses import dataclass

import numpy as np

from baselines.common.kernels import pairs_admit_nb
from hetgym.decisions import Placement, Start
from hetgym.sim.fastpath import entry
from hetgym.sim.rules import EPS, slots
from hetgym.sim.view import CapacityModel, View

__all__ = [
    "MachinePool",
    "admit_pairs",
    "match_first_jobs",
    "may_fit",
    "no_first_job",
    "run_start_kernel",
    "slot_cores",
    "slot_mem",
    "slots_per_device",
    "type_means",
]


def slot_cores(view: View) -> float:
    """Cores of one CPU machine: ``SimOptions.cpu_slot_cores``, else the median of the
    jobs' positive ``cpus`` (``inf`` when no job needs cores: memory then decides)."""
    if "cpu" not in view.devices:
        return 1.0
    if view.options.cpu_slot_cores is not None:
        return float(view.options.cpu_slot_cores)
    return _static(view)[0]


def slot_mem(view: View) -> float:
    """Memory of one CPU machine: the median of the jobs' positive ``mem`` (inf if none)."""
    return _static(view)[1]


def _static(view: View) -> tuple[float, float]:
    """Median positive cores (on cpu) and memory per worker over the workload, once per view."""
    out = _MEDIANS.get(view)
    if out is None:
        need = np.zeros(0)
        if "cpu" in view.devices:
            need = np.asarray(view.cpus_need[:, view.devices.index("cpu")])
            need = need[need > 0]
        mem = np.asarray(view.mem)
        mem = mem[mem > 0]
        out = (float(np.median(need)) if len(need) else float("inf"),
               float(np.median(mem)) if len(mem) else float("inf"))
        _MEDIANS[view] = out
    return out


_MEDIANS: weakref.WeakKeyDictionary[object, tuple[float, float]] = weakref.WeakKeyDictionary()


def slots_per_device(view: View, free: bool = False, cap: CapacityModel | None = None) -> np.ndarray:
    """Machines (GPUs, or CPU slots) per device type: all of them, or the free ones.

    Args:
        view: The simulator's view.
        free: Count only free machines (of ``cap`` when given, else of the view).
        cap: A scratch capacity copy (used with ``free``).
    """
    s = slot_cores(view)
    sm = slot_mem(view)
    nd = np.asarray(view.node_device)
    if free:
        gpus = cap.free_gpus if cap is not None else view.free_gpus
        cpus = cap.free_cpus if cap is not None else view.free_cpus
        mem = cap.free_mem if cap is not None else view.free_mem
    else:
        gpus, cpus, mem = view.node_gpus, view.node_cpus, view.node_mem
    out = np.zeros(len(view.devices), dtype=np.int64)
    for d in range(len(view.devices)):
        m = nd == d
        if view.dev_is_cpu[d]:
            n_cpu = np.asarray(cpus, dtype=np.float64)[m]
            n_mem = np.asarray(mem, dtype=np.float64)[m]
            if np.isinf(s) and np.isinf(sm):
                per = np.ones(len(n_cpu))  # jobs need nothing: one machine per node
            else:
                per = np.full(len(n_cpu), np.inf)
                if not np.isinf(s):
                    per = np.minimum(per, slots(n_cpu, s))
                if not np.isinf(sm):
                    per = np.minimum(per, slots(n_mem, sm))
            out[d] = int(per.sum())
        else:
            out[d] = int(np.asarray(gpus)[m].sum())
    return out


def may_fit(view: View, cap: CapacityModel, jobs: np.ndarray, free: np.ndarray) -> np.ndarray:
    """bool[len(jobs), C]: False where a job's gang surely does not fit on the type in
    ``cap`` (more workers than free GPUs; more cores or memory than the type has free
    in total, with a tolerance above the placement kernel's rounding)."""
    nd = np.asarray(view.node_device)
    n_dev = len(view.devices)
    tot_c = np.bincount(nd, weights=cap.free_cpus, minlength=n_dev)
    tot_m = np.bincount(nd, weights=cap.free_mem, minlength=n_dev)
    tol = 1e-6 * (1.0 + np.bincount(nd, minlength=n_dev))
    w = np.asarray(view.workers)[jobs][:, None].astype(np.float64)
    c = np.asarray(view.cpus_need)[jobs]
    m = np.asarray(view.mem)[jobs][:, None]
    gpu = ~np.asarray(view.dev_is_cpu)
    with np.errstate(divide="ignore", invalid="ignore"):
        ok = ~gpu[None, :] | (w <= free[None, :])
        ok &= (c <= 0) | (tot_c[None, :] / np.where(c > 0, c, 1.0) + tol >= w)
        ok &= (m <= 0) | (tot_m[None, :] / np.where(m > 0, m, 1.0) + tol >= w)
    return ok


def run_start_kernel(view: View, cap: CapacityModel, kernel, n: int, *lead) -> list[Start]:
    """Call a Numba kernel of :mod:`baselines.common.kernels` that places up to ``n`` jobs on
    ``cap``: its arguments are ``lead``, the job arrays it needs (``cpus_need``,
    ``mem``; ``workers`` first for :func:`~baselines.common.kernels.pairs_admit_nb`), the
    placement policy, the node arrays, ``cap``'s state, scratch and the output arrays.
    Returns the starts it wrote."""
    kv = view.kernel
    out_nodes = np.empty((n, view.worker_node.shape[1]), dtype=np.int64)
    out_gpus = np.empty_like(out_nodes)
    out_job = np.empty(n, dtype=np.int64)
    out_dev = np.empty(n, dtype=np.int64)
    args = (*lead, view.cpus_need, view.mem, int(cap.policy), kv.nodes, cap.ns,
            kv.scratch, out_job, out_dev, out_nodes, out_gpus)
    k = entry(kernel, *args)(*args)
    w = np.asarray(view.workers)[out_job[:k]]
    return [Start(int(out_job[i]), int(out_dev[i]), Placement(out_nodes[i, : w[i]], out_gpus[i, : w[i]]))
            for i in range(k)]


def admit_pairs(view: View, cap: CapacityModel, pairs: np.ndarray, q: np.ndarray, p: np.ndarray,
                free: np.ndarray) -> list[Start]:
    """Start ``(job, device type)`` pairs in order while machines are free (Numba:
    :func:`baselines.common.kernels.pairs_admit_nb`, which says how). ``cap`` and ``free`` are
    updated."""
    if not isinstance(view, View):  # a duck-typed view (the tests' reference simulator)
        out: list[Start] = []
        started: set[int] = set()
        for f in np.asarray(pairs).tolist():
            k, d = divmod(f, p.shape[1])
            if k in started or free[d] <= 0 or not np.isfinite(p[k, d]):
                continue
            pl = cap.place(int(q[k]), d)
            if pl is not None:
                out.append(Start(int(q[k]), d, pl))
                started.add(k)
                free[d] -= int(view.workers[q[k]])
                if not free.any():
                    break
        return out
    return run_start_kernel(view, cap, pairs_admit_nb, len(pairs), np.ascontiguousarray(pairs, dtype=np.int64),
                            p.shape[1], np.ascontiguousarray(q, dtype=np.int64), np.ascontiguousarray(p),
                            free, view.workers)


@dataclass
class MachinePool:
    """Machines of the cluster at one decision point.

    Attributes:
        dev: int64[m], device index of each machine.
        omega: float64[m], time at which each machine frees (``now`` if idle).
        now: Current time.
    """

    dev: np.ndarray
    omega: np.ndarray
    now: float

    @classmethod
    def from_view(cls, view: View, cap: CapacityModel | None = None) -> MachinePool:
        """Busy machines from the running jobs' workers, idle ones from free capacity.

        A running job's machine frees at ``now + remaining / rate`` (its expected
        end; restart delays are not visible to schedulers and are ignored).
        """
        now = view.now
        r = np.asarray(view.running)
        rate = np.asarray(view.rate, dtype=np.float64)[r]
        with np.errstate(divide="ignore", invalid="ignore"):
            end = np.where(rate > 0, now + np.asarray(view.remaining)[r] / np.where(rate > 0, rate, 1.0),
                           now)
        w = np.asarray(view.workers, dtype=np.int64)[r]
        nodes = np.asarray(view.worker_node)[r]
        mask = np.arange(nodes.shape[1])[None, :] < w[:, None] if len(r) else np.zeros((0, 0), bool)
        busy_dev = np.asarray(view.node_device, dtype=np.int64)[nodes[mask]] if len(r) else \
            np.zeros(0, dtype=np.int64)
        free = slots_per_device(view, free=True, cap=cap)
        devs = np.concatenate([busy_dev, np.repeat(np.arange(len(free)), free)]).astype(np.int64)
        omegas = np.concatenate([np.repeat(end, w), np.full(int(free.sum()), now)])
        return cls(devs, omegas.astype(np.float64), now)

    @classmethod
    def at_decision(cls, view: View) -> tuple[np.ndarray, CapacityModel, MachinePool] | None:
        """``(queue, scratch capacity, pool)`` at a decision point, or None when nothing can
        start (no waiting job, or no idle machine)."""
        q = np.asarray(view.queue)
        if len(q) == 0:
            return None
        cap = view.capacity()
        pool = cls.from_view(view, cap)
        if not pool.idle.any():
            return None
        return q, cap, pool

    def __len__(self) -> int:
        return len(self.dev)

    @property
    def idle(self) -> np.ndarray:
        """bool[m], machines free now."""
        return self.omega <= self.now

    def occupy(self, dev: int, count: int, until: float, first: int | None = None) -> list[int]:
        """Mark ``count`` idle machines of ``dev`` busy until ``until`` (``first`` among them)."""
        idle = np.flatnonzero(self.idle & (self.dev == dev)).tolist()
        chosen: list[int] = []
        if first is not None and first in idle:
            chosen.append(first)
            idle.remove(first)
        chosen.extend(idle[: max(0, count - len(chosen))])
        self.omega[chosen] = until
        return chosen


def match_first_jobs(p: np.ndarray, arrival: np.ndarray, pool: MachinePool
                     ) -> tuple[np.ndarray, float]:
    """AlloX's min-cost matching (sec. 3.1-3.2): the job each machine runs first.

    The cost of job ``j`` as the ``k``-th *last* job on machine ``i`` is
    ``Q(j, (i, k)) = k * P(j, i) + omega_i - a_j``, i.e. ``Q = [P, 2P, ..., nP] + [D, ..., D]``
    solved with :func:`scipy.optimize.linear_sum_assignment`. The first job on machine
    ``i`` is the one matched with the largest ``k``.

    Columns are pruned without losing any optimum. Moving the first job of a machine B
    with ``k_B`` jobs to the front of a machine A with ``k_A`` jobs changes the cost by
    ``(k_A + 1 - k_B) p + omega_A - omega_B``, so in an optimal matching ``k_A >= k_B`` if
    A frees strictly earlier than B, and ``k_A >= k_B - 1`` if at the same time. Among the
    machines of one device type sorted by ``omega``, the ``r``-th, with ``s`` machines
    freeing strictly earlier and ``e = r - 1 - s`` at the same time, thus holds at most
    ``floor((n_t + e) / r)`` jobs (0 once ``s >= n_t``: only the ``n_t`` earliest machines
    can be used), ``n_t`` being the number of jobs that can run on that type; each of
    ``c`` idle, identical machines holds at most ``ceil(n_t / c)``.

    Args:
        p: float64[n, C], processing time of each job on each device type (inf = cannot run).
        arrival: float64[n], arrival times (the ``-a_j`` of ``D``).
        pool: The machines.

    Returns:
        ``(first, cost)``: int64[m] index (row of ``p``) of the job each machine runs
        first, -1 if none; and the optimal total expected completion time of the matching.
    """
    n = p.shape[0]
    m = len(pool)
    first = np.full(m, -1, dtype=np.int64)
    if n == 0 or m == 0:
        return first, 0.0
    order = np.lexsort((pool.omega, pool.dev))  # machines by device type, then omega
    dev_s = pool.dev[order]
    idle_s = pool.omega[order] <= pool.now
    rank = np.arange(1, m + 1) - np.searchsorted(dev_s, dev_s, side="left")
    n_dev = max(int(pool.dev.max()) + 1, p.shape[1])
    c0 = np.bincount(dev_s[idle_s], minlength=n_dev)[dev_s]
    n_t = np.zeros(n_dev, dtype=np.int64)
    n_t[: p.shape[1]] = np.isfinite(p).sum(axis=0)
    n_t = n_t[dev_s]
    # s: machines of the type that free strictly earlier; e = rank - 1 - s free at the same time
    om_s = pool.omega[order]
    new_run = np.ones(m, dtype=bool)
    new_run[1:] = (dev_s[1:] != dev_s[:-1]) | (om_s[1:] != om_s[:-1])
    first_eq = np.maximum.accumulate(np.where(new_run, np.arange(m), 0))
    s = first_eq - (np.arange(m) + 1 - rank)
    e = rank - 1 - s
    kmax = np.where(idle_s & (c0 > 0), -(-n_t // np.maximum(c0, 1)), (n_t + e) // rank)
    total = int(kmax.sum())
    if total == 0:
        return first, 0.0
    cm = np.repeat(order, kmax)
    ck = (np.arange(total) - np.repeat(np.cumsum(kmax) - kmax, kmax) + 1).astype(np.float64)
    pc = p[:, pool.dev[cm]]
    with np.errstate(invalid="ignore"):
        q = pc * ck + (pool.omega[cm][None, :] - arrival[:, None])
    from scipy.optimize import (
        linear_sum_assignment,  # imported on use: scipy.optimize takes 0.2 s
    )

    rows, cols = linear_sum_assignment(q)
    cost = float(q[rows, cols].sum())
    mach, k = cm[cols], ck[cols]
    srt = np.lexsort((-k, mach))  # per machine, largest k (= runs first) first
    mach, rows = mach[srt], rows[srt]
    lead = np.ones(len(mach), dtype=bool)
    lead[1:] = mach[1:] != mach[:-1]
    first[mach[lead]] = rows[lead]
    return first, cost


def type_means(pool: MachinePool, n_dev: int) -> list[tuple[np.ndarray, np.ndarray, float]]:
    """Per device type ``d < n_dev``: ``(r, mean, w0)``, ``mean[k]`` being the mean ``omega`` of
    the ``r[k]`` machines of the type that free first (``r`` = 1, 2, 4, ..., all of them),
    and ``w0`` the least ``omega`` of its idle machines (inf if none): what
    :func:`no_first_job` reads of the pool."""
    out = []
    for d in range(n_dev):
        mine = pool.dev == d
        om = np.sort(pool.omega[mine])
        m = len(om)
        idle = om[om <= pool.now]
        w0 = float(idle[0]) if len(idle) else np.inf
        if m == 0:
            out.append((np.zeros(0, dtype=np.int64), np.zeros(0), w0))
            continue
        r = np.unique(np.minimum(2 ** np.arange(int(np.log2(m)) + 2), m))
        out.append((r, np.cumsum(om)[r - 1] / r, w0))
    return out


def no_first_job(p: np.ndarray, pool: MachinePool, t: int,
                 means: list[tuple[np.ndarray, np.ndarray, float]] | None = None) -> bool:
    """True if no optimal matching of :func:`match_first_jobs` (on ``p``, any arrivals) puts
    a job first on an idle machine of device type ``t``: a proof, not a guess (False
    means "not shown", and the matching must be solved).

    Exchange argument: say job ``j`` is first, at position ``K >= 1``, on idle machine
    ``i`` of type ``t`` (cost ``K p_jt + omega_i``, arrival terms cancel). Moving it to the
    front of a machine ``g`` of another type ``d`` that holds ``k_g`` jobs costs
    ``(k_g + 1) p_jd + omega_g``, and the others keep their costs. Any ``r`` machines of
    type ``d`` hold at most ``n - 1`` jobs together (``n`` rows; ``j`` is on ``i``), so the best
    of the ``r`` whose ``omega`` are least costs at most ``p_jd (n - 1 + r) / r`` plus the mean
    of their ``omega`` (a minimum is at most the mean). If that is below ``p_jt + min
    omega`` of the idle machines of type ``t`` for every job that can run on ``t``, every
    such placement can be strictly improved, so no optimum has one (the column
    pruning of :func:`match_first_jobs` keeps every optimum, so neither has the pruned
    one). A margin far above the solver's rounding keeps near-ties out. ``means``:
    :func:`type_means` of ``pool`` (computed here when not given).
    """
    n = p.shape[0]
    pt = p[:, t] if t < p.shape[1] else np.full(n, np.inf)
    cand = np.isfinite(pt)
    if not cand.any():
        return True  # no job can run on the type: it gets no column
    if means is None:
        means = type_means(pool, p.shape[1])
    w0 = means[t][2]
    if not np.isfinite(w0):
        return False  # no idle machine of the type
    pc, pt = p[cand], pt[cand]
    best = np.full(len(pt), np.inf)
    for d, (r, mean, _) in enumerate(means):
        if d == t or len(r) == 0:
            continue
        pd = pc[:, d]
        f = np.isfinite(pd)
        if f.any():
            b = (pd[f, None] * ((n - 1 + r) / r)[None, :] + mean[None, :]).min(axis=1)
            best[f] = np.minimum(best[f], b)
    # strictly below by a margin: (costs ~ now + n p) x (n + 1) x 1e-9, far above rounding
    margin = EPS * (n + 1) * (abs(w0) + pt + np.where(np.isfinite(best), np.abs(best), 0.0) + 1.0)
    return bool(np.all(best + margin < pt + w0))
