"""AlloX in the paper's simulation regime: Figures 11-16's comparisons beside the paper's.

Runs AlloX (alpha 0.1, 0.2, 0.5, 1), AlloX+, DRFF, DRFS, ES, DRFA and SRPT on
``allox-hybrid`` with
``setting="paper"`` (:mod:`hetgym.presets.allox_paper`: 10 users x 1,024 jobs, load 0.9 on
speed-weighted capacity), and turns the runs into rows: the paper's value (a number where
the text gives one, else the side of a neutral value it claims), ours, the ratio and
whether the direction holds, with how many seeds agree.

SRPT is the paper's (sec. 5.1: "at any time, the job with the shortest remaining
processing time is executed", "preemptive at no cost"): ``srpt[migrate]``
(``baselines.make("srpt", migrate=True)``), every job re-planned at every event on its
fastest device type with room, moves free in this regime (no restart delay, no checkpoint
loss). The paper does not say how its SRPT picks a device; ``srpt[migrate,fastest-only]``
waits for the fastest type instead, and both gaps are shown. The registered sticky ``srpt``
(a running job never moves) is run for the runs table only.

The figures' claims come from the text (sec. 5.2.1-5.2.4); Figs. 11-12 are the paper's
12-node cluster, so their qualitative claims (AlloX lowest JCT; DRFF/DRFS leave the CPUs
idle, ES/DRFA use them) are checked in the simulated regime.

Used by ``python scripts/allox_study.py --paper-regime [--quick]``; other scripts import
:func:`paper_regime_rows` (rows as dicts with exactly the fields of
``hetgym.reproduction.Row``, :data:`ROW_FIELDS`).
"""

from __future__ import annotations

import math
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
LINK = "allox.md#the-papers-regime"
SETTING = "allox-hybrid, setting=paper"

#: Sec. 5.2.2 (Fig. 13): AlloX (alpha 0.1) reduces the average JCT by this much [%].
PAPER_REDUCTION = {"drff": 95.0, "drfs": 84.0, "es": 88.0, "drfa": 53.0}
#: Sec. 5.2.2: AlloX "not far (30%) from SRPT"; sec. 5.2.4 (Fig. 16): 9% at alpha = 1.
PAPER_SRPT_GAP = {"allox": 30.0, "allox[alpha=1]": 9.0}

#: The paper's SRPT (see the module docstring) and its device-choice variant.
SRPT, SRPT_FASTEST = "srpt[migrate]", "srpt[migrate,fastest-only]"
FULL = ["allox", "allox[alpha=0.2]", "allox[alpha=0.5]", "allox[alpha=1]", "allox+", "drff", "drfs",
        "es", "drfa", "srpt", SRPT, SRPT_FASTEST]
QUICK = ["allox", "allox[alpha=1]", "allox+", "drff", "drfs", "es", "drfa", "srpt", SRPT, SRPT_FASTEST]
QUICK_JOBS = 2000
QUICK_SEEDS = [0, 1, 2]


def make(name: str) -> Any:
    """A scheduler of the study by name (``allox[alpha=a]`` for other alphas)."""
    import baselines
    from baselines.allox.schedulers import AlloX
    from baselines.classic.schedulers import SRPT
    from baselines.common.parts import FastestOnly

    if name.startswith("allox[alpha="):
        return AlloX(alpha=float(name[len("allox[alpha="):-1]))
    if name == "srpt[fastest-only]":
        return SRPT(devices=FastestOnly())
    if name == "srpt[migrate]":
        return baselines.make("srpt", migrate=True)
    if name == "srpt[migrate,fastest-only]":
        return baselines.make("srpt", migrate=True, device="fastest")
    return baselines.make(name)


def run_metrics(sc: Any, name: str, seed: int) -> dict[str, float]:
    """One run: avg JCT, CPU/GPU utilisation, the paper's fairness metric (time-averaged
    std of user progress), the avg JCT of the longest 1% jobs (by best duration) and the
    jobs of the user with the longest jobs completed by the last arrival (Fig. 15)."""
    import hetgym
    from baselines.allox.shares import allox_progress_timeline

    t = time.process_time()
    res = hetgym.simulate(sc, make(name), seed=seed)
    cpu_s = time.process_time() - t
    m = res.summary()
    jobs = res.jobs
    best = jobs["best_duration"].to_numpy(float)
    top = best >= np.quantile(best, 0.99)
    user_len = jobs.groupby("user")["best_duration"].mean()
    longest_user = int(user_len.idxmax())
    last_arrival = float(jobs["arrival"].max())
    mine = jobs["user"].to_numpy() == longest_user
    done = int(((jobs["end"].to_numpy(float) <= last_arrival) & jobs["finished"].to_numpy(bool) & mine).sum())
    std, _ = allox_progress_timeline(res, sc)
    return {**device_mix(jobs), "avg_jct": float(m["avg_jct"]), "util_cpu": float(m["util_cpu"]),
            "util_k80": float(m["util_k80"]), "progress_std": float(std),
            "long1_jct": float(jobs["jct"].to_numpy(float)[top].mean()),
            "longuser_done": float(done), "longuser_jobs": float(mine.sum()),
            "unfinished": float(m["unfinished_jobs"]), "cpu_s": cpu_s}


