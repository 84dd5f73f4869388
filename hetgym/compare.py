"""Compare schedulers on one scenario: same jobs, same metrics, one table.

``python -m hetgym.compare`` runs every available scheduler (the plug-ins of
:mod:`hetgym.schedulers`: this project's baselines) on the default scenario over a
few seeds, shows a progress bar, and prints the table (mean +- std over seeds),
best average JCT first. See ``--help``.

A *stalled* run (jobs left waiting that no event could start; see
:func:`hetgym.simulate`) has metrics over its finished jobs only, so it cannot be
ranked with complete runs: the table marks its scheduler with ``*``, counts its
stalled runs in the ``stalled`` column, and :func:`rank` puts it after every
scheduler whose runs all completed.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any, Iterable, Sequence

import pandas as pd

__all__ = ["run_grid", "aggregate", "rank", "format_table", "main", "DEFAULT_METRICS"]

DEFAULT_METRICS = ("avg_jct", "p95_jct", "avg_wait", "avg_slowdown", "makespan",
                   "energy_kwh", "preemptions", "jain_fairness", "decision_time_p99",
                   "unfinished_jobs")


def run_grid(scenario_name: str, schedulers: Sequence[str], seeds: Iterable[int],
             scenario_kwargs: dict[str, Any] | None = None, progress: bool = True,
             scheduler_params: dict[str, dict[str, Any]] | None = None) -> pd.DataFrame:
    """Simulate every (scheduler, seed); one row per run with its summary metrics.

    The scenario (jobs included) is built once per seed with ``seed=seed`` when
    its factory takes a seed, so every scheduler sees the same jobs.
    """
    import inspect

    import hetgym
    from hetgym import scenarios
    from hetgym.schedulers import make

    seeds = list(seeds)
    rows = []
    tasks = [(s, n) for s in seeds for n in schedulers]
    bar = None
    if progress:
        from tqdm.auto import tqdm

        bar = tqdm(total=len(tasks), desc="runs", unit="run", file=sys.stderr)
    scenarios.names()
    factory = scenarios._FACTORIES.get(scenario_name)  # noqa: SLF001
    takes_seed = factory is not None and "seed" in inspect.signature(factory).parameters
    for seed in seeds:
        kw = dict(scenario_kwargs or {})
        if takes_seed:
            kw.setdefault("seed", seed)
        sc = scenarios.get(scenario_name, **kw)
        for name in schedulers:
            if bar is not None:
                bar.set_postfix_str(f"{name} seed={seed}")
            sched = make(name, **(scheduler_params or {}).get(name, {}))
            res = hetgym.simulate(sc, sched, seed=seed)
            rows.append({"scheduler": name, "seed": seed, **res.summary(),
                         "wall_s": res.wall_time})
            if bar is not None:
                bar.update(1)
    if bar is not None:
        bar.close()
    return pd.DataFrame(rows)


def aggregate(runs: pd.DataFrame, metrics: Sequence[str] = DEFAULT_METRICS) -> pd.DataFrame:
    """Mean and std per scheduler (columns ``<metric>_mean``, ``<metric>_std``).

    Also ``runs`` and ``stalled`` (how many of them stalled; 0 when ``runs`` has no
    ``stalled`` column).
    """
    metrics = [m for m in metrics if m in runs.columns]
    by = runs.groupby("scheduler", sort=False)
    g = by[metrics]
    mean = g.mean().add_suffix("_mean")
    std = g.std(ddof=0).fillna(0.0).add_suffix("_std")
    out = pd.concat([mean, std], axis=1)
    out.insert(0, "runs", by.size())
    stalled = by["stalled"].sum() if "stalled" in runs.columns else 0
    out.insert(1, "stalled", pd.Series(stalled, index=out.index).astype(int))
    return out


def rank(agg: pd.DataFrame, by: str = "avg_jct_mean") -> pd.DataFrame:
    """Schedulers whose runs all completed, best ``by`` first, then those with a stalled run."""
    stalled = agg["stalled"] > 0 if "stalled" in agg.columns else pd.Series(False, agg.index)
    return pd.concat([agg[~stalled].sort_values(by), agg[stalled].sort_values(by)])


STALLED_NOTE = ("\\* stalled: some runs left jobs that no event could start; their metrics "
                "cover finished jobs only, so the row is not ranked with complete ones.")
HOURS = ("avg_jct", "p50_jct", "p95_jct", "p99_jct", "avg_wait", "makespan")


def format_table(agg: pd.DataFrame, metrics: Sequence[str] = DEFAULT_METRICS,
                 hours: bool = False) -> str:
    """Markdown table 'mean +- std' per scheduler and metric, in the order of ``agg``.

    With ``hours``, the time metrics (``HOURS``) are shown in hours (column
    names get ``_h``); everything else in its own unit. A scheduler with a
    stalled run is marked ``*`` (footnote under the table).
    """
    metrics = [m for m in metrics if f"{m}_mean" in agg.columns]
    names = [f"{m}_h" if hours and m in HOURS else m for m in metrics]
    head = "| scheduler | runs | stalled | " + " | ".join(names) + " |"
    sep = "|---|---:|---:|" + "---:|" * len(metrics)
    lines = [head, sep]
    any_stalled = False
    for name, row in agg.iterrows():
        n_stalled = int(row["stalled"]) if "stalled" in row.index else 0
        any_stalled |= n_stalled > 0
        cells = []
        for m in metrics:
            mu, sd = row[f"{m}_mean"], row[f"{m}_std"]
            if hours and m in HOURS:
                mu, sd = mu / 3600.0, sd / 3600.0
            fmt = "{:.3g}" if abs(mu) < 10 else "{:.0f}"
            cells.append(fmt.format(mu) + (" ± " + fmt.format(sd) if sd > 0 else ""))
        label = f"{name} *" if n_stalled else str(name)
        lines.append(f"| {label} | {int(row['runs'])} | {n_stalled} | " + " | ".join(cells) + " |")
    if any_stalled:
        lines.append("")
        lines.append(STALLED_NOTE)
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    """Command line: compare schedulers on a scenario and print the table."""
    from hetgym import scenarios, schedulers

    p = argparse.ArgumentParser(prog="python -m hetgym.compare", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--scenario", default=scenarios.DEFAULT, help="scenario name")
    p.add_argument("--schedulers", default="all",
                   help="comma-separated scheduler names (hetgym.schedulers.names()), or 'all'")
    p.add_argument("--seeds", default="0,1,2", help="comma-separated seeds")
    p.add_argument("--n-jobs", type=int, default=None, help="override the scenario's job count")
    p.add_argument("--out", default=None, help="write the runs as CSV here")
    p.add_argument("--no-progress", action="store_true")
    a = p.parse_args(argv)
    names = schedulers.names() if a.schedulers == "all" else a.schedulers.split(",")
    if not names:
        p.error("no scheduler is installed (entry-point group 'hetgym.schedulers')")
    kw = {"n_jobs": a.n_jobs} if a.n_jobs else {}
    runs = run_grid(a.scenario, names, [int(s) for s in a.seeds.split(",")], kw,
                    progress=not a.no_progress)
    if a.out:
        from hetgym.io import write_atomic_csv

        write_atomic_csv(runs, a.out)
    agg = rank(aggregate(runs))
    print(f"scenario {a.scenario}, seeds {a.seeds}: mean ± std over seeds "
          "(_h: hours; energy in kWh; decision time in ms)")
    print(format_table(agg, hours=True))
    return 0


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
