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
* non-preemptive FIFO is ``baselines.make("fifo")`` (:mod:`baselines.classic`).

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

import math
import weakref
from dataclasses import dataclass, field
from typing import Iterable, Iterator, NamedTuple, Protocol

import numpy as np

from baselines.classic import PolicyScheduler
from baselines.parts import ArrivalOrder, DeviceChoice, FastestFirst, GreedyAdmission
from hetgym.decisions import Decision, Placement, Preempt, Start
from hetgym.sim.codes import JobClass, JobStatus, PlacementPolicy
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

EPS = 1e-9
_QUEUED = int(JobStatus.QUEUED)
_RUNNING = int(JobStatus.RUNNING)
_GRACE = int(JobStatus.GRACE)


# --------------------------------------------------------------------- placement
@dataclass(frozen=True)
class PackPlacement:
    """Placement part: the simulator's placement kernel on a scratch capacity.

    Attributes:
        single_node: Accept only placements that put the whole gang on one node
            (FitGpp's single-task jobs). A ``spread`` scenario policy is then
            replaced by ``pack`` on the scratch copies (see :meth:`policy`).
            A gang that no single node of the type could ever hold is placed
            over several nodes instead (else it would wait forever).
    """

    single_node: bool = True

    def policy(self, view: View) -> int | None:
        """Placement policy for the scratch copies (``None``: the scenario's)."""
        if self.single_node and view.options.placement == "spread":
            return int(PlacementPolicy.PACK)
        return None

    def node_fits(self, view: View, cap: CapacityModel, job: int, dev: int) -> np.ndarray:
        """bool[N]: whether node n of device ``dev`` holds the whole gang of ``job`` in ``cap``."""
        w = int(view.workers[job])
        ok = view.node_device == dev
        if not view.dev_is_cpu[dev]:
            ok &= cap.free_gpus >= w
        c = float(view.cpus_need[job, dev])
        if c > 0:  # same rounding as the simulator's kernel: floor(free / c + EPS) >= w
            ok &= cap.free_cpus / c + EPS >= w
        m = float(view.mem[job])
        if m > 0:
            ok &= cap.free_mem / m + EPS >= w
        return ok

    def one_node(self, view: View, job: int, dev: int) -> bool:
        """Whether ``job`` must sit on one node of ``dev``: ``single_node`` and some node
        of that type, all free, could hold its whole gang."""
        return self.single_node and bool(_one_node_table(view)[job, dev])

    def fits(self, view: View, cap: CapacityModel, job: int, dev: int) -> bool:
        """Whether ``job`` fits on ``dev`` in ``cap`` (on one node if :meth:`one_node`)."""
        if view.tput[job, dev] <= 0:
            return False
        if not self.one_node(view, job, dev):
            return cap.fits(job, dev)
        return bool(self.node_fits(view, cap, job, dev).any())

    def place(self, view: View, cap: CapacityModel, job: int, dev: int) -> Placement | None:
        """Place ``job`` on ``dev`` in ``cap`` (taking it there), or None."""
        if self.one_node(view, job, dev) and not self.fits(view, cap, job, dev):
            return None
        return cap.place(job, dev)


def _one_node_table(view: View) -> np.ndarray:
    """bool[J, C]: some node of type ``c``, all free, holds job ``j``'s whole gang
    (same rounding as the placement kernel); computed once per view."""
    out = _ONE_NODE.get(view)
    if out is None:
        w = np.asarray(view.workers, dtype=np.float64)[:, None]
        nd = np.asarray(view.node_device)
        out = np.zeros((view.n_jobs, len(view.devices)), dtype=bool)
        for d in range(len(view.devices)):
            on = nd == d
            if not on.any():
                continue
            ok = np.ones((view.n_jobs, int(on.sum())), dtype=bool)
            if not view.dev_is_cpu[d]:
                ok &= np.asarray(view.node_gpus)[on][None, :] >= w
            c = np.asarray(view.cpus_need)[:, d][:, None]
            m = np.asarray(view.mem)[:, None]
            with np.errstate(divide="ignore", invalid="ignore"):
                ok &= (c <= 0) | (np.asarray(view.node_cpus)[on][None, :] / np.where(c > 0, c, 1.0)
                                  + EPS >= w)
                ok &= (m <= 0) | (np.asarray(view.node_mem)[on][None, :] / np.where(m > 0, m, 1.0)
                                  + EPS >= w)
            out[:, d] = ok.any(axis=1)
        _ONE_NODE[view] = out
    return out


