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
from hetgym.traces.gavel import load_gavel_traces
from hetgym.traces.windows import rebase, scale_to_load

__all__ = ["philly_window", "philly_table", "max_node_gang"]

# device types (tuple) -> (parsed table sorted by arrival, LoadReport)
_CACHE: dict[tuple[str, ...], tuple[pd.DataFrame, Any]] = {}


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


def philly_window(cluster: ClusterSpec, n_jobs: int = 512, seed: int = 0, load: float = 1.0,
                  *, max_workers: int | None = None) -> pd.DataFrame:
    """A canonical job table of ``n_jobs`` Philly-derived jobs for ``cluster``.

    Jobs come from the 15 shipped Gavel traces (:func:`load_gavel_traces` with
    ``devices = cluster.device_types``). Jobs with more workers than ``max_workers``
    (default: the most GPUs of one node of the cluster, so every gang fits on one node)
    are dropped; their number is in ``df.attrs["dropped_too_large"]``. A contiguous
    window of ``n_jobs`` jobs in arrival order starts at a position drawn with ``seed``
    (among windows whose arrivals span a positive time); arrivals are rebased to 0 and
    scaled so :func:`~hetgym.traces.windows.offered_load` on ``cluster`` (default
    arguments: ``resources="devices"``, ``cpu_slot_cores=20``) equals ``load``.

    Raises:
        ValueError: ``n_jobs < 2``, ``load <= 0``, or fewer fitting jobs than ``n_jobs``.
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
    start = int(np.random.default_rng(seed).choice(ok))
    win = rebase(fit.iloc[start:start + n_jobs])
    out = scale_to_load(win, cluster, float(load))
    out.attrs["dropped_too_large"] = dropped
    out.attrs["window_start"] = start
    return out
