"""Trace- and lab-based scenarios, registered on import (``hetgym.scenarios`` imports this
module lazily, so ``hetgym.scenarios.names()`` lists them).

========================= ==================================================================
name                      what
========================= ==================================================================
``philly-hetero``         Philly-derived Gavel jobs on 4 nodes x 4 GPUs each of K80, P100, V100
                          (Gavel's simulated heterogeneous cluster, scaled down), optional CPU nodes
``google-hybrid``         Google 2011 arrivals/users/run times (shipped shard), job types and
                          GPU/CPU throughputs from the throughput model, CPU + K80 + V100 nodes
``alibaba-pai``           PAI GPU 2020 tables (paths), V100/P100/T4 cluster; synthetic PAI-like
                          jobs when no path is given
``helios``                Helios ``cluster_log.csv`` (path) on 8 x 8 V100 nodes; synthetic
                          V100 jobs when no path is given
``hadar-testbed``         Hadar's 5-GPU testbed and one of its mixes (all jobs at time 0)
``andreas-armida``        ANDREAS's 8 validation jobs on ARMIDA nodes, tardiness objective
========================= ==================================================================

The papers' own presets (``allox-hybrid``, ``fitgpp-lab``) are in :mod:`hetgym.presets`.
Trace jobs that fit no node group of the cluster are dropped (the count is in the workload
frame's ``attrs["dropped_unfit"]``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from hetgym import scenarios
from hetgym.generators import SyntheticGenerator
from hetgym.specs import ClusterSpec, NodeSpec, Objective, Scenario, SimOptions
from hetgym.traces.defaults import philly_window
from hetgym.traces.windows import rebase, scale_to_load
from hetgym.workload import Workload

__all__ = [
    "philly_hetero", "google_hybrid", "alibaba_pai", "helios", "hadar_testbed", "andreas_armida",
    "fits_mask", "contiguous_window",
]

_GOOGLE: dict[str, pd.DataFrame] = {}


def fits_mask(df: pd.DataFrame, cluster: ClusterSpec, options: SimOptions) -> np.ndarray:
    """Rows of ``df`` that fit some device type of ``cluster`` (the rule of
    :meth:`Workload.check_cluster`: throughput > 0 and enough slots over that type's nodes)."""
    n = len(df)
    cpus = df["cpus"].to_numpy(np.float64)
    mem = df["mem_gb"].to_numpy(np.float64)
    workers = df["workers"].to_numpy(np.int64)
    big = 10**9
    ok = np.zeros(n, dtype=bool)
    for d in cluster.device_types:
        col = f"tput_{d}"
        if col not in df.columns:
            continue
        slots = np.zeros(n, dtype=np.int64)
        for node in cluster.nodes:
            if node.device != d:
                continue
            if d == "cpu":
                need = cpus if options.cpu_slot_cores is None else np.full(n, float(options.cpu_slot_cores))
                per = np.where(need > 0, np.floor(node.cpus / np.maximum(need, 1e-12)), big)
            else:
                per = np.full(n, float(node.gpus))
                per = np.minimum(per, np.where(cpus > 0, np.floor(node.cpus / np.maximum(cpus, 1e-12)), big))
            per = np.minimum(per, np.where(mem > 0, np.floor(node.mem_gb / np.maximum(mem, 1e-12)), big))
            slots += per.astype(np.int64) * node.count
        ok |= (df[col].to_numpy(np.float64) > 0) & (slots >= workers)
    return ok


def contiguous_window(df: pd.DataFrame, n_jobs: int | None, seed: int) -> pd.DataFrame:
    """A seeded contiguous window of ``n_jobs`` jobs in arrival order (all jobs when
    ``n_jobs`` is None or >= the table), rebased and renumbered."""
    s = df.sort_values(["arrival", "job_id"], kind="stable")
    if n_jobs is None or n_jobs >= len(s):
        return rebase(s)
    if n_jobs < 1:
        raise ValueError(f"n_jobs must be >= 1, got {n_jobs}")
    start = int(np.random.default_rng(seed).integers(0, len(s) - n_jobs + 1))
    return rebase(s.iloc[start:start + n_jobs])


def _finish(df: pd.DataFrame, cluster: ClusterSpec, options: SimOptions, *, n_jobs: int | None,
            seed: int, load: float | None, source: str) -> pd.DataFrame:
    """Drop unfit jobs, cut a window, scale arrivals to ``load`` (when the window spans time).

    The load is on speed-weighted capacity (``offered_load(resources="speed")``, CPU slots
    of ``options.cpu_slot_cores`` cores, 20 when unset).
    """
    keep = fits_mask(df, cluster, options)
    dropped = int((~keep).sum())
    if not keep.any():
        raise ValueError(f"{source}: no job fits the cluster")
    out = contiguous_window(df.loc[keep], n_jobs, seed)
    if load is not None and len(out) > 1 and out["arrival"].iloc[-1] > 0:
        out = scale_to_load(out, cluster, float(load), resources="speed",
                            cpu_slot_cores=options.cpu_slot_cores or 20)
    out.attrs["dropped_unfit"] = dropped
    return out


def _scenario(cluster: ClusterSpec, df: pd.DataFrame, options: SimOptions, name: str,
              objective: Any = "jct") -> Scenario:
    dropped = df.attrs.get("dropped_unfit", df.attrs.get("dropped_too_large", 0))
    wl = Workload.from_frame(df, source=name)
    wl.frame.attrs["dropped_unfit"] = dropped
    return Scenario(cluster=cluster, workload=wl, options=options,
                    objective=Objective.of(objective), name=name)


# ---------------------------------------------------------------- philly-hetero


def philly_cluster(nodes_per_type: int = 4, gpus_per_node: int = 4, cpu_nodes: int = 0) -> ClusterSpec:
    """Gavel's simulated K80/P100/V100 cluster, scaled down (default 3 x 4 nodes x 4 GPUs)."""
    groups = [NodeSpec(name="cpu", count=cpu_nodes, gpu_type=None, gpus=0, cpus=32, mem_gb=256)] if cpu_nodes else []
    groups += [NodeSpec(name=t.lower(), count=nodes_per_type, gpu_type=t, gpus=gpus_per_node, cpus=32,
                        mem_gb=256, sockets=2) for t in ("K80", "P100", "V100")]
    return ClusterSpec(nodes=groups)


def philly_hetero(n_jobs: int = 512, seed: int = 0, load: float = 1.0, cpu_nodes: int = 0,
                  max_workers: int = 8) -> Scenario:
    """Philly-derived Gavel jobs on a heterogeneous K80/P100/V100 cluster.

    Cluster: 4 nodes x 4 GPUs of each type (Gavel simulated 36 of each; scaled down) plus
    ``cpu_nodes`` 32-core CPU nodes. Jobs: :func:`~hetgym.traces.defaults.philly_window`
    keeping gangs of at most ``max_workers`` (default 8: Gavel's largest common scale
    factor; a gang may span nodes), CPU configurations only where a user would submit one
    (:func:`~hetgym.throughput.restrict_cpu`), arrivals scaled to offered load ``load`` on
    speed-weighted capacity.
    """
    cluster = philly_cluster(cpu_nodes=cpu_nodes)
    df = philly_window(cluster, n_jobs=n_jobs, seed=seed, load=load, max_workers=max_workers)
    return _scenario(cluster, df, SimOptions(cpu_slot_cores=8), "philly-hetero")


# ---------------------------------------------------------------- google-hybrid


def _google_table() -> pd.DataFrame:
    if "t" not in _GOOGLE:
        from hetgym.traces.google import load_google2011

        _GOOGLE["t"] = load_google2011(devices=["cpu", "k80", "v100"], duration_device="cpu", seed=0)[0]
    return _GOOGLE["t"]


def google_hybrid(n_jobs: int = 256, seed: int = 0, load: float = 1.0) -> Scenario:
    """Google 2011 jobs (shipped ``job_events`` shard 0: 589 finished jobs) on a hybrid cluster.

    Arrivals, users and run times (taken as CPU run times) come from the trace; job
    types are drawn from the throughput model (as AlloX did), which gives GPU and CPU
    throughputs. Cluster: 4 CPU nodes (32 cores, 8-core slots), 2 K80 and 2 V100 nodes
    x 4 GPUs. A seeded contiguous window of ``n_jobs`` jobs, scaled to offered load ``load``.
    """
    cluster = ClusterSpec(nodes=[
        NodeSpec(name="cpu", count=4, gpu_type=None, gpus=0, cpus=32, mem_gb=256),
        NodeSpec(name="k80", count=2, gpu_type="K80", gpus=4, cpus=32, mem_gb=256, sockets=2),
        NodeSpec(name="v100", count=2, gpu_type="V100", gpus=4, cpus=32, mem_gb=256, sockets=2),
    ])
    options = SimOptions(cpu_slot_cores=8)
    df = _finish(_google_table(), cluster, options, n_jobs=n_jobs, seed=seed, load=load,
                 source="google-hybrid")
    return _scenario(cluster, df, options, "google-hybrid")


# ---------------------------------------------------------------- alibaba-pai


def pai_cluster() -> ClusterSpec:
    """A small PAI-like cluster: 4 x 8 V100, 2 x 8 P100, 4 x 2 T4 (96-core, 512 GB nodes)."""
    return ClusterSpec(nodes=[
        NodeSpec(name="v100", count=4, gpu_type="V100", gpus=8, cpus=96, mem_gb=512, sockets=2),
        NodeSpec(name="p100", count=2, gpu_type="P100", gpus=8, cpus=96, mem_gb=512, sockets=2),
        NodeSpec(name="t4", count=4, gpu_type="T4", gpus=2, cpus=96, mem_gb=512, sockets=2),
    ])


def alibaba_pai(job_table: str | Path | None = None, task_table: str | Path | None = None,
                n_jobs: int | None = 256, seed: int = 0, load: float = 1.0) -> Scenario:
    """Alibaba PAI GPU 2020 jobs on a V100/P100/T4 cluster (:func:`pai_cluster`).

    With ``job_table`` and ``task_table`` (``pai_job_table.csv``, ``pai_task_table.csv``)
    the jobs come from :func:`~hetgym.traces.load_pai` (MISC GPU jobs dropped). **Without
    paths the workload is synthetic**: a PAI-like mix from
    :class:`~hetgym.generators.SyntheticGenerator` (mostly 1-GPU jobs, lognormal run
    times, 8 users), not trace data. Jobs that fit no node group are dropped, a seeded
    contiguous window of ``n_jobs`` (``None``: all) is kept and scaled to offered load ``load``.
    """
    cluster = pai_cluster()
    devices = ["p100", "v100", "t4"]
    options = SimOptions()
    if (job_table is None) != (task_table is None):
        raise ValueError("alibaba-pai: give both job_table and task_table, or neither")
    if job_table is not None:
        from hetgym.traces.pai import load_pai

        df, _ = load_pai(job_table, task_table, devices=devices, misc_as=None, seed=seed)
    else:
        gen = SyntheticGenerator(devices=devices, rate=1 / 60.0, mean_duration=1800.0, sigma=1.5,
                                 workers={1: 0.8, 2: 0.08, 4: 0.08, 8: 0.04}, users=8,
                                 cpus=6.0, mem_gb=24.0)
        df = gen.generate(n_jobs or 256, seed=seed)
    df = _finish(df, cluster, options, n_jobs=n_jobs, seed=seed, load=load, source="alibaba-pai")
    return _scenario(cluster, df, options, "alibaba-pai")


# ---------------------------------------------------------------- helios


def helios_cluster(nodes: int = 8) -> ClusterSpec:
    """Helios-like V100 nodes: ``nodes`` x (8 V100, 48 cores, 376 GB)."""
    return ClusterSpec(nodes=[NodeSpec(name="v100", count=nodes, gpu_type="V100", gpus=8, cpus=48,
                                       mem_gb=376, sockets=2)])


def helios(path: str | Path | None = None, n_jobs: int | None = 256, seed: int = 0,
           load: float = 1.0) -> Scenario:
    """SenseTime Helios jobs on V100 nodes (:func:`helios_cluster`).

    With ``path`` (a ``cluster_log.csv``) the jobs come from
    :func:`~hetgym.traces.load_helios` (COMPLETED jobs, durations on V100). **Without a
    path the workload is synthetic**: V100-only jobs from
    :class:`~hetgym.generators.SyntheticGenerator` with Helios-like gang sizes, not trace
    data. Unfit jobs are dropped, a seeded contiguous window of ``n_jobs`` (``None``: all)
    is kept and scaled to offered load ``load``.
    """
    cluster = helios_cluster()
    options = SimOptions()
    if path is not None:
        from hetgym.traces.helios import load_helios

        df, _ = load_helios(path, devices=["v100"], seed=seed)
    else:
        gen = SyntheticGenerator(devices=["v100"], rate=1 / 60.0, mean_duration=3600.0, sigma=1.5,
                                 workers={1: 0.6, 2: 0.1, 4: 0.1, 8: 0.15, 16: 0.05}, users=16,
                                 cpus=4.0, mem_gb=32.0)
        df = gen.generate(n_jobs or 256, seed=seed)
    df = _finish(df, cluster, options, n_jobs=n_jobs, seed=seed, load=load, source="helios")
    return _scenario(cluster, df, options, "helios")


# ---------------------------------------------------------------- lab scenarios


def hadar_testbed(mix: str = "M-5", seed: int = 0) -> Scenario:
    """Hadar's five-node, one-GPU-each testbed with workload mix ``mix`` (all jobs at 0)."""
    from hetgym.traces.lab import hadar_mix, hadar_testbed_cluster

    return _scenario(hadar_testbed_cluster(), hadar_mix(mix, seed=seed), SimOptions(), "hadar-testbed")


def andreas_armida(energy_weight: float = 0.0, elastic: bool = False) -> Scenario:
    """ANDREAS's 8 validation jobs on ARMIDA nodes (2 V100 nodes + 1 T4 node).

    Objective: weighted tardiness, plus ``energy_weight`` x energy cost when > 0.
    Energy priced at 0.172 EUR/kWh with PUE 1.33 (the paper's values).
    ``elastic=True`` applies ANDREAS' own model (:mod:`hetgym.presets.andreas`): each job
    may take 1 or 2 GPUs of one node (sublinear speed-up, exponent 0.8), nodes without a
    job are off, a snapshot every epoch, and the objective weighs energy and tardiness
    (``energy_weight`` 1 unless given).
    """
    from hetgym.traces.lab import andreas_cluster, andreas_jobs

    if elastic:
        from hetgym.presets.andreas import OBJECTIVE, andreas_options, elastic_jobs

        objective: Any = dict(OBJECTIVE, energy_cost=float(energy_weight or 1.0))
        return _scenario(andreas_cluster(), elastic_jobs(andreas_jobs(), 2), andreas_options(),
                         "andreas-armida", objective)
    objective = "tardiness" if energy_weight <= 0 else {"tardiness": 1.0, "energy_cost": float(energy_weight)}
    return _scenario(andreas_cluster(), andreas_jobs(), SimOptions(energy_price=0.172, pue=1.33),
                     "andreas-armida", objective)


REGISTERED = {
    "philly-hetero": philly_hetero,
    "google-hybrid": google_hybrid,
    "alibaba-pai": alibaba_pai,
    "helios": helios,
    "hadar-testbed": hadar_testbed,
    "andreas-armida": andreas_armida,
}
for _name, _factory in REGISTERED.items():
    scenarios.register(_name, _factory)
