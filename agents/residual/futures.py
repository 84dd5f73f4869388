"""Sampled futures for the rollout teacher (``agents.residual.deviations.ResidualConfig.futures``).

The clairvoyant teacher's rollout copies hold the window's jobs that have not arrived
yet (labels that use the future); the myopic one's hold none. A *sampled-future* teacher
replaces, in each rollout copy, the not-yet-arrived jobs by jobs drawn from a family's
**training rows** (:class:`FutureSource`), with arrival times after "now" drawn from the
same rows' arrival process, K futures per decision point; the value is the mean over the
K futures. A policy can learn such labels: they depend on the present state and on the
training distribution, not on the window's real future.

**How a future is drawn** (:meth:`FutureSource.draw`, :meth:`FutureSource.fill`): a
*block* of ``n`` consecutive training rows (``n``: the window's future slots, so the
number of jobs in the window stays what it is), jobs and arrival gaps together. The
``fitgpp-lab`` arrivals are *controlled* (:mod:`hetgym.traces.controlled`: each job is
submitted when the FIFO load in the system falls below 2.0), so they are not a Poisson
process: 24 % of the training gaps are 0 (several jobs at the instant the load drops),
the gaps' coefficient of variation is 1.2, and a gap depends on the jobs before it. A
block keeps the gaps, their bursts and their pairing with the jobs' sizes and classes as
they are in the training rows; i.i.d. gaps or a Poisson rate would lose that. The block's
first job arrives one source gap after the window's last arrival, the block's start
drawn among the rows whose gap to their predecessor exceeds the time elapsed since the
window's last arrival (the conditional law of the next arrival given that none came
yet: a policy knows that time); the block's later jobs keep their gaps. When no gap
is that long (elapsed > the largest, 3,394 s on ``fitgpp-lab``), the first job arrives
that gap after *now* instead.

Every job array of the copy is overwritten at the future slots (:data:`JOB_FIELDS`: work,
throughput per device type, workers, class TE / BE, cores, memory, grace period, ...),
with the arrival and the deadline moved together and ``remaining`` set to the new work;
the job ids of the slots stay (unique in the window). Job types are mapped by name to the
window's ids (a type the window lacks gets an id past them; with an interference table
such a type is an error). Users keep the source's dense ids (exact for ``fitgpp-lab``:
one user). The copy takes them through :meth:`Simulator.replace_arrivals
<hetgym.sim.engine.Simulator.replace_arrivals>` (which widens its worker arrays when a
drawn job has more workers than they hold); this module writes no simulator array. The
real simulator is never changed (tested).

Seeds: the futures of decision point ``p`` (the scheduler's count of decision points in
the window) of a window are drawn by ``np.random.default_rng([seed, window, p, k])``,
``window`` the job id of the window's first job: data are reproducible and the same
window gets the same futures wherever it is listed. The same K futures serve the base
and every candidate of that decision point (common random numbers).
"""

from __future__ import annotations

import functools
from typing import TYPE_CHECKING

import numpy as np

from hetgym.sim.state.jobs import build_jobs, job_types
from hetgym.sim.state.layout import JobArrays

if TYPE_CHECKING:  # pragma: no cover
    from hetgym.sim import Simulator
    from hetgym.specs import Scenario

__all__ = ["JOB_FIELDS", "FutureSource", "family_source", "future_rng", "window_key"]

#: The job arrays a future overwrites as they are in the source (arrival, deadline,
#: itype and job_id are set apart: :meth:`FutureSource.fill`).
JOB_FIELDS = tuple(f for f in JobArrays._fields if f not in ("job_id", "arrival", "deadline", "itype"))


