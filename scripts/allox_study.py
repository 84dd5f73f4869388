"""AlloX study: the paper's baselines on ``allox-hybrid``, an alpha sweep, decision latency.

Runs every AlloX-family baseline (plus fifo, sjf, srpt) on ``allox-hybrid`` over a few
seeds, prints a Markdown table and writes it into ``docs/allox.md`` (between the
``allox_study`` markers, with the exact command), sweeps AlloX's fairness knob alpha
and plots the standard deviation of user progress against the average JCT
(``docs/img/allox_alpha.png``, the paper's Fig. 16). ``--bench`` instead times one
AlloX decision on 200 waiting jobs x 40 free machines. ``--paper-regime`` runs the
paper's simulation regime (``allox-hybrid``, ``setting="paper"``) and writes Figures
11-16's comparisons beside the paper's (:mod:`allox_paper_study`; other scripts import
:func:`paper_regime_rows`, re-exported here).

Examples::

    python scripts/allox_study.py                       # tables + sweep + plot (< 5 min)
    python scripts/allox_study.py --loads 1.0 --seeds 0 # quicker
    python scripts/allox_study.py --bench               # decision latency
    python scripts/allox_study.py --paper-regime        # the paper's regime, seeds 0-2 (~1 h)
    python scripts/allox_study.py --paper-regime --quick          # seeds 0-2, 2,000 jobs (~3 min)
    python scripts/allox_study.py --paper-regime --from-csv outputs/allox/paper_regime.csv
    python scripts/allox_study.py --paper-regime --diagnose --seeds 0  # the evidence for the gaps
"""

from __future__ import annotations

import argparse
import re
import shlex
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

import baselines
import hetgym
from baselines.allox.schedulers import AlloX
from baselines.allox.parts import allox_progress_timeline
from baselines.classic.schedulers import SRPT
from baselines.common.parts import FastestOnly

sys.path.insert(0, str(Path(__file__).resolve().parent))
from allox_paper_study import paper_regime_rows  # noqa: F401  (re-exported)

ROOT = Path(__file__).resolve().parents[1]
SCHEDULERS: dict[str, Callable[[], Any]] = {
    "allox": lambda: baselines.make("allox"),
    "allox[alpha=1]": lambda: baselines.make("allox", alpha=1.0),
    "allox+": lambda: baselines.make("allox+"),
    "es": lambda: baselines.make("es"),
    "drff": lambda: baselines.make("drff"),
    "drfs": lambda: baselines.make("drfs"),
    "drfa": lambda: baselines.make("drfa"),
    "bf": lambda: baselines.make("bf"),
    "jsq+": lambda: baselines.make("jsq+"),
    "sjf+": lambda: baselines.make("sjf+"),
    "fifo": lambda: baselines.make("fifo"),
    "sjf": lambda: baselines.make("sjf"),
    "srpt": lambda: baselines.make("srpt"),
    "srpt[fastest-only]": lambda: SRPT(devices=FastestOnly()),
}
BEGIN, END = "<!-- allox_study:begin -->", "<!-- allox_study:end -->"
PBEGIN, PEND = "<!-- allox_paper:begin -->", "<!-- allox_paper:end -->"


def run_one(scenario: hetgym.Scenario, scheduler: Any, seed: int) -> dict[str, float]:
    """Metrics of one run, with AlloX's time-averaged std of user progress."""
    res = hetgym.simulate(scenario, scheduler, seed=seed)
    m = res.summary()
    m["allox_progress_std"], _ = allox_progress_timeline(res, scenario)
    m["wall_s"] = res.wall_time
    return m


