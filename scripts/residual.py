"""A gated residual policy over a baseline (``agents.residual``), from a config in ``conf/experiment/``.

The base is ``residual.base`` (AlloX for ``hetero-small``, FitGpp for ``fitgpp-lab``); the
value the teacher minimises is the family's metric (``agents.evaluation.heldout.FAMILY_METRIC``), plus,
when ``residual.penalty`` > 0 and the family has a constraint, ``penalty`` times the
constraint's excess over its value in the base's own run of the window
(``agents.residual.deviations.ResidualConfig.value``).

Stages (each writes into ``out_dir``):

1. **data**: the rollout teacher over the base's own run on ``train_windows`` windows of the
   family's *training* rows (spread evenly over them; ``first_windows=K`` keeps the first K
   of them, in train-row order, or in a bit-reversed order with ``window_order=spread`` so that
   any prefix covers the rows), in ``workers`` processes; ``time_budget_s`` keeps the windows
   finished within that many seconds (a prefix: ``first_windows=K`` with the same order redoes
   exactly those); ``data_only=true`` stops after this stage ->
   ``data.npz`` (per state: observation, mask, base's starts, every candidate's relative
   advantage) and ``data.json`` (per window: teacher, base, states, deviations, CPU s);
   an existing ``data.npz`` is reused unless ``regen=true``;
2. **cv** (``cv_folds=K`` > 0; off by default): grouped cross-validation over the training
   windows: the windows are cut into K contiguous blocks by window id; per block, a network
   fitted on the states of the other blocks runs (each ``taus`` value, and the base) on every
   ``cv_every``-th window of the block -> ``cv_runs.csv`` (reused when it exists, unless
   ``regen_cv=true``);
3. **fit**: the advantage network on all the data -> ``fit.json``;
4. **tau**: the residual policy for each ``taus`` value on the 8 *validation* windows
   (``hetgym.simulate``); the best mean of the metric (ties to the larger tau; ``inf`` is
   the base itself; for a family with a constraint, a tau whose mean constraint exceeds the
   base's on these windows is out, as in ``agents.evaluation.windows.Score``) is kept -> ``val.csv``,
   ``residual.pt`` (the model and its tau); with ``cv_folds`` > 0 the means are over the
   cross-validation runs and the validation windows together (``cv.csv``);
5. **test** (``test=true``): the kept policy and the base on the 32 *test* windows: mean
   ± 95 % CI, paired difference, wins / ties / losses (and the constraint's means) ->
   ``test.md``, ``test.json``,
   ``test_runs.csv``;
6. **teacher** (``teacher_on=[val,test]``): the rollout teacher itself (search over the
   base's own run, not learned) on those windows -> ``teacher_<part>.json`` (with the
   constraint's means); ``teacher_only=true`` runs this stage alone.

``residual.futures=K`` (> 0) makes the teacher value each deviation over K futures sampled
from the family's training rows (``agents.residual.futures``) instead of the window's real future.

``key=value`` arguments override the config::

    NUMBA_NUM_THREADS=1 OMP_NUM_THREADS=1 nice -n 10 python scripts/residual.py \
        conf/experiment/residual_hetero_small.yaml workers=2
    python scripts/residual.py conf/experiment/residual_hetero_small.yaml train_windows=1 \
        fit.epochs=2 taus=[inf,1.0] out_dir=/tmp/residual_smoke      # a quick check
"""

from __future__ import annotations

import dataclasses
import io
import json
import os
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:  # pragma: no cover
    import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def paired(x: np.ndarray, y: np.ndarray) -> dict[str, float]:
    """Mean ± 95 % CI of ``x`` and ``y`` and of ``x - y``, geo-mean ratio, wins/ties/losses of x."""
    from scripts.eval_agents import ci95

    d = x - y
    rel = 1e-9 * np.maximum(np.abs(y), 1.0)
    wins, ties = int((d < -rel).sum()), int((np.abs(d) <= rel).sum())
    (m_a, h_a), (m_b, h_b), (m_d, h_d) = ci95(x), ci95(y), ci95(d)
    return {"mean": m_a, "ci95": h_a, "base_mean": m_b, "base_ci95": h_b, "paired_diff": m_d,
            "paired_ci95": h_d, "geo_mean_ratio": float(np.exp(np.mean(np.log(x / y)))),
            "wins": wins, "ties": ties, "losses": len(d) - wins - ties, "windows": len(d)}


