"""Held-out evaluation of the shipped models (docs/agents.md, "Pretrained models").

Two steps, both on the splits of :mod:`agents.evaluation.heldout` (train / validation / test parts
of one workload per family, sharing no jobs):

``--pick``: every registered baseline on windows of the *training* part, to find the
best baseline of each family (the behaviour-cloning teacher and the reference of the
table). Baselines that take more than ``--pick-budget`` seconds stop early (fewer
windows, marked), and errors are listed.

default: each shipped model and the baselines on the 32 *test* windows: per scheduler
the mean of the family's metric with a 95 % confidence interval (Student t over
windows), and for the model the per-window win rate against the best baseline (paired,
with the mean paired difference and its 95 % interval). The cross-trace row runs the
``hetero-small`` model (trained on Philly jobs) on Google jobs on the same cluster
(family ``google-on-hetero-small``). Models of every kind the loader ships
(MaskablePPO, residual policies) run through ``agents.load_pretrained``;
``--models`` keeps those models' rows; ``--update-cards`` writes the results into the
models' cards::

    python scripts/eval_agents.py --pick --out outputs/eval_agents
    python scripts/eval_agents.py --out outputs/eval_agents --update-cards
    python scripts/eval_agents.py --models hetero-small --out outputs/eval_agents/hs --update-cards
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from agents.evaluation.heldout import FAMILY_METRIC, part_windows, split

#: Best registered baseline per family on its training windows (``--pick``; docs/agents.md).
BEST = {"hetero-small": "allox", "google-hybrid": "allox", "fitgpp-lab": "fitgpp",
        "google-on-hetero-small": "allox"}
#: More baselines shown in the table.
SHOWN = {"hetero-small": ["fifo", "sjf", "allox+"], "google-hybrid": ["fifo", "sjf", "allox+"],
         "fitgpp-lab": ["fifo", "srpt", "allox+"], "google-on-hetero-small": ["fifo", "sjf", "allox+"]}
#: (family the test windows come from, shipped model that runs on them).
ROWS = [("hetero-small", "hetero-small"), ("google-hybrid", "google-hybrid"),
        ("fitgpp-lab", "fitgpp-lab"), ("google-on-hetero-small", "hetero-small")]


def ci95(x: np.ndarray) -> tuple[float, float]:
    """Mean and half-width of its 95 % Student-t interval."""
    from scipy import stats

    x = np.asarray(x, dtype=float)
    if len(x) < 2:
        return float(np.mean(x)), float("nan")
    return float(np.mean(x)), float(stats.t.ppf(0.975, len(x) - 1) * stats.sem(x))


#: Jobs per validation / test window of each family (the training configs' ``split.window_jobs``).
WINDOW_JOBS = {"hetero-small": 64, "google-hybrid": 32, "fitgpp-lab": 64, "google-on-hetero-small": 32}


def pick(families: Sequence[str], n_windows: int, budget: float, out: Path) -> pd.DataFrame:
    """Every registered baseline on ``n_windows`` windows of each family's training part."""
    import warnings

    import baselines
    import hetgym

    rows = []
    for fam in families:
        sp = split(fam, window_jobs=WINDOW_JOBS[fam])
        wins = part_windows(sp.base, 0, sp.bounds[1], WINDOW_JOBS[fam], n_windows)
        metric, cons = FAMILY_METRIC[fam]
        for name in baselines.names():
            t0, vals, cvals, unf, err = time.monotonic(), [], [], 0, ""
            for w in wins:
                try:
                    with warnings.catch_warnings():
                        warnings.simplefilter("ignore")
                        s = hetgym.simulate(w, baselines.make(name), seed=0).summary()
                except Exception as e:  # noqa: BLE001 - listed in the table
                    err = f"{type(e).__name__}: {str(e)[:80]}"
                    break
                vals.append(s[metric])
                cvals.append(s[cons] if cons else np.nan)
                unf += int(s["unfinished_jobs"])
                if time.monotonic() - t0 > budget:
                    break
            rows.append({"family": fam, "baseline": name, "windows": len(vals), "metric": metric,
                         "mean": np.mean(vals) if vals else np.nan, "constraint": cons,
                         "constraint_mean": np.mean(cvals) if cvals else np.nan,
                         "unfinished": unf, "error": err, "wall_s": time.monotonic() - t0})
            print(rows[-1], flush=True)
    df = pd.DataFrame(rows)
    out.mkdir(parents=True, exist_ok=True)
    df.to_csv(out / "pick.csv", index=False)
    return df


def model_label(c: dict[str, Any]) -> str:
    """A shipped model's kind as shown in the table (``residual, tau 0.25``; ``maskable_ppo``)."""
    if c["algo"] == "residual":
        return f"residual over {c['residual']['base']}, tau {c['tau']}"
    return str(c["algo"])