_ONE_NODE: "weakref.WeakKeyDictionary[object, np.ndarray]" = weakref.WeakKeyDictionary()


@dataclass(frozen=True)
class PlacedAdmission:
    """Greedy admission (as :class:`~baselines.parts.GreedyAdmission`) through a placement part.

    Attributes:
        placement: Where a job may go (``single_node`` for FitGpp's jobs).
        blocking: Strict FIFO: stop at the first job that does not fit.
    """

    placement: PackPlacement = field(default_factory=PackPlacement)
    blocking: bool = True

    def admit(self, view: View, jobs: Iterable[int], devices: DeviceChoice,
              cap: CapacityModel | None = None) -> list[Start]:
        """Starts for the ordered ``jobs`` on ``cap`` (default: a fresh scratch copy).

        ``jobs`` may be any iterable; with blocking it is read only up to the
        first job that does not fit.
        """
        if not self.placement.single_node:
            arr = np.fromiter(jobs, dtype=np.int64)
            return GreedyAdmission(self.blocking).admit(view, arr, devices, cap)
        cap = cap if cap is not None else view.capacity(self.placement.policy(view))
        out: list[Start] = []
        for j in jobs:
            for d in devices.candidates(view, j):
                pl = self.placement.place(view, cap, j, d)
                if pl is not None:
                    out.append(Start(j, d, pl))
                    break
            else:
                if self.blocking:
                    break
        return out


# ---------------------------------------------------------------------- ordering
@dataclass
class ClassPriority:
    """Ordering part: TE jobs first, then BE jobs, each class in queue order
    (preempted jobs at the head of the queue, then arrival order).

    :meth:`order` sorts a whole array; a scheduler that runs at every event
    uses :meth:`te_waiting` (kept up to date from the arrivals, so it costs
    nothing per queued BE job) and :meth:`be_in_order` (lazy) instead: the
    queue of an overloaded cluster holds tens of thousands of jobs.
    """

    _next: int = field(default=0, repr=False)
    _te: list[int] = field(default_factory=list, repr=False)

    def reset(self) -> None:
        """Forget the jobs seen in a previous run."""
        self._next = 0
        self._te = []

    def order(self, view: View, jobs: np.ndarray) -> np.ndarray:
        """``jobs`` with the TE class ahead (stable)."""
        if len(jobs) <= 1:
            return jobs
        te = np.asarray(view.job_class)[jobs] == int(JobClass.TE)
        return np.concatenate([jobs[te], jobs[~te]])

    def te_waiting(self, view: View) -> list[int]:
        """Queued TE jobs in arrival order (TE jobs are never preempted here)."""
        arr, cls, n, now = view.arrival, view.job_class, view.n_jobs, view.now
        k = self._next
        while k < n and arr[k] <= now:
            if cls[k] == int(JobClass.TE):
                self._te.append(k)
            k += 1
        self._next = k
        if self._te:
            st = view.status
            self._te = [t for t in self._te if st[t] == _QUEUED]
        return list(self._te)

    def be_in_order(self, view: View) -> Iterator[int]:
        """Queued BE jobs in queue order, lazily."""
        q, cls = view.queue, view.job_class
        for i in range(len(q)):
            j = int(q[i])
            if cls[j] != int(JobClass.TE):
                yield j


