"""Tiny hand-built scenarios for the worked examples of the round-based baselines."""

from __future__ import annotations

import numpy as np
import pandas as pd

from hetgym import ClusterSpec, NodeSpec, Scenario, SimOptions, Workload


def scenario(rows, nodes, restart_delay: float = 0.0) -> Scenario:
    """rows: (arrival, workers, {device: per-worker tput}, work); nodes: (gpu_type, count,
    gpus per node). Comm 0, no topology slowdown, 360 s rounds."""
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
    })
    cluster = ClusterSpec([NodeSpec(f"{t}-{i}", count=c, gpu_type=t, gpus=g, cpus=64, mem_gb=512)
                           for i, (t, c, g) in enumerate(nodes)])
    return Scenario(cluster=cluster, workload=Workload.from_frame(df),
                    options=SimOptions(restart_delay=restart_delay, topology_coeff=0.0,
                                       round_length=360.0))


def ends(res) -> list[float]:
    """Completion time of every job, in job order."""
    return [float(x) for x in res.jobs.sort_values("job_id")["end"]]
