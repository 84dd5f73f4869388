"""The default scenario's job table: a window of the shipped Philly-derived Gavel traces.

:func:`philly_window` is what ``hetgym.scenarios.get("hetero-small")`` uses. The 15
shipped Gavel VC traces (15,264 jobs) are parsed once per set of device types and kept
in memory, so later calls only cut and scale a window (a few milliseconds).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from hetgym.specs import ClusterSpec
from hetgym.throughput import CPU_MAX_HOURS, CPU_MAX_WORKERS, restrict_cpu
from hetgym.traces.gavel import load_gavel_traces
from hetgym.traces.windows import rebase, scale_to_load

__all__ = ["philly_window", "philly_table", "max_node_gang", "burstiness", "window_burstiness",
           "MAX_BURST"]

#: Default bound on :func:`burstiness` of the default scenario's windows.
MAX_BURST = 0.25

# device types (tuple) -> (parsed table sorted by arrival, LoadReport)
_CACHE: dict[tuple[str, ...], tuple[pd.DataFrame, Any]] = {}
# (device types, max workers, n_jobs, max_burst) -> (window starts of seeds 0.., free mask)
_STARTS: dict[tuple[Any, ...], tuple[list[int], np.ndarray]] = {}


def _seed_start(ok: np.ndarray, n_jobs: int, seed: int, key: tuple[Any, ...]) -> int:
    """Start of seed ``seed``'s window: seeds 0, 1, 2, ... draw in turn (generator seeded
    by the seed) among the candidate starts ``ok`` whose window overlaps none of the
    windows of the lower seeds; when none is left, every candidate is free again."""
    if seed < 0:
        raise ValueError(f"philly_window: seed must be >= 0, got {seed}")
    seq, free = _STARTS.setdefault(key, ([], np.ones(len(ok), dtype=bool)))
    while len(seq) <= seed:
        if not free.any():
            free[:] = True
        start = int(ok[np.random.default_rng(len(seq)).choice(np.flatnonzero(free))])
        seq.append(start)
        free &= np.abs(ok - start) >= n_jobs
    return seq[seed]


def philly_table(devices: tuple[str, ...] | list[str]) -> pd.DataFrame:
    """All shipped Gavel Philly-derived jobs with ``tput_`` columns for ``devices`` (cached).

    The returned frame is shared: copy it before changing it.
    """
    key = tuple(devices)
    if key not in _CACHE:
        _CACHE[key] = load_gavel_traces(devices=list(key), seed=0)
    return _CACHE[key][0]


def max_node_gang(cluster: ClusterSpec) -> int:
    """Largest gang that fits on one GPU node of ``cluster`` (its most GPUs per node), 1 at least."""
    return max([n.gpus for n in cluster.nodes if n.gpu_type is not None] or [1])


def window_burstiness(arrival: np.ndarray, work: np.ndarray, starts: np.ndarray, n_jobs: int,
                      parts: int = 10) -> np.ndarray:
    """:func:`burstiness` of the windows ``[s, s + n_jobs)`` of a table sorted by arrival.

    ``arrival`` and ``work`` (workers x best duration) are per job; one value per start.
    """
    starts = np.asarray(starts, dtype=np.int64)
    cum = np.concatenate([[0.0], np.cumsum(work)])
    a0, a1 = arrival[starts], arrival[starts + n_jobs - 1]
    k = np.arange(1, parts)[None, :]
    edges = a0[:, None] + (a1 - a0)[:, None] * k / parts
    idx = np.searchsorted(arrival, edges, side="left")
    idx = np.clip(idx, starts[:, None], (starts + n_jobs)[:, None])
    bounds = np.concatenate([starts[:, None], idx, (starts + n_jobs)[:, None]], axis=1)
    per = np.diff(cum[bounds], axis=1)
    total = cum[starts + n_jobs] - cum[starts]
    with np.errstate(invalid="ignore", divide="ignore"):
        out = per.max(axis=1) / total
    return np.where((a1 > a0) & (total > 0), out, 1.0)


def burstiness(df: pd.DataFrame, cluster: ClusterSpec, parts: int = 10) -> float:
    """Largest share of a window's work that arrives in one of ``parts`` equal parts of its
    arrival span (work = workers x best duration on ``cluster``; a job arriving on a part
    boundary counts in the later part). ``1 / parts`` for a perfectly even stream; 1 when
    everything arrives at once."""
    from hetgym.traces.windows import best_durations

    s = df.sort_values("arrival", kind="stable")
    wd = s["workers"].to_numpy(dtype=np.float64) * best_durations(s, cluster)
    return float(window_burstiness(s["arrival"].to_numpy(dtype=np.float64), wd,
                                   np.array([0]), len(s), parts)[0])


def philly_window(cluster: ClusterSpec, n_jobs: int = 512, seed: int = 0, load: float = 1.0,
                  *, max_workers: int | None = None, cpu_slot_cores: int = 8,
                  cpu_max_workers: int | None = CPU_MAX_WORKERS,
                  cpu_max_hours: float = CPU_MAX_HOURS,
                  max_burst: float | None = MAX_BURST) -> pd.DataFrame:
    """A canonical job table of ``n_jobs`` Philly-derived jobs for ``cluster``.

    Jobs come from the 15 shipped Gavel traces (:func:`load_gavel_traces` with
    ``devices = cluster.device_types``). Jobs with more workers than ``max_workers``
    (default: the most GPUs of one node of the cluster, so every gang fits on one node)
    are dropped; their number is in ``df.attrs["dropped_too_large"]``. A contiguous
    window of ``n_jobs`` jobs in arrival order is drawn with ``seed`` among windows whose
    arrivals span a positive time and, unless ``max_burst`` is None,
    whose :func:`burstiness` is at most ``max_burst`` (default 0.25: no tenth of the span
    brings more than a quarter of the work). The Philly trace is bursty (the median
    512-job window brings 30% of its work in one tenth of its span, some 50%): the load of
    a window is its average over the span, so in a burst the cluster sees several times
    that load, and windows with and without bursts are not comparable.
    ``df.attrs["burstiness"]`` has the window's value. Different seeds take disjoint
    windows while the trace has room: seeds 0, 1, 2, ... draw in turn, each uniformly
    among the windows that overlap none of the lower seeds' (a seed's window depends only
    on the seed, not on which seeds were built before). CPU
    configurations are kept only where a user would submit one (:func:`~hetgym.throughput.restrict_cpu` with
    ``cpu_max_workers`` and ``cpu_max_hours``; ``cpu_max_workers=None`` keeps every one);
    the count withdrawn is in ``df.attrs["cpu_withdrawn"]``. Arrivals are rebased to 0 and
    scaled so :func:`~hetgym.traces.windows.offered_load` on ``cluster`` with
    ``resources="speed"`` (capacity weighted by speed) and ``cpu_slot_cores`` (the
    scenario's ``SimOptions.cpu_slot_cores``; 8 in the presets that use this) equals ``load``.

    Raises:
        ValueError: ``n_jobs < 2``, ``load <= 0``, fewer fitting jobs than ``n_jobs``, or
            no window within ``max_burst``.
    """
    if n_jobs < 2:
        raise ValueError(f"philly_window: n_jobs must be >= 2 (a load needs a time span), got {n_jobs}")
    if load <= 0:
        raise ValueError(f"philly_window: load must be > 0, got {load}")
    full = philly_table(cluster.device_types)
    cap = max_node_gang(cluster) if max_workers is None else int(max_workers)
    keep = full["workers"].to_numpy() <= cap
    dropped = int((~keep).sum())
    fit = full.loc[keep]
    if len(fit) < n_jobs:
        raise ValueError(f"philly_window: only {len(fit)} jobs have <= {cap} workers; asked for {n_jobs}")
    arr = fit["arrival"].to_numpy()
    starts = np.arange(len(fit) - n_jobs + 1)
    ok = starts[arr[starts + n_jobs - 1] > arr[starts]]
    if len(ok) == 0:
        raise ValueError("philly_window: every window of that size arrives at one instant")
    if max_burst is not None:
        from hetgym.traces.windows import best_durations

        wd = fit["workers"].to_numpy(dtype=np.float64) * best_durations(fit, cluster)
        bursts = window_burstiness(arr.astype(np.float64), wd, ok, n_jobs)
        ok = ok[bursts <= max_burst]
        if len(ok) == 0:
            raise ValueError(f"philly_window: no window of {n_jobs} jobs has burstiness <= "
                             f"{max_burst} (least: {bursts.min():.2f}); pass max_burst=None")
    start = _seed_start(ok, n_jobs, int(seed), (tuple(cluster.device_types), cap, n_jobs, max_burst))
    win = rebase(fit.iloc[start:start + n_jobs])
    burst = burstiness(win, cluster)
    withdrawn = 0
    if cpu_max_workers is not None and "tput_cpu" in win.columns:
        win = restrict_cpu(win, cpu_max_workers, cpu_max_hours)
        withdrawn = win.attrs["cpu_withdrawn"]
    out = scale_to_load(win, cluster, float(load), resources="speed", cpu_slot_cores=cpu_slot_cores)
    out.attrs["dropped_too_large"] = dropped
    out.attrs["cpu_withdrawn"] = withdrawn
    out.attrs["burstiness"] = burst
    out.attrs["window_start"] = start
    return out
