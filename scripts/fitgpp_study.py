"""FitGpp study on ``fitgpp-lab``: the paper's Tables 1-4 and Figs. 4-5 (sensitivity to s, P).

Runs FIFO, LRTP, RAND and FitGpp (s = 4) on the same workloads (one per seed, the
simulation seed being the same number), and reports mean +- std over seeds of:

* Table 1: TE and BE slowdown (1 + wait / execution) at the 50th, 95th, 99th percentiles;
* Table 2: re-scheduling intervals [min] at the 50th, 75th, 95th, 99th percentiles,
  from the preemption signal to the restart of the preempted job (also from the
  suspension, i.e. after the grace period);
* Table 3: share of preempted jobs with P = 1;
* Table 4: share of jobs preempted 1, 2, >= 3 times with P unlimited;
* Figs. 4-5: FitGpp's slowdown percentiles against s and against P (PNG, Agg).

Usage::

    python scripts/fitgpp_study.py                      # 2**13 jobs x 4 seeds (minutes)
    python scripts/fitgpp_study.py --paper              # 2**16 jobs x 8 seeds (as the paper)
    python scripts/fitgpp_study.py --bench              # time one 2**16-job FitGpp run
    python scripts/fitgpp_study.py --jobs 4096 --seeds 2 --no-sensitivity --workers 2

Results go to stdout and, with ``--out FILE.md``, to a Markdown file; the plots go
to ``--img-dir`` (default ``docs/img``) unless ``--no-sensitivity``.
"""

from __future__ import annotations

import argparse
import dataclasses
import itertools
import os
import sys
import time
from collections.abc import Iterable
from dataclasses import dataclass
from functools import lru_cache, partial
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from study_pool import process_pool

ALGOS = ("FIFO", "LRTP", "RAND", "FitGpp")


@dataclass(frozen=True)
class Task:
    """One simulation: algorithm, its parameters, the workload and the limit P."""

    algo: str
    seed: int
    n_jobs: int
    s: float = 4.0
    P: int | None = 1  # scheduler's and scenario's limit (None: unlimited)
    te_blocks_be: bool = True
    count_grace: bool | None = None  # PreemptiveFIFO.count_grace (None: the algorithm's default)
    tick: float | None = None  # diagnostic (PreemptiveFIFO.tick)
    load: float | None = None  # offered load (None: the generator's 2.0)
    arrivals: str = "controlled"  # fitgpp-lab's arrivals: controlled (load kept) or open


@lru_cache(maxsize=4)
def _scenario(n_jobs: int, seed: int, P: int | None, load: float | None,
              arrivals: str = "controlled"):
    import hetgym

    return hetgym.scenarios.get("fitgpp-lab", n_jobs=n_jobs, seed=seed, max_preemptions=P,
                                load=load, arrivals=arrivals)


def make_scheduler(task: Task) -> Any:
    """The scheduler of a task (FIFO: the registered ``fifo``'s parts, single-node)."""
    import baselines
    from baselines.fitgpp.schedulers import NodeLocalFIFO

    if task.algo == "FIFO":
        return NodeLocalFIFO()
    if task.algo == "FIFO-split":
        return baselines.make("fifo")
    name = {"LRTP": "lrtp", "RAND": "rand", "FitGpp": "fitgpp"}[task.algo]
    kw: dict[str, Any] = {"P": task.P, "te_blocks_be": task.te_blocks_be}
    if name == "fitgpp":
        kw["s"] = task.s
    sched = baselines.make(name, **kw)
    if task.count_grace is not None or task.tick is not None:
        cg = sched.count_grace if task.count_grace is None else task.count_grace
        sched = dataclasses.replace(sched, count_grace=cg, tick=task.tick)
    return sched


#: Each preemptive algorithm's own accounting of GP-held resources (baselines.fitgpp.schedulers).
DEFAULT_GRACE = {"LRTP": False, "RAND": False, "FitGpp": True}