def device_mix(jobs: pd.DataFrame, timeout: float = 3600.0) -> dict[str, float]:
    """Where the jobs ran and how long they waited: share of jobs on the CPUs, their mean
    run time over their best run time, and the share that waited longer than ``timeout``."""
    cpu = (jobs["device"] == "cpu").to_numpy()
    slow = (jobs["exec_time"] / jobs["best_duration"]).to_numpy(float)
    return {"on_cpu": float(cpu.mean()), "cpu_slowdown": float(slow[cpu].mean()) if cpu.any() else 0.0,
            "slowdown": float(slow.mean()), "waited_1h": float((jobs["wait"] > timeout).mean())}


def diagnose(seed: int = 0, n_jobs: int | None = None) -> str:
    """Evidence for the gaps: device mix of AlloX, DRFA, ES, both SRPTs and AlloX+ at three
    timeouts, and the spread of the users' mean speedups (what DRFA averages over)."""
    import hetgym
    from baselines.allox.plus import AlloXPlus

    sc = hetgym.scenarios.get("allox-hybrid", setting="paper", seed=seed, n_jobs=n_jobs)
    f = sc.workload.frame
    per_user = (f["tput_k80"] / f["tput_cpu"]).groupby(f["user"]).mean()
    lines = [(f"seed {seed}: users' mean GPU/CPU speedup {per_user.min():.2f}-{per_user.max():.2f} "
              f"(std {per_user.std(ddof=0):.2f})"), "",
             ("| scheduler | avg JCT (s) | jobs on CPUs | their run time / best | all jobs: run time / best "
              "| waited > 1 h |"), "|---|---|---|---|---|---|"]
    runs = [(n, lambda n=n: make(n)) for n in ("allox", "drfa", "es", "srpt", SRPT, SRPT_FASTEST, "allox+")]
    runs += [(f"allox+[timeout={t}]", lambda v=v: AlloXPlus(timeout=v))
             for t, v in (("4h", 4 * 3600.0), ("inf", float("inf")))]
    for name, mk in runs:
        res = hetgym.simulate(sc, mk(), seed=seed)
        m = device_mix(res.jobs)
        lines.append(f"| {name} | {res.jobs['jct'].mean():.0f} | {m['on_cpu']:.3f} | {m['cpu_slowdown']:.2f} "
                     f"| {m['slowdown']:.2f} | {m['waited_1h']:.3f} |")
    return "\n".join(lines)


def run(seeds: list[int], n_jobs: int | None, names: list[str], log: Callable[[str], None] | None = None,
        csv: Path | None = None) -> pd.DataFrame:
    """Every (scheduler, seed) of the regime; one row each (appended to ``csv`` as it goes)."""
    import hetgym
    from hetgym.presets.allox_paper import offered_loads

    rows = []
    for seed in seeds:
        sc = hetgym.scenarios.get("allox-hybrid", setting="paper", seed=seed, n_jobs=n_jobs)
        loads = offered_loads(sc)
        for name in names:
            m = run_metrics(sc, name, seed)
            row = {"scheduler": name, "seed": seed, "n_jobs": len(sc.workload.frame),
                   "load_hybrid": loads["hybrid"], "load_gpu_only": loads["gpu_only"], **m}
            rows.append(row)
            if log:
                log(f"  seed={seed} {name:20s} avg_jct={m['avg_jct']:9.0f} s  ({m['cpu_s']:.1f} s CPU)")
            if csv is not None:
                csv.parent.mkdir(parents=True, exist_ok=True)
                pd.DataFrame([row]).to_csv(csv, mode="a", header=not csv.exists(), index=False)
    return pd.DataFrame(rows)


def _row(claim: str, source: str, paper: float | None, per_seed: pd.Series, neutral: float,
         sense: str | None = None, note: str = "", setting: str = SETTING) -> dict[str, Any]:
    """A row with ``hetgym.reproduction.Row``'s fields, plus the per-seed agreement."""
    side = (">" if paper > neutral else "<") if paper is not None else sense
    vals = per_seed.to_numpy(float)
    ok = (vals > neutral) if side == ">" else (vals < neutral)
    return {"family": "AlloX", "claim": claim, "source": source, "paper": paper,
            "ours": float(np.mean(vals)), "check": "side", "neutral": neutral,
            "sense": None if paper is not None else sense, "setting": setting, "link": LINK,
            "note": note, "example": False, "seeds_agree": f"{int(ok.sum())}/{len(vals)}",
            "ours_std": float(np.std(vals)) if len(vals) > 1 else 0.0}


