"""Gavel (Narayanan et al., OSDI'20): policies over GPU types, run in rounds.

One scheduler, :class:`Gavel`, with Gavel's round mechanism
(``stanford-futuredata/gavel`` ``scheduler/scheduler.py``: ``add_job``,
``_update_priorities``, ``_reset_time_run_so_far``, ``_schedule_jobs_on_workers(_helper)``,
``_assign_workers_to_job``, ``_done_callback``, ``simulate``) and one of eight policies
(``scheduler/policies``; LPs in :mod:`baselines.gavel.lp`, FIFO in
:mod:`baselines.gavel.fifo`); docs/gavel.md, and docs/semantics.md *Rounds*.

At every round boundary ``t`` (length ``L``, default the scenario's 360 s):

1. Jobs that arrived since the last boundary join with ``tau_jk = L/2`` on every type
   (Gavel's "time received" prior); jobs that completed leave.
2. If the set of active jobs changed and (no reset yet at a time > 0, or
   ``t - t_reset >= min_reset_interval``, 1920 s): reset (``deficit_jk += X_jk (t -
   t_reset) - (tau_jk - L/2)``, ``tau_jk = L/2``, ``W_k = sum_j tau_jk``) and recompute
   the allocation ``X`` with the policy.
3. Priorities ``p_jk = X_jk / (tau_jk / W_k)`` (``X_jk * 1e9`` while ``W_k = 0``; 0 where
   ``X_jk = 0``, ``T_jk = 0`` or the job is not in ``X``).
4. Types in order (Perf policies: fastest first by the catalogue's ``relative_speed``,
   Gavel's fixed v100, p100, k80; the others: shuffled each round with ``view.rng``), per
   type the jobs sorted by ``(p, deficit, X)`` descending (ties: job index); walk the
   concatenation: skip a job already scheduled, with ``T_jk = 0``, with ``p_jk <= 0``
   under FIFO, or larger than the type's GPUs left; else schedule it there.
5. Placement (:mod:`baselines.gavel.place`): jobs keep last round's GPUs where they can,
   others take the first free GPUs server by server; changed placements are ``Move``\\ s
   (restart delay paid), running jobs left out are preempted.
6. During the round ``tau_jk`` and ``W_k`` grow by the time each job held its GPUs.

Departures from Gavel's mechanism (each measured or argued in docs/gavel.md):

* Rounds are multiples of ``L`` from t = 0 (hetgym's round clock). Gavel starts a round
  when the previous one's last job ends (``<= L`` because steps are whole numbers), and
  when nothing runs it jumps to the next arrival, so its rounds drift; here a job that
  arrives while the cluster is idle waits for the next multiple of ``L``.
* Progress is continuous (``remaining / rate``), not ``floor(T_jk L)`` steps a round.
* When a job set change cannot be acted on (reset interval not elapsed), new jobs are
  not in ``X``: as in Gavel they take GPUs in the walk but are not placed (the GPUs stay
  idle for the round), ``absent_jobs="idle"``. ``absent_jobs="run"`` places them (the
  reading hetgym proposes).
* Gavel forces a reset (``_last_reset_time = 0``) when the previous round ran nothing
  and every job has arrived, and then re-plans without letting time pass; here the
  re-plan happens at the next boundary, or at once when the plan of this boundary would
  run nothing on an idle cluster with every job arrived (an idle boundary at which the
  scheduler decides nothing ends the run as stalled, :func:`hetgym.simulate`).
* The scenario's preemption limit (``max_preemptions``; Gavel has none): a running job
  that may not be preempted any more keeps running where it is when the round leaves it
  out, or when its new placement cannot be had (its resources are taken before the
  others are placed); moves may still re-place it, and it is never the job preempted to
  break a cycle of moves (when every job of a cycle is at the limit, they all stay).
* Gavel has GPU workers only. hetgym's CPU nodes are one more worker type whose count
  is the number of worker slots (node cores over ``SimOptions.cpu_slot_cores``, else over
  the median cores per worker of the jobs that can run there); a placement there also
  checks each job's cores. A job that fits no type's nodes (``holdable``) has
  ``T_jk = 0`` there. In Perf policies the CPU type comes last.
* LPs solved by SciPy's HiGHS, by default with its interior-point method (a point inside
  the optimal face, as cvxpy returns Gavel), optionally at a vertex picked by a
  second-stage LP (``lp_solution="vertex"``, :mod:`baselines.gavel.lp`).
* Gavel's simulator pays no restart cost; hetgym pays ``SimOptions.restart_delay`` on a
  start after the first and on a ``Move`` (set it to 0 for Gavel's semantics).
* Jobs in a grace period keep their GPUs (Gavel has no grace periods); a cycle of moves
  is broken with one preemption (:func:`baselines.gavel.place.carry_out`).

Assumptions (docs/gavel.md): the Gavel Hadar compares with is ``gavel-las-perf`` with 360 s
rounds); weights are the job table's ``weight`` (Gavel's ``priority_weight``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from baselines.gavel import lp
from baselines.gavel.fifo import fifo_allocation
from baselines.gavel.place import assign_workers, carry_out, current, worker_counts
from baselines.common.rounds import RoundBased, round_length_of
from hetgym.decisions import Decision, Placement
from hetgym.devices import get_device
from hetgym.sim.codes import DONE, FUTURE, GRACE, RUNNING
from hetgym.sim.rules import below_limit, limit_code

__all__ = ["BASELINES", "POLICIES", "Gavel"]

#: policy name -> (Gavel class, heterogeneity-aware)
POLICIES: dict[str, tuple[str, bool]] = {
    "las": ("max_min_fairness.py::MaxMinFairnessPolicy", False),
    "las-perf": ("max_min_fairness.py::MaxMinFairnessPolicyWithPerf", True),
    "fifo": ("fifo.py::FIFOPolicy(mode='base')", False),
    "fifo-perf": ("fifo.py::FIFOPolicyWithPerf", True),
    "ftf": ("finish_time_fairness.py::FinishTimeFairnessPolicy", False),
    "ftf-perf": ("finish_time_fairness.py::FinishTimeFairnessPolicyWithPerf", True),
    "makespan": ("min_total_duration.py::MinTotalDurationPolicyWithPerf", True),
    "maxtput": ("max_sum_throughput.py::ThroughputNormalizedByCostSumWithPerfSLOs", True),
}


@dataclass
class Gavel(RoundBased):
    """Gavel's round mechanism with one of its policies (module docstring).

    Attributes:
        policy: ``"las"``, ``"las-perf"``, ``"fifo"``, ``"fifo-perf"``, ``"ftf"``,
            ``"ftf-perf"``, ``"makespan"`` or ``"maxtput"``.
        round_length: Seconds, or True for the scenario's ``round_length`` (360 s).
        min_reset_interval: Gavel's ``minimum_time_between_allocation_resets`` (s).
        fifo_defects: ``gavel-fifo`` only: reproduce the defects of Gavel's base-mode
            FIFO code (see :mod:`baselines.gavel.fifo`); default the intended rule.
        absent_jobs: ``"idle"`` (Gavel) or ``"run"`` for jobs not in the allocation.
        fixed_allocation: ``(J, C)`` allocation over the scenario's device types used
            instead of the policy (replaying a given ``X``, the motivational example of
            docs/gavel.md); then the allocation is never recomputed and time is reset only once.
        type_order: Device keys in walk order, overriding the policy's (tests).
        lp_solution: ``"interior"`` (default: HiGHS interior point, like Gavel's cvxpy)
            or ``"vertex"`` (simplex plus hetgym's second-stage tie-break); see
            :mod:`baselines.gavel.lp`.
    """

    policy: str = "las-perf"
    round_length: float | bool = True
    min_reset_interval: float = 1920.0
    fifo_defects: bool = False
    absent_jobs: str = "idle"
    fixed_allocation: Any = None
    type_order: Any = None
    lp_solution: str = "interior"

    def __post_init__(self) -> None:
        if self.policy not in POLICIES:
            raise ValueError(f"Gavel: unknown policy {self.policy!r}; expected one of {sorted(POLICIES)}")
        if self.absent_jobs not in ("idle", "run"):
            raise ValueError(f"Gavel: absent_jobs must be 'idle' or 'run', got {self.absent_jobs!r}")
        if self.fifo_defects and self.policy != "fifo":
            raise ValueError("Gavel: fifo_defects applies to policy 'fifo' only")
        if self.lp_solution not in lp.SOLUTIONS:
            raise ValueError(f"Gavel: lp_solution must be one of {lp.SOLUTIONS}, got {self.lp_solution!r}")
        if self.min_reset_interval < 0:
            raise ValueError(f"Gavel: min_reset_interval must be >= 0, got {self.min_reset_interval}")

    @property
    def perf(self) -> bool:
        """Whether the policy is one of Gavel's heterogeneity-aware (``Perf``) ones."""
        return POLICIES[self.policy][1]

    # ------------------------------------------------------------------ state
    def reset(self, view) -> None:
        """Per-run state: times received, deficits, allocation, throughput matrix."""
        J, C = view.n_jobs, len(view.devices)
        self._L = round_length_of(view)
        if self._L <= 0:
            raise ValueError("Gavel needs rounds: round_length must be > 0")
        gpu = np.array([not bool(c) for c in np.asarray(view.dev_is_cpu)])
        self._n = worker_counts(view)
        dur = np.asarray(view.durations(np.arange(J)))
        with np.errstate(divide="ignore", invalid="ignore"):
            T = np.where(np.isfinite(dur) & (dur > 0), np.asarray(view.work)[:, None] / dur, 0.0)
        self._T = T
        self._tau = np.zeros((J, C))
        self._deficit = np.zeros((J, C))
        self._X = np.zeros((J, C))
        self._in_x = np.zeros(J, dtype=bool)
        self._known = np.zeros(J, dtype=bool)
        self._W = np.zeros(C)
        self._t_reset = 0.0
        self._resets = 0
        self._need = False
        self._on: dict[int, int] = {}
        self._held0 = np.zeros(J)
        self._fifo: dict[int, int] = {}
        self._iso_time = np.zeros(J)  # FTF: isolated time accrued (I_j)
        self._iso_mark = np.zeros(J)  # FTF: work done at the previous recompute
        self._iso_tput = np.zeros(J)  # FTF: T_j^iso of the previous recompute
        if self.fixed_allocation is not None:
            fx = np.asarray(self.fixed_allocation, dtype=np.float64)
            if fx.shape != (J, C):
                raise ValueError(f"Gavel: fixed_allocation must be (jobs={J}, devices={C}), got {fx.shape}")
            self._fixed = fx
        speed = [get_device(d).relative_speed if gpu[k] else -1.0 for k, d in enumerate(view.devices)]
        if self.type_order is not None:
            keys = list(view.devices)
            bad = [d for d in self.type_order if d not in keys]
            if bad:
                raise ValueError(f"Gavel: type_order names unknown devices {bad}; known {keys}")
            self._order = [keys.index(d) for d in self.type_order]
        else:
            self._order = sorted((k for k in range(C) if self._n[k] > 0),
                                 key=lambda k: (-speed[k], k))

    def _held(self, view) -> np.ndarray:
        """Seconds each job has held resources so far (attained service / workers)."""
        return np.asarray(view.attained_service(), dtype=np.float64) / np.asarray(view.workers)

    # ------------------------------------------------------------------ round
    def decide_round(self, view) -> list[Decision]:
        """Account the last round, update the job set, re-plan, carry it out."""
        t = float(view.now)
        st = np.asarray(view.status)
        held = self._held(view)
        for j, k in self._on.items():  # _done_callback: time received in the last round
            ran = held[j] - self._held0[j]
            self._tau[j, k] += ran
            self._W[k] += ran
        gone = self._known & (st == DONE)
        if gone.any():
            self._known[gone] = False
            self._in_x[gone] = False
            self._X[gone] = 0.0
            self._fifo = {j: k for j, k in self._fifo.items() if not gone[j]}
            self._need = True
        new = ~self._known & (st != FUTURE) & (st != DONE)
        if new.any():
            self._known[new] = True
            self._tau[new] = self._L / 2.0
            self._deficit[new] = 0.0
            self._need = True
        if not self._on and not (st == FUTURE).any():
            self._t_reset = 0.0  # Gavel: nothing ran, nothing left to arrive: force a reset
        scheduled = self._plan(view, t)
        plan = self._place(view, scheduled)
        if not plan and self._need and len(view.running) == 0 and not (st == FUTURE).any():
            # this round would run nothing and nothing is left to arrive: Gavel's forced
            # reset, now (its next round would run nothing and then reset)
            self._t_reset = 0.0
            plan = self._place(view, self._plan(view, t))
        self._on = {j: k for j, (k, _) in plan.items()}
        self._held0 = held
        return carry_out(view, plan)

    def _plan(self, view, t: float) -> dict[int, list[int]]:
        """Steps 2-4 of the module docstring: ``{type: [jobs in walk order]}``."""
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
                if left[k] == 0:
                    break  # the type is full: the rest of the walk skips every job
                j = int(active[i])
                if j in done or T[i, k] <= 0 or (fifo and p[i, k] <= 0):
                    continue
                if int(workers[j]) > left[k]:
                    continue
                left[k] -= int(workers[j])
                done.add(j)
                if self._in_x[j] or self.absent_jobs == "run":
                    out[k].append(j)
        return {k: v for k, v in out.items() if v}

    @staticmethod
    def _grace_gpus(view, k: int) -> int:
        """GPUs of type ``k`` held by jobs in a grace period (not Gavel's to give)."""
        r = np.asarray(view.running)
        r = r[np.asarray(view.status)[r] == GRACE]
        return sum(int(np.sum((np.asarray(view.worker_gpu[j]) >= 0)
                              & (np.asarray(view.node_device)[np.asarray(view.worker_node[j])] == k)
                              & (np.arange(view.worker_node.shape[1]) < view.workers[j])))
                   for j in r.tolist())

    def _reset_time(self, t: float) -> None:
        """``_reset_time_run_so_far``: deficits, then every active job back to ``L/2``."""
        act = self._known
        recv = self._tau[act] - self._L / 2.0
        should = np.where(self._in_x[act][:, None], self._X[act] * (t - self._t_reset), 0.0)
        self._deficit[act] += should - recv
        self._tau[act] = self._L / 2.0
        self._W = self._tau[act].sum(axis=0)
        self._t_reset = t
        self._resets += 1

    def _compute(self, view, t: float) -> None:
        """The policy's allocation for the active jobs (``_compute_allocation``)."""
        active = np.flatnonzero(self._known)
        self._X[:] = 0.0
        self._in_x[:] = False
        self._in_x[active] = True
        if len(active) == 0:
            return
        if self.fixed_allocation is not None:
            self._X[active] = self._fixed[active]
            return
        T = self._T[active]
        sf = np.asarray(view.workers, dtype=np.float64)[active]
        n = self._n.astype(np.float64)
        pol = self.policy
        if pol in ("las", "las-perf"):
            self._X[active] = lp.las(T if self.perf else lp.agnostic(T), sf, n,
                                     np.asarray(view.weight, dtype=np.float64)[active],
                                     solution=self.lp_solution)
        elif pol == "maxtput":
            self._X[active] = lp.max_throughput(T, sf, n, solution=self.lp_solution)
        elif pol == "makespan":
            self._X[active] = lp.min_makespan(T, sf, n, np.asarray(view.remaining)[active],
                                              solution=self.lp_solution)
        elif pol in ("ftf", "ftf-perf"):
            self._X[active] = self._ftf(view, t, active, T, sf, n)
        else:
            self._fifo = fifo_allocation(self._fifo, active.tolist(), T, sf, n, list(view.devices),
                                         "perf" if pol == "fifo-perf" else "base", view.rng,
                                         defects=self.fifo_defects)
            for j, k in self._fifo.items():
                self._X[j, k] = 1.0

    def _ftf(self, view, t: float, active: np.ndarray, T: np.ndarray, sf: np.ndarray,
             n: np.ndarray) -> np.ndarray:
        """Finish-time fairness: isolated time accrued since the last recompute, then the
        bisection of :func:`baselines.gavel.lp.finish_time_fairness`."""
        if self.policy == "ftf":  # agnostic: every type as fast as the job's fastest
            T = np.where(T > 0, T.max(axis=1, keepdims=True), 0.0)
        done_work = np.asarray(view.work)[active] - np.asarray(view.remaining)[active]
        prev = self._iso_tput[active]
        with np.errstate(divide="ignore", invalid="ignore"):
            add = np.where(prev > 0, (done_work - self._iso_mark[active]) / prev, 0.0)
        self._iso_time[active] += add
        self._iso_mark[active] = done_work
        tiso = lp.isolated_throughput(T, sf, n)
        self._iso_tput[active] = tiso
        return lp.finish_time_fairness(T, sf, n, np.asarray(view.remaining)[active],
                                       t - np.asarray(view.arrival)[active],
                                       self._iso_time[active], tiso, solution=self.lp_solution)

    def _place(self, view, scheduled: dict[int, list[int]]) -> dict:
        """Placements (keeping GPUs where Gavel does). Resources that stay taken this
        round: jobs in a grace period; running jobs at the scenario's preemption limit
        that get no placement (they keep running where they are, as they cannot be
        preempted); running jobs with a grace period that will be preempted (not
        scheduled, or scheduled but left without GPUs: then the assignment is redone
        without theirs)."""
        st = np.asarray(view.status)
        grace = np.asarray(view.grace)
        limit = view.max_preemptions
        pinned = np.zeros(view.n_jobs, dtype=bool)
        if limit is not None:
            pinned = ~below_limit(np.asarray(view.n_preempt), limit_code(limit))
        chosen = {j for js in scheduled.values() for j in js}
        running = np.asarray(view.running).tolist()
        sticky = (grace > 0) | pinned  # a preemption would not free their resources now
        held = {j for j in running if st[j] == GRACE
                or (st[j] == RUNNING and j not in chosen and sticky[j])}
        while True:
            sched = {k: [j for j in js if j not in held] for k, js in scheduled.items()}
            plan = assign_workers(view, sched, np.asarray(sorted(held), dtype=np.int64))
            lost = {j for j in chosen if st[j] == RUNNING and sticky[j] and j not in plan
                    and j not in held}
            if not lost:
                break
            held |= lost
        for j in sorted(held):  # at the limit: keeps running where it is
            if st[j] == RUNNING and pinned[j]:
                plan[j] = (int(view.device[j]), Placement(*(a.copy() for a in current(view, j))))
        return plan


def _factory(policy: str):
    def make(**params: Any) -> Gavel:
        return Gavel(policy=policy, **params)

    make.__doc__ = f"Gavel with policy {policy!r} ({POLICIES[policy][0]})."
    return make


#: registry entries for :mod:`baselines` (``gavel-<policy>``)
BASELINES = {f"gavel-{p}": _factory(p) for p in POLICIES}
