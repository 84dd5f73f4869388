"""The AlloX family (Le, Sun, Chowdhury, Liu; EuroSys'20): AlloX and its baselines.

Registered in ``BASELINES`` (and so in ``baselines.names()``):

============ ============================================= ==========================
name         what                                          paper section
============ ============================================= ==========================
``allox``    min-cost matching + fairness knob alpha       3.1, 3.2, 3.3.3, 4.4
``allox+``   shortest first across devices, timeouts first 4.4, 5.1.1
``es``       equal static share, SJF per device type       5.1.1 (``order="fcfs"``: 1)
``drff``     online DRF, FCFS within a user                5.1.1
``drfs``     online DRF, SJF within a user                 5.1.1
``drfa``     DRF over GPU->CPU pooled compute, SJF         5.1.1
``bf``       best fit: every job on its fastest device     2.2
``jsq+``     join the queue with the earliest completion   2.2
``sjf+``     one SJF queue per device type                 2.2
============ ============================================= ==========================

``srpt`` (the paper's preemptive lower bound) is :class:`baselines.classic.schedulers.SRPT`.
All schedulers here are non-preemptive. A *machine* is one slot of a device type
(a GPU, or a CPU slot; see :mod:`baselines.allox.machines`). A gang job of ``W``
workers counts as one job whose processing time is its gang duration; it starts
only when ``W`` machines of the chosen type are free at once and then takes them
all (the paper has no distributed jobs, sec. 5.1).

Modules: this one holds AlloX and the registry; :mod:`baselines.allox.plus` AlloX+;
:mod:`baselines.allox.naive` SJF+, JSQ+ and BF; :mod:`baselines.allox.drf` ES and the DRF
variants; :mod:`baselines.allox.machines` and :mod:`baselines.allox.shares` the parts.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from baselines.allox.machines import (
    MachinePool,
    match_first_jobs,
    no_first_job,
    type_means,
)
from baselines.allox.naive import BF, JSQPlus, SJFPlus
from baselines.allox.plus import AlloXPlus
from baselines.allox.shares import AlloXProgress, ceil_users
from baselines.allox.drf import DRFA, DRFF, DRFS, EqualShare
from baselines.common.kernels import any_start_nb
from hetgym.decisions import Decision, SchedulerBase, Start
from hetgym.sim.fastpath import entry
from hetgym.sim.view import CapacityModel, View

__all__ = ["BASELINES", "BF", "AlloX", "AlloXPlus", "JSQPlus", "SJFPlus"]

#: Rows from which AlloX tries :func:`~baselines.allox.machines.no_first_job` before solving
#: a matching (below, solving costs about as much as the proof: 0.5-0.8 ms).
_PROOF_ROWS = 30


@dataclass
class AlloX(SchedulerBase):
    """AlloX: min-cost bipartite matching with dynamic fairness (sec. 3, Algorithm 2).

    At each decision point, for each idle machine ``i`` in turn (slowest device
    types first, by mean speed over the waiting jobs; the paper leaves open the order
    of machines that free at the same instant):

    1. rank the users that have waiting jobs by progress (:class:`AlloXProgress`,
       sec. 3.3.2; ties to the lower user id) and keep the ``ceil(alpha * U)`` lowest,
       ``U`` being the number of users of the workload;
    2. build ``P`` (processing time of each of their waiting jobs on each machine) and
       ``Q = [P, 2P, ..., kP] + [D, ..., D]`` with ``D(j, i) = omega_i - a_j`` (``omega_i``:
       when machine ``i`` frees; ``now`` if idle), solve the min-cost matching with
       :func:`scipy.optimize.linear_sum_assignment` (:func:`match_first_jobs`);
    3. start the job matched *first* on machine ``i`` (largest ``k``); update the
       user's progress and ``omega_i``.

    If no job is matched first on the idle machine (the selected users have no
    job for it, or their jobs would rather wait for a busy machine), alpha is raised
    temporarily (sec. 4.4, "Low utilization with small alpha"): the matching is
    solved again with the waiting jobs of *every* user, and the machine takes the job
    matched first on it there, if any. (The paper does not say by how much alpha is
    raised; going straight to 1 costs one extra matching, which stays valid across
    the idle machines of a decision point, where stepping up user by user would
    cost one matching per step and machine.) Otherwise the machine stays idle until
    the next event.

    A matching stays optimal for the remaining jobs after its first job on a
    machine starts, so it is reused until the set of selected users changes (then
    re-solved), which makes one decision point cost one matching at ``alpha = 1``.
    A matching is not solved for an idle machine when an exchange argument shows that
    it puts no job first on that machine's type
    (:func:`~baselines.allox.machines.no_first_job`, tried for matchings of 30 rows or more
    on every type but the fastest, e.g. idle CPUs that every job would rather wait for a GPU than take); it is solved
    later in the decision point if another machine needs it before anything changes, on
    the same inputs, so the starts are the same. The idle machines that the known
    matchings leave without a job are skipped in one step, not visited one by one.
    Once no waiting job can start on any idle machine (its type, free machines and the
    placement kernel's room), the remaining idle machines are not visited: capacity
    only shrinks within a decision point, so their matchings could only pick jobs
    that do not fit (same starts, fewer matchings).

    Simplifications: processing times are the simulator's exact estimates (no
    estimation error or profiling overhead, sec. 4.1, 5.3); a gang job is one job
    and starts only when ``W`` machines of the type are free (module docstring).

    Attributes:
        alpha: Fairness knob in [0, 1]: share of users considered (1 = no fairness).
        raise_alpha: Temporarily raise alpha (to 1) rather than leave a machine idle
            (sec. 4.4).
        window: Consider at most this many waiting jobs per user (oldest first);
            ``None`` = all (the paper's algorithm).
    """

    alpha: float = 0.1
    raise_alpha: bool = True
    window: int | None = None
    round_length: float | None = None
    solves: int = field(default=0, repr=False)

    def __post_init__(self) -> None:
        if not 0.0 <= self.alpha <= 1.0:
            raise ValueError(f"AlloX: alpha must be in [0, 1], got {self.alpha}")

    def reset(self, view: View) -> None:
        """Precompute job values and the number of users."""
        self.progress = AlloXProgress()
        self.progress.reset(view)
        self.n_users = self.progress.users
        self.solves = 0

    def decide(self, view: View) -> list[Decision]:
        """Start the first job the matching puts on each idle machine."""
        got = MachinePool.at_decision(view)
        if got is None:
            return []
        q, cap, pool = got
        if self.window is not None:
            q = _window(view, q, self.window)
        p = view.durations(q)
        users = np.asarray(view.user)[q]
        arrival = np.asarray(view.arrival)[q]
        alive = np.ones(len(q), dtype=bool)
        prog = self.progress.of(view)
        step = ceil_users(self.alpha, self.n_users)
        fin = np.isfinite(p)
        speed = np.where(fin, 1.0 / np.where(fin, p, 1.0), 0.0).sum(axis=0) / np.maximum(fin.sum(axis=0), 1)
        type_order = np.argsort(speed, kind="stable")
        rank = np.empty(len(type_order), dtype=np.int64)
        rank[type_order] = np.arange(len(type_order))
        idle = np.flatnonzero(pool.idle)
        idle = idle[np.argsort(rank[pool.dev[idle]], kind="stable")]
        cache: dict[tuple[int, ...], np.ndarray] = {}
        none_on: set[tuple[tuple[int, ...], int]] = set()  # (selection, type) shown to get no job
        means: list = []  # type_means(pool), until the pool changes
        selmask = np.zeros(self.n_users, dtype=bool)

        def first_on(sel: tuple[int, ...], i: int) -> int:
            if sel not in cache:
                t = int(pool.dev[i])
                if (sel, t) in none_on:
                    return -1
                selmask[:] = False
                selmask[list(sel)] = True
                rows = np.flatnonzero(alive & selmask[users])
                # tried where a matching costs more than the proof (about 30 rows), and on
                # every type but the fastest (where it rarely holds)
                if len(rows) >= _PROOF_ROWS and rank[t] < len(rank) - 1:
                    if not means:
                        means.extend(type_means(pool, p.shape[1]))
                    proven = self._no_first(p[rows], pool, t, means)
                else:
                    proven = False
                if proven:
                    # the matching puts no job first on this type's idle machines: not
                    # solved now; if another machine needs it before anything changes, it
                    # is solved then, on the same inputs
                    none_on.add((sel, t))
                    return -1
                first, _ = match_first_jobs(p[rows], arrival[rows], pool)
                self.solves += 1
                cache[sel] = np.where(first >= 0, rows[np.maximum(first, 0)], -1)
            return int(cache[sel][i])

        out: list[Decision] = []
        n_dev = p.shape[1]
        changed = True
        ranked_now = False  # ``ranked``, ``sel`` and ``sel_all`` hold for ``alive`` and ``prog``
        pos = 0
        while pos < len(idle):
            i = int(idle[pos])
            pos += 1
            if pool.omega[i] > pool.now:
                continue  # taken by a gang started at this decision point
            if changed:
                # once no waiting job can start on any idle machine, the machines left
                # could only find jobs that do not fit (capacity only shrinks here): stop
                free = np.bincount(pool.dev[pool.idle], minlength=n_dev)[:n_dev]
                if not self._any_start(view, cap, q, alive, p, free):
                    break
                changed = False
            if not ranked_now:  # they change only with ``alive`` or ``prog`` (below)
                waiting = np.unique(users[alive])
                if len(waiting) == 0:
                    break
                ranked = waiting[np.lexsort((waiting, prog[waiting]))]
                sel = tuple(sorted(ranked[:step].tolist()))
                sel_all = tuple(sorted(ranked.tolist()))
                ranked_now = True
            used = sel
            sels = (sel, sel_all) if self.raise_alpha and len(ranked) > step else (sel,)
            j = first_on(sel, i)
            if j < 0 and len(sels) > 1:
                used = sel_all
                j = first_on(sel_all, i)
            if j < 0:
                # nothing changed: skip the idle machines that both matchings (solved, or
                # shown to have no job on the machine's type) leave without a job
                pos = _next_with_job(idle, pos, pool.dev, sels, cache, none_on)
                continue
            job, d = int(q[j]), int(pool.dev[i])
            w = int(view.workers[job])
            alive[j] = False
            pl = cap.place(job, d) if w <= int((pool.idle & (pool.dev == d)).sum()) else None
            changed = True
            ranked_now = False
            none_on.clear()
            means.clear()
            if pl is None:
                cache.clear()  # the matching assumed this job would run now
                continue
            out.append(Start(job, d, pl))
            pool.occupy(d, w, pool.now + float(p[j, d]), first=i)
            prog[int(users[j])] += self.progress.value(job, d)
            # the matching stays optimal for the rest only if nothing else changed
            keep = cache[used]
            cache.clear()
            if w == 1:
                cache[used] = keep
        return out


    @staticmethod
    def _no_first(p: np.ndarray, pool: MachinePool, t: int, means: list) -> bool:
        """Whether the matching of these rows surely puts no job first on an idle machine of
        type ``t`` (:func:`~baselines.allox.machines.no_first_job`)."""
        return no_first_job(p, pool, t, means)

    @staticmethod
    def _any_start(view: View, cap: CapacityModel, q: np.ndarray, alive: np.ndarray, p: np.ndarray,
                   free: np.ndarray) -> bool:
        """Whether a waiting job still alive could start on the free machines
        (:func:`baselines.common.kernels.any_start_nb`; True for a duck-typed view)."""
        if not isinstance(view, View):
            return True
        args = (np.ascontiguousarray(q, dtype=np.int64), alive, np.ascontiguousarray(p),
                free.astype(np.int64), view.workers, view.cpus_need, view.mem, view.kernel.nodes,
                cap.ns)
        return bool(entry(any_start_nb, *args)(*args))


def _next_with_job(idle: np.ndarray, pos: int, dev: np.ndarray, sels: tuple, cache: dict,
                   none_on: set) -> int:
    """The first position ``>= pos`` of ``idle`` whose machine may get a job from one of the
    matchings of ``sels``: one of them puts a job first on it, or is neither solved
    (``cache``) nor shown to leave the machine's type without one (``none_on``)."""
    rest = idle[pos:]
    if len(rest) == 0:
        return pos
    may = np.zeros(len(rest), dtype=bool)
    types = dev[rest]
    for sel in sels:
        if sel in cache:
            may |= cache[sel][rest] >= 0
        else:
            shown = np.array([(sel, t) in none_on for t in range(int(types.max()) + 1)])
            may |= ~shown[types]
    nz = np.flatnonzero(may)
    return pos + (int(nz[0]) if len(nz) else len(rest))


def _window(view: View, q: np.ndarray, window: int) -> np.ndarray:
    """The ``window`` oldest waiting jobs of each user, in queue order."""
    users = np.asarray(view.user)[q]
    keep = np.zeros(len(q), dtype=bool)
    for u in np.unique(users).tolist():
        idx = np.flatnonzero(users == u)
        keep[idx[np.argsort(np.asarray(view.arrival)[q[idx]], kind="stable")[:window]]] = True
    return q[keep]


def _allox(alpha: float = AlloX.alpha, raise_alpha: bool = AlloX.raise_alpha,
           window: int | None = AlloX.window) -> AlloX:
    """AlloX with the parameters a user sets (defaults: the dataclass's, written once there)."""
    return AlloX(alpha=alpha, raise_alpha=raise_alpha, window=window)


def _es(order: str = "sjf") -> EqualShare:
    return EqualShare(order=order)  # type: ignore[arg-type]


BASELINES: dict[str, Callable[..., Any]] = {
    "allox": _allox,
    "allox+": AlloXPlus,
    "es": _es,
    "drff": DRFF,
    "drfs": DRFS,
    "drfa": DRFA,
    "bf": BF,
    "jsq+": JSQPlus,
    "sjf+": SJFPlus,
}