def rescheduling_intervals(segments: Iterable[tuple], grace: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Intervals [s] (from the preemption signal, from the suspension) to the restart.

    A job's consecutive runs ``(s0, e0), (s1, e1)`` mean it was suspended at ``e0``,
    preempted at ``e0 - GP`` (the grace period ends exactly GP after the signal),
    and restarted at ``s1``.
    """
    runs: dict[int, list[tuple[float, float]]] = {}
    for job, a, b, *_ in segments:
        runs.setdefault(int(job), []).append((float(a), float(b)))
    sig, sus = [], []
    for j, r in runs.items():
        r.sort()
        for (a0, e0), (a1, _) in itertools.pairwise(r):
            sig.append(a1 - (e0 - grace[j]))
            sus.append(a1 - e0)
    return np.asarray(sig), np.asarray(sus)


def run_task(task: Task) -> dict[str, float]:
    """Simulate one task and return its metrics."""
    import hetgym

    sc = _scenario(task.n_jobs, task.seed, task.P, task.load, task.arrivals)
    sched = make_scheduler(task)
    t0 = time.perf_counter()
    res = hetgym.simulate(sc, sched, seed=task.seed)
    wall = time.perf_counter() - t0
    m = res.summary()
    jobs = res.jobs
    grace = sc.workload.frame["grace_period"].to_numpy(dtype=np.float64)
    sig, sus = rescheduling_intervals(res.segments, grace)
    pre = jobs["preemptions"].to_numpy()
    out: dict[str, float] = {
        "algo": task.algo, "seed": task.seed, "n_jobs": task.n_jobs, "s": task.s,
        "P": np.nan if task.P is None else task.P, "te_blocks_be": task.te_blocks_be,
        "count_grace": DEFAULT_GRACE.get(task.algo, True) if task.count_grace is None
        else task.count_grace, "tick": np.nan if task.tick is None else task.tick,
        "load": np.nan if task.load is None else task.load, "arrivals": task.arrivals,
        "wall_s": wall, "unfinished": m["unfinished_jobs"],
        "preempted_pct": 100.0 * float((pre > 0).mean()),
        "preempted_1_pct": 100.0 * float((pre == 1).mean()),
        "preempted_2_pct": 100.0 * float((pre == 2).mean()),
        "preempted_3plus_pct": 100.0 * float((pre >= 3).mean()),
        "preemptions": float(pre.sum()),
        "restarts": float(len(sig)),
        "makespan_h": m["makespan"] / 3600.0,
    }
    for c in ("te", "be"):
        for q in (50, 95, 99):
            out[f"{c}_p{q}"] = m[f"{c}_p{q}_slowdown"]
    for q in (50, 75, 95, 99):
        out[f"int_p{q}_min"] = float(np.percentile(sig, q)) / 60.0 if len(sig) else np.nan
        out[f"sus_p{q}_min"] = float(np.percentile(sus, q)) / 60.0 if len(sus) else np.nan
    log = getattr(sched, "log", None)
    if log is not None:
        te_served = {r.for_job for r in log}
        out["te_needing_preemption_pct"] = (100.0 * len(te_served)
                                            / max(1, int((jobs["job_class"] == "TE").sum())))
        out["victims_per_te"] = len(log) / len(te_served) if te_served else np.nan
        out["random_fallbacks"] = float(sum(r.reason == "random" for r in log)) if task.algo == "FitGpp" else np.nan
    return out


def _run_group(tasks: list[Task]) -> list[dict[str, float]]:
    return [run_task(t) for t in tasks]


def run_all(tasks: list[Task], workers: int) -> pd.DataFrame:
    """Run tasks (in parallel processes when ``workers > 1``), rows in the tasks' order.

    In parallel, the tasks of one workload (seed) go to one process, in turn, so each
    process builds a workload's scenarios once (their controlled arrivals take a FIFO
    simulation: about 16 s at 2**16 jobs).
    """
    if workers <= 1:
        return pd.DataFrame(_run_group(tasks))
    groups: dict[int, list[int]] = {}
    for i, t in enumerate(tasks):
        groups.setdefault(t.seed, []).append(i)
    rows: list[dict[str, float] | None] = [None] * len(tasks)
    with process_pool(workers) as ex:
        for idx, out in zip(groups.values(), ex.map(_run_group, [[tasks[i] for i in g] for g in groups.values()])):
            for i, r in zip(idx, out):
                rows[i] = r
    return pd.DataFrame(rows)


def _ms(x: pd.Series, fmt: str = "{:.2f}") -> str:
    x = x.dropna()
    if len(x) == 0:
        return "-"
    sd = float(x.std(ddof=1)) if len(x) > 1 else 0.0
    return f"{fmt.format(float(x.mean()))} ± {fmt.format(sd)}"


def table(df: pd.DataFrame, algos: list[str], cols: list[tuple[str, str]], fmt: str = "{:.2f}") -> str:
    """Markdown table: one row per algorithm, mean +- std over seeds per column."""
    head = "| | " + " | ".join(h for h, _ in cols) + " |"
    sep = "|---|" + "---|" * len(cols)
    lines = [head, sep]
    for a in algos:
        d = df[df["algo"] == a]
        if len(d) == 0:
            continue
        lines.append(f"| {a} | " + " | ".join(_ms(d[c], fmt) for _, c in cols) + " |")
    return "\n".join(lines)


SLOWDOWN_COLS = [("TE 50th", "te_p50"), ("TE 95th", "te_p95"), ("TE 99th", "te_p99"),
                 ("BE 50th", "be_p50"), ("BE 95th", "be_p95"), ("BE 99th", "be_p99")]


def main_tables(df: pd.DataFrame, dfinf: pd.DataFrame | None) -> str:
    """Tables 1-4 (and diagnostics) as Markdown."""
    algos = ["FIFO", "FIFO-split", "LRTP", "RAND", "FitGpp"]
    paper = paper_lines()
    out = ["**Table 1: percentiles of slowdown rates** (1 + wait / execution)", "",
           table(df, algos, SLOWDOWN_COLS) + "\n" + paper["t1"],
           "", "**Table 2: re-scheduling intervals [min]** (preemption signal to restart)", "",
           table(df, ["LRTP", "RAND", "FitGpp"],
                 [("50th", "int_p50_min"), ("75th", "int_p75_min"), ("95th", "int_p95_min"),
                  ("99th", "int_p99_min")]) + "\n" + paper["t2"],
           "", "Same, from the suspension (end of the grace period) to the restart:", "",
           table(df, ["LRTP", "RAND", "FitGpp"],
                 [("50th", "sus_p50_min"), ("75th", "sus_p75_min"), ("95th", "sus_p95_min"),
                  ("99th", "sus_p99_min")]),
           "", "**Table 3: proportion of preempted jobs [%] (P = 1)**", "",
           table(df, ["LRTP", "RAND", "FitGpp"], [("preempted", "preempted_pct")], "{:.3f}") + "\n" + paper["t3"],
           "", ("Diagnostics (P = 1): TE jobs that needed a preemption [%], victims per such TE job, "
           "FitGpp random fallbacks (runs' totals), TE p95 cut against FIFO [%]:"), ""]
    fifo95 = df[df["algo"] == "FIFO"].set_index("seed")["te_p95"]
    df = df.copy()
    df["te_p95_cut_pct"] = [100.0 * (1.0 - r.te_p95 / fifo95.get(r.seed, np.nan)) for r in df.itertuples()]
    out.append(table(df, ["LRTP", "RAND", "FitGpp"],
                     [("TE needing preemption [%]", "te_needing_preemption_pct"),
                      ("victims per TE", "victims_per_te"), ("random fallbacks", "random_fallbacks"),
                      ("TE p95 cut vs FIFO [%]", "te_p95_cut_pct")]))
    if dfinf is not None and len(dfinf):
        out += ["", "**Table 4: proportion of jobs preempted N times [%] (P unlimited)**", "",
                table(dfinf, ["LRTP", "RAND", "FitGpp"],
                      [("1", "preempted_1_pct"), ("2", "preempted_2_pct"), ("≥ 3", "preempted_3plus_pct")],
                      "{:.3f}") + "\n" + paper["t4"]]
    return "\n".join(out)


def sensitivity_plot(df: pd.DataFrame, key: str, path: Path, xlabel: str, log_x: bool = False,
                     inf_at: float | None = None) -> None:
    """FitGpp slowdown percentiles (mean +- std over seeds) against ``key``
    (``inf_at``: the x value that stands for unlimited, labelled ∞)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from hetgym.io import write_atomic_figure

    x = np.sort(df[key].unique().astype(np.float64))
    fig, axes = plt.subplots(1, 2, figsize=(9, 3.4), sharex=True)
    for ax, c, title in ((axes[0], "te", "TE jobs"), (axes[1], "be", "BE jobs")):
        for q, mk in ((50, "o"), (95, "s"), (99, "^")):
            g = df.groupby(key)[f"{c}_p{q}"]
            ax.errorbar(g.mean().index.to_numpy(dtype=np.float64), g.mean().to_numpy(), yerr=g.std(ddof=1).fillna(0).to_numpy(),
                        marker=mk, capsize=3, label=f"{q}th")
        ax.set_title(title)
        ax.set_xlabel(xlabel)
        ax.set_ylabel("slowdown rate")
        if log_x:
            ax.set_xscale("symlog", linthresh=0.5)
        ax.set_xticks(x)
        ax.set_xticklabels(["∞" if v == inf_at else f"{v:g}" for v in x])
        ax.grid(alpha=0.3)
    axes[0].legend()
    n = int(df["n_jobs"].iloc[0])
    seeds = df["seed"].nunique()
    fig.suptitle(f"FitGpp on fitgpp-lab ({n} jobs, {seeds} seeds; mean ± std)", fontsize=10)
    fig.tight_layout()
    write_atomic_figure(fig, path, dpi=120)