def evaluate(out: Path, update_cards: bool = False, models: Sequence[str] | None = None) -> str:
    """The held-out table (markdown); writes ``heldout.md``, ``heldout_runs.csv``.

    Every shipped model, of either kind (:data:`agents.pretrained.registry.MODEL_SUFFIX`), runs
    through :func:`agents.pretrained.registry.load_pretrained`; ``models`` keeps the rows of those
    models only (default: all)."""
    from agents.evaluation.windows import evaluate_on_windows
    from agents.pretrained.registry import (
        PRETRAINED_DIR,
        card,
        load_pretrained,
        pretrained_names,
    )

    shipped = set(pretrained_names())
    lines = ["| test windows | model | metric | model: mean ± 95% CI | best baseline: mean ± 95% CI "
             "| model − best (paired): mean ± 95% CI | model / best: geo-mean ratio | model wins / ties / "
             "losses | other baselines (mean) |", "|---|---|---|---|---|---|---|---|---|"]
    all_runs = []
    results: dict[str, dict[str, Any]] = {}
    for fam, model in ROWS:
        if model not in shipped:
            print(f"skip {fam}: model {model} not shipped", flush=True)
            continue
        if models is not None and model not in models:
            continue
        kind = model_label(card(model))
        sp = split(fam, window_jobs=WINDOW_JOBS[fam])
        metric, cons = FAMILY_METRIC[fam]
        best = BEST[fam]
        label = f"pretrained:{model}"
        scheds: dict[str, Any] = {label: lambda m=model: load_pretrained(m), best: best}
        scheds.update({b: b for b in SHOWN[fam] if b != best})
        t0 = time.monotonic()
        runs = evaluate_on_windows(scheds, sp.test)
        runs.insert(0, "family", fam)
        all_runs.append(runs)
        a = runs[runs.scheduler == label].sort_values("seed")
        b = runs[runs.scheduler == best].sort_values("seed")
        x, y = a[metric].to_numpy(), b[metric].to_numpy()
        d = x - y
        rel = 1e-9 * np.maximum(np.abs(y), 1.0)
        wins, ties = int((d < -rel).sum()), int((np.abs(d) <= rel).sum())
        m_a, h_a = ci95(x)
        m_b, h_b = ci95(y)
        m_d, h_d = ci95(d)
        geo = float(np.exp(np.mean(np.log(x / y))))
        unf = int(a["unfinished_jobs"].sum())
        extra = ", ".join(f"{k} {runs[runs.scheduler == k][metric].mean():.4g}"
                          for k in scheds if k not in (label, best))
        cons_txt = ""
        if cons:
            ca, cb = ci95(a[cons].to_numpy()), ci95(b[cons].to_numpy())
            cons_txt = (f"<br>{cons}: model {ca[0]:.3g} ± {ca[1]:.2g}, {best} {cb[0]:.3g} ± {cb[1]:.2g}")
        overlap = " (overlapping)" if sp.test_overlap else ""
        lines.append(f"| {fam}: {len(sp.test)} × {WINDOW_JOBS[fam]} jobs{overlap} | {model} ({kind}) | {metric} "
                     f"| {m_a:.4g} ± {h_a:.2g}{' (' + str(unf) + ' unfinished)' if unf else ''} "
                     f"| {best}: {m_b:.4g} ± {h_b:.2g} | {m_d:+.3g} ± {h_d:.2g} | {geo:.3f} "
                     f"| {wins} / {ties} / {len(d) - wins - ties} | {extra}{cons_txt} |")
        results[fam] = {"model": model, "kind": kind, "metric": metric, "windows": len(d), "mean": m_a, "ci95": h_a,
                        "best_baseline": best, "best_mean": m_b, "best_ci95": h_b,
                        "paired_diff": m_d, "paired_ci95": h_d, "geo_mean_ratio": geo, "wins": wins, "ties": ties,
                        "losses": len(d) - wins - ties, "unfinished_jobs": unf,
                        "split": sp.describe(), "wall_s": time.monotonic() - t0}
        if cons:
            results[fam][f"{cons}_mean"] = float(a[cons].mean())
            results[fam][f"{cons}_best_mean"] = float(b[cons].mean())
        print(lines[-1], flush=True)
    text = "\n".join(lines) + "\n"
    out.mkdir(parents=True, exist_ok=True)
    (out / "heldout.md").write_text(text)
    (out / "heldout.json").write_text(json.dumps(results, indent=1))
    if all_runs:
        pd.concat(all_runs).to_csv(out / "heldout_runs.csv", index=False)
    if update_cards:
        for fam, r in results.items():
            c = card(r["model"])
            c.setdefault("heldout", {})[fam] = r
            (PRETRAINED_DIR / f"{r['model']}.json").write_text(json.dumps(c, indent=1) + "\n")
    return text


def main(argv: Sequence[str] | None = None) -> int:
    """Command line (module docstring)."""
    from hetgym.cli import plain_doc
    p = argparse.ArgumentParser(description=plain_doc(__doc__), formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--pick", action="store_true", help="rank every baseline on training windows")
    p.add_argument("--families", default="hetero-small,google-hybrid,fitgpp-lab")
    p.add_argument("--pick-windows", type=int, default=6)
    p.add_argument("--pick-budget", type=float, default=120.0, help="seconds per baseline and family")
    p.add_argument("--out", type=Path, default=Path("outputs/eval_agents"))
    p.add_argument("--update-cards", action="store_true", help="write results into the model cards")
    p.add_argument("--models", default="", help="comma-separated shipped models to evaluate (default: all)")
    a = p.parse_args(argv)
    if a.pick:
        pick([f for f in a.families.split(",") if f], a.pick_windows, a.pick_budget, a.out)
    else:
        print(evaluate(a.out, a.update_cards, [m for m in a.models.split(",") if m] or None))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