def study(seeds: list[int], load: float, n_jobs: int | None, names: list[str],
          alphas: list[float]) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Run the baselines and the alpha sweep; one row per (scheduler or alpha, seed)."""
    rows, sweep = [], []
    for seed in seeds:
        sc = hetgym.scenarios.get("allox-hybrid", seed=seed, load=load, n_jobs=n_jobs)
        for name in names:
            m = run_one(sc, SCHEDULERS[name](), seed)
            rows.append({"scheduler": name, "seed": seed, **m})
            print(f"  load={load} seed={seed} {name:18s} avg_jct={m['avg_jct']:8.0f} s "
                  f"({m['wall_s']:.1f} s)", file=sys.stderr)
        done = {0.1: "allox", 1.0: "allox[alpha=1]"}  # sweep points already run above
        for a in alphas:
            prev = [r for r in rows if r["scheduler"] == done.get(a) and r["seed"] == seed]
            m = dict(prev[0]) if prev else run_one(sc, AlloX(alpha=a), seed)
            m.pop("scheduler", None)
            m.pop("seed", None)
            sweep.append({"alpha": a, "seed": seed, **m})
    return pd.DataFrame(rows), pd.DataFrame(sweep)


def markdown(df: pd.DataFrame) -> str:
    """A DataFrame as a Markdown table (index first), without extra dependencies."""
    cols = [df.index.name or ""] + [str(c) for c in df.columns]
    lines = ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    for idx, row in df.iterrows():
        lines.append("| " + " | ".join([f"{idx:g}" if isinstance(idx, float) else str(idx)]
                                       + [f"{v:g}" if isinstance(v, float) else str(v) for v in row])
                     + " |")
    return "\n".join(lines)


def table(df: pd.DataFrame) -> str:
    """Markdown table of means over seeds (avg JCT also as mean +- std)."""
    g = df.groupby("scheduler", sort=False)
    out = pd.DataFrame({
        "avg JCT (s)": g["avg_jct"].agg(lambda x: f"{x.mean():.0f} ± {x.std(ddof=0):.0f}"),
        "vs allox": g["avg_jct"].mean() / g["avg_jct"].mean()["allox"],
        "p99 JCT (s)": g["p99_jct"].mean().round(0),
        "makespan (s)": g["makespan"].mean().round(0),
        "util cpu": g["util_cpu"].mean().round(2),
        "util k80": g["util_k80"].mean().round(2),
        "progress std (AlloX)": g["allox_progress_std"].mean().round(4),
        "user_progress_std": g["user_progress_std"].mean().round(3),
        "decide p99 (ms)": g["decision_time_p99"].mean().round(2),
    })
    out["vs allox"] = out["vs allox"].map(lambda x: f"{x:.2f}x")
    return markdown(out)


def sweep_table(sw: pd.DataFrame) -> str:
    g = sw.groupby("alpha")
    return markdown(pd.DataFrame({
        "avg JCT (s)": g["avg_jct"].mean().round(0),
        "progress std (AlloX)": g["allox_progress_std"].mean().round(4),
        "user_progress_std": g["user_progress_std"].mean().round(3),
        "util cpu": g["util_cpu"].mean().round(2),
    }))


def plot(sw: pd.DataFrame, base: pd.DataFrame, path: Path) -> None:
    """Std of user progress vs average JCT across alpha (paper's Fig. 16)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from hetgym.io import write_atomic_figure

    g = sw.groupby("alpha")[["avg_jct", "allox_progress_std"]].mean()
    fig, ax = plt.subplots(figsize=(5.5, 4))
    ax.plot(g["avg_jct"], g["allox_progress_std"], "o-", label="AlloX (alpha)")
    for a, r in g.iterrows():
        ax.annotate(f"{a:g}", (r["avg_jct"], r["allox_progress_std"]), textcoords="offset points",
                    xytext=(4, 4), fontsize=8)
    b = base.groupby("scheduler")[["avg_jct", "allox_progress_std"]].mean()
    for name, mk in (("es", "s"), ("srpt", "^"), ("srpt[fastest-only]", "v"), ("drfs", "D")):
        if name in b.index:
            ax.plot(b.loc[name, "avg_jct"], b.loc[name, "allox_progress_std"], mk, label=name)
    ax.set_xlabel("average JCT (s)")
    ax.set_ylabel("std of user progress (time average)")
    ax.set_title("allox-hybrid: fairness vs performance")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    write_atomic_figure(fig, path, dpi=120)


def write_doc(path: Path, block: str, begin: str = BEGIN, end: str = END) -> None:
    """Replace the generated block of ``path`` between ``begin`` and ``end`` (or append it)."""
    text = path.read_text() if path.exists() else "# AlloX\n"
    new = f"{begin}\n{block}\n{end}"
    if begin in text and end in text:
        text = re.sub(re.escape(begin) + r".*?" + re.escape(end), lambda _: new, text, flags=re.DOTALL)
    else:
        text = text.rstrip() + "\n\n" + new + "\n"
    path.write_text(text)


def bench(n_jobs: int = 200, repeats: int = 30) -> str:
    """Time one AlloX decision on ``n_jobs`` waiting jobs x 40 free machines (allox-hybrid cluster)."""
    from hetgym.presets.allox import hybrid_cluster
    from hetgym.sim.engine import Simulator
    from hetgym.specs import Scenario, SimOptions
    from hetgym.workload import Workload

    rng = np.random.default_rng(0)
    df = pd.DataFrame({"job_id": np.arange(n_jobs), "arrival": 0.0,
                       "user": rng.integers(0, 10, n_jobs), "job_class": "BE", "workers": 1,
                       "work": rng.lognormal(np.log(1800.0) - 0.5, 1.0, n_jobs), "tput_k80": 1.0,
                       "tput_cpu": 1.0 / rng.uniform(1.8, 10.0, n_jobs), "cpus": 1.0, "mem_gb": 8.0})
    sc = Scenario(cluster=hybrid_cluster(), workload=Workload.from_frame(df),
                  options=SimOptions(cpu_slot_cores=20, restart_delay=0.0))
    lines = ["| alpha | window | starts | solves / decision | wall median (ms) | wall p90 (ms) "
             "| CPU median (ms) |", "|---|---|---|---|---|---|---|"]
    for a, window in ((0.1, None), (0.5, None), (0.5, 10), (1.0, None)):
        sim = Simulator(sc)
        sim.advance()
        s = AlloX(alpha=a, window=window)
        s.reset(sim.view)
        starts = len(s.decide(sim.view))  # warm-up (Numba kernels)
        s.solves = 0
        wall, cpu = [], []
        for _ in range(repeats):
            t, c = time.perf_counter(), time.process_time()
            s.decide(sim.view)
            wall.append(time.perf_counter() - t)
            cpu.append(time.process_time() - c)
        lines.append(f"| {a:g} | {window or '-'} | {starts} | {s.solves / repeats:.0f} | {np.median(wall) * 1e3:.1f} | "
                     f"{np.percentile(wall, 90) * 1e3:.1f} | {np.median(cpu) * 1e3:.1f} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    from hetgym.cli import plain_doc
    p = argparse.ArgumentParser(description=plain_doc(__doc__.split("\n\n")[0]))
    p.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    p.add_argument("--loads", type=float, nargs="+", default=[1.0, 1.2],
                   help="offered GPU load of allox-hybrid (first one is swept and plotted)")
    p.add_argument("--n-jobs", type=int, default=None, help="jobs of the trace excerpt (default all)")
    p.add_argument("--schedulers", nargs="+", default=list(SCHEDULERS), choices=list(SCHEDULERS))
    p.add_argument("--alphas", type=float, nargs="+", default=[0.1, 0.2, 0.3, 0.5, 0.7, 1.0])
    p.add_argument("--doc", type=Path, default=ROOT / "docs" / "allox.md")
    p.add_argument("--plot", type=Path, default=ROOT / "docs" / "img" / "allox_alpha.png")
    p.add_argument("--no-write", action="store_true", help="print only")
    p.add_argument("--bench", action="store_true", help="time AlloX decisions (200 jobs x 40 machines)")
    p.add_argument("--paper-regime", action="store_true",
                   help="the paper's simulation regime (allox-hybrid setting=paper), Figs. 11-16")
    p.add_argument("--quick", action="store_true", help="with --paper-regime: seeds 0-2, 2,000 jobs")
    p.add_argument("--diagnose", action="store_true",
                   help="with --paper-regime: device mix and waits behind the gaps (first seed)")
    p.add_argument("--csv", type=Path, default=None,
                   help="with --paper-regime: append each run's metrics to this CSV")
    p.add_argument("--from-csv", type=Path, default=None,
                   help="with --paper-regime: make the tables from a CSV of runs instead of running")
    args = p.parse_args(argv)
    cmd = "python scripts/allox_study.py " + " ".join(shlex.quote(a) for a in (argv or sys.argv[1:]))
    if args.bench:
        print(f"`{cmd.strip()}`\n\n{bench()}")
        return 0
    if args.paper_regime:
        return paper_main(args, cmd.strip())
    t0 = time.perf_counter()
    names = list(dict.fromkeys(["allox", *args.schedulers]))
    parts = [f"Generated by `{cmd.strip()}` (seeds {args.seeds}, {time.strftime('%Y-%m-%d')}).", ""]
    first_base = first_sweep = None
    for i, load in enumerate(args.loads):
        base, sw = study(args.seeds, load, args.n_jobs, names, args.alphas if i == 0 else [])
        if i == 0:
            first_base, first_sweep = base, sw
        parts += [f"### allox-hybrid, load {load:g} (mean over seeds)", "", table(base), ""]
    assert first_base is not None and first_sweep is not None
    parts += [f"### Alpha sweep, load {args.loads[0]:g}", "", sweep_table(first_sweep), "",
              f"![alpha sweep](img/{args.plot.name})",
              "", f"Total run time: {time.perf_counter() - t0:.0f} s."]
    block = "\n".join(parts)
    print(block)
    if not args.no_write:
        plot(first_sweep, first_base, args.plot)
        write_doc(args.doc, block)
    return 0


def paper_main(args: argparse.Namespace, cmd: str) -> int:
    """``--paper-regime``: run (or read) the regime, print and write its tables."""
    import allox_paper_study as ps

    t0 = time.perf_counter()
    seeds = args.seeds if "--seeds" in sys.argv else (ps.QUICK_SEEDS if args.quick else [0, 1, 2])
    if args.diagnose:
        print(ps.diagnose(seeds[0], args.n_jobs))
        return 0
    if args.from_csv is not None:
        df = pd.read_csv(args.from_csv)
    else:
        names = ps.QUICK if args.quick else ps.FULL
        n_jobs = args.n_jobs if args.n_jobs is not None else (ps.QUICK_JOBS if args.quick else None)
        df = ps.run(seeds, n_jobs, names, lambda s: print(s, file=sys.stderr, flush=True), args.csv)
    rows = ps.rows_from(df)
    block = "\n".join([
        (f"Generated by `{cmd}` ({time.strftime('%Y-%m-%d')}; runs: {len(df)}, "
         f"{df['cpu_s'].sum():.0f} s of simulation CPU time)."), "",
        "#### The paper's claims beside ours", "", ps.markdown(rows), "",
        "#### Every run (mean over seeds)", "", ps.runs_table(df)])
    print(block)
    print(f"({time.perf_counter() - t0:.0f} s)", file=sys.stderr)
    if not args.no_write and not args.quick:
        write_doc(args.doc, block, PBEGIN, PEND)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