def rows_from(df: pd.DataFrame) -> list[dict[str, Any]]:
    """The comparisons of Figs. 11-16 from the runs (:func:`run`'s frame)."""
    piv = {k: df.pivot_table(index="seed", columns="scheduler", values=k)
           for k in ("avg_jct", "util_cpu", "progress_std", "long1_jct", "longuser_done")}
    j, u, s, lg, ld = (piv[k] for k in ("avg_jct", "util_cpu", "progress_std", "long1_jct", "longuser_done"))
    n, seeds = int(df["n_jobs"].iloc[0]), sorted(df["seed"].unique().tolist())
    setting = (f"{SETTING}, {n:,} jobs, load {df['load_hybrid'].iloc[0]:.2g} "
               f"(GPUs alone {df['load_gpu_only'].mean():.2f}), seeds {','.join(map(str, seeds))}")
    has = set(df["scheduler"])
    out = []
    for b, paper in PAPER_REDUCTION.items():
        out.append(_row(f"avg JCT reduction, AlloX (alpha 0.1) vs {b.upper()} [%]", "sec. 5.2.2, Fig. 13",
                        paper, 100.0 * (1.0 - j["allox"] / j[b]), 0.0, setting=setting))
    for a, gap in PAPER_SRPT_GAP.items():
        if a not in has:
            continue
        src = "sec. 5.2.2, Fig. 13" if a == "allox" else "sec. 5.2.4, Fig. 16"
        out.append(_row(f"avg JCT above SRPT, {a} [%]", src, gap,
                        100.0 * (j[a] / j[SRPT] - 1.0), 0.0, setting=setting,
                        note="the paper's SRPT: every job re-planned at every event, fastest type with "
                             "room, moves free"))
        out.append(_row(f"avg JCT above SRPT waiting for the fastest type, {a} [%]", src, gap,
                        100.0 * (j[a] / j[SRPT_FASTEST] - 1.0), 0.0, setting=setting,
                        note="the same SRPT with the other device choice the paper leaves open"))
    base = j[list(PAPER_REDUCTION)].min(axis=1)
    out.append(_row("avg JCT reduction, AlloX+ vs the best of DRFF/DRFS/ES/DRFA [%]", "sec. 5.2.2, Fig. 13",
                    None, 100.0 * (1.0 - j["allox+"] / base), 0.0, ">", setting=setting,
                    note="'much better than other baselines'"))
    out.append(_row("longest 1% jobs: avg JCT, AlloX / SRPT", "sec. 5.2.2, Fig. 13", None,
                    lg["allox"] / lg[SRPT], 1.0, "<", setting=setting,
                    note="'AlloX has even larger improvements and beats SRPT'"))
    for b, sense in ((SRPT, ">"), ("drfa", ">"), ("drff", "<"), ("drfs", "<"), ("es", "<")):
        out.append(_row(f"std of user progress, {b} / AlloX", "sec. 5.2.2, Fig. 14", None,
                        s[b] / s["allox"], 1.0, sense, setting=setting,
                        note="SRPT, DRFA 'much worse'; DRFF, DRFS, ES 'a little better'"))
    # the paper's schedulers only (the sticky SRPT and the device-choice variant are ours)
    others = [c for c in ld.columns if c != "allox" and not c.startswith("allox[")
              and c not in ("srpt", "srpt[fastest-only]", SRPT_FASTEST)]
    out.append(_row("longest-jobs user, jobs done by the last arrival: AlloX / best other", "sec. 5.2.3, Fig. 15",
                    None, ld["allox"] / ld[others].max(axis=1), 1.0, ">", setting=setting,
                    note="'AlloX provides the best progress of this user'"))
    rest = [c for c in others if c != SRPT]
    out.append(_row("longest-jobs user, jobs done by the last arrival: SRPT / worst other",
                    "sec. 5.2.3, Fig. 15", None, ld[SRPT] / ld[rest].min(axis=1), 1.0, "<",
                    setting=setting, note="'SRPT performs the worst with the least number of jobs finished'"))
    if "allox[alpha=1]" in has:
        out.append(_row("avg JCT, AlloX alpha 1 / alpha 0.1", "sec. 5.2.4, Fig. 16", None,
                        j["allox[alpha=1]"] / j["allox"], 1.0, "<", setting=setting,
                        note="'a larger alpha reduces completion times'"))
        out.append(_row("std of user progress, AlloX alpha 1 / alpha 0.1", "sec. 5.2.4, Fig. 16", None,
                        s["allox[alpha=1]"] / s["allox"], 1.0, ">", setting=setting,
                        note="'at the cost of fairness'"))
    for b in ("drff", "drfs"):
        out.append(_row(f"CPU utilisation, {b.upper()} minus AlloX", "sec. 5.2.1, Fig. 12", None,
                        u[b] - u["allox"], 0.0, "<", setting=setting,
                        note="'DRFF and DRFS do not fully utilize the CPU resources' (cluster figure)"))
    for b in ("es", "drfa"):
        out.append(_row(f"CPU utilisation, {b.upper()} minus DRFS", "sec. 5.2.1, Fig. 12", None,
                        u[b] - u["drfs"], 0.0, ">", setting=setting,
                        note="'ES and DRFA reduce the waiting time by increasing the CPU utilization'"))
    return out