def _write(path: Path, data: str | bytes) -> None:
    """``data`` written atomically (:func:`hetgym.io.write_atomic_bytes`): a run stopped
    mid-write leaves no half file for the next run to reuse (``data.npz``, ``cv_runs.csv``)."""
    from hetgym.io import write_atomic_bytes

    write_atomic_bytes(data.encode() if isinstance(data, str) else data, path)


def spread_order(n: int) -> list[int]:
    """``0..n-1`` in bit-reversed (van der Corput) order: every prefix is spread evenly over
    the range (0, n/2, n/4, 3n/4, ...), so a run that keeps only the first K windows of this
    order (a time budget, ``first_windows=K``) still covers all the train rows."""
    bits = max(1, (n - 1).bit_length())
    rev = [int(f"{i:0{bits}b}"[::-1], 2) for i in range(1 << bits)]
    return [r for r in rev if r < n]


def train_windows(sp, n_jobs: int, n_windows: int, first: int | None, order: str = "rows") -> list:
    """The data stage's training windows: ``n_windows`` windows of ``n_jobs`` jobs spread evenly
    over the train rows, in train-row order (``order="rows"``) or in :func:`spread_order`
    (``"spread"``); the first ``first`` of them if given."""
    starts = np.round(np.linspace(0, sp.bounds[1] - n_jobs, n_windows)).astype(np.int64)
    if order == "spread":
        starts = starts[spread_order(n_windows)]
    elif order != "rows":
        raise ValueError(f"window_order: expected 'rows' or 'spread', got {order!r}")
    return LazyWindows(sp.base, starts[:int(first or n_windows)], n_jobs)


class LazyWindows(Sequence):
    """Windows of ``n_jobs`` rows of ``base`` from ``starts``, each scenario built when it is
    indexed (building one costs ~20-45 ms: thousands of windows would cost minutes up front)."""

    def __init__(self, base, starts: np.ndarray, n_jobs: int) -> None:
        self.base, self.starts, self.n_jobs = base, np.asarray(starts, dtype=np.int64), int(n_jobs)

    def __len__(self) -> int:
        return len(self.starts)

    def __getitem__(self, i):
        if isinstance(i, slice):
            return LazyWindows(self.base, self.starts[i], self.n_jobs)
        from agents.common.envtools import window_scenario

        s = int(self.starts[i])
        return window_scenario(self.base, np.arange(s, s + self.n_jobs))


def cv_folds(window_ids: np.ndarray, n_windows: int, folds: int, every: int = 1) -> list[tuple[np.ndarray, list[int]]]:
    """Grouped folds over windows ``0..n_windows-1`` cut into ``folds`` contiguous blocks: per
    fold, the mask of the states (``window_ids``) of the other blocks, and every ``every``-th
    window of the block (held back)."""
    block = np.arange(n_windows) * folds // n_windows
    out = []
    for k in range(folds):
        held = np.flatnonzero(block == k)
        out.append((block[window_ids] != k, held[::every].tolist()))
    return out


def _cv_fold(args: tuple) -> pd.DataFrame:
    from agents import residual as R
    from agents.evaluation.windows import evaluate_on_windows

    k, data, mask, held, windows, fcfg, taus, env_config, rcfg = args
    import torch

    torch.set_num_threads(1)
    net, _ = R.fit({key: v[mask] for key, v in data.items()}, fcfg, log=lambda *_: None)
    scheds = {rcfg.base: rcfg.base, **{f"tau={t}": (lambda t=t: R.ResidualScheduler(
        R.ModelChooser(net, t), env_config, rcfg, name=f"residual tau={t}")) for t in taus if t != float("inf")}}
    runs = evaluate_on_windows(scheds, [windows[i] for i in held])
    runs["fold"] = k
    runs["train_window"] = [held[i] for i in runs["seed"]]
    print(f"[residual] cv fold {k}: {len(held)} windows", flush=True)
    return runs