def report(df: pd.DataFrame, img_dir: Path | None, arrivals: str = "controlled") -> str:
    """All tables (and the plots, into ``img_dir``) from the runs' metrics.

    Runs are told apart by their columns: main runs have P = 1, s = 4 and the
    default decision rule; Table 4 runs have P unlimited; the sweeps vary s or P
    for FitGpp; the diagnostics change ``count_grace`` or ``tick``. ``arrivals`` names the
    arrival reading when the runs do not record it (CSVs written before that column).
    """
    df = df.copy()
    rule = default_rule(df)
    main_df, inf_df = split_runs(df)
    n, seeds, load = int(df["n_jobs"].iloc[0]), sorted(df["seed"].unique()), df.get("load")
    lo = 2.0 if load is None or load.isna().all() else float(load.dropna().iloc[0])
    arr = str(df["arrivals"].iloc[0]) if "arrivals" in df else arrivals
    how = "load in the system kept at" if arr == "controlled" else "offered load"
    text = [(f"fitgpp-lab, {n} jobs per workload, {arr} arrivals ({how} {lo:g}), seeds "
             f"{seeds[0]}..{seeds[-1]} (mean ± std over {len(seeds)} seeds)"), "",
            main_tables(main_df, inf_df)]
    ab = df[(df["P"] == 1) & (df["s"] == 4.0) & df["algo"].isin(["LRTP", "RAND", "FitGpp"])]
    if (~rule[ab.index]).any():
        ab = ab.assign(algo=[f"{r.algo}, " + ("60-s ticks" if r.tick == 60.0 else
                                               "default" if bool(r.count_grace) == DEFAULT_GRACE[r.algo]
                                               else "GP counted" if r.count_grace else "GP not counted")
                             for r in ab.itertuples()])
        rows = [f"{al}, {v}" for v in ("default", "GP counted", "GP not counted", "60-s ticks")
                for al in ("LRTP", "RAND", "FitGpp")]
        rows = [r for r in rows if r in set(ab["algo"])]
        text += ["", "**Diagnostics: how the decision rule changes Table 3 (P = 1)**", "",
                 table(ab, rows, [("preempted [%]", "preempted_pct"), ("TE 50th", "te_p50"),
                                  ("TE 95th", "te_p95"), ("BE 50th", "be_p50"), ("BE 95th", "be_p95"),
                                  ("victims per TE", "victims_per_te")])]
    fit = df[rule & (df["algo"] == "FitGpp")]
    sdf = fit[fit["P"] == 1]
    if sdf["s"].nunique() > 1:
        if img_dir is not None:
            sensitivity_plot(sdf, "s", img_dir / "fitgpp_sensitivity_s.png", "s (eq. 3)", log_x=True)
        svals = sorted(sdf["s"].unique())
        text += ["", "**Sensitivity to s (P = 1)**", "",
                 table(sdf.assign(algo=[f"s = {v:g}" for v in sdf["s"]]), [f"s = {v:g}" for v in svals],
                       SLOWDOWN_COLS + [("preempted [%]", "preempted_pct")])]
    pdf = fit[fit["s"] == 4.0]
    if pdf["P"].fillna(-1).nunique() > 1:
        big = int(max(pdf["P"].dropna().max(), 1) * 2)
        pdf = pdf.assign(P=pdf["P"].fillna(big))
        if img_dir is not None:
            sensitivity_plot(pdf, "P", img_dir / "fitgpp_sensitivity_P.png",
                             "P (max preemptions per BE job)", inf_at=big)
        labels = {p: (f"P = {int(p)}" if p != big else "P = ∞") for p in sorted(pdf["P"].unique())}
        text += ["", "**Sensitivity to P (s = 4)**", "",
                 table(pdf.assign(algo=[labels[p] for p in pdf["P"]]), list(labels.values()),
                       SLOWDOWN_COLS + [("preempted [%]", "preempted_pct")])]
    return "\n".join(text)