#: The fields of ``hetgym.reproduction.Row`` that :func:`paper_regime_rows` fills.
ROW_FIELDS = ("family", "claim", "source", "paper", "ours", "check", "neutral", "sense", "setting", "link",
              "note", "example")


def paper_regime_rows(quick: bool = False, seeds: list[int] | None = None, n_jobs: int | None = None,
                      csv: Path | None = None) -> list[dict[str, Any]]:
    """Run the paper's regime and return its rows (Figs. 11-16; :func:`rows_from`).

    ``quick``: seeds 0-2 at 2,000 jobs (200 per user) and no alpha 0.2 / 0.5 runs.
    Otherwise seeds 0-2 at the paper's size (10 x 1,024 jobs).
    Each row is a dict with exactly the fields of ``hetgym.reproduction.Row``
    (:data:`ROW_FIELDS`: ``Row(**row)`` builds it); the note ends with how many seeds
    agree with the paper's direction.
    """
    if seeds is None:
        seeds = QUICK_SEEDS if quick else [0, 1, 2]
    if n_jobs is None and quick:
        n_jobs = QUICK_JOBS
    log = lambda s: print(s, file=sys.stderr, flush=True)
    rows = rows_from(run(seeds, n_jobs, QUICK if quick else FULL, log, csv))
    out = []
    for r in rows:
        row = {k: r[k] for k in ROW_FIELDS}
        agree = f"direction on {r['seeds_agree']} seeds"
        row["note"] = f"{r['note']}; {agree}" if r["note"] else agree
        out.append(row)
    return out


def _fmt(x: float | None) -> str:
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return "-"
    return f"{x:.3g}" if abs(x) < 10 else f"{x:.0f}"


def holds(r: dict[str, Any]) -> bool:
    """Whether ours lies on the paper's side of the neutral value."""
    side = r["sense"] if r["paper"] is None else (">" if r["paper"] > r["neutral"] else "<")
    return r["ours"] > r["neutral"] if side == ">" else r["ours"] < r["neutral"]


def markdown(rows: list[dict[str, Any]]) -> str:
    """The rows as a Markdown table."""
    lines = ["| figure | claim | paper | ours (mean ± std over seeds) | ours / paper | direction holds (seeds) |",
             "|---|---|---|---|---|---|"]
    for r in rows:
        paper = _fmt(r["paper"]) if r["paper"] is not None else f"{r['sense']} {r['neutral']:g}"
        ratio = _fmt(r["ours"] / r["paper"]) if r["paper"] else "-"
        ours = _fmt(r["ours"]) + (f" ± {_fmt(r['ours_std'])}" if r["ours_std"] else "")
        lines.append(f"| {r['source']} | {r['claim']} | {paper} | {ours} | {ratio} | "
                     f"{'yes' if holds(r) else '**no**'} ({r['seeds_agree']}) |")
    return "\n".join(lines)


def runs_table(df: pd.DataFrame) -> str:
    """Per-scheduler means over seeds (avg JCT, CPU/GPU utilisation, progress std, ...)."""
    g = df.groupby("scheduler", sort=False)
    out = pd.DataFrame({
        "avg JCT (s)": g["avg_jct"].agg(lambda x: f"{x.mean():.0f} ± {x.std(ddof=0):.0f}"),
        "vs allox": (g["avg_jct"].mean() / g["avg_jct"].mean()["allox"]).map(lambda x: f"{x:.2f}x"),
        "longest 1% JCT (s)": g["long1_jct"].mean().round(0),
        "util cpu": g["util_cpu"].mean().round(2),
        "util k80": g["util_k80"].mean().round(2),
        "progress std": g["progress_std"].mean().round(4),
        "long user done": g["longuser_done"].mean().round(0),
        "unfinished": g["unfinished"].mean().round(0),
        "CPU s / run": g["cpu_s"].mean().round(1),
    })
    lines = ["| scheduler | " + " | ".join(out.columns) + " |", "|" + "---|" * (len(out.columns) + 1)]
    for idx, row in out.iterrows():
        lines.append(f"| {idx} | " + " | ".join(f"{v:g}" if isinstance(v, float) else str(v) for v in row) + " |")
    return "\n".join(lines)
