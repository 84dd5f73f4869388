"""Typed parts of the AlloX family.

AlloX (Le et al., EuroSys'20) reasons about *machines*: one machine is one slot
of a device type, i.e. one GPU of a GPU type, or one CPU slot of a CPU node
(``SimOptions.cpu_slot_cores`` cores, or the jobs' median ``cpus`` when that
option is unset). The parts here are:

* :class:`MachinePool`: the machines of the cluster at a decision point, each
  with its device type and the time ``omega`` at which it frees (``now`` if idle;
  a busy machine frees when the job holding it is expected to end).
* :func:`match_first_jobs`: AlloX's min-cost bipartite matching (sec. 3.1-3.2):
  which job each machine should run first.
* :class:`ShareModel` and its two forms: :class:`DominantShare` (DRF over each
  device type's slots and memory) and :class:`PooledShare` (DRFA: device types
  converted to CPU-slot equivalents by an average speedup).
* :class:`AlloXProgress`: per-user progress (sec. 3.3.2).

Placement stays the simulator's (``CapacityModel.place``); these parts only
choose which job goes to which device type, and when.
"""

from __future__ import annotations

import math
import weakref
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

import numpy as np

from baselines.kernels import pairs_admit_nb
from hetgym.sim.dispatch import entry
from hetgym.decisions import Placement, Start
from hetgym.sim.view import CapacityModel, View

if TYPE_CHECKING:  # pragma: no cover
    from hetgym.metrics import Result
    from hetgym.specs import Scenario

