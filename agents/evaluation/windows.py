"""Judge agents and baselines on the same held-out trace windows (no torch here).

Every window is a stand-alone scenario (:func:`agents.common.envtools.window_scenario`)
simulated by :func:`hetgym.simulate`; a baseline is built by
``baselines.make``, an agent runs through :class:`agents.common.adapter.AgentScheduler`.
Rows have the format of :func:`hetgym.compare.run_grid` (``scheduler``,
``seed`` = window index, summary metrics), so :func:`hetgym.compare.aggregate`
and :func:`hetgym.compare.format_table` make the table.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Mapping, Sequence

import numpy as np
import pandas as pd

from hetgym.specs import Scenario

__all__ = ["evaluate_on_windows", "mean_jct", "Score"]

SchedulerFactory = Callable[[], Any]


def evaluate_on_windows(schedulers: Mapping[str, SchedulerFactory | str],
                        windows: Sequence[Scenario], seed: int = 0) -> pd.DataFrame:
    """Simulate every scheduler on every window; one row per (scheduler, window).

    Args:
        schedulers: Label -> factory returning a fresh scheduler, or a baseline name.
        windows: Scenarios (trace windows) to run on.
        seed: Seed of every run (``view.rng``).
    """
    import baselines
    import hetgym

    rows = []
    for label, factory in schedulers.items():
        for i, sc in enumerate(windows):
            sched = baselines.make(factory) if isinstance(factory, str) else factory()
            res = hetgym.simulate(sc, sched, seed=seed)
            rows.append({"scheduler": label, "seed": i, "window": sc.name, **res.summary(),
                         "wall_s": res.wall_time})
    return pd.DataFrame(rows)


def mean_jct(runs: pd.DataFrame, label: str) -> float:
    """Mean over windows of ``avg_jct`` for ``label``; inf if a window left jobs unfinished."""
    return Score()(runs, label)


@dataclass(frozen=True)
class Score:
    """Model-selection score of a scheduler on windows (lower is better).

    The mean over windows of ``metric``; ``inf`` when a window left jobs unfinished
    or when the mean of ``constraint`` exceeds ``limit``.

    Attributes:
        metric: Summary column (``avg_jct``, ``te_p95_slowdown``, ...).
        constraint: Summary column whose mean must stay at most ``limit`` (None: none).
        limit: Bound on the constraint's mean.
    """

    metric: str = "avg_jct"
    constraint: str | None = None
    limit: float = float("inf")

    def __call__(self, runs: pd.DataFrame, label: str) -> float:
        r = runs[runs["scheduler"] == label]
        if len(r) == 0:
            return float("nan")
        if (r["unfinished_jobs"] > 0).any() or r[self.metric].isna().any():
            return float("inf")
        if self.constraint is not None and float(np.mean(r[self.constraint])) > self.limit:
            return float("inf")
        return float(np.mean(r[self.metric]))


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m agents.evaluation.windows``: agents vs baselines on held-out windows, one table.

    Example (the table of docs/agents.md)::

        python -m agents.evaluation.windows --agents outputs/train/<run>/best_model.zip \\
            --scenario hetero-small --n-jobs 4096 --workload-seeds 2000-2007 --windows 4 \\
            --baselines fifo,sjf,srpt,allox+ --out outputs/train/<run>/comparison_full
    """
    import argparse
    from pathlib import Path

    from agents.common.adapter import load_meta, load_scheduler
    from agents.common.envtools import EnvConfig, heldout_windows
    from hetgym import scenarios
    from hetgym.compare import aggregate, format_table
    from hetgym.io import write_atomic_bytes, write_atomic_csv

    p = argparse.ArgumentParser(prog="python -m agents.evaluation.windows", description=main.__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--agents", default="", help="comma-separated model .zip files (label = file stem)")
    p.add_argument("--scenario", default=scenarios.DEFAULT)
    p.add_argument("--n-jobs", type=int, default=None, help="jobs of each held-out workload")
    p.add_argument("--workload-seeds", default="2000-2007", help="e.g. 2000-2007 or 5,6,7")
    p.add_argument("--windows", type=int, default=4, help="windows per workload")
    p.add_argument("--window-jobs", type=int, default=None,
                   help="jobs per window (default: the first agent's env n_jobs, else 64)")
    p.add_argument("--baselines", default="fifo,sjf")
    p.add_argument("--out", type=Path, default=None, help="write <out>.md / <out>.csv / <out>_runs.csv")
    a = p.parse_args(argv)
    agents_ = [x for x in a.agents.split(",") if x]
    if "-" in a.workload_seeds:
        lo, hi = (int(x) for x in a.workload_seeds.split("-"))
        seeds = list(range(lo, hi + 1))
    else:
        seeds = [int(x) for x in a.workload_seeds.split(",")]
    env_cfg = EnvConfig.from_dict(load_meta(agents_[0])["env"]) if agents_ else EnvConfig()
    if a.window_jobs:
        env_cfg = EnvConfig.from_dict({**env_cfg.to_dict(), "n_jobs": a.window_jobs})
    kw = {"n_jobs": a.n_jobs} if a.n_jobs else {}
    windows = [w for s in seeds
               for w in heldout_windows(scenarios.get(a.scenario, seed=s, **kw), env_cfg, a.windows)]
    scheds: dict[str, Any] = {b: b for b in a.baselines.split(",") if b}
    for f in agents_:
        scheds[f"agent {Path(f).parent.name}/{Path(f).stem}"] = lambda f=f: load_scheduler(f)
    runs = evaluate_on_windows(scheds, windows)
    agg = aggregate(runs)
    text = (f"{len(windows)} windows of {env_cfg.n_jobs} jobs ({a.windows} from each {a.scenario} "
            f"workload, seeds {seeds}); mean ± std over windows (times in the unit of each column header)\n\n"
            + format_table(agg) + "\n")
    print(text)
    if a.out:
        write_atomic_bytes(text.encode(), f"{a.out}.md")
        write_atomic_csv(agg.reset_index(), f"{a.out}.csv")
        write_atomic_csv(runs, f"{a.out}_runs.csv")
    return 0


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