def cross_validate(data: dict, n_windows: int, windows: list, folds: int, every: int, fcfg, taus: list[float],
                   env_config, rcfg, workers: int = 1) -> pd.DataFrame:
    """Runs of the base and of each tau's gate on held-back training windows (:func:`cv_folds`),
    the gate fitted on the other folds' states; one row per (scheduler, window)."""
    import pandas as pd

    jobs = [(k, data, mask, held, windows, fcfg, taus, env_config, rcfg)
            for k, (mask, held) in enumerate(cv_folds(data["window"], n_windows, folds, every))]
    if workers > 1:
        import multiprocessing as mp

        with mp.get_context("fork").Pool(workers) as pool:
            parts = pool.map(_cv_fold, jobs)
    else:
        parts = [_cv_fold(j) for j in jobs]
    return pd.concat(parts, ignore_index=True)


def pd_concat_inf(runs: pd.DataFrame, base: str, taus: list[float]) -> pd.DataFrame:
    """``runs`` with the base's rows copied as ``tau=inf`` (the gate that never deviates is the base)."""
    import pandas as pd

    if float("inf") not in taus:
        return runs
    return pd.concat([runs, runs[runs.scheduler == base].assign(scheduler="tau=inf")], ignore_index=True)


def main(argv: Sequence[str] | None = None) -> int:
    """Load the config, run the stages (module docstring)."""
    from omegaconf import OmegaConf

    from agents import residual as R
    from agents.common.envtools import EnvConfig
    from agents.evaluation.windows import Score, evaluate_on_windows
    from agents.evaluation.heldout import FAMILY_METRIC, split
    from agents.pretrained.registry import card, machine
    from scripts.dagger import experiment_config

    args = list(sys.argv[1:] if argv is None else argv)
    cfg = experiment_config(args, __doc__)
    if cfg is None:
        return 2
    out = Path(str(cfg.out_dir))
    out.mkdir(parents=True, exist_ok=True)
    fam = str(cfg.family)
    metric, cons = FAMILY_METRIC[fam]
    env_config = EnvConfig.from_dict(card(str(cfg.env_from))["env"])
    rargs = OmegaConf.to_container(cfg.residual, resolve=True)
    if rargs.get("futures") and not rargs.get("futures_family"):
        rargs["futures_family"] = fam  # the futures are drawn from this family's training rows
    rcfg = R.ResidualConfig(**rargs, metric=metric, constraint=cons)
    fcfg = R.FitConfig(**{k: tuple(v) if k == "hidden" else v
                          for k, v in OmegaConf.to_container(cfg.fit, resolve=True).items()})
    sp = split(fam, window_jobs=int(env_config.n_jobs or 64))
    t_all = time.monotonic()
    meta = {"command": "python scripts/residual.py " + " ".join(args), "machine": machine(),
            "config": OmegaConf.to_container(cfg, resolve=True)}

    if bool(cfg.get("teacher_only", False)):
        teacher_stage(cfg, sp, rcfg, env_config, out, meta["command"])
        return 0
    # the training windows (lazy: built where they run)
    order = str(cfg.get("window_order") or "rows")
    wins = train_windows(sp, int(env_config.n_jobs or 64), int(cfg.train_windows), cfg.get("first_windows"), order)
    # 1. data
    f_data = out / "data.npz"
    if f_data.is_file() and not bool(cfg.get("regen", False)):
        data = dict(np.load(f_data))
        print(f"[residual] data from {f_data}: {len(data['obs'])} states")
    else:
        t0 = time.monotonic()
        budget = cfg.get("time_budget_s")
        data, infos = R.generate(wins, env_config, rcfg, act=str(cfg.act), workers=int(cfg.workers),
                                 time_budget_s=None if budget is None else float(budget))
        wall = time.monotonic() - t0
        buf = io.BytesIO()
        np.savez_compressed(buf, **data)
        _write(f_data, buf.getvalue())
        tj = np.array([i["teacher"] for i in infos])
        bj = np.array([i["base"] for i in infos])
        summary = {"windows": len(infos), "windows_asked": len(wins),
                   "window_order": order,
                   "first_rows": [int(x) for x in wins.starts[:len(infos)]], "states": len(data["obs"]), "wall_s": wall,
                   "workers": int(cfg.workers), "cpu_s": float(sum(i["cpu_s"] for i in infos)),
                   "teacher_mean": float(tj.mean()), "base_mean": float(bj.mean()),
                   "teacher_better": int((tj < bj * (1 - 1e-9)).sum()),
                   "deviations": int(sum(i["deviations"] for i in infos)), "per_window": infos,
                   **({f"teacher_{cons}_mean": float(np.mean([i[f"teacher_{cons}"] for i in infos])),
                       f"base_{cons}_mean": float(np.mean([i[f"base_{cons}"] for i in infos]))} if cons else {}),
                   "machine_after": machine(), **meta}
        _write(out / "data.json", json.dumps(summary, indent=1))
        print(f"[residual] data: {summary['states']} states of {len(infos)} windows in {wall:.0f} s; "
              f"teacher {tj.mean():.1f} vs base {bj.mean():.1f}")

    if bool(cfg.get("data_only", False)):
        return 0
    taus = [float(t) for t in cfg.taus]
    # 2. cross-validation over the training windows
    n_folds = int(cfg.get("cv_folds") or 0)
    cv = None
    if n_folds > 0:
        f_cv = out / "cv_runs.csv"
        if f_cv.is_file() and not bool(cfg.get("regen_cv", False)):
            import pandas as pd

            cv = pd.read_csv(f_cv)
            print(f"[residual] cross-validation runs from {f_cv}: {len(cv)}")
        else:
            t0 = time.monotonic()
            kept = wins[:int(data["window"].max()) + 1]  # a data stage cut by its time budget kept a prefix
            cv = cross_validate(data, len(kept), kept, n_folds, int(cfg.get("cv_every") or 1), fcfg, taus,
                                env_config, rcfg, workers=int(cfg.workers))
            _write(f_cv, cv.to_csv(index=False))
            print(f"[residual] cross-validation: {n_folds} folds, {cv.train_window.nunique()} windows "
                  f"in {time.monotonic() - t0:.0f} s")
        cv = pd_concat_inf(cv, rcfg.base, taus)

    # 3. fit
    t0 = time.monotonic()
    net, fstats = R.fit(data, fcfg)
    fstats["wall_s"] = time.monotonic() - t0
    _write(out / "fit.json", json.dumps(fstats, indent=1))
    print(f"[residual] fit: {fstats}")

    # 4. tau on the validation windows (and the cross-validation runs)
    def sched(tau: float):
        return lambda: R.ResidualScheduler(R.ModelChooser(net, tau), env_config, rcfg, name=f"residual tau={tau}")

    scheds = {rcfg.base: rcfg.base, **{f"tau={t}": sched(t) for t in taus}}
    t0 = time.monotonic()
    runs = evaluate_on_windows(scheds, sp.val)
    cols = [metric] + ([cons] if cons else [])
    table = runs.groupby("scheduler", sort=False)[cols].mean()
    val = table[metric]
    _write(out / "val.csv", table.to_csv())
    print(f"[residual] validation ({time.monotonic() - t0:.0f} s):\n{table.to_string()}")
    if cv is not None:
        import pandas as pd

        runs = pd.concat([cv.assign(part="cv"), runs.assign(part="val")], ignore_index=True)
        table = runs.groupby("scheduler", sort=False)[cols].mean()
        table["windows"] = runs.groupby("scheduler", sort=False).size()
        _write(out / "cv.csv", table.to_csv())
        print(f"[residual] cross-validation + validation windows:\n{table.to_string()}")
    score = Score(metric, cons, float(table.loc[rcfg.base, cons]) if cons else float("inf"))
    best_tau = min(taus, key=lambda t: (score(runs, f"tau={t}"), -t))
    print(f"[residual] kept tau = {best_tau}: {table[metric][f'tau={best_tau}']:.4g} "
          f"(base {table[metric][rcfg.base]:.4g})")
    R.save(out / "residual.pt", net, env_config, rcfg, fcfg, best_tau, data["obs"].shape[1],
           data["adv"].shape[1], {"family": fam, "validation": {str(k): float(v) for k, v in val.items()},
                                  "fit_stats": fstats, **meta,
                                  **({"cv": table.reset_index().to_dict("records")} if cv is not None else {})})

    # 5. test
    if bool(cfg.get("test", False)):
        t0 = time.monotonic()
        label = "residual"
        runs = evaluate_on_windows({label: lambda: R.load_residual(out / "residual.pt"),
                                    rcfg.base: rcfg.base}, sp.test)
        _write(out / "test_runs.csv", runs.to_csv(index=False))
        x = runs[runs.scheduler == label].sort_values("seed")[metric].to_numpy()
        y = runs[runs.scheduler == rcfg.base].sort_values("seed")[metric].to_numpy()
        res = {"family": fam, "metric": metric, "tau": best_tau, "base": rcfg.base, **paired(x, y),
               "wall_s": time.monotonic() - t0}
        if cons:
            cx = runs[runs.scheduler == label].sort_values("seed")[cons].to_numpy()
            cy = runs[runs.scheduler == rcfg.base].sort_values("seed")[cons].to_numpy()
            res.update({"constraint": cons, "constraint_paired": paired(cx, cy)})
        _write(out / "test.json", json.dumps(res, indent=1))
        text = (f"| {fam}: {res['windows']} test windows | residual (tau={best_tau}) | {metric} "
                f"| {res['mean']:.4g} ± {res['ci95']:.2g} | {rcfg.base}: {res['base_mean']:.4g} ± "
                f"{res['base_ci95']:.2g} | {res['paired_diff']:+.3g} ± {res['paired_ci95']:.2g} "
                f"| {res['geo_mean_ratio']:.4f} | {res['wins']} / {res['ties']} / {res['losses']} |\n")
        if cons:
            c = res["constraint_paired"]
            text += (f"\n{cons}: residual {c['mean']:.4g} ± {c['ci95']:.2g}, {rcfg.base} {c['base_mean']:.4g} ± "
                     f"{c['base_ci95']:.2g}, paired {c['paired_diff']:+.3g} ± {c['paired_ci95']:.2g}\n")
        _write(out / "test.md", text)
        print(text)
    # 6. the rollout teacher itself (search, not learned) on validation / test windows
    teacher_stage(cfg, sp, rcfg, env_config, out, meta["command"])
    print(f"[residual] done in {time.monotonic() - t_all:.0f} s (load {os.getloadavg()})")
    return 0


