"""Per-job table and summary metrics of a run (docs/semantics.md, "Metrics").

Definitions:

* ``jct`` = end - arrival; ``exec_time`` = time holding resources (all runs,
  grace periods and restart delays included); ``wait`` = jct - exec_time;
  ``slowdown`` = 1 + wait / exec_time (the FitGpp definition, = jct / exec_time).
* ``makespan`` = last completion time (time 0 = start of the simulation).
* ``util_<device>`` = busy GPU-seconds (cores-seconds for cpu) / (capacity x makespan).
* ``energy_kwh`` = IT energy from node power (idle + active) over [0, end of run];
  ``energy_cost`` = energy_kwh x price x PUE.
* ``tardiness_cost`` = sum of weight x max(0, end - deadline) (unfinished jobs: the end of
  the run stands in for end).
* ``deadline_misses``: jobs with a finite deadline that ended after it, or are unfinished
  with the deadline passed; ``avg_tardiness`` / ``max_tardiness``: max(0, end - deadline)
  in seconds over the jobs with a finite deadline (0 when none has one);
  ``total_cost`` = energy_cost + tardiness_cost x ``SimOptions.tardiness_price``.
* ``energy_kwh_node_<group>``: IT energy of each node group (idle + active power of its
  nodes); ``node_on_seconds``: node-seconds powered on (every node for the whole run with
  ``idle_power="always"``, else the seconds each node hosted at least one worker).
* ``jain_fairness``: Jain's index over users of their mean slowdown.
* ``user_progress_std``: AlloX-style, standard deviation over users of their
  mean progress, a job's progress being best-device duration / jct (in (0, 1]).
* ``decision_time_p50/p99``: wall-clock milliseconds per ``decide`` call, after warm-up:
  calls during which Numba compiled or loaded a kernel are left out (:func:`hetgym.simulate`).
* ``util_gpu``: busy GPU-seconds of all GPU types / (all GPUs x makespan), every copy of
  a forked job counted (utilisation metrics).
* ``cru``: cluster resource utilisation (HadarE §V-C): seconds during which a GPU node
  holds >= 1 busy GPU, summed over GPU nodes / (GPU nodes x makespan).
* ``t50_completion``: time (from 0) at which half of the jobs have completed (NaN if
  fewer did); with every job at t = 0 it is Hadar's "time to complete 50% of jobs".
* ``jct_min`` / ``jct_max``: range of the finished jobs' JCTs.
* ``gpu_seconds`` (per job): GPUs held x time over all runs and copies.
* :func:`gpu_util_series` / :func:`time_fraction_at_least`: busy GPUs over time (Hadar's
  GPU-utilisation CDF); :meth:`Result.extra` ``["gpu_util_series"]`` holds the series.

The makespan of the utilisation metrics is the end of the run (``= makespan`` when
every job finished; the truncation time otherwise).
* ``placement_slowdown`` (per job) = exec_time / best duration (the ideal run: packed,
  topology factor 1, no interference, linear scaling, fastest type); summary
  ``avg_/p95_/max_placement_slowdown`` over finished jobs; ``jct_over_ideal`` = mean of
  jct / best duration; ``slo_violations`` = finished jobs whose placement slowdown
  exceeds ``SimOptions.slo_slack`` (1.05), TOPO-AWARE's SLO (assumption *SLO threshold*).

Units: every time (``jct``, ``wait``, ``makespan``, ...) is in **seconds**, energy in
kWh, decision times in ms. Tables convert times to one readable unit per table (:func:`table_time_unit`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from hetgym.sim.codes import DONE, GRACE, RUNNING
from hetgym.sim.state.jobs import best_durations
from hetgym.sim.state.layout import CTR_SEG

if TYPE_CHECKING:  # pragma: no cover
    from hetgym.sim.engine import Simulator

__all__ = ["Result", "job_table", "summarize", "jain_index", "time_unit", "table_time_unit",
           "format_duration",
           "TIME_METRICS", "METRIC_UNITS", "placement_metrics", "gpu_util_series",
           "time_fraction_at_least", "gpu_seconds"]


def jain_index(x: np.ndarray) -> float:
    """Jain's fairness index (1 = equal; 1/n = one takes all)."""
    x = np.asarray(x, dtype=np.float64)
    x = x[np.isfinite(x)]
    if len(x) == 0 or not (x**2).sum():
        return 1.0
    return float(x.sum() ** 2 / (len(x) * (x**2).sum()))


