"""Cut canonical job tables into episodes and scale their arrival rate to a target load.

Every function returns new frames with arrivals rebased so that the window's first job
arrives at 0 (deadlines move with their job) and ``job_id`` renumbered 0..n-1 unless
``renumber=False``. Random choices take a seed or a ``numpy`` Generator.

**Offered load** (:func:`offered_load`). A job's best run time on the cluster is
``d_j = work_j / (W_j x max_d tput_j,d)`` over the cluster's device types ``d`` (the
fastest type it can run on, ignoring queueing). Over a span ``T`` (default: last
arrival - first arrival):

* ``resources="devices"`` (default): ``load = sum_j W_j d_j / (N T)`` with ``N`` the
  cluster's worker slots: all GPUs plus, for CPU nodes, ``floor(cores / cpu_slot_cores)``
  per node. Load 1 means the jobs, each on its fastest device type, would keep every
  device busy over the span.
* ``resources="dominant"``: ``load = sum_j d_j max(W_j c_j / C, W_j m_j / M, W_j g_j / G) / T``
  with ``C, M, G`` the cluster's total cores, memory and GPUs and ``c_j, m_j`` the
  job's per-worker cores and memory, ``g_j = 1`` on a GPU (FitGpp's "total resource
  demand relative to the capacity").
* ``resources="speed"`` (the trace presets' definition): as ``"devices"``, but each slot
  counts by its speed, so a CPU slot or a K80 does not count like a V100:
  ``load = sum_j W_j d_j / (T sum_d N_d s_d)`` with ``N_d`` the slots of device type ``d``
  and ``s_d = sum_j W_j d_j r_jd / sum_j W_j d_j`` the work-weighted mean over the jobs of
  ``r_jd = tput_j,d / max_d' tput_j,d'`` (the job's speed there relative to its fastest
  type; 0 where it cannot run there). On one device type ``s_d = 1`` and this equals
  ``"devices"``. Load 1: the jobs' work, spread over the device types in the proportions of
  their speeds, would keep the cluster busy over the span.

Scaling arrivals by a factor ``f`` (relative to the first arrival) scales ``T`` by ``f``
and the load by ``1/f``; :func:`scale_to_load` picks ``f`` to hit a target.
"""

from __future__ import annotations


import numpy as np
import pandas as pd

from hetgym.sim.rules import scaled_rate
from hetgym.specs import ClusterSpec

__all__ = [
    "rebase", "time_window", "hour_window", "split_by_time", "split_by_count",
    "busiest_window", "sample_jobs", "best_durations", "offered_load", "scale_to_load",
    "all_at_zero", "episodes", "slots_by_type", "speed_weights",
]


def rebase(df: pd.DataFrame, renumber: bool = True) -> pd.DataFrame:
    """Sort by arrival, shift arrivals (and deadlines) so the first is 0, renumber job ids."""
    out = df.sort_values(["arrival", "job_id"], kind="stable").reset_index(drop=True).copy()
    if len(out) == 0:
        return out
    t0 = float(out["arrival"].iloc[0])
    out["arrival"] = out["arrival"] - t0
    if "deadline" in out.columns:
        out["deadline"] = out["deadline"] - t0
    if renumber:
        out["job_id"] = np.arange(len(out), dtype=np.int64)
    return out


def time_window(df: pd.DataFrame, start: float, end: float, renumber: bool = True) -> pd.DataFrame:
    """Jobs arriving in ``[start, end)`` (seconds of the table's own clock), rebased."""
    if end <= start:
        raise ValueError(f"time_window: end ({end}) must be > start ({start})")
    a = df["arrival"].to_numpy()
    return rebase(df.loc[(a >= start) & (a < end)], renumber)


def hour_window(df: pd.DataFrame, first_hour: float, last_hour: float, renumber: bool = True) -> pd.DataFrame:
    """Jobs arriving from hour ``first_hour`` to hour ``last_hour`` of the trace.

    Hadar took "the busiest hour range (hours 3-10)" of the Philly trace:
    ``hour_window(df, 3, 10)`` keeps arrivals in ``[3 h, 10 h)`` after the first arrival.
    """
    t0 = float(df["arrival"].min())
    return time_window(df, t0 + 3600.0 * first_hour, t0 + 3600.0 * last_hour, renumber)