class FutureSource:
    """Jobs to draw futures from: ``jobs`` (arrival order) with their type names.

    Args:
        jobs: Source job arrays (e.g. a family's training rows, :func:`family_source`).
        type_names: The names ``jobs.itype`` indexes (``hetgym.sim.state.jobs.job_types``).
    """

    def __init__(self, jobs: JobArrays, type_names: np.ndarray) -> None:
        self.jobs = jobs
        self.type_names = np.asarray(type_names, dtype=object)
        self.gaps = np.diff(jobs.arrival)  # gaps[s - 1]: row s's gap to row s - 1
        self._maps: dict[int, tuple[Scenario, np.ndarray]] = {}

    @classmethod
    def from_scenario(cls, scenario: Scenario, rows: np.ndarray | None = None) -> FutureSource:
        """The jobs of ``scenario`` (``rows`` of it, or all)."""
        jobs = build_jobs(scenario)
        if rows is not None:
            rows = np.asarray(rows, dtype=np.int64)
            jobs = JobArrays(*(a[rows] for a in jobs))
        return cls(jobs, job_types(scenario))

    def __len__(self) -> int:
        return len(self.jobs.arrival)

    def draw(self, sim: Simulator, rng: np.random.Generator) -> int:
        """The first source row of a future for ``sim``'s not-yet-arrived slots (module
        docstring): uniform among the rows ``s >= 1`` whose block of ``n`` rows fits and
        whose gap exceeds the time since ``sim``'s last arrival; any fitting row if none."""
        n = sim.n_jobs - sim.next_arrival
        hi = len(self) - n  # s <= hi
        if n <= 0 or hi < 1:
            raise ValueError(f"FutureSource: {len(self)} rows cannot hold a future of {n} jobs")
        elapsed = sim.now - self._last_arrival(sim)
        for least in (elapsed, 0.0):  # then the fallback: a gap after now (> 0: no arrival at now)
            ok = np.flatnonzero(self.gaps[:hi] > least) + 1
            if len(ok):
                return int(ok[rng.integers(len(ok))])
        return int(rng.integers(1, hi + 1))

    @staticmethod
    def _last_arrival(sim: Simulator) -> float:
        m = sim.next_arrival
        return float(sim.jobs.arrival[m - 1]) if m > 0 else float(sim.now)

    def fill(self, sim: Simulator, start: int) -> None:
        """Overwrite ``sim``'s (a copy's) not-yet-arrived slots with source rows
        ``start, start + 1, ...`` (module docstring). Call before the copy's view is made."""
        m, J = sim.next_arrival, sim.n_jobs
        n = J - m
        if n <= 0:
            return
        rows = np.arange(start, start + n)
        src = self.jobs
        t_last = self._last_arrival(sim)
        gap = float(src.arrival[start] - src.arrival[start - 1])
        t0 = t_last if t_last + gap > sim.now else float(sim.now)  # draw's fallback: a gap after now
        shift = t0 - float(src.arrival[start - 1])  # 0 for a source that is the window itself
        fields = {f: getattr(src, f)[rows] for f in JobArrays._fields}
        fields["arrival"] = src.arrival[rows] + shift
        fields["deadline"] = src.deadline[rows] + shift
        fields["itype"] = self._type_map(sim)[src.itype[rows]]
        try:
            sim.replace_arrivals(JobArrays(**fields))
        except ValueError as exc:
            raise ValueError(f"FutureSource: source rows {start}..{start + n - 1}: {exc}") from exc

    def _type_map(self, sim: Simulator) -> np.ndarray:
        """int64[T_source]: the window's type id of each source type name (cached per scenario)."""
        sc = sim.scenario
        hit = self._maps.get(id(sc))
        if hit is not None and hit[0] is sc:
            return hit[1]
        win = job_types(sc)
        pos = np.searchsorted(win, self.type_names).clip(0, max(len(win) - 1, 0))
        present = (win[pos] == self.type_names) if len(win) else np.zeros(len(self.type_names), bool)
        if not present.all() and sim.params.opts.interf_mode == 2:
            raise ValueError("FutureSource: a source job type has no row in the window's interference table")
        out = np.where(present, pos, len(win) + np.arange(len(self.type_names))).astype(np.int64)
        if len(self._maps) > 64:
            self._maps.clear()
        self._maps[id(sc)] = (sc, out)
        return out


def window_key(sim: Simulator) -> int:
    """The seed key of ``sim``'s window: the job id of its first job."""
    return int(sim.jobs.job_id[0]) if sim.n_jobs else 0


def future_rng(seed: int, window: int, point: int, k: int) -> np.random.Generator:
    """The generator of future ``k`` of decision point ``point`` of ``window``."""
    return np.random.default_rng([int(seed), int(window), int(point), int(k)])


@functools.lru_cache(maxsize=4)
def family_source(family: str, window_jobs: int = 64) -> FutureSource:
    """The training rows of ``family``'s split (``agents.evaluation.heldout.split``; never its
    validation or test rows), cached per process."""
    from agents.evaluation.heldout import split

    sp = split(family, window_jobs=window_jobs)
    return FutureSource.from_scenario(sp.base, np.arange(sp.bounds[1]))