def _held_gpus_now(sim: "Simulator", jobs: np.ndarray) -> np.ndarray:
    """GPUs (all copies) held now by each of ``jobs``."""
    js, jb = sim.js, sim.jobs
    out = np.zeros(len(jobs), dtype=np.int64)
    for i, j in enumerate(jobs.tolist()):
        w = int(jb.workers[j] * js.n_copies[j])
        out[i] = int((js.worker_gpu[j, :w] >= 0).sum())
    return out


def _runs(sim: "Simulator") -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(job, start, end, GPUs held) of every run: finished segments, then the runs that
    still hold resources (ending now)."""
    run = sim.state.run
    k = int(run.ctr[CTR_SEG])
    job = run.seg_i[:k, 0]
    start = run.seg_f[:k, 0]
    end = run.seg_f[:k, 1]
    held = sim.segment_gpus
    cur = np.asarray(sim.running_jobs(), dtype=np.int64)
    if len(cur):
        job = np.concatenate([job, cur])
        start = np.concatenate([start, sim.js.run_start[cur]])
        end = np.concatenate([end, np.full(len(cur), sim.now)])
        held = np.concatenate([held, _held_gpus_now(sim, cur)])
    return job, start, end, held


def gpu_seconds(sim: "Simulator") -> np.ndarray:
    """float64[J]: GPUs held x time per job, all runs and copies (utilisation metrics)."""
    job, start, end, held = _runs(sim)
    return np.bincount(job, weights=held * (end - start), minlength=sim.n_jobs).astype(np.float64)


def gpu_util_series(sim: "Simulator") -> list[tuple[float, float, int]]:
    """Busy GPUs over [0, now] as ``(t_start, t_end, busy GPUs)`` pieces (consecutive,
    equal neighbours merged), from the run log (every copy counted)."""
    _, start, end, held = _runs(sim)
    keep = held > 0
    t = np.concatenate([start[keep], end[keep]])
    d = np.concatenate([held[keep], -held[keep]])
    order = np.argsort(t, kind="stable")
    t, d = t[order], d[order]
    out: list[tuple[float, float, int]] = []
    busy, last = 0, 0.0
    i = 0
    n = len(t)
    while i < n:
        ti = float(t[i])
        if ti > last:
            if out and out[-1][2] == busy and out[-1][1] == last:
                out[-1] = (out[-1][0], ti, busy)
            else:
                out.append((last, ti, busy))
            last = ti
        while i < n and t[i] == ti:
            busy += int(d[i])
            i += 1
    if sim.now > last:
        out.append((last, float(sim.now), busy))
    return out


def time_fraction_at_least(series: list[tuple[float, float, int]], level: float,
                           total_gpus: int) -> float:
    """Fraction of the series' time during which utilisation (busy / ``total_gpus``) is at
    least ``level`` (one point of Hadar Fig. 3's CDF: 1 - CDF(level))."""
    span = sum(b - a for a, b, _ in series)
    if span <= 0 or total_gpus <= 0:
        return float("nan")
    hit = sum(b - a for a, b, g in series if g / total_gpus >= level - 1e-12)
    return hit / span


def _utilisation(sim: "Simulator", span: float) -> dict[str, float]:
    """``util_gpu`` and ``cru`` (module docstring)."""
    nd = sim.nodes
    gpu_types = [c for c in range(len(sim.devices)) if not nd.dev_is_cpu[c]]
    total = int(nd.gpus.sum())
    busy = float(sum(sim.busy_time[c] for c in gpu_types))
    gnode = nd.gpus > 0
    _, busy_nodes = node_books(sim)  # a GPU node hosts a worker <=> >= 1 of its GPUs is busy
    node_time = float(busy_nodes[gnode].sum())
    n_gnodes = int(gnode.sum())
    return {"util_gpu": busy / (total * span) if total else 0.0,
            "cru": node_time / (n_gnodes * span) if n_gnodes else 0.0}


def job_table(sim: "Simulator") -> pd.DataFrame:
    """One row per job with its timings and outcome."""
    jb, js = sim.jobs, sim.js
    fr = sim.scenario.workload.frame
    if sim.rows is not None:
        fr = fr.iloc[sim.rows]
    done = js.status == DONE
    end = np.where(done, js.end, np.nan)
    jct = end - jb.arrival
    execution = js.exec_time.copy()
    # jobs still holding resources at truncation: count their current run
    holding = (js.status == RUNNING) | (js.status == GRACE)
    execution[holding] += sim.now - js.run_start[holding]
    with np.errstate(invalid="ignore", divide="ignore"):
        wait = jct - execution
        slowdown = np.where(execution > 0, jct / execution, np.nan)
    best = best_durations(jb)
    names = np.asarray(sim.devices + ["mixed", "-"], dtype=object)
    dev = names[np.where(js.device == -2, len(sim.devices), np.where(js.device < 0, len(sim.devices) + 1, js.device))]
    return pd.DataFrame({
        "job_id": jb.job_id,
        "user": fr["user"].to_numpy(),
        "job_class": fr["job_class"].to_numpy(),
        "job_type": fr["job_type"].to_numpy(),
        "workers": jb.workers,
        "arrival": jb.arrival,
        "start": js.first_start,
        "end": end,
        "jct": jct,
        "exec_time": execution,
        "wait": wait,
        "slowdown": slowdown,
        "best_duration": best,
        "placement_slowdown": np.where(done, execution / best, np.nan),
        "device": dev,
        "preemptions": js.n_preempt,
        "restarts": js.n_restart,
        "deadline": jb.deadline,
        "tardiness": jb.weight * np.maximum(0.0, np.nan_to_num(end, nan=sim.now) - jb.deadline),
        "finished": done,
        "gpu_seconds": gpu_seconds(sim),
    })


def deadline_metrics(sim: "Simulator", end_or_now: np.ndarray, energy_cost: float,
                     tardiness_cost: float) -> dict[str, float]:
    """Deadline metrics and per-node energy (module docstring)."""
    jb = sim.jobs
    has = np.isfinite(jb.deadline)
    late = np.maximum(0.0, end_or_now[has] - jb.deadline[has])
    out = {"deadline_misses": float((late > 0).sum()),
           "avg_tardiness": float(late.mean()) if len(late) else 0.0,
           "max_tardiness": float(late.max()) if len(late) else 0.0,
           "total_cost": energy_cost + tardiness_cost * sim.options.tardiness_price}
    energy, busy = node_books(sim)
    start = 0
    for spec in sim.scenario.cluster.nodes:
        out[f"energy_kwh_node_{spec.name}"] = float(energy[start:start + spec.count].sum()) / 3.6e6
        start += spec.count
    on = busy.sum() if sim.options.idle_power == "busy_nodes" else len(busy) * sim.now
    out["node_on_seconds"] = float(on)
    return out


def node_books(sim: "Simulator") -> tuple[np.ndarray, np.ndarray]:
    """Per node: energy (J) and seconds hosting >= 1 worker, from 0 to now (the engine
    integrates them lazily, at each change of a node's power)."""
    run = sim.state.run
    el = sim.now - run.node_t
    energy = run.node_e + run.node_pw * el
    busy = run.node_busy + np.where(run.node_units > 0, el, 0.0)
    return energy, busy


def _pct(x: np.ndarray, q: float) -> float:
    """Percentile with linear interpolation (numpy's default method), NaN-free input."""
    x = np.sort(x[np.isfinite(x)])
    n = len(x)
    if n == 0:
        return float("nan")
    pos = (n - 1) * q / 100.0
    lo = int(pos)
    hi = min(lo + 1, n - 1)
    return float(x[lo] + (x[hi] - x[lo]) * (pos - lo))


def _group_mean(values: np.ndarray, groups: np.ndarray) -> np.ndarray:
    """Mean of ``values`` per group id present in ``groups``."""
    if len(values) == 0:
        return np.zeros(0)
    s = np.bincount(groups, weights=values)
    c = np.bincount(groups)
    return s[c > 0] / c[c > 0]


def placement_metrics(exe: np.ndarray, jct: np.ndarray, best: np.ndarray,
                      slack: float) -> dict[str, float]:
    """Placement slowdown summary of finished jobs (module docstring)."""
    if not len(exe):
        nan = float("nan")
        return {"avg_placement_slowdown": nan, "p95_placement_slowdown": nan,
                "max_placement_slowdown": nan, "jct_over_ideal": nan, "slo_violations": 0.0}
    ps = exe / best
    return {"avg_placement_slowdown": float(ps.mean()),
            "p95_placement_slowdown": _pct(ps, 95),
            "max_placement_slowdown": float(ps.max()),
            "jct_over_ideal": float((jct / best).mean()),
            "slo_violations": float((ps > slack + 1e-12).sum())}


def summarize(sim: "Simulator", jobs: pd.DataFrame | None = None,
              decision_ms: np.ndarray | None = None) -> dict[str, float]:
    """Summary metrics of a run (module docstring gives the definitions).

    Computed from the simulator's arrays (numpy only, cheap enough for every
    episode of an environment); ``jobs`` is accepted for symmetry and unused.
    """
    jb, js = sim.jobs, sim.js
    done = js.status == DONE
    jct = (js.end - jb.arrival)[done]
    exe = js.exec_time[done]
    with np.errstate(invalid="ignore", divide="ignore"):
        sd = np.where(exe > 0, jct / exe, np.nan)
    nan = float("nan")
    out: dict[str, float] = {
        "jobs": float(sim.n_jobs),
        "avg_jct": float(jct.mean()) if len(jct) else nan,
        "p50_jct": _pct(jct, 50),
        "p95_jct": _pct(jct, 95),
        "p99_jct": _pct(jct, 99),
        "avg_wait": float((jct - exe).mean()) if len(jct) else nan,
        "avg_slowdown": float(np.nanmean(sd)) if len(sd) else nan,
    }
    cls = jb.job_class[done]
    for name, code in (("te", 1), ("be", 0)):
        x = sd[cls == code]
        for q in (50, 95, 99):
            out[f"{name}_p{q}_slowdown"] = _pct(x, q)
    out["makespan"] = float(js.end[done].max()) if len(jct) else sim.now
    span = max(sim.now, 1e-12)
    for c, d in enumerate(sim.devices):
        cap = sim.scenario.cluster.capacity(d)
        out[f"util_{d}"] = float(sim.busy_time[c] / (cap * span)) if cap else 0.0
    out.update(_utilisation(sim, span))
    ends = np.sort(js.end[done])
    half = (sim.n_jobs + 1) // 2
    out["t50_completion"] = float(ends[half - 1]) if sim.n_jobs and len(ends) >= half else nan
    out["jct_min"] = float(jct.min()) if len(jct) else nan
    out["jct_max"] = float(jct.max()) if len(jct) else nan
    out["energy_kwh"] = sim.energy_kwh
    out["energy_cost"] = sim.energy_kwh * sim.options.energy_price * sim.options.pue
    end_or_now = np.where(done, js.end, sim.now)
    out["tardiness_cost"] = float((jb.weight * np.maximum(0.0, end_or_now - jb.deadline)).sum())
    out.update(deadline_metrics(sim, end_or_now, out["energy_cost"], out["tardiness_cost"]))
    out["preemptions"] = float(js.n_preempt.sum())
    out["restarts"] = float(js.n_restart.sum())
    users = jb.user[done]
    out["jain_fairness"] = jain_index(_group_mean(np.nan_to_num(sd, nan=1.0), users)) if len(jct) else 1.0
    best = best_durations(jb)[done]
    ok = np.isfinite(best)  # a job that only a mixed placement holds has no one-type best
    prog = _group_mean(best[ok] / jct[ok], users[ok]) if ok.any() else np.zeros(0)
    out["user_progress_std"] = float(prog.std()) if len(prog) else 0.0
    dm = np.zeros(0) if decision_ms is None else np.asarray(decision_ms)
    out["decision_time_p50"] = _pct(dm, 50) if len(dm) else 0.0
    out["decision_time_p99"] = _pct(dm, 99) if len(dm) else 0.0
    out.update(placement_metrics(exe, jct, best, sim.options.slo_slack))
    out["unfinished_jobs"] = float(sim.n_jobs - int(done.sum()))
    out["events"] = float(sim.events)
    out["decision_points"] = float(sim.decision_points)
    return out


@dataclass
class Result:
    """Outcome of :func:`hetgym.simulate`.

    Attributes:
        jobs: One row per job (see :func:`job_table`).
        metrics: Summary metrics (see :func:`summarize`).
        segments: Runs of jobs as ``(job, start, end, device index, first node)``.
        devices: Device keys of the scenario.
        wall_time: Seconds of wall clock the run took.
        stalled: True if jobs were left waiting with no event that could start them.
    """

    jobs: pd.DataFrame
    metrics: dict[str, float]
    segments: list[tuple[int, float, float, int, int]] = field(default_factory=list)
    devices: list[str] = field(default_factory=list)
    wall_time: float = 0.0
    stalled: bool = False
    extra: dict[str, Any] = field(default_factory=dict)

    def summary(self) -> dict[str, float]:
        """Summary metrics as a dict (a copy), with ``stalled`` (bool): see ``stalled``.

        Times are in seconds, energy in kWh, decision times in ms (module docstring).
        """
        return {**self.metrics, "stalled": bool(self.stalled)}


# ---------------------------------------------------------------- units (display only)

#: Summary metrics that are durations (seconds in :meth:`Result.summary`).
TIME_METRICS = ("avg_jct", "p50_jct", "p95_jct", "p99_jct", "avg_wait", "makespan")
#: Display units of the other summary metrics ("" = a ratio or a count).
METRIC_UNITS = {"energy_kwh": "kWh", "decision_time_p50": "ms", "decision_time_p99": "ms",
                "energy_cost": "currency", "tardiness_cost": "s"}
#: Readable time units, smallest first: (name, seconds per unit, below this many seconds).
TIME_UNITS = (("s", 1.0, 120.0), ("min", 60.0, 7200.0), ("h", 3600.0, 3 * 86400.0),
              ("days", 86400.0, float("inf")))


def time_unit(seconds: float) -> tuple[str, float]:
    """A readable unit for durations of about ``seconds``: ``(name, seconds per unit)``.

    Seconds below 2 minutes, minutes below 2 hours, hours below 3 days, else days
    (NaN or infinite: hours).
    """
    x = abs(float(seconds))
    if not np.isfinite(x):
        return "h", 3600.0
    for name, size, below in TIME_UNITS:
        if x < below:
            return name, size
    return "days", 86400.0  # pragma: no cover (the last bound is inf)


def table_time_unit(seconds: Any) -> tuple[str, float]:
    """The one time unit of a printed table: :func:`time_unit` of the median of the finite
    values of ``seconds`` (a table passes the average JCTs of its rows, the scale of its
    scenario's jobs; hours when none is finite). Every table of the project (comparison,
    sweep report, training and evaluation tables) and the learning curve's axis use it
    for all their time columns, so one table has one time unit, named in each header."""
    x = np.asarray(seconds, dtype=float).ravel()
    x = x[np.isfinite(x)]
    return time_unit(float(np.median(np.abs(x))) if len(x) else float("nan"))


def format_duration(seconds: float, digits: int = 3) -> str:
    """``seconds`` in its readable unit, e.g. ``format_duration(5400) == "90 min"``."""
    name, size = time_unit(seconds)
    return f"{float(seconds) / size:.{digits}g} {name}"