def split_by_time(df: pd.DataFrame, span: float, *, start: float | None = None,
                  drop_partial: bool = True, min_jobs: int = 1) -> list[pd.DataFrame]:
    """Consecutive windows ``[t, t + span)`` from ``start`` (default: first arrival).

    Windows with fewer than ``min_jobs`` jobs are skipped. ``drop_partial`` drops the
    final window when it would extend past the last arrival (so every window kept covers
    a full ``span`` of the trace); a trace shorter than ``span`` then gives no window.
    """
    if span <= 0:
        raise ValueError(f"split_by_time: span must be > 0, got {span}")
    a = df["arrival"].to_numpy()
    t = float(a.min()) if start is None else float(start)
    last = float(a.max())
    out = []
    while (t + span <= last) if drop_partial else (t <= last):
        w = df.loc[(a >= t) & (a < t + span)]
        if len(w) >= min_jobs:
            out.append(rebase(w))
        t += span
    return out


def split_by_count(df: pd.DataFrame, n_jobs: int, *, drop_partial: bool = True) -> list[pd.DataFrame]:
    """Consecutive windows of ``n_jobs`` jobs in arrival order."""
    if n_jobs < 1:
        raise ValueError(f"split_by_count: n_jobs must be >= 1, got {n_jobs}")
    s = df.sort_values(["arrival", "job_id"], kind="stable")
    out = []
    for i in range(0, len(s), n_jobs):
        w = s.iloc[i:i + n_jobs]
        if drop_partial and len(w) < n_jobs:
            break
        out.append(rebase(w))
    return out


def busiest_window(df: pd.DataFrame, span: float, *, by: str = "jobs", step: float | None = None) -> pd.DataFrame:
    """The window of ``span`` seconds with the most arrivals (``by="jobs"``) or the most
    GPU work (``by="workers"``: sum of workers), starting at a multiple of ``step``
    (default ``span / 10``) after the first arrival. Ties go to the earliest window."""
    if by not in ("jobs", "workers"):
        raise ValueError(f"busiest_window: by must be 'jobs' or 'workers', got {by!r}")
    step = span / 10.0 if step is None else step
    a = df["arrival"].to_numpy()
    t0, t1 = float(a.min()), float(a.max())
    starts = t0 + step * np.arange(max(1, int(np.floor((t1 - t0) / step)) + 1))
    weight = np.ones(len(a)) if by == "jobs" else df["workers"].to_numpy(dtype=np.float64)
    order = np.argsort(a, kind="stable")
    cum = np.concatenate([[0.0], np.cumsum(weight[order])])
    sa = a[order]
    lo = np.searchsorted(sa, starts, side="left")
    hi = np.searchsorted(sa, starts + span, side="left")
    best = int(np.argmax(cum[hi] - cum[lo]))
    return time_window(df, starts[best], starts[best] + span)


def sample_jobs(df: pd.DataFrame, n: int, *, rng: np.random.Generator | None = None,
                seed: int | None = 0) -> pd.DataFrame:
    """``n`` jobs drawn without replacement (seeded), kept in arrival order and rebased."""
    if n > len(df):
        raise ValueError(f"sample_jobs: asked for {n} jobs, the table has {len(df)}")
    gen = rng if rng is not None else np.random.default_rng(seed)
    idx = np.sort(gen.choice(len(df), size=n, replace=False))
    return rebase(df.iloc[idx])


def all_at_zero(df: pd.DataFrame) -> pd.DataFrame:
    """Every job available at time 0 (Hadar's "all jobs available at the beginning");
    deadlines keep their slack after arrival."""
    out = df.copy()
    if "deadline" in out.columns:
        out["deadline"] = out["deadline"] - out["arrival"]
    out["arrival"] = 0.0
    return rebase(out)


def best_durations(df: pd.DataFrame, cluster: ClusterSpec) -> np.ndarray:
    """Each job's run time on the fastest device type of the cluster (inf if none).

    The job-table form of :func:`hetgym.sim.state.jobs.best_durations`, for raw trace tables
    (loads, burstiness) before jobs are checked against the cluster: it does not look at
    whether the gang fits that type's nodes, since a raw trace holds gangs that fit no
    node type of a small cluster, and those count at their fastest type here (scenario
    builders drop or reject them afterwards). On the jobs of a scenario, where every gang
    fits some type, both forms agree wherever the fastest type holds the gang: on every
    job of every registered scenario (checked when this was written; eight of them are
    checked by ``tests/traces/test_traces_windows.py``)."""
    cols = [f"tput_{d}" for d in cluster.device_types]
    missing = [c for c in cols if c not in df.columns]
    if missing:
        raise ValueError(f"the cluster has device types without a throughput column: {missing}")
    best = df[cols].to_numpy(dtype=np.float64).max(axis=1)
    with np.errstate(divide="ignore"):
        return np.where(best > 0, df["work"].to_numpy() / scaled_rate(df["workers"].to_numpy(), best, 1.0),
                        np.inf)