# -------------------------------------------------------------------- preemption
def demand_size(view: View, jobs: np.ndarray) -> np.ndarray:
    """FitGpp eq. (1): Size(D_j) of running ``jobs`` on the node they run on.

    D_j = (W x cores, W x GB, W GPUs), each divided by the capacity of the
    node of the job's first worker; the GPU term is dropped on CPU nodes.
    """
    jobs = np.asarray(jobs, dtype=np.int64)
    node = np.asarray(view.worker_node)[jobs, 0]
    dev = np.asarray(view.node_device)[node]
    w = np.asarray(view.workers)[jobs].astype(np.float64)
    c = w * np.asarray(view.cpus_need)[jobs, dev] / np.maximum(np.asarray(view.node_cpus)[node], EPS)
    m = w * np.asarray(view.mem)[jobs] / np.maximum(np.asarray(view.node_mem)[node], EPS)
    gpus = np.asarray(view.node_gpus)[node].astype(np.float64)
    g = np.where(gpus > 0, w / np.maximum(gpus, 1.0), 0.0)
    return np.sqrt(c * c + m * m + g * g)


class VictimRule(Protocol):
    """Chooses one running BE job to preempt for a waiting TE job."""

    def pick(self, view: View, te: int, cands: np.ndarray, plan: CapacityModel,
             devices: list[int]) -> tuple[int, str]:
        """One of ``cands`` (never empty) and a reason tag.

        Args:
            view: The simulator's state.
            te: The TE job that does not fit.
            cands: Allowed victims (running BE, not in a GP, below the limit).
            plan: Free capacity once every GP has ended and earlier choices
                of this decision point are applied.
            devices: Device types the TE job may take.
        """


@dataclass(frozen=True)
class FitGppVictim:
    """FitGpp's choice (eqs. 1-4; sec. 3.2).

    Attributes:
        s: Weight of the grace-period term relative to the size term.
    """

    s: float = 4.0

    def scores(self, view: View, cands: np.ndarray) -> np.ndarray:
        """Eq. (3) for ``cands``, normalised over all running BE jobs."""
        run = np.asarray(view.running)
        be = run[np.asarray(view.job_class)[run] == int(JobClass.BE)]
        size_all = demand_size(view, be)
        gp_all = np.asarray(view.grace)[be]
        size = demand_size(view, cands)
        gp = np.asarray(view.grace)[cands]
        smax = float(size_all.max()) if len(size_all) else 0.0
        gmax = float(gp_all.max()) if len(gp_all) else 0.0
        a = size / smax if smax > 0 else np.zeros(len(cands))
        b = gp / gmax if gmax > 0 else np.zeros(len(cands))
        return a + self.s * b

    def eligible(self, view: View, te: int, cands: np.ndarray, plan: CapacityModel,
                 devices: list[int]) -> np.ndarray:
        """Eq. (2) per candidate: D_TE <= D_j + N on the candidate's node."""
        wn = np.asarray(view.worker_node)[cands]
        node = wn[:, 0]
        k = (wn == node[:, None]).sum(axis=1).astype(np.float64)  # workers on that node
        dev = np.asarray(view.node_device)[node]
        cpu_node = np.asarray(view.dev_is_cpu)[dev]
        have_c = k * np.asarray(view.cpus_need)[cands, dev] + plan.free_cpus[node]
        have_m = k * np.asarray(view.mem)[cands] + plan.free_mem[node]
        have_g = np.where(cpu_node, 0.0, k) + plan.free_gpus[node]
        wt = float(view.workers[te])
        need_c = wt * np.asarray(view.cpus_need)[te, dev]
        need_m = wt * float(view.mem[te])
        need_g = np.where(cpu_node, 0.0, wt)
        allowed = np.isin(dev, np.asarray(devices, dtype=np.int64))
        return (allowed & (need_c <= have_c + EPS) & (need_m <= have_m + EPS)
                & (need_g <= have_g + EPS))

    def pick(self, view: View, te: int, cands: np.ndarray, plan: CapacityModel,
             devices: list[int]) -> tuple[int, str]:
        """Minimum score among eligible candidates, else a random candidate."""
        ok = self.eligible(view, te, cands, plan, devices)
        if ok.any():
            sc = np.where(ok, self.scores(view, cands), np.inf)
            return int(cands[int(np.argmin(sc))]), "score"
        return int(cands[int(view.rng.integers(len(cands)))]), "random"


