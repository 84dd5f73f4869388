"""Tiny hand-built scenarios for worked examples (the family docs' and the papers' small cases).

:func:`tiny_scenario` builds a cluster of single-type GPU nodes and a workload from a few
rows, with no topology slowdown and 360 s rounds unless told otherwise. The unit tests of
the round-based baselines and ``scripts/reproduce.py``'s worked-example rows both use it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import Any

import numpy as np
import pandas as pd

from hetgym.specs import ClusterSpec, NodeSpec, Scenario, SimOptions
from hetgym.workload import Workload

__all__ = ["tiny_scenario"]


def tiny_scenario(rows: Sequence[tuple], nodes: Sequence[tuple], restart_delay: float = 0.0,
                  columns: dict[str, Any] | None = None, **options: Any) -> Scenario:
    """A small scenario from job rows and node groups.

    Args:
        rows: per job ``(arrival, workers, {device: per-worker tput}, work)``.
        nodes: per node group ``(gpu_type, count, gpus per node)``; each node has 64 cores
            and 512 GB.
        restart_delay: :attr:`SimOptions.restart_delay`.
        columns: extra workload columns, each a scalar or one value per job
            (e.g. ``{"forkable": True}``).
        **options: further :class:`SimOptions` fields (e.g. ``fork_sync_delay=10.0``).

    Comm 0, ``topology_coeff=0``, ``round_length=360`` unless ``options`` says otherwise.
    """
    if not rows:
        raise ValueError("tiny_scenario: rows is empty (need at least one job)")
    for i, r in enumerate(rows):
        if len(r) != 4 or not isinstance(r[2], dict):
            raise ValueError(f"tiny_scenario: job {i} must be (arrival, workers, {{device: tput}}, work), got {r!r}")
    devs = sorted({d for r in rows for d in r[2]})
    df = pd.DataFrame({
        "job_id": np.arange(len(rows)),
        "arrival": [float(r[0]) for r in rows],
        "user": 0,
        "job_class": "BE",
        "workers": [int(r[1]) for r in rows],
        "work": [float(r[3]) for r in rows],
        "cpus": 1.0,
        "mem_gb": 1.0,
        **{f"tput_{d}": [float(r[2].get(d, 0.0)) for r in rows] for d in devs},
        **(columns or {}),
    })
    cluster = ClusterSpec([NodeSpec(f"{t}-{i}", count=c, gpu_type=t, gpus=g, cpus=64, mem_gb=512)
                           for i, (t, c, g) in enumerate(nodes)])
    opts = replace(SimOptions(restart_delay=restart_delay, topology_coeff=0.0, round_length=360.0),
                   **options)
    return Scenario(cluster=cluster, workload=Workload.from_frame(df), options=opts)
