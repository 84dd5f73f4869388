"""Compare schedulers on one scenario: same jobs, same metrics, one table.

``python -m hetgym.compare`` runs the default set of schedulers (``DEFAULT_SCHEDULERS``;
``--schedulers all`` runs every plug-in of :mod:`hetgym.schedulers`) on the default
scenario over a few seeds, shows a progress bar, and prints the table (mean +- std over
seeds), best ``jct_over_best`` first, times in one readable unit per table named in each column header.
Arguments are checked before anything runs. See ``--help``.

The windows of a trace differ between seeds (on the default scenario their jobs' mean
best duration is 1 to 30 h for seeds 0-4), so the table's first column is
``jct_over_best``: a run's average JCT divided by the mean best duration of its window's jobs (each on its fastest
device type, alone). Under the table, :func:`seed_stability` says how stable that is:
its std over seeds relative to its mean per scheduler, and on how many seeds the
schedulers come in the same order.

A *stalled* run (jobs left waiting that no event could start; see
:func:`hetgym.simulate`) has metrics over its finished jobs only, so it cannot be
ranked with complete runs: the table marks its scheduler with ``*``, counts its
stalled runs in the ``stalled`` column, and :func:`rank` puts it after every
scheduler whose runs all completed.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any, Iterable, Sequence

import pandas as pd

from hetgym.cli import plain_doc

__all__ = ["run_grid", "aggregate", "rank", "format_table", "seed_stability", "parse_args",
           "main", "DEFAULT_METRICS", "DEFAULT_SCHEDULERS"]

#: The default table's schedulers: one per kind of policy, whose order on the default
#: scenario holds across seeds (docs/compare.md says why these); ``--schedulers all`` runs
#: every installed one.
DEFAULT_SCHEDULERS = ("fifo", "sjf", "srpt", "drfa", "drfs", "drff")

DEFAULT_METRICS = ("jct_over_best", "avg_jct", "p95_jct", "avg_wait", "avg_slowdown",
                   "makespan", "util_cpu", "energy_kwh", "preemptions", "jain_fairness",
                   "decision_time_p99", "unfinished_jobs")


def run_grid(scenario_name: str, schedulers: Sequence[str], seeds: Iterable[int],
             scenario_kwargs: dict[str, Any] | None = None, progress: bool = True,
             scheduler_params: dict[str, dict[str, Any]] | None = None) -> pd.DataFrame:
    """Simulate every (scheduler, seed); one row per run with its summary metrics.

    The scenario (jobs included) is built once per seed with ``seed=seed`` when
    its factory takes a seed, so every scheduler sees the same jobs. Besides the
    summary metrics (times in seconds) a row has ``jct_over_best`` (average JCT over
    the mean best duration of the window's jobs) and ``wall_s``.
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
            summary = res.summary()
            best = float(res.jobs["best_duration"].mean()) if len(res.jobs) else float("nan")
            rows.append({"scheduler": name, "seed": seed, **summary,
                         "jct_over_best": summary["avg_jct"] / best if best > 0 else float("nan"),
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
LABELS = {"jct_over_best": "avg JCT / mean best", "avg_jct": "avg JCT", "p95_jct": "p95 JCT",
          "p50_jct": "p50 JCT", "p99_jct": "p99 JCT", "avg_wait": "avg wait",
          "avg_slowdown": "avg slowdown", "util_cpu": "CPU util", "energy_kwh": "energy",
          "jain_fairness": "Jain fairness", "decision_time_p99": "decide p99", "decision_time_p50": "decide p50",
          "unfinished_jobs": "unfinished"}


def _header(metric: str, unit: str) -> str:
    label = LABELS.get(metric, metric)
    return f"{label} ({unit})" if unit else label


def format_table(agg: pd.DataFrame, metrics: Sequence[str] = DEFAULT_METRICS,
                 units: bool = True) -> str:
    """Markdown table 'mean +- std' per scheduler and metric, in the order of ``agg``.

    With ``units`` (default) every time metric (:data:`hetgym.metrics.TIME_METRICS`,
    seconds in ``agg``) is shown in the table's one time unit (s, min, h or days, picked
    by :func:`hetgym.metrics.table_time_unit` from the rows' average JCTs, or from the
    means of the time columns shown when ``agg`` has no ``avg_jct_mean``) named in each
    header, e.g. ``avg JCT (h)``; energy is labelled kWh and decision times ms.
    ``units=False`` prints the raw values under the metric names. A scheduler with a
    stalled run is marked ``*`` (footnote under the table).
    """
    from hetgym.metrics import METRIC_UNITS, TIME_METRICS, table_time_unit

    metrics = [m for m in metrics if f"{m}_mean" in agg.columns]
    shown = [m for m in metrics if m in TIME_METRICS]
    basis = ["avg_jct"] if "avg_jct_mean" in agg.columns else shown
    t_unit, t_size = table_time_unit(agg[[f"{m}_mean" for m in basis]].to_numpy()) if basis else ("", 1.0)
    scale, names = {}, []
    for m in metrics:
        unit, size = "", 1.0
        if units and m in TIME_METRICS:
            unit, size = t_unit, t_size
        elif units:
            unit = METRIC_UNITS.get(m, "")
        scale[m] = size
        names.append(_header(m, unit) if units else m)
    head = "| scheduler | runs | stalled | " + " | ".join(names) + " |"
    sep = "|---|---:|---:|" + "---:|" * len(metrics)
    lines = [head, sep]
    any_stalled = False
    for name, row in agg.iterrows():
        n_stalled = int(row["stalled"]) if "stalled" in row.index else 0
        any_stalled |= n_stalled > 0
        cells = []
        for m in metrics:
            mu, sd = row[f"{m}_mean"] / scale[m], row[f"{m}_std"] / scale[m]
            fmt = "{:.3g}" if abs(mu) < 10 else "{:.0f}"
            cells.append(fmt.format(mu) + (" ± " + fmt.format(sd) if sd > 0 else ""))
        label = f"{name} *" if n_stalled else str(name)
        lines.append(f"| {label} | {int(row['runs'])} | {n_stalled} | " + " | ".join(cells) + " |")
    if any_stalled:
        lines.append("")
        lines.append(STALLED_NOTE)
    return "\n".join(lines)


def seed_stability(runs: pd.DataFrame, metric: str = "jct_over_best") -> dict[str, Any]:
    """How far the ranking by ``metric`` holds across seeds.

    Returns ``cv`` (per scheduler: std over seeds / mean, population std), ``orders``
    (per seed: schedulers best first), ``order`` (the most common of those orders; ties
    to the one of the lowest seed) and ``same_order`` (on how many seeds the schedulers
    come in exactly that order), plus ``seeds``.
    """
    by = runs.groupby("scheduler", sort=False)[metric]
    cv = (by.std(ddof=0) / by.mean()).to_dict()
    orders = {int(seed): tuple(r.sort_values([metric, "scheduler"])["scheduler"])
              for seed, r in runs.groupby("seed", sort=True)}
    counts: dict[tuple, int] = {}
    for o in orders.values():
        counts[o] = counts.get(o, 0) + 1
    order = max(counts, key=lambda o: counts[o]) if counts else ()
    return {"cv": cv, "orders": orders, "order": list(order),
            "same_order": counts.get(order, 0), "seeds": len(orders)}


def stability_note(runs: pd.DataFrame, metric: str = "jct_over_best") -> str:
    """One paragraph on :func:`seed_stability` for the text under a table."""
    st = seed_stability(runs, metric)
    worst = max(st["cv"], key=lambda k: st["cv"][k])
    return (f"Seed stability of {LABELS.get(metric, metric)}: std/mean over seeds at most "
            f"{st['cv'][worst]:.2f} ({worst}); the schedulers come in the order "
            f"{' < '.join(st['order'])} on {st['same_order']} of {st['seeds']} seeds.")


def _parse_seeds(text: str) -> list[int]:
    items = [t.strip() for t in text.split(",")]
    bad = [t for t in items if not t.lstrip("-").isdigit()]
    if bad or not items:
        raise ValueError(f"--seeds {text!r}: {', '.join(map(repr, bad)) or 'nothing'} is not "
                         "an integer; expected comma-separated integers, e.g. --seeds 0,1,2")
    seeds = [int(t) for t in items]
    if any(x < 0 for x in seeds):
        raise ValueError(f"--seeds {text!r}: seeds must be >= 0")
    return seeds


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    """Parse and check the command line; exits with a clear message (status 2) on bad input.

    Checks, before anything runs: the scenario is registered; every scheduler name is
    installed (the message lists the valid names); seeds are non-negative integers;
    ``--n-jobs`` is positive and the scenario takes it; ``--out`` is not a directory and no
    file stands where its folder would be made. The namespace gets
    ``scheduler_names`` and ``seed_list``.
    """
    from hetgym import scenarios, schedulers

    p = argparse.ArgumentParser(prog="python -m hetgym.compare", description=plain_doc(__doc__),
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--scenario", default=scenarios.DEFAULT,
                   help=f"scenario name (default {scenarios.DEFAULT})")
    p.add_argument("--schedulers", default="default",
                   help="comma-separated scheduler names, 'default' "
                        f"({','.join(DEFAULT_SCHEDULERS)}) or 'all' (every installed one)")
    p.add_argument("--seeds", default="0,1,2,3,4", help="comma-separated seeds (default 0,1,2,3,4)")
    p.add_argument("--n-jobs", type=int, default=None, help="override the scenario's job count")
    p.add_argument("--out", default=None, help="write the runs as CSV here (times in seconds)")
    p.add_argument("--no-progress", action="store_true")
    a = p.parse_args(argv)
    known_scen = scenarios.names()
    if a.scenario not in known_scen:
        p.error(f"--scenario: unknown scenario {a.scenario!r}; valid: {', '.join(known_scen)}")
    installed = schedulers.names()
    if not installed:
        p.error("no scheduler is installed (entry-point group 'hetgym.schedulers')")
    if a.schedulers == "all":
        names = installed
    elif a.schedulers == "default":
        names = [n for n in DEFAULT_SCHEDULERS if n in installed] or installed
    else:
        names = [n.strip() for n in a.schedulers.split(",") if n.strip()]
        unknown = [n for n in names if n not in installed]
        if unknown or not names:
            what = (f"unknown scheduler(s) {', '.join(map(repr, unknown))}" if unknown
                    else "no scheduler named")
            p.error(f"--schedulers: {what}; valid: {', '.join(installed)} (or 'default', 'all')")
    try:
        a.seed_list = _parse_seeds(a.seeds)
    except ValueError as exc:
        p.error(str(exc))
    if a.n_jobs is not None:
        if a.n_jobs < 1:
            p.error(f"--n-jobs must be >= 1, got {a.n_jobs}")
        import inspect

        factory = scenarios._FACTORIES[a.scenario]
        if "n_jobs" not in inspect.signature(factory).parameters:
            p.error(f"--n-jobs: scenario {a.scenario!r} has a fixed job set (no n_jobs parameter)")
    if a.out is not None:
        out = Path(a.out)
        if not a.out.strip() or out.is_dir():
            p.error(f"--out {a.out!r}: expected a CSV file path, got "
                    f"{'a directory' if a.out.strip() else 'nothing'}")
        blocking = next((d for d in out.parents if d.exists()), None)
        if blocking is not None and not blocking.is_dir():
            p.error(f"--out {a.out!r}: {str(blocking)!r} is a file, not a folder")
    a.scheduler_names = names
    return a


def main(argv: Sequence[str] | None = None) -> int:
    """Command line: compare schedulers on a scenario and print the table."""
    a = parse_args(argv)
    kw = {"n_jobs": a.n_jobs} if a.n_jobs else {}
    runs = run_grid(a.scenario, a.scheduler_names, a.seed_list, kw, progress=not a.no_progress)
    if a.out:
        from hetgym.io import write_atomic_csv

        write_atomic_csv(runs, a.out)
    agg = aggregate(runs)
    agg = rank(agg, by="jct_over_best_mean" if "jct_over_best_mean" in agg.columns else "avg_jct_mean")
    print(f"scenario {a.scenario}, seeds {','.join(map(str, a.seed_list))}: mean ± std over "
          "seeds, best avg JCT / mean best first; times in the unit of each column header")
    print(format_table(agg))
    if len(a.seed_list) > 1 and len(a.scheduler_names) > 1:
        print()
        print(stability_note(runs))
    return 0


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
