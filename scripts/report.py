"""Aggregate a sweep of ``scripts/compare.py`` into tables and plots.

Usage::

    python scripts/report.py outputs/sweeps/default            # writes outputs/sweeps/default/report/
    python scripts/report.py SWEEP --out DIR --metrics avg_jct,p95_jct --gantt sjf:1

Reads every ``metrics.json`` under the sweep folder (with the ``jobs.parquet``
and ``segments.parquet`` beside it) and writes, atomically, into ``--out``:

* ``report.md``: per scenario, mean ± std over seeds per scheduler and metric
  (:func:`hetgym.compare.aggregate` and :func:`hetgym.compare.format_table`), best
  average JCT first; a scheduler with a stalled run is marked ``*`` and listed after
  the complete ones (:func:`hetgym.compare.rank`);
* ``summary.csv``: the same for every numeric metric (``<metric>_mean``/``_std``),
  one row per (scenario, scheduler); ``runs.csv``: one row per run;
* ``jct_cdf[_<scenario>].png``: CDF of job completion times per scheduler (all seeds);
* ``utilisation[_<scenario>].png``: busy fraction of each device type over time per
  scheduler (first seed), from the runs of jobs (``segments.parquet``), or from the
  jobs table (start to end) when a run has no segments;
* ``gantt[_<scenario>].png``: Gantt chart of one run (default: the first scheduler of
  the ranking, its first seed; ``--gantt LABEL[:SEED]`` picks another).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any, Sequence

import numpy as np
import pandas as pd

__all__ = ["load_runs", "summary_tables", "jct_cdf_figure", "utilisation_figure", "main"]


def load_runs(sweep: Path) -> pd.DataFrame:
    """One row per run: ``scheduler``, ``scenario``, ``seed``, metrics, ``stalled``, ``wall_s``, ``path``."""
    rows = []
    for f in sorted(sweep.rglob("metrics.json")):
        if any(part.startswith(".") for part in f.relative_to(sweep).parts):
            continue
        try:
            rec = json.loads(f.read_text())
        except (OSError, json.JSONDecodeError) as exc:
            print(f"warning: skipping unreadable {f}: {exc}", file=sys.stderr)
            continue
        rows.append({"scheduler": rec["scheduler"], "scenario": rec["scenario"],
                     "seed": rec["seed"], **rec["metrics"],
                     "stalled": bool(rec.get("stalled", rec["metrics"].get("stalled", False))),
                     "wall_s": rec.get("wall_s"), "path": str(f.parent)})
    return pd.DataFrame(rows)


def summary_tables(runs: pd.DataFrame, metrics: Sequence[str]) -> tuple[str, pd.DataFrame]:
    """Markdown (one section per scenario) and the CSV table of every numeric metric."""
    from hetgym.compare import aggregate, format_table, rank

    skip = {"seed", "wall_s", "stalled"}
    numeric = [c for c in runs.columns
               if c not in skip and pd.api.types.is_numeric_dtype(runs[c])]
    parts, frames = [], []
    for scen, r in runs.groupby("scenario", sort=True):
        agg_all = aggregate(r, numeric)
        if "avg_jct_mean" in agg_all:
            agg_all = rank(agg_all)
        seeds = sorted(r["seed"].unique().tolist())
        parts.append(f"## {scen}\n\nseeds {seeds}; mean ± std over seeds, best avg JCT first; "
                     "times in the unit of each column header\n\n"
                     + format_table(agg_all, metrics) + "\n")
        frames.append(agg_all.reset_index().assign(scenario=scen))
    csv = pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()
    if len(csv):
        csv = csv[["scenario", "scheduler", *[c for c in csv.columns if c not in ("scenario", "scheduler")]]]
    return "# Sweep report\n\n" + "\n".join(parts), csv


def _plt():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def _save(fig: Any, path: Path) -> None:
    from hetgym.io import write_atomic_figure

    write_atomic_figure(fig, path)


def jct_cdf_figure(runs: pd.DataFrame, order: Sequence[str]) -> Any:
    """CDF of JCT per scheduler over the finished jobs of all its runs."""
    from hetgym.metrics import time_unit

    plt = _plt()
    fig, ax = plt.subplots(figsize=(8.0 if len(order) > 6 else 6.4, 4.0), dpi=100)
    curves: dict[str, np.ndarray] = {}
    for name in order:
        jct = []
        for p in runs.loc[runs["scheduler"] == name, "path"]:
            f = Path(p) / "jobs.parquet"
            if f.is_file():
                j = pd.read_parquet(f, columns=["jct", "finished"])
                jct.append(j.loc[j["finished"], "jct"].to_numpy())
        x = np.sort(np.concatenate(jct)) if jct else np.zeros(0)
        curves[name] = x[np.isfinite(x)]
    both = [c for c in curves.values() if len(c)]
    unit, size = time_unit(float(np.median(np.concatenate(both)))) if both else ("s", 1.0)
    for name, x in curves.items():
        if len(x):
            ax.step(np.maximum(x / size, 1e-6), np.arange(1, len(x) + 1) / len(x), where="post",
                    label=name)
    ax.set_xscale("log")
    ax.set_xlabel(f"job completion time ({unit}, log scale)")
    ax.set_ylabel("fraction of jobs")
    ax.set_title("JCT CDF (all seeds)")
    ax.grid(alpha=0.3)
    _legend(ax, len(order))
    fig.tight_layout()
    return fig


def _legend(ax: Any, n: int) -> None:
    """A readable legend: 9-pt text, beside the axes when there are many entries."""
    if n > 6:
        ax.legend(fontsize=9, loc="upper left", bbox_to_anchor=(1.01, 1.0), borderaxespad=0.0)
    else:
        ax.legend(fontsize=9)


def busy_over_time(run_dir: Path, devices: list[str]) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """Per device type, (times, busy workers) step function of one run."""
    jobs = pd.read_parquet(run_dir / "jobs.parquet")
    seg_f = run_dir / "segments.parquet"
    workers = jobs["workers"].to_numpy()
    if seg_f.is_file():
        seg = pd.read_parquet(seg_f)
        job, start, end, dev = (seg["job"].to_numpy(), seg["start"].to_numpy(),
                                seg["end"].to_numpy(), seg["device"].to_numpy())
        w = workers[job]
    else:
        ok = jobs["start"].notna()
        name_to_idx = {d: i for i, d in enumerate(devices)}
        start = jobs.loc[ok, "start"].to_numpy()
        end = jobs.loc[ok, "end"].fillna(jobs["end"].max()).to_numpy()
        dev = jobs.loc[ok, "device"].map(name_to_idx).fillna(-1).to_numpy().astype(int)
        w = workers[ok.to_numpy()]
    out = {}
    for i, d in enumerate(devices):
        m = dev == i
        t = np.concatenate([start[m], end[m]])
        dw = np.concatenate([w[m], -w[m]]).astype(float)
        o = np.argsort(t, kind="stable")
        out[d] = (t[o], np.cumsum(dw[o]))
    return out


def utilisation_figure(runs: pd.DataFrame, order: Sequence[str]) -> Any:
    """Busy fraction of each device type over time, one line per scheduler (first seed)."""
    from hetgym.metrics import time_unit

    plt = _plt()
    first = runs.sort_values("seed").groupby("scheduler", sort=False).head(1).set_index("scheduler")
    meta = json.loads((Path(first["path"].iloc[0]) / "metrics.json").read_text())
    devices, slots = meta["devices"], meta.get("slots", {})
    unit, size = time_unit(float(first["makespan"].max()) if "makespan" in first else 1.0)
    fig, axes = plt.subplots(len(devices), 1, figsize=(8.0, 1.4 + 1.2 * len(devices)),
                             dpi=100, sharex=True, squeeze=False)
    for name in order:
        if name not in first.index:
            continue
        busy = busy_over_time(Path(first.loc[name, "path"]), devices)
        for ax, d in zip(axes[:, 0], devices):
            t, b = busy[d]
            cap = float(slots.get(d) or max(b.max(initial=0), 1))
            ax.step(t / size, b / cap, where="post", label=name, lw=0.8)
    for ax, d in zip(axes[:, 0], devices):
        ax.set_ylabel(d, fontsize=8)
        ax.set_ylim(0, 1.05)
        ax.grid(alpha=0.3)
    axes[0, 0].set_title(f"busy fraction per device type (seed {int(first['seed'].min())})")
    _legend(axes[0, 0], 99)
    axes[-1, 0].set_xlabel(f"time ({unit})")
    fig.tight_layout()
    return fig


def gantt(run_dir: Path, label: str) -> Any:
    """Gantt chart of one run (``hetgym.envs.render.gantt_figure``)."""
    from hetgym.envs.render import gantt_figure

    meta = json.loads((run_dir / "metrics.json").read_text())
    seg_f = run_dir / "segments.parquet"
    if seg_f.is_file():
        seg = pd.read_parquet(seg_f)
        segments = list(seg.itertuples(index=False, name=None))
    else:
        segments = []
    now = float(meta["metrics"].get("makespan", 0.0))
    return gantt_figure(segments, meta["devices"], int(meta.get("n_nodes", 1)), now,
                        title=f"{label}, {meta['scenario']}, seed {meta['seed']}")


def main(argv: Sequence[str] | None = None) -> int:
    """Command line (module docstring)."""
    from hetgym.compare import DEFAULT_METRICS, aggregate, rank
    from hetgym.io import write_atomic_bytes, write_atomic_csv

    from hetgym.cli import plain_doc
    p = argparse.ArgumentParser(prog="scripts/report.py", description=plain_doc(__doc__),
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("sweep", type=Path, help="folder holding the runs' metrics.json files")
    p.add_argument("--out", type=Path, default=None, help="output folder (default: SWEEP/report)")
    p.add_argument("--metrics", default=",".join(DEFAULT_METRICS),
                   help="comma-separated metrics of the Markdown table")
    p.add_argument("--gantt", default=None, help="LABEL[:SEED] of the run to chart")
    p.add_argument("--no-plots", action="store_true")
    a = p.parse_args(argv)
    runs = load_runs(a.sweep)
    if runs.empty:
        print(f"no metrics.json under {a.sweep}", file=sys.stderr)
        return 1
    out = a.out or a.sweep / "report"
    md, csv = summary_tables(runs, a.metrics.split(","))
    write_atomic_bytes(md.encode(), out / "report.md")
    write_atomic_csv(csv, out / "summary.csv")
    write_atomic_csv(runs, out / "runs.csv")
    print(md)
    if not a.no_plots:
        scenarios = sorted(runs["scenario"].unique())
        for scen in scenarios:
            r = runs[runs["scenario"] == scen]
            sfx = "" if len(scenarios) == 1 else f"_{scen}"
            order = rank(aggregate(r, ["avg_jct"])).index.tolist()
            _save(jct_cdf_figure(r, order), out / f"jct_cdf{sfx}.png")
            _save(utilisation_figure(r, order), out / f"utilisation{sfx}.png")
            label, seed = order[0], None
            if a.gantt:
                label, _, s = a.gantt.partition(":")
                seed = int(s) if s else None
            pick = r[r["scheduler"] == label]
            if seed is not None:
                pick = pick[pick["seed"] == seed]
            if len(pick):
                row = pick.sort_values("seed").iloc[0]
                _save(gantt(Path(row["path"]), label), out / f"gantt{sfx}.png")
            else:
                print(f"warning: no run {a.gantt} for the Gantt chart", file=sys.stderr)
    print(f"\nwrote {out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