def teacher_stage(cfg, sp, rcfg, env_config, out: Path, command: str) -> None:
    """Stage 6: the rollout teacher itself on the parts ``cfg.teacher_on`` of split ``sp``
    -> ``teacher_<part>.json`` (metric paired against the base, constraint means, CPU;
    ``command``: the run's command line, as in the other stages' records)."""
    from agents import residual as R
    from agents.pretrained.registry import machine

    cons = rcfg.constraint
    for part in [str(p) for p in cfg.get("teacher_on", [])]:
        t0 = time.monotonic()
        _, infos = R.generate(getattr(sp, part), env_config, rcfg, act="teacher", workers=int(cfg.workers))
        x = np.array([i["teacher"] for i in infos])
        y = np.array([i["base"] for i in infos])
        res = {"part": part, **paired(x, y), "wall_s": time.monotonic() - t0, "workers": int(cfg.workers),
               "cpu_s": float(sum(i["cpu_s"] for i in infos)), "per_window": infos, "machine": machine(),
               "residual": dataclasses.asdict(rcfg), "command": command}
        if cons:
            res.update({f"teacher_{cons}_mean": float(np.mean([i[f"teacher_{cons}"] for i in infos])),
                        f"base_{cons}_mean": float(np.mean([i[f"base_{cons}"] for i in infos]))})
        _write(out / f"teacher_{part}.json", json.dumps(res, indent=1))
        print(f"[residual] teacher on {part}: {res['mean']:.5g} vs {rcfg.base} {res['base_mean']:.5g}, "
              f"paired {res['paired_diff']:+.4g} ± {res['paired_ci95']:.2g}, "
              f"W/T/L {res['wins']}/{res['ties']}/{res['losses']}, {res['wall_s']:.0f} s"
              + (f"; {cons} {res[f'teacher_{cons}_mean']:.4g} vs {res[f'base_{cons}_mean']:.4g}" if cons else ""),
              flush=True)


if __name__ == "__main__":
    raise SystemExit(main())
