"""Episode windows: which consecutive jobs of a workload an episode simulates.

One :class:`EpisodeWindows` owns the sampling of an episode's jobs and their
time shift. ``HetCluster-v0`` draws its windows with it (shown in the env's
repr), ``agents`` asks it which rows a reset seed gives and turns them into
stand-alone scenarios for ``hetgym.simulate``, and ``hetgym.traces.windows``
cuts job tables by the same shift rule. The shift moves arrivals *and*
deadlines so that the window's first job arrives at 0
(:func:`hetgym.sim.state.jobs.cut_window` on arrays, :func:`hetgym.traces.windows.rebase`
on tables).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from hetgym import validate
from hetgym.specs import Scenario

__all__ = ["EpisodeWindows"]


@dataclass(frozen=True)
class EpisodeWindows:
    """Windows of ``n_jobs`` consecutive jobs (in arrival order) of a workload of ``n_total``.

    Attributes:
        n_total: Jobs in the workload.
        n_jobs: Jobs per window (``None`` or ``>= n_total``: the whole workload).
    """

    n_total: int
    n_jobs: int | None = None

    def __post_init__(self) -> None:
        if self.n_total < 1:
            raise ValueError(f"EpisodeWindows: the workload has no job (n_total={self.n_total})")
        if self.n_jobs is not None:
            object.__setattr__(self, "n_jobs", validate.integer(self.n_jobs, "n_jobs (jobs per episode)", lo=1))

    @property
    def size(self) -> int:
        """Jobs per episode."""
        return self.n_total if self.n_jobs is None else min(int(self.n_jobs), self.n_total)

    @property
    def whole(self) -> bool:
        """Whether every episode is the whole workload."""
        return self.size == self.n_total

    def draw(self, rng: np.random.Generator) -> np.ndarray | None:
        """Rows of one window (its first row uniform over the possible starts), or ``None``
        for the whole workload (then nothing is drawn from ``rng``)."""
        if self.whole:
            return None
        start = int(rng.integers(0, self.n_total - self.size + 1))
        return np.arange(start, start + self.size, dtype=np.int64)

    def rows_for_seed(self, seed: int) -> np.ndarray:
        """The rows that ``HetCluster-v0.reset(seed=seed)`` simulates (all rows if whole)."""
        from gymnasium.utils import seeding

        rows = self.draw(seeding.np_random(seed)[0])
        return np.arange(self.n_total, dtype=np.int64) if rows is None else rows

    @staticmethod
    def scenario(scenario: Scenario, rows: np.ndarray) -> Scenario:
        """``scenario`` restricted to workload ``rows`` as a stand-alone scenario: arrivals
        and deadlines shifted so the first arrives at 0 (job ids kept). Simulating it is
        simulating the env episode on those rows."""
        from hetgym.traces.windows import rebase
        from hetgym.workload import Workload

        rows = np.asarray(rows, dtype=np.int64)
        fr = rebase(scenario.workload.frame.iloc[rows], renumber=False)
        wl = Workload.from_frame(fr, source=f"{scenario.name} window")
        return scenario.replace(workload=wl,
                                name=f"{scenario.name}[{int(rows[0])}:{int(rows[-1]) + 1}]")