#: The paper's numbers (Yabuuchi et al., sec. 4.2: 2**16 jobs x 8 workloads, s = 4).
#: Table 1: slowdown percentiles TE 50/95/99, BE 50/95/99.
PAPER_T1 = {"FIFO": (9.38, 33.4, 48.5, 2.78, 4.89, 8.21), "LRTP": (1.00, 1.17, 1.58, 3.78, 7.25, 12.5),
            "RAND": (1.00, 1.17, 1.58, 3.87, 7.49, 12.9), "FitGpp": (1.00, 1.15, 1.54, 3.28, 6.06, 10.3)}
#: Table 2: re-scheduling intervals [min] at the 50/75/95/99th percentiles.
PAPER_T2 = {"LRTP": (4.0, 4.0, 5.0, 7.0), "RAND": (4.0, 4.0, 6.0, 7.0), "FitGpp": (2.0, 2.0, 4.0, 6.0)}
#: Table 3: share of preempted jobs [%] (P = 1).
PAPER_T3 = {"LRTP": 9.6, "RAND": 9.7, "FitGpp": 0.63}
#: Table 4: share of jobs preempted 1, 2, >= 3 times [%] (P unlimited).
PAPER_T4 = {"LRTP": (6.3, 1.2, 0.34), "RAND": (8.8, 0.48, 0.019), "FitGpp": (0.52, 0.038, 0.0098)}
#: Sec. 4.2 text / abstract: TE p95 cut, BE p50 and p95 rise of FitGpp against FIFO [%].
PAPER_TEXT = {"te_p95_cut": 96.6, "be_p50_rise": 18.0, "be_p95_rise": 23.9}


