"""Hadar/HadarE's simulated cluster and AWS testbed (Sultana et al., TPDS,
sec. IV and VI; docs/hadar.md), registered on import as ``hadar-sim`` and ``hadar-aws`` (the lab
testbed is ``hadar-testbed`` in :mod:`hetgym.presets.traces`).

``hetgym.scenarios.get("hadar-sim", n_jobs=480, seed=0)`` (paper §IV):

* 15 nodes of 4 GPUs: 5 x V100, 5 x P100, 5 x K80 (the paper's 20 GPUs of each type,
  "following the setup of the simulation experiments in Gavel"; 4 GPUs per node, 2
  sockets, 32 cores, 256 GB per node: assumption *hadar-sim workload*).
* ``n_jobs`` jobs drawn (seeded, without replacement) from the Philly-derived CSV shipped
  with hetgym (``hetgym/data/traces/philly``), all VCs pooled, from the paper's "busiest
  hours (3-10)": the CSV's arrival times are offsets within each VC (every VC starts
  near 0), so no absolute window of the trace can be recovered; we read the hours as
  hours of the day (arrival mod 24 h in [3 h, 10 h)), which keeps 4,415 of 15,264 jobs
  (assumption *hadar-sim workload*).
* Size by GPU-hours (trace GPUs x duration): Small [0, 1) -> ResNet-18 (batch 64),
  Medium [1, 10) -> CycleGAN, Large [10, 60) -> LM (batch 20) or Transformer (batch 64)
  (uniform), XLarge [60, 100) -> ResNet-50 (batch 64) (Table II; the paper's gap 50-60 is
  closed; jobs of 100 GPU-hours or more are outside the paper's classes and are not
  drawn: assumption *hadar-sim workload*).
* ``workers`` = trace GPUs rounded up to Gavel's measured 1/2/4/8 (3 -> 4, 5-7 -> 8,
  more -> 8); ``work`` such that the job runs its trace duration on V100s at that gang
  size (Gavel's measured throughputs); all jobs arrive at 0; ``forkable``; 1 core and
  4 GB per worker; 10 s restart delay; rounds of 360 s.

``hetgym.scenarios.get("hadar-aws", mix="M-5")`` (paper §VI-A): five single-GPU AWS
nodes, 1 x V100 (p3.2xlarge: 8 vCPU, 61 GB), 2 x K80 (p2.xlarge: 4 vCPU, 61 GB) and
2 x T4 (g4dn.xlarge: 4 vCPU, 16 GB), running one of the paper's seven mixes
(``hetgym.traces.lab.hadar_mix``: M-1, M-3, M-4, M-5, M-8, M-10, M-12; all jobs at 0,
forkable; run times alone on a V100 are the assumed values of
``hetgym/data/lab/hadar_testbed.json``).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from hetgym import scenarios
from hetgym.specs import ClusterSpec, NodeSpec, Scenario, SimOptions
from hetgym.traces._common import finish, make_rng, model_or_default
from hetgym.traces.lab import hadar_mix
from hetgym.traces.philly import packaged_philly_csv
from hetgym.traces.report import LoadReport
from hetgym.workload import Workload

__all__ = [
    "CATEGORIES",
    "gang_size",
    "hadar_aws",
    "hadar_aws_cluster",
    "hadar_sim",
    "hadar_sim_cluster",
]

#: (lower, upper GPU-hours, job types drawn uniformly) per size class (paper Table II).
CATEGORIES = (
    (0.0, 1.0, ("ResNet-18 (batch size 64)",)),
    (1.0, 10.0, ("CycleGAN",)),
    (10.0, 60.0, ("LM (batch size 20)", "Transformer (batch size 64)")),
    (60.0, 100.0, ("ResNet-50 (batch size 64)",)),
)
BUSY_HOURS = (3.0, 10.0)


def hadar_sim_cluster() -> ClusterSpec:
    """5 x 4 V100, 5 x 4 P100, 5 x 4 K80 (module docstring)."""
    kw = {"count": 5, "gpus": 4, "cpus": 32, "mem_gb": 256.0, "sockets": 2}
    return ClusterSpec([NodeSpec("v100", gpu_type="V100", **kw),
                        NodeSpec("p100", gpu_type="P100", **kw),
                        NodeSpec("k80", gpu_type="K80", **kw)])


def gang_size(gpus: np.ndarray) -> np.ndarray:
    """Trace GPUs rounded up to 1, 2, 4 or 8 (Gavel measures these gang sizes)."""
    g = np.asarray(gpus, dtype=np.int64)
    return np.select([g <= 1, g <= 2, g <= 4], [1, 2, 4], 8).astype(np.int64)


def hadar_sim(n_jobs: int = 480, seed: int = 0) -> Scenario:
    """Hadar's trace-driven simulation (module docstring).

    Args:
        n_jobs: Jobs drawn (the paper: 480; at most the 3,638 in the busy hours and classes).
        seed: Seed of the draw (jobs and the Large class's model).
    """
    raw = pd.read_csv(packaged_philly_csv())
    hour = (raw["arrival_time_s"].to_numpy(dtype=np.float64) % 86400.0) / 3600.0
    gh = raw["num_gpus"].to_numpy(dtype=np.float64) * raw["duration_s"].to_numpy(dtype=np.float64) / 3600.0
    keep = (hour >= BUSY_HOURS[0]) & (hour < BUSY_HOURS[1]) & (gh < CATEGORIES[-1][1])
    pool = raw.loc[keep].reset_index(drop=True)
    if not 1 <= int(n_jobs) <= len(pool):
        raise ValueError(f"hadar-sim: n_jobs must be in 1..{len(pool)}, got {n_jobs}")
    rng = make_rng(None, seed)
    pick = np.sort(rng.choice(len(pool), size=int(n_jobs), replace=False))
    rows = pool.iloc[pick].reset_index(drop=True)
    gh = rows["num_gpus"].to_numpy(dtype=np.float64) * rows["duration_s"].to_numpy(dtype=np.float64) / 3600.0
    types = []
    for x in gh.tolist():
        for lo, hi, names in CATEGORIES:
            if lo <= x < hi:
                types.append(names[int(rng.integers(len(names)))])
                break
    df = pd.DataFrame({
        "arrival": 0.0, "user": rows["vc"].astype(str).to_numpy(), "job_class": "BE",
        "workers": gang_size(rows["num_gpus"].to_numpy()),
        "duration": rows["duration_s"].to_numpy(dtype=np.float64), "cpus": 1.0, "mem_gb": 4.0,
        "job_type": types, "forkable": True,
        "trace_id": [f"{v}:{i}" for v, i in zip(rows["vc"], rows["job_index_in_vc"])],
    })
    report = LoadReport("hadar-sim", rows_read=len(raw))
    report.drop("outside_busy_hours_or_classes", int((~keep).sum()))
    report.drop("not_drawn", len(pool) - len(rows))
    frame = finish(df, source="hadar-sim", report=report, devices=["v100", "p100", "k80"],
                   throughput=model_or_default(None), rng=rng, duration_device="v100")
    return Scenario(cluster=hadar_sim_cluster(),
                    workload=Workload.from_frame(frame, source="hadar-sim"),
                    options=SimOptions(restart_delay=10.0, round_length=360.0), name="hadar-sim")


def hadar_aws_cluster() -> ClusterSpec:
    """1 x V100, 2 x K80, 2 x T4, one GPU per node (module docstring)."""
    return ClusterSpec([NodeSpec("v100", count=1, gpu_type="V100", gpus=1, cpus=8, mem_gb=61.0),
                        NodeSpec("k80", count=2, gpu_type="K80", gpus=1, cpus=4, mem_gb=61.0),
                        NodeSpec("t4", count=2, gpu_type="T4", gpus=1, cpus=4, mem_gb=16.0)])


def hadar_aws(mix: str = "M-5", seed: int = 0) -> Scenario:
    """Hadar's AWS testbed running mix ``mix`` (module docstring)."""
    df = hadar_mix(mix, devices=["v100", "k80", "t4"], seed=seed)
    return Scenario(cluster=hadar_aws_cluster(), workload=Workload.from_frame(df, source="hadar-aws"),
                    options=SimOptions(restart_delay=10.0, round_length=360.0), name="hadar-aws")


scenarios.register("hadar-sim", hadar_sim)
scenarios.register("hadar-aws", hadar_aws)