@dataclass(frozen=True)
class LongestRemainingVictim:
    """LRTP: the job with the longest remaining time (remaining work / rate;
    perfect knowledge, as the paper simulates it). Ties: the earliest started."""

    def pick(self, view: View, te: int, cands: np.ndarray, plan: CapacityModel,
             devices: list[int]) -> tuple[int, str]:
        rate = np.asarray(view.rate)[cands]
        with np.errstate(divide="ignore"):
            rem = np.where(rate > 0, np.asarray(view.remaining)[cands] / rate, np.inf)
        return int(cands[int(np.argmax(rem))]), "lrtp"


@dataclass(frozen=True)
class RandomVictim:
    """RAND: a uniformly random running BE job (``view.rng``)."""

    def pick(self, view: View, te: int, cands: np.ndarray, plan: CapacityModel,
             devices: list[int]) -> tuple[int, str]:
        return int(cands[int(view.rng.integers(len(cands)))]), "random"


def _clone(cap: CapacityModel) -> CapacityModel:
    """An independent copy of a scratch capacity."""
    return cap.copy()


@dataclass(frozen=True)
class PreemptUntilFit:
    """Preemption part: apply a victim rule until the TE job fits.

    Attributes:
        rule: Which running BE job goes next.
        max_preemptions: Per-job limit P (``None``: only the scenario's).
    """

    rule: VictimRule = field(default_factory=FitGppVictim)
    max_preemptions: int | None = 1

    def limit(self, view: View) -> float:
        """Effective P: the smaller of this part's and the scenario's limit."""
        lims = [x for x in (self.max_preemptions, view.max_preemptions) if x is not None]
        return float(min(lims)) if lims else math.inf

    def candidates(self, view: View, exclude: set[int]) -> np.ndarray:
        """Allowed victims: running (not in a GP) BE jobs below the limit, in start order."""
        run = np.asarray(view.running)
        ok = ((np.asarray(view.status)[run] == _RUNNING)
              & (np.asarray(view.job_class)[run] == int(JobClass.BE))
              & (np.asarray(view.n_preempt)[run] < self.limit(view)))
        c = run[ok]
        if exclude:
            c = c[~np.isin(c, np.fromiter(exclude, dtype=np.int64))]
        return c

    def select(self, view: View, te: int, plan: CapacityModel, placement: PackPlacement,
               devices: list[int], exclude: set[int]) -> list[tuple[int, str]] | None:
        """Victims (with reasons) after which ``te`` fits on ``plan``, or None.

        ``plan`` is not modified; the caller gives the victims back in it.
        """
        trial = _clone(plan)
        cands = self.candidates(view, exclude)
        if len(cands):
            on = np.asarray(view.node_device)[np.asarray(view.worker_node)[cands, 0]]
            cands = cands[np.isin(on, np.asarray(devices, dtype=np.int64))]
        out: list[tuple[int, str]] = []
        while not any(placement.fits(view, trial, te, d) for d in devices):
            if len(cands) == 0:
                return None
            v, why = self.rule.pick(view, te, cands, trial, devices)
            trial.give(v)
            out.append((v, why))
            cands = cands[cands != v]
        return out


class PreemptionRecord(NamedTuple):
    """One preemption: when, which BE job, for which TE job, and why."""

    time: float
    job: int
    for_job: int
    reason: str


# --------------------------------------------------------------------- scheduler
@dataclass
class PreemptiveFIFO:
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
            if abs(k - round(k)) > 1e-9:
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
    ASSUMPTION, docs/fitgpp.md) what a victim still holds in its grace period is not
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

    Same parts as :func:`baselines.classic.FIFO` except that admission goes
    through ``PackPlacement(single_node=True)``, so that FIFO and the
    preemptive schedulers place jobs alike in the FitGpp study.
    """
    return PolicyScheduler(ArrivalOrder(), FastestFirst(),
                           PlacedAdmission(PackPlacement(True), blocking))  # type: ignore[arg-type]


BASELINES = {"fitgpp": FitGpp, "lrtp": LRTP, "rand": RAND}