def paper_lines() -> dict[str, str]:
    """The paper's Tables 1-4 as Markdown table rows, to print under ours."""
    f = "{:g}".format
    return {
        "t1": "\n".join(f"| paper: {a} | " + " | ".join(map(f, v)) + " |" for a, v in PAPER_T1.items()),
        "t2": "\n".join(f"| paper: {a} | " + " | ".join(map(f, v)) + " |" for a, v in PAPER_T2.items()),
        "t3": "\n".join(f"| paper: {a} | {f(v)} |" for a, v in PAPER_T3.items()),
        "t4": "\n".join(f"| paper: {a} | " + " | ".join(map(f, v)) + " |" for a, v in PAPER_T4.items()),
    }


def default_rule(df: pd.DataFrame) -> pd.Series:
    """Runs with each algorithm's own accounting of GP-held resources and no decision tick."""
    own = df["algo"].map(DEFAULT_GRACE).fillna(True).astype(bool)
    return (df["count_grace"].astype(bool) == own) & df["tick"].isna()


def split_runs(df: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The main runs (P = 1, s = 4, each algorithm's own decision rule) and Table 4's (P unlimited)."""
    base = default_rule(df) & (df["s"] == 4.0)
    return (df[base & (df["P"] == 1)],
            df[base & df["P"].isna() & df["algo"].isin(["LRTP", "RAND", "FitGpp"])])


def bench(n_jobs: int, seed: int, load: float | None = None) -> None:
    """Time scenario build and one FitGpp run (the compile is warmed on a tiny run first)."""
    import baselines
    import hetgym

    hetgym.simulate(hetgym.scenarios.get("fitgpp-lab", n_jobs=256, seed=seed), baselines.make("fitgpp"))
    t0 = time.perf_counter()
    sc = hetgym.scenarios.get("fitgpp-lab", n_jobs=n_jobs, seed=seed, load=load)
    t1 = time.perf_counter()
    res = hetgym.simulate(sc, baselines.make("fitgpp"), seed=seed)
    t2 = time.perf_counter()
    m = res.summary()
    print(f"fitgpp-lab n_jobs={n_jobs} seed={seed}: build {t1 - t0:.1f} s, simulate {t2 - t1:.1f} s "
          f"(events {int(m['events'])}, decision points {int(m['decision_points'])}, "
          f"decide p50 {m['decision_time_p50']:.3f} ms p99 {m['decision_time_p99']:.3f} ms), "
          f"total {t2 - t0:.1f} s")


def main(argv: list[str] | None = None) -> int:
    """Command line entry point."""
    from hetgym.cli import plain_doc
    ap = argparse.ArgumentParser(description=plain_doc(__doc__), formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--jobs", type=int, default=2**13, help="jobs per workload (default 2**13)")
    ap.add_argument("--seeds", type=int, default=4, help="workloads = simulation seeds 0..n-1")
    ap.add_argument("--paper", action="store_true", help="paper size: 2**16 jobs, 8 seeds")
    ap.add_argument("--workers", type=int, default=os.cpu_count() or 1, help="parallel processes")
    ap.add_argument("--no-sensitivity", action="store_true", help="skip the s and P sweeps")
    ap.add_argument("--no-table4", action="store_true", help="skip the P = unlimited runs")
    ap.add_argument("--ablation", action="store_true",
                    help="also run LRTP/RAND/FitGpp with the other accounting of GP-held "
                         "resources and with 60-s decision ticks (diagnostics of Table 3)")
    ap.add_argument("--s-values", type=str, default="0,0.5,1,2,4,8,16")
    ap.add_argument("--p-values", type=str, default="1,2,3,4,inf")
    ap.add_argument("--load", type=float, default=None,
                    help="offered load of the workloads (default: the generator's 2.0)")
    ap.add_argument("--arrivals", choices=("controlled", "open"), default="controlled",
                    help="fitgpp-lab arrivals: load in the system kept at 2.0 under FIFO "
                         "(default) or an offered load of 2.0 (open loop)")
    ap.add_argument("--img-dir", type=Path, default=Path("docs/img"))
    ap.add_argument("--out", type=Path, default=None, help="write the tables to this Markdown file")
    ap.add_argument("--csv", type=Path, default=None, help="write every run's metrics to this CSV")
    ap.add_argument("--bench", action="store_true", help="only time one FitGpp run (2**16 jobs)")
    ap.add_argument("--from-csv", type=Path, default=None,
                    help="do not simulate: render tables and plots from a --csv of an earlier run")
    a = ap.parse_args(argv)
    if a.bench:
        bench(2**16 if a.jobs == 2**13 else a.jobs, 0, a.load)
        return 0
    if a.paper:
        a.jobs, a.seeds = 2**16, max(a.seeds, 8)
    seeds = list(range(a.seeds))
    T = partial(Task, load=a.load, arrivals=a.arrivals)
    t0 = time.perf_counter()
    tasks = [T(al, sd, a.jobs) for sd in seeds for al in ("FIFO", "FIFO-split", "LRTP", "RAND", "FitGpp")]
    if not a.no_table4:
        tasks += [T(al, sd, a.jobs, P=None) for sd in seeds for al in ("LRTP", "RAND", "FitGpp")]
    svals = [float(x) for x in a.s_values.split(",")] if not a.no_sensitivity else []
    pvals = [None if x.strip() in ("inf", "none") else int(x) for x in a.p_values.split(",")] \
        if not a.no_sensitivity else []
    tasks += [T("FitGpp", sd, a.jobs, s=s) for s in svals if s != 4.0 for sd in seeds]
    tasks += [T("FitGpp", sd, a.jobs, P=p) for p in pvals if p not in (1, None) for sd in seeds]
    if a.ablation:
        tasks += [T(al, sd, a.jobs, count_grace=not DEFAULT_GRACE[al]) for sd in seeds
                  for al in ("LRTP", "RAND", "FitGpp")]
        tasks += [T(al, sd, a.jobs, tick=60.0) for sd in seeds for al in ("LRTP", "RAND", "FitGpp")]
    if a.from_csv is not None:
        df = pd.read_csv(a.from_csv)
        header = f"(re-rendered from {a.from_csv})"
    else:
        print(f"{len(tasks)} runs of {a.jobs} jobs on {a.workers} processes ...", file=sys.stderr)
        df = run_all(tasks, a.workers)
        header = (f"({len(tasks)} runs, {time.perf_counter() - t0:.0f} s wall on {a.workers} "
                  f"processes; mean run {df['wall_s'].mean():.1f} s)")
    if a.csv:
        a.csv.parent.mkdir(parents=True, exist_ok=True)
        df.to_csv(a.csv, index=False)
    text = [report(df, a.img_dir, a.arrivals), "", header]
    out = "\n".join(text)
    print(out)
    if a.out:
        a.out.parent.mkdir(parents=True, exist_ok=True)
        a.out.write_text(out + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