def _span(df: pd.DataFrame, span: float | None) -> float:
    if span is not None:
        if span <= 0:
            raise ValueError(f"span must be > 0, got {span}")
        return float(span)
    a = df["arrival"].to_numpy()
    s = float(a.max() - a.min())
    if s <= 0:
        raise ValueError("all jobs arrive at the same time; pass span= to define the load")
    return s


def slots_by_type(cluster: ClusterSpec, cpu_slot_cores: int = 20) -> dict[str, int]:
    """Worker slots per device type: GPUs, or ``floor(cores / cpu_slot_cores)`` per CPU node."""
    out: dict[str, int] = {}
    for n in cluster.nodes:
        per = n.gpus if n.gpu_type is not None else n.cpus // cpu_slot_cores
        out[n.device] = out.get(n.device, 0) + n.count * int(per)
    return out


def speed_weights(df: pd.DataFrame, cluster: ClusterSpec) -> dict[str, float]:
    """``s_d`` per device type of ``cluster``: the work-weighted mean over the jobs of their
    throughput there relative to their fastest type (module docstring, ``"speed"``)."""
    types = list(cluster.device_types)
    tput = df[[f"tput_{d}" for d in types]].to_numpy(dtype=np.float64)
    best = tput.max(axis=1)
    ok = best > 0
    wd = (df["workers"].to_numpy(dtype=np.float64) * best_durations(df, cluster))[ok]
    rel = tput[ok] / best[ok, None]
    total = float(wd.sum())
    if total <= 0:
        raise ValueError("no job can run on the cluster")
    return {d: float(wd @ rel[:, i] / total) for i, d in enumerate(types)}


def offered_load(df: pd.DataFrame, cluster: ClusterSpec, *, span: float | None = None,
                 resources: str = "devices", cpu_slot_cores: int = 20) -> float:
    """Offered load of a job table on a cluster (definitions in the module docstring)."""
    T = _span(df, span)
    d = best_durations(df, cluster)
    w = df["workers"].to_numpy(dtype=np.float64)
    if resources in ("devices", "speed"):
        slots = slots_by_type(cluster, cpu_slot_cores)
        if resources == "speed":
            s = speed_weights(df, cluster)
            cap = sum(n * s[t] for t, n in slots.items())
        else:
            cap = float(sum(slots.values()))
        if cap <= 0:
            raise ValueError("the cluster has no worker slot")
        return float(np.sum(w * d) / (cap * T))
    if resources == "dominant":
        C = sum(n.count * n.cpus for n in cluster.nodes)
        M = sum(n.count * n.mem_gb for n in cluster.nodes)
        G = sum(n.count * n.gpus for n in cluster.nodes)
        shares = [w * df["cpus"].to_numpy() / C if C > 0 else 0 * w,
                  w * df["mem_gb"].to_numpy() / M if M > 0 else 0 * w]
        if G > 0:
            shares.append(w / G)
        return float(np.sum(d * np.max(np.stack(shares), axis=0)) / T)
    raise ValueError(f"resources must be 'devices', 'speed' or 'dominant', got {resources!r}")


def scale_to_load(df: pd.DataFrame, cluster: ClusterSpec, target: float, *,
                  resources: str = "devices", cpu_slot_cores: int = 20,
                  span: float | None = None) -> pd.DataFrame:
    """Stretch or compress arrivals (about the first one) so the offered load is ``target``.

    With ``span`` given the load is defined over that span, which is scaled too (the
    returned table's load over ``span x factor`` is ``target``); deadlines keep their
    slack after arrival. Returns the rebased table.
    """
    if target <= 0:
        raise ValueError(f"target load must be > 0, got {target}")
    now = offered_load(df, cluster, span=span, resources=resources, cpu_slot_cores=cpu_slot_cores)
    f = now / target
    out = rebase(df, renumber=False)
    slack = out["deadline"] - out["arrival"] if "deadline" in out.columns else None
    out["arrival"] = out["arrival"] * f
    if slack is not None:
        out["deadline"] = out["arrival"] + slack
    return out


def episodes(df: pd.DataFrame, *, n_jobs: int | None = None, span: float | None = None,
             cluster: ClusterSpec | None = None, target_load: float | None = None,
             resources: str = "devices") -> list[pd.DataFrame]:
    """Cut by ``n_jobs`` or ``span``, then optionally scale each window to ``target_load``."""
    if (n_jobs is None) == (span is None):
        raise ValueError("episodes: give exactly one of n_jobs or span")
    wins = split_by_count(df, n_jobs) if n_jobs is not None else split_by_time(df, float(span))  # type: ignore[arg-type]
    if target_load is None:
        return wins
    if cluster is None:
        raise ValueError("episodes: target_load needs a cluster")
    return [scale_to_load(w, cluster, target_load, resources=resources,
                          span=span if n_jobs is None else None) for w in wins if len(w) > 1]

