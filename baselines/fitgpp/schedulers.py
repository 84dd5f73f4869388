"""FitGpp and the preemptive baselines it is compared with (LRTP, RAND).

Yabuuchi, Taniwaki, Omura, *Low-latency job scheduling with preemption for the
development of deep learning* (PFN, 2019). Jobs are trial-and-error (TE) or
best-effort (BE); BE jobs may be preempted for TE jobs. A preempted job keeps
running for its grace period (GP), then is suspended with its progress kept and
put back at the head of the queue (the simulator does that, docs/semantics.md).

Schedulers, each a configuration of typed parts:

* ``fitgpp`` (sec. 3.2): :class:`PreemptiveFIFO` with :class:`FitGppVictim`.
* ``lrtp``: Longest Remaining Time Preemption (Big-C, as in sec. 4.1), with
  perfect knowledge of remaining time: :class:`LongestRemainingVictim`.
* ``rand``: a random running BE job: :class:`RandomVictim`.
* non-preemptive FIFO is ``baselines.make("fifo")`` (:mod:`baselines.classic.schedulers`).

This module holds the scheduler (:class:`PreemptiveFIFO`) and the factories; its parts
live in :mod:`baselines.fitgpp.parts` (placement, admission, ordering) and
:mod:`baselines.fitgpp.preemption` (victim rules, preemption until the TE job fits), and
are re-exported here.

Semantics chosen where the paper leaves room (documented in docs/fitgpp.md and
tested in tests/baselines/test_fitgpp*.py):

1. **Queue.** Strict FIFO with the TE class ahead: TE jobs in queue order first,
   then BE jobs in the simulator's queue order (preempted BE jobs at the head,
   then arrival order). "When a TE job arrives [...] BE jobs are suspended to
   make room for the incoming TE job" and "the surplus resource that becomes
   available upon the suspension is allocated to the TE jobs" (sec. 2, 3), so a
   TE job comes before the BE job suspended for it. BE admission is strict FIFO
   (head-of-line blocking, the effect sec. 3.1 builds on): it stops at the
   first BE job that does not fit, and while any TE job is still waiting no BE
   job starts at all (``te_blocks_be``). TE jobs do not block each other: each
   one is handled as it comes (starts, waits for GPs already running for it, or
   triggers preemptions).
2. **Plan.** At each decision point the scheduler plans on two scratch copies
   of free capacity: ``now`` (free now) and ``after`` (free once every running
   grace period has ended). A TE job first tries ``now`` (it starts); else
   ``after`` (it waits for jobs already in their GP, which are never preempted
   again nor counted twice: its claim is taken from ``after``, and from ``now``
   as far as it is free now, so no later job takes it); else it picks victims
   on ``after`` until it fits there. Victims with GP = 0 are suspended at once
   and the TE job starts in the same decision list; otherwise it starts at the
   decision point where the last needed GP ends, i.e. exactly GP seconds after
   the preemption, or earlier if room appears elsewhere first (a completion);
   a preemption cannot be withdrawn, so the victim is then suspended all the
   same and, at the head of the queue, usually restarts at once. If no set of
   allowed victims makes it fit, nothing is preempted and the TE job waits.
3. **Victims.** Only running BE jobs that are not in a GP, were preempted
   fewer than ``P`` times (and fewer than the scenario's ``max_preemptions``)
   and run on a device type the TE job can use. TE jobs are never preempted.
4. **FitGpp score** (eqs. 1-4). Size(D) = sqrt of the sum over CPU, RAM, GPU of
   (demand / capacity of the job's node)^2 (the GPU term is dropped on CPU
   nodes). Score(j) = Size(D_j) / max Size + s x GP_j / max GP, both maxima
   over all running BE jobs (GP term 0 when every GP is 0). Eligible:
   D_TE <= D_j + N element-wise, N being what ``after`` has free on j's node and
   D_j what j holds on that node (all of it for single-node jobs). Ties: the
   earliest started. No eligible job: a uniformly random allowed one (``view.rng``),
   then the rule is applied again until the TE job fits.
5. **Placement.** FitGpp assumes single-task jobs (sec. 2): with
   ``single_node=True`` (default) a job only starts where one node holds its
   whole gang (pack policy of the simulator on the scratch copy).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import NamedTuple

import numpy as np

from baselines.classic.schedulers import PolicyScheduler
from baselines.fitgpp.parts import ClassPriority, PackPlacement, PlacedAdmission
from baselines.fitgpp.preemption import (
    FitGppVictim,
    LongestRemainingVictim,
    PreemptUntilFit,
    RandomVictim,
    VictimRule,
    demand_size,
)
from baselines.common.parts import ArrivalOrder, DeviceChoice, FastestFirst
from hetgym.decisions import Decision, Preempt, SchedulerBase, Start
from hetgym.sim.codes import JobStatus
from hetgym.sim.rules import EPS
from hetgym.sim.view import CapacityModel, View

__all__ = [
    "PackPlacement",
    "PlacedAdmission",
    "ClassPriority",
    "VictimRule",
    "FitGppVictim",
    "LongestRemainingVictim",
    "RandomVictim",
    "PreemptUntilFit",
    "PreemptionRecord",
    "PreemptiveFIFO",
    "FitGpp",
    "LRTP",
    "RAND",
    "NodeLocalFIFO",
    "demand_size",
    "BASELINES",
]

_GRACE = int(JobStatus.GRACE)


class PreemptionRecord(NamedTuple):
    """One preemption: when, which BE job, for which TE job, and why."""

    time: float
    job: int
    for_job: int
    reason: str


# --------------------------------------------------------------------- scheduler
@dataclass
class PreemptiveFIFO(SchedulerBase):
    """FIFO with TE jobs ahead and BE jobs preempted for them (module docstring).

    Attributes:
        preemption: Victim rule and limit P.
        ordering: Queue order (TE class first).
        devices: Device types a job may take, most preferred first.
        placement: Where a job may go (one node by default).
        te_blocks_be: No BE job starts while a TE job waits (strict FIFO).
        count_grace: Count what jobs in their GP hold as soon free (``after``).
            ``False``: a waiting TE job preempts again at every decision point until
            it fits *now* (LRTP's and RAND's default, see docs/fitgpp.md).
        tick: Decide only at multiples of ``tick`` seconds (the paper's simulator
            decides "at every simulated minute"); ``None``: at every event.
            Diagnostic; sets ``round_length`` to ``tick``.
        round_length: Extra decision points (``None``: events only).
        log: Preemptions of the current run (:class:`PreemptionRecord`).
    """

    preemption: PreemptUntilFit = field(default_factory=PreemptUntilFit)
    ordering: ClassPriority = field(default_factory=ClassPriority)
    devices: DeviceChoice = field(default_factory=FastestFirst)
    placement: PackPlacement = field(default_factory=PackPlacement)
    te_blocks_be: bool = True
    count_grace: bool = True
    tick: float | None = None
    round_length: float | None = None
    log: list[PreemptionRecord] = field(default_factory=list, repr=False)

    def __post_init__(self) -> None:
        if self.tick is not None:
            if self.tick <= 0:
                raise ValueError(f"tick must be > 0, got {self.tick}")
            self.round_length = float(self.tick)

    def reset(self, view: View) -> None:
        """Forget the previous run (log and jobs seen)."""
        self.log = []
        self.ordering.reset()

    def _start_now(self, view: View, now: CapacityModel, after: CapacityModel, job: int,
                   devs: list[int]) -> Start | None:
        for d in devs:
            pl = self.placement.place(view, now, job, d)
            if pl is not None:
                after.take(job, pl.nodes, pl.gpus)
                return Start(job, d, pl)
        return None

    def _reserve(self, view: View, now: CapacityModel, after: CapacityModel, job: int,
                 devs: list[int]) -> bool:
        """Claim a placement on ``after``; take its currently free part from ``now``."""
        for d in devs:
            pl = self.placement.place(view, after, job, d)
            if pl is None:
                continue
            cn = float(view.cpus_need[job, d])
            m = float(view.mem[job])
            free_dev = getattr(now, "free_dev", None)  # the per-type summary, kept in step
            for n, g in zip(pl.nodes.tolist(), pl.gpus.tolist()):
                dn = int(view.node_device[n])
                if g >= 0 and now.gpu_owner[n, g] < 0:
                    now.gpu_owner[n, g] = job
                    now.free_gpus[n] -= 1
                    if free_dev is not None:
                        free_dev[dn] -= 1
                took = min(cn, max(now.free_cpus[n], 0.0))
                now.free_cpus[n] -= took
                if free_dev is not None and view.dev_is_cpu[dn]:
                    free_dev[dn] -= took
                now.free_mem[n] -= min(m, max(now.free_mem[n], 0.0))
            return True
        return False

    def decide(self, view: View) -> list[Decision]:
        """Start TE jobs (preempting BE jobs as needed), then BE jobs in strict FIFO."""
        if self.tick is not None:
            k = view.now / self.tick
            if abs(k - round(k)) > EPS:
                return []
        te = self.ordering.te_waiting(view)
        if not te and len(view.queue) == 0:
            return []
        pol = self.placement.policy(view)
        now = view.capacity(pol)
        after = now
        if te:
            after = view.capacity(pol)
            if self.count_grace:
                run = np.asarray(view.running)
                for g in run[np.asarray(view.status)[run] == _GRACE].tolist():
                    after.give(g)
        out: list[Decision] = []
        chosen: set[int] = set()
        waiting = False
        for t in te:
            devs = self.devices.candidates(view, t)
            st = self._start_now(view, now, after, t, devs)
            if st is not None:
                out.append(st)
                continue
            if self._reserve(view, now, after, t, devs):
                waiting = True
                continue
            victims = self.preemption.select(view, t, after, self.placement, devs, chosen)
            if victims is None:
                waiting = True
                continue
            for v, why in victims:
                out.append(Preempt(v))
                chosen.add(v)
                self.log.append(PreemptionRecord(view.now, v, t, why))
                after.give(v)
                if view.grace[v] <= 0:
                    now.give(v)
            st = self._start_now(view, now, after, t, devs)
            if st is not None:
                out.append(st)
                continue
            waiting = True
            if not self._reserve(view, now, after, t, devs):  # pragma: no cover - select() checked
                raise AssertionError(f"TE job {t} does not fit after preempting {victims}")
        if waiting and self.te_blocks_be:
            return out
        out.extend(PlacedAdmission(self.placement, blocking=True).admit(
            view, self.ordering.be_in_order(view), self.devices, now))
        return out


# --------------------------------------------------------------------- factories
def FitGpp(s: float = 4.0, P: int | None = 1, single_node: bool = True,
           te_blocks_be: bool = True) -> PreemptiveFIFO:
    """FitGpp (sec. 3.2): preempt the eligible BE job of least Size/maxSize + s x GP/maxGP.

    Args:
        s: Weight of the grace period against the resource size (eq. 3).
        P: Preemptions per BE job at most (``None``: only the scenario's limit).
        single_node: A job's gang must sit on one node (the paper's single-task jobs).
        te_blocks_be: No BE job starts while a TE job waits (strict FIFO).
    """
    return PreemptiveFIFO(PreemptUntilFit(FitGppVictim(s), P),
                          placement=PackPlacement(single_node), te_blocks_be=te_blocks_be)


def LRTP(P: int | None = 1, single_node: bool = True,
         te_blocks_be: bool = True, count_grace: bool = False) -> PreemptiveFIFO:
    """Longest Remaining Time Preemption (Big-C; sec. 4.1), perfect knowledge.

    Preempts running BE jobs, longest remaining time first, until the TE job fits.
    "Both LRTP and RAND continue the preemption process until they can prepare enough
    resource for the incoming TE job" (sec. 4.1): by default (``count_grace=False``,
    an assumption, docs/fitgpp.md) what a victim still holds in its grace period is not
    counted as prepared, so while the TE job does not fit *now*, every decision point
    preempts again. ``count_grace=True`` counts it (FitGpp's accounting). Other args as
    :func:`FitGpp`.
    """
    return PreemptiveFIFO(PreemptUntilFit(LongestRemainingVictim(), P),
                          placement=PackPlacement(single_node), te_blocks_be=te_blocks_be,
                          count_grace=count_grace)


def RAND(P: int | None = 1, single_node: bool = True,
         te_blocks_be: bool = True, count_grace: bool = False) -> PreemptiveFIFO:
    """RAND (sec. 4.1): preempt random running BE jobs until the TE job fits.

    ``count_grace`` as :func:`LRTP` (default False); other args as :func:`FitGpp`.
    """
    return PreemptiveFIFO(PreemptUntilFit(RandomVictim(), P),
                          placement=PackPlacement(single_node), te_blocks_be=te_blocks_be,
                          count_grace=count_grace)


def NodeLocalFIFO(blocking: bool = True) -> PolicyScheduler:
    """The registered ``fifo`` with FitGpp's single-node placement (not registered).

    Same parts as :func:`baselines.classic.schedulers.FIFO` except that admission goes
    through ``PackPlacement(single_node=True)``, so that FIFO and the
    preemptive schedulers place jobs alike in the FitGpp study.
    """
    return PolicyScheduler(ArrivalOrder(), FastestFirst(),
                           PlacedAdmission(PackPlacement(True), blocking))  # type: ignore[arg-type]


BASELINES = {"fitgpp": FitGpp, "lrtp": LRTP, "rand": RAND}
