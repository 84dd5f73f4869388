"""Shares and progress of the AlloX family: DRF share models and AlloX's user progress.

* :func:`job_shares`: dominant share of each job's configuration on each device type;
* :class:`ShareModel` and its two forms: :class:`DominantShare` (DRF over each
  device type's slots and memory) and :class:`PooledShare` (DRFA: device types
  converted to CPU-slot equivalents by an average speedup);
* :class:`AlloXProgress`: per-user progress (sec. 3.3.2), and
  :func:`allox_progress_timeline`, the paper's fairness metric over a run;
* :func:`ceil_users`: how many users a fairness knob ``alpha`` selects.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

import numpy as np

from baselines.allox.machines import slots_per_device
from hetgym.sim.view import View

if TYPE_CHECKING:  # pragma: no cover
    from hetgym.metrics import Result
    from hetgym.specs import Scenario

__all__ = [
    "AlloXProgress",
    "DominantShare",
    "PooledShare",
    "ShareModel",
    "allox_progress_timeline",
    "ceil_users",
    "job_shares",
]


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


def allox_progress_timeline(result: Result, scenario: Scenario, active_only: bool = True,
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
    from hetgym.sim import Simulator

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
