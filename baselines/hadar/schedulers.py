"""Hadar and HadarE (Sultana, Pakka, Xu, Yuan, Chen, Tzeng: "Resource Heterogeneity-Aware
and Utilization-Enhanced Scheduling for DL Clusters: Hadar and HadarE", TPDS; IPDPS'24).

``hadar`` (paper §III, Algorithms 1-2): round-based (``round_length``, default the
scenario's 360 s; acts only at round boundaries, :mod:`baselines.common.rounds`), task-level
heterogeneity (a gang may mix GPU types; rate = W x slowest type, Eq. 1b, the engine's
``rate_nb``), a primal-dual price per GPU that grows exponentially with a node's use
(Eq. 5-7) and per job the allocation of largest payoff ``mu = U - cost`` (Eq. 4, 8),
chosen for the queue by a DP over take/skip (Algorithm 2). At each boundary:

1. Q = unfinished arrived jobs (running or waiting) by (arrival, index); with
   ``realloc="all"`` (Algorithm 1) every job of Q is re-planned on an empty cluster,
   with ``"new"`` (§IV: "allocates resources to those newly incoming jobs") running
   jobs keep their GPUs and Q = waiting jobs.
2. Prices (:class:`~baselines.hadar.parts.PriceBook`), candidates and payoffs
   (:class:`~baselines.hadar.parts.FindAlloc`), DP (exact up to ``dp_limit`` jobs, else
   greedy) and backfill (:func:`~baselines.hadar.parts.payoff_dp`,
   :func:`~baselines.hadar.parts.backfill`); the candidate search, the greedy pass and
   the backfill run compiled (:mod:`baselines.hadar.kernels`, the same plan bit for bit).
3. Decisions (:func:`~baselines.hadar.emit.emit`): kept placements -> nothing, changed ->
   ``Move`` (restart delay), left out -> ``Preempt``, new -> ``Start`` (mixed types allowed).

``hadare`` (paper §V): Hadar, then every idle node is filled with a *copy* of a forkable
job (:func:`~baselines.hadar.parts.fork_fill`): the job with the largest estimated
remaining time gets a copy on the free node fastest for it, until no node has room.
Copies pool their progress and pay ``fork_sync_delay`` each round (engine, forking
rules in docs/semantics.md). A running forked job keeps, as its primary in the Hadar
step, its copy of the highest rate.

Assumptions (docs/hadar.md, *Assumptions*; each is the paper's gap, our choice):

* Utility = effective throughput ``work_j / (f_j - a_j)`` (``utility="throughput"``;
  ``"normalized"``: ``t_j^min / (f_j - a_j)``), ``U_max^r = max_j X_j^r`` (per GPU).
* Horizon ``T = now + sum_{j in Q} t_j^max``.
* DP objective: the DP maximises the total payoff (Algorithm 2's "cheaper branch" would never take a
  job) and a backfill pass retries the skipped jobs (work-conserving).
* Communication cost: none separate; the engine's cross-node topology factor is in
  ``rho`` (``view.rate_of``) and so in the utility.
* hadar-sim workload: the ``hadar-sim`` workload (``hetgym.presets.hadar``).
* Re-allocation scope: ``realloc="all"`` with stickiness (the current placement is a candidate
  and wins cost ties through its larger utility: no restart delay), option ``"new"``.
* HadarE fill order: HadarE fills idle nodes with the job of largest remaining time first.
* HadarE work split: HadarE's split of the remaining steps over copies in proportion to their
  throughput = pooled progress (engine), with a per-round ``fork_sync_delay``.
* Motivational figure: the paper's motivational Hadar figure is not used.
* Eq. (6) is read per type (``U_max^r``; the DP-and-backfill example of
  docs/hadar.md has the same schedule under both readings); ``M_j`` in
  ``t_j^min/max`` is read as ``W_j``.

Beyond the paper: CPU nodes take part (a worker takes cores and memory; the price of a
CPU node uses its share of cores given); the plan tracks GPUs by id, cores and memory.
A decision whose GPUs are still held by a job in its grace period is dropped for the
round (Hadar's workloads have no grace period); a cycle of moves is broken by a
preemption and a start (:func:`~baselines.hadar.emit.emit`). Decisions are issued in an
order in which each one's GPUs, cores and memory are free (a move onto a node waits for
the jobs leaving it). The scenario's preemption limit (``max_preemptions``, not in the
paper): a running job that may not be preempted any more keeps its placement through
the round (with ``realloc="all"`` it is not re-planned; its resources are taken before
the DP) and is never the one preempted to break a cycle.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from baselines.hadar.emit import copies_of_job, emit
from baselines.hadar.parts import (
    FindAlloc,
    PlanState,
    PriceBook,
    backfill,
    fork_fill,
    payoff_dp,
)
from baselines.common.ledger import at_limit
from baselines.common.rounds import RoundBased
from hetgym.decisions import Decision, Placement
from hetgym.sim.codes import JobStatus

__all__ = ["BASELINES", "Hadar", "HadarE"]

_RUNNING, _GRACE, _QUEUED = int(JobStatus.RUNNING), int(JobStatus.GRACE), int(JobStatus.QUEUED)


@dataclass
class Hadar(RoundBased):
    """Hadar (paper §III; module docstring). Parameters: ``round_length`` (True = the
    scenario's), ``utility`` ("throughput" | "normalized"), ``realloc`` ("all" | "new"),
    ``sticky``, ``dp_limit`` (exact DP up to this many jobs), ``backfill``."""

    round_length: float | bool = True
    utility: str = "throughput"
    realloc: str = "all"
    sticky: bool = True
    dp_limit: int = 8
    backfill: bool = True
    #: the compiled candidate search (:mod:`baselines.hadar.kernels`) on the simulator's own
    #: view; False: the pure-Python one (the reference it is tested against)
    compiled: ClassVar[bool] = True

    def __post_init__(self) -> None:
        if self.realloc not in ("all", "new"):
            raise ValueError(f"Hadar: realloc must be 'all' or 'new', got {self.realloc!r}")
        if self.utility not in ("throughput", "normalized"):
            raise ValueError(f"Hadar: utility must be 'throughput' or 'normalized', "
                             f"got {self.utility!r}")
        if self.dp_limit < 0:
            raise ValueError(f"Hadar: dp_limit must be >= 0, got {self.dp_limit}")

    def reset(self, view) -> None:
        """Nothing to remember between runs."""

    # -------------------------------------------------------------- the round
    def _primary(self, view, j: int) -> Placement:
        """A running job's placement in the Hadar step (its copy of highest rate)."""
        copies = copies_of_job(view, j)
        if len(copies) == 1:
            return copies[0]
        return max(copies, key=lambda pl: view.rate_of(j, pl))

    def plan(self, view) -> tuple[dict[int, list[Placement]], PlanState, list[int], dict]:
        """This round's Hadar plan ``{job: [placement]}``, the plan state left, Q, and the
        running jobs' current placements."""
        status = np.asarray(view.status)
        running = [j for j in np.asarray(view.running).tolist() if int(status[j]) == _RUNNING]
        queued = np.asarray(view.queue).tolist()
        free = PlanState.of(view, empty=self.realloc == "all")
        current = {j: self._primary(view, j) for j in running}
        plan: dict[int, list[Placement]] = {}
        if self.realloc == "all":
            pinned = [j for j in running if at_limit(view, j)]
            for j in pinned:  # may not be preempted any more: keeps its placement
                plan[j] = copies_of_job(view, j)
                for pl in plan[j]:
                    free = free.take(view, j, pl)
            q = sorted([j for j in running if j not in plan] + queued,
                       key=lambda j: (float(view.arrival[j]), j))
        else:
            q = sorted(queued, key=lambda j: (float(view.arrival[j]), j))
            for j in np.asarray(view.running).tolist():
                plan[j] = copies_of_job(view, j)
        if not q:
            return plan, free, q, current
        prices = PriceBook(view, np.asarray(q, dtype=np.int64))
        find = FindAlloc(view, prices, self.utility, self.sticky, current, self.compiled,
                         free.cpu_node)
        chosen, free = payoff_dp(q, free, find, self.dp_limit)
        if self.backfill:
            free = backfill(q, chosen, free, find)
        for j, c in chosen.items():
            plan[j] = [c.placement]
        return plan, free, q, current

    def decide_round(self, view) -> list[Decision]:
        """Plan the round and turn the plan into decisions."""
        plan, _, _, _ = self.plan(view)
        return emit(view, plan)


@dataclass
class HadarE(Hadar):
    """HadarE (paper §V): Hadar, then idle nodes get copies of forkable jobs (module
    docstring; assumptions *HadarE fill order* and *work split*, docs/hadar.md). Jobs that are
    not ``forkable`` are scheduled as by Hadar."""

    def decide_round(self, view) -> list[Decision]:
        """Hadar's plan, the fork fill, then the decisions."""
        plan, free, q, _ = self.plan(view)
        forkable = np.asarray(view.forkable)  # fork_fill reads the copies of these only
        cur = {j: copies_of_job(view, j) for j in np.asarray(view.running).tolist()
               if forkable[j]}
        fork_fill(view, q, plan, free, cur)
        return emit(view, plan)


BASELINES = {"hadar": Hadar, "hadare": HadarE}
