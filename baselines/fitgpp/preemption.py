"""The preemption parts of the FitGpp schedulers (Yabuuchi et al., PFN 2019), used by
:mod:`baselines.fitgpp.schedulers`.

* :class:`PreemptUntilFit` (semantics 2-3 of :mod:`baselines.fitgpp.schedulers`): the allowed
  victims (running BE jobs not in a grace period, below the preemption limit P) and a
  victim rule applied until the TE job fits.
* Victim rules (:class:`VictimRule`): :class:`FitGppVictim` (FitGpp, sec. 3.2, eqs. 1-4,
  with :func:`demand_size`, eq. 1), :class:`LongestRemainingVictim` (LRTP, sec. 4.1) and
  :class:`RandomVictim` (RAND, sec. 4.1).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Protocol

import numpy as np

from baselines.fitgpp.parts import PackPlacement
from hetgym.sim.codes import JobClass, JobStatus
from hetgym.sim.rules import EPS, below_limit, covers, limit_code
from hetgym.sim.view import CapacityModel, View

__all__ = [
    "FitGppVictim",
    "LongestRemainingVictim",
    "PreemptUntilFit",
    "RandomVictim",
    "VictimRule",
    "demand_size",
]

_RUNNING = int(JobStatus.RUNNING)


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
        return (allowed & covers(have_c, need_c) & covers(have_m, need_m)
                & covers(have_g, need_g))

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

    def limit_code(self, view: View) -> int:
        """:meth:`limit` as the rules take it (:func:`hetgym.sim.rules.limit_code`)."""
        lim = self.limit(view)
        return limit_code(None if math.isinf(lim) else int(lim))

    def candidates(self, view: View, exclude: set[int]) -> np.ndarray:
        """Allowed victims: running (not in a GP) BE jobs below the limit, in start order."""
        run = np.asarray(view.running)
        ok = ((np.asarray(view.status)[run] == _RUNNING)
              & (np.asarray(view.job_class)[run] == int(JobClass.BE))
              & below_limit(np.asarray(view.n_preempt)[run], self.limit_code(view)))
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