__all__ = [
    "slot_cores",
    "slots_per_device",
    "may_fit",
    "MachinePool",
    "admit_pairs",
    "run_start_kernel",
    "match_first_jobs",
    "job_shares",
    "ShareModel",
    "DominantShare",
    "PooledShare",
    "AlloXProgress",
    "allox_progress_timeline",
    "ceil_users",
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


_MEDIANS: "weakref.WeakKeyDictionary[object, tuple[float, float]]" = weakref.WeakKeyDictionary()


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
                    per = np.minimum(per, np.floor(n_cpu / s + 1e-9))
                if not np.isinf(sm):
                    per = np.minimum(per, np.floor(n_mem / sm + 1e-9))
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
    """Call a Numba kernel of :mod:`baselines.kernels` that places up to ``n`` jobs on
    ``cap``: its arguments are ``lead``, the job arrays it needs (``cpus_need``,
    ``mem``; ``workers`` first for :func:`~baselines.kernels.pairs_admit_nb`), the
    placement policy, the node arrays, ``cap``'s state, scratch and the output arrays.
    Returns the starts it wrote."""
    sim = view.simulator
    out_nodes = np.empty((n, view.worker_node.shape[1]), dtype=np.int64)
    out_gpus = np.empty_like(out_nodes)
    out_job = np.empty(n, dtype=np.int64)
    out_dev = np.empty(n, dtype=np.int64)
    args = (*lead, view.cpus_need, view.mem, int(cap.policy), sim.nodes, cap.ns,
            sim.state.run.scr_i, out_job, out_dev, out_nodes, out_gpus)
    k = entry(kernel, *args)(*args)
    w = np.asarray(view.workers)[out_job[:k]]
    return [Start(int(out_job[i]), int(out_dev[i]), Placement(out_nodes[i, : w[i]], out_gpus[i, : w[i]]))
            for i in range(k)]


def admit_pairs(view: View, cap: CapacityModel, pairs: np.ndarray, q: np.ndarray, p: np.ndarray,
                free: np.ndarray) -> list[Start]:
    """Start ``(job, device type)`` pairs in order while machines are free (Numba:
    :func:`baselines.kernels.pairs_admit_nb`, which says how). ``cap`` and ``free`` are
    updated."""
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
    def from_view(cls, view: View, cap: CapacityModel | None = None) -> "MachinePool":
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

    Columns are pruned without losing any optimum: among machines of one device
    type sorted by ``omega``, the ``r``-th can hold at most ``ceil(n_t / r)`` jobs in an
    optimal matching (and each of ``c`` idle, identical machines at most
    ``ceil(n_t / c)``), ``n_t`` being the number of jobs that can run on that type.
    (Moving the first job of a machine with ``k_B >= k_A + 2`` jobs to the front of a
    machine that frees no later and holds ``k_A`` strictly lowers the cost.)

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
    kmax = np.where(idle_s & (c0 > 0), -(-n_t // np.maximum(c0, 1)), -(-n_t // rank))
    total = int(kmax.sum())
    if total == 0:
        return first, 0.0
    cm = np.repeat(order, kmax)
    ck = (np.arange(total) - np.repeat(np.cumsum(kmax) - kmax, kmax) + 1).astype(np.float64)
    pc = p[:, pool.dev[cm]]
    with np.errstate(invalid="ignore"):
        q = pc * ck + (pool.omega[cm][None, :] - arrival[:, None])
    from scipy.optimize import linear_sum_assignment  # imported on use: scipy.optimize takes 0.2 s

    rows, cols = linear_sum_assignment(q)
    cost = float(q[rows, cols].sum())
    mach, k = cm[cols], ck[cols]
    srt = np.lexsort((-k, mach))  # per machine, largest k (= runs first) first
    mach, rows = mach[srt], rows[srt]
    lead = np.ones(len(mach), dtype=bool)
    lead[1:] = mach[1:] != mach[:-1]
    first[mach[lead]] = rows[lead]
    return first, cost


def job_shares(view: View) -> np.ndarray:
    """float64[J, C], dominant share of each job's configuration on each device type.

    GPU type ``t``: ``max(W / G_t, W * mem / M)``; cpu: ``max(W * cores / C, W * mem / M)``
    with ``G_t`` the GPUs of type ``t``, ``C`` the cores of the CPU nodes and ``M`` the
    memory of the whole cluster (sec. 3.3.2). The host cores a GPU worker takes are left
    out (AlloX reserves one core per GPU job, sec. 4.4). 0 where the job cannot run.
    """
    nd = np.asarray(view.node_device)
    mem_total = float(np.asarray(view.node_mem).sum()) or 1.0
    w = np.asarray(view.workers, dtype=np.float64)
    out = np.zeros((view.n_jobs, len(view.devices)))
    for d in range(len(view.devices)):
        m = nd == d
        if view.dev_is_cpu[d]:
            capd = float(np.asarray(view.node_cpus)[m].sum()) or 1.0
            use = w * np.asarray(view.cpus_need[:, d]) / capd
        else:
            capd = float(np.asarray(view.node_gpus)[m].sum()) or 1.0
            use = w / capd
        out[:, d] = np.maximum(use, w * np.asarray(view.mem) / mem_total)
    return np.where(np.asarray(view.tput) > 0, out, 0.0)


class ShareModel(Protocol):
    """Per-user usage of the resources a DRF variant counts, and the dominant share."""

    def reset(self, view: View) -> None:
        """Precompute static capacities."""

    def usage(self, view: View) -> np.ndarray:
        """float64[U, R], resources held by each user's running jobs."""

    def demand(self, view: View, job: int, dev: int) -> np.ndarray:
        """float64[R], what ``job`` takes on device type ``dev``."""

    def demands(self, view: View, jobs: np.ndarray, devs: np.ndarray) -> np.ndarray:
        """float64[len(jobs), R], :meth:`demand` of each job on its device type."""

    def dominant(self, usage: np.ndarray) -> np.ndarray:
        """Dominant share of each row of ``usage``."""


@dataclass
class DominantShare:
    """DRF over one resource per device type (its machines) plus memory.

    A worker on a GPU type takes one of its GPUs; a worker on cpu takes one CPU
    slot; every worker takes its memory. Capacities: machines per device type and
    the cluster's memory.
    """

    def reset(self, view: View) -> None:
        self._cap = np.append(slots_per_device(view).astype(np.float64),
                              float(np.asarray(view.node_mem).sum())).clip(min=1e-12)
        self._users = int(np.asarray(view.user).max()) + 1

    def demand(self, view: View, job: int, dev: int) -> np.ndarray:
        out = np.zeros(len(self._cap))
        w = float(view.workers[job])
        out[dev] = w
        out[-1] = w * float(view.mem[job])
        return out

    def demands(self, view: View, jobs: np.ndarray, devs: np.ndarray) -> np.ndarray:
        """float64[len(jobs), R]: :meth:`demand` of each job on its device type."""
        w = np.asarray(view.workers, dtype=np.float64)[jobs]
        out = np.zeros((len(jobs), len(self._cap)))
        out[np.arange(len(jobs)), devs] = w
        out[:, -1] = w * np.asarray(view.mem, dtype=np.float64)[jobs]
        return out

    def usage(self, view: View) -> np.ndarray:
        """Sum of the running jobs' demands per user (in start order, as one by one)."""
        u = np.zeros((self._users, len(self._cap)))
        r = np.asarray(view.running)
        devs = np.asarray(view.device)[r]
        r, devs = r[devs >= 0], devs[devs >= 0]
        np.add.at(u, np.asarray(view.user)[r], self.demands(view, r, devs))
        return u

    def dominant(self, usage: np.ndarray) -> np.ndarray:
        return (usage / self._cap).max(axis=-1)


@dataclass
class PooledShare(DominantShare):
    """DRFA: device types pooled into CPU-slot equivalents by an average speedup.

    A machine of type ``t`` counts as ``s_t`` CPU slots, ``s_t`` being the average
    over jobs of ``p_cpu / p_t`` (the paper's "some average speedup rate", sec. 5.1.1),
    so that the problem becomes plain two-resource DRF (compute, memory).

    Attributes:
        speedup: Fixed GPU/CPU speedup for every GPU type; ``None`` = the mean over
            all jobs of the workload (the paper notes this needs an oracle, sec. 5.3.1).
    """

    speedup: float | None = None

    def reset(self, view: View) -> None:
        jobs = np.arange(view.n_jobs)
        dur = view.durations(jobs)
        c = len(view.devices)
        ref = view.devices.index("cpu") if "cpu" in view.devices else 0
        s = np.ones(c)
        for d in range(c):
            if d == ref:
                continue
            if self.speedup is not None:
                s[d] = float(self.speedup)
                continue
            ok = np.isfinite(dur[:, ref]) & np.isfinite(dur[:, d])
            s[d] = float(np.mean(dur[ok, ref] / dur[ok, d])) if ok.any() else 1.0
        self.factor = s
        slots = slots_per_device(view).astype(np.float64)
        self._cap = np.array([float((slots * s).sum()), float(np.asarray(view.node_mem).sum())]
                             ).clip(min=1e-12)
        self._users = int(np.asarray(view.user).max()) + 1

    def demand(self, view: View, job: int, dev: int) -> np.ndarray:
        w = float(view.workers[job])
        return np.array([w * self.factor[dev], w * float(view.mem[job])])

    def demands(self, view: View, jobs: np.ndarray, devs: np.ndarray) -> np.ndarray:
        w = np.asarray(view.workers, dtype=np.float64)[jobs]
        return np.stack([w * self.factor[devs], w * np.asarray(view.mem, dtype=np.float64)[jobs]],
                        axis=1)


@dataclass
class AlloXProgress:
    """AlloX's per-user progress (sec. 3.3.2).

    A running job's value is the dominant share of its *favoured* configuration
    (shortest processing time), discounted by ``p_fav / p_actual`` when it runs on
    another device type; a user's progress is the sum of the values of her
    running jobs.
    """

    def reset(self, view: View) -> None:
        dur = view.durations(np.arange(view.n_jobs))
        fav = np.argmin(dur, axis=1)
        share = job_shares(view)
        self.fav_share = share[np.arange(view.n_jobs), fav]
        with np.errstate(invalid="ignore", divide="ignore"):
            self.discount = np.where(np.isfinite(dur), dur.min(axis=1, keepdims=True) / dur, 0.0)
        self.users = int(np.asarray(view.user).max()) + 1

    def value(self, job: int, dev: int) -> float:
        """Value of ``job`` running on device type ``dev``."""
        return float(self.fav_share[job] * self.discount[job, dev])

    def of(self, view: View) -> np.ndarray:
        """float64[U], progress of every user now."""
        out = np.zeros(self.users)
        r = np.asarray(view.running)
        if len(r):
            dev = np.asarray(view.device)[r]
            ok = dev >= 0
            np.add.at(out, np.asarray(view.user)[r][ok],
                      self.fav_share[r][ok] * self.discount[r[ok], dev[ok]])
        return out


def allox_progress_timeline(result: "Result", scenario: "Scenario", active_only: bool = True,
                            until: str = "arrivals") -> tuple[float, np.ndarray]:
    """Time-averaged std over users of AlloX progress, from a run's segments.

    A user's progress at time ``t`` is the sum of the values of her jobs running at
    ``t`` (:class:`AlloXProgress`); the paper's fairness metric is its standard deviation
    across users (sec. 5.1, Metrics).

    Args:
        result: A :class:`hetgym.Result` (its ``jobs`` and ``segments``).
        scenario: The scenario it ran.
        active_only: Take the std over the users that have a job in the system
            (arrived, not finished) at ``t`` only; a user with nothing to run is not
            treated unfairly. Instants with fewer than two such users count as 0.
        until: Average over ``[0, last arrival]`` (``"arrivals"``: the same window for
            every scheduler) or over the whole run (``"end"``).

    Returns:
        ``(mean_std, progress)``: the time average of the std across users, and the
        ``(events, U)`` progress after each event.
    """
    from hetgym.sim.engine import Simulator

    view = Simulator(scenario).view
    prog = AlloXProgress()
    prog.reset(view)
    users = np.asarray(view.user)
    ev: list[tuple[float, int, int, float]] = []  # time, kind (0 leave, 1 join), user, value
    for job, start, end, dev, _node in result.segments:
        if dev < 0 or end <= start:
            continue
        v = prog.value(job, dev)
        ev.append((start, 1, int(users[job]), v))
        ev.append((end, 0, int(users[job]), -v))
    jobs = result.jobs
    fin = jobs["finished"].to_numpy()
    arr = np.asarray(view.arrival)
    ends = jobs["end"].to_numpy()
    for j in range(len(arr)):
        ev.append((float(arr[j]), 1, int(users[j]), np.nan))
        ev.append((float(ends[j]) if fin[j] else np.inf, 0, int(users[j]), np.nan))
    ev = [e for e in ev if np.isfinite(e[0])]
    if not ev:
        return 0.0, np.zeros((0, prog.users))
    ev.sort(key=lambda e: (e[0], e[1]))
    horizon = float(arr.max()) if until == "arrivals" else np.inf
    cur = np.zeros(prog.users)
    active = np.zeros(prog.users, dtype=np.int64)
    rows, total, area, last = [], 0.0, 0.0, ev[0][0]
    for t, kind, u, v in ev:
        if t > last and last < horizon:
            mask = active > 0 if active_only else np.ones(prog.users, dtype=bool)
            sd = float(cur[mask].std()) if mask.sum() >= 2 else 0.0
            dt = min(t, horizon) - last
            area += sd * dt
            total += dt
            last = t
        if np.isnan(v):
            active[u] += 1 if kind == 1 else -1
        else:
            cur[u] += v
        rows.append(cur.copy())
    return (area / total if total > 0 else 0.0), np.asarray(rows)


def ceil_users(alpha: float, n_users: int) -> int:
    """``ceil(alpha * n)`` users, at least one."""
    return max(1, int(math.ceil(alpha * n_users - 1e-12)))
