"""Scenarios of the AlloX paper; importing this module registers ``allox-hybrid`` and
``allox-paper`` (``allox-hybrid`` with ``setting="paper"``, :mod:`hetgym.presets.allox_paper`).

The AlloX schedulers that run on them are in ``baselines.allox.schedulers`` and ``baselines.allox.drf``.

* ``allox-hybrid`` (sec. 5.1, "Simulator"): 20 GPUs (K80, one per node, 4 host
  cores), 20 CPUs of 20 cores each (one CPU = one slot: ``cpu_slot_cores=20``),
  1280 GB of memory in all (32 GB per node), 10 users. Arrival times come from the
  Google 2011 trace excerpt shipped with hetgym (``hetgym.traces.google``), as in the
  paper; job sizes do not (Google's jobs are not DL jobs): each job gets a Gavel job
  type, a lognormal duration on the K80, and a CPU time ``speedup x`` longer, the
  speedup drawn per job type uniformly in [1.8, 10] (the paper's measured range,
  via :class:`hetgym.throughput.ThroughputModel`).

:func:`example_scenario` builds the paper's worked examples (all jobs at time 0,
machines of one GPU or one CPU slot, no restart delay).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from hetgym import scenarios
from hetgym.specs import ClusterSpec, NodeSpec, Scenario, SimOptions
from hetgym.throughput import uniform_speedup
from hetgym.workload import Workload

__all__ = [
    "JSQ_PLUS_EXAMPLE",
    "SJF_PLUS_EXAMPLE",
    "TABLE1",
    "THREE_JOBS",
    "allox_hybrid",
    "example_scenario",
]

#: Table 1: (GPU, CPU) minutes of J1..J6; users 1 and 2 own the odd and even jobs.
TABLE1 = [(10, 15), (8, 10), (10, 50), (5, 75), (10, 15), (10, 15)]
#: Sec. 2.2, Fig. 5: SJF+ example (2 GPUs, 2 CPUs).
SJF_PLUS_EXAMPLE = [(10, 20), (10, 20), (20, 90), (20, 90)]
#: Sec. 2.2, Fig. 4: JSQ+ example (2 GPUs, 2 CPUs).
JSQ_PLUS_EXAMPLE = [(40, 50), (40, 50), (40, 160), (40, 160)]
#: Sec. 3.1: three jobs, one GPU and one CPU.
THREE_JOBS = [(3, 4), (4, 6), (5, 10)]


def example_scenario(p: Sequence[tuple[float, float]], gpus: int = 2, cpus: int = 2,
                     users: Sequence[int] | None = None, gpu_type: str = "K80") -> Scenario:
    """A worked example: every job at time 0 with the given (GPU, CPU) processing times.

    Each GPU is a node with one GPU, each CPU a node with one one-core slot; jobs
    take one core and 1 GB; no restart delay. Time units are the paper's (minutes),
    read as seconds.

    Args:
        p: (GPU time, CPU time) per job, in job order (job ids 1..n).
        gpus: Number of GPU machines.
        cpus: Number of CPU machines.
        users: User of each job (default: all user 0).
        gpu_type: GPU type of the GPU machines.
    """
    arr = np.asarray(p, dtype=np.float64)
    n = len(arr)
    work = 60.0
    df = pd.DataFrame({
        "job_id": np.arange(1, n + 1), "arrival": 0.0,
        "user": list(users) if users is not None else [0] * n, "job_class": "BE",
        "workers": 1, "work": work,
        f"tput_{gpu_type.lower()}": work / arr[:, 0], "tput_cpu": work / arr[:, 1],
        "cpus": 1.0, "mem_gb": 1.0,
    })
    cluster = ClusterSpec(nodes=[
        NodeSpec(name="gpu", count=gpus, gpu_type=gpu_type, gpus=1, cpus=1, mem_gb=16),
        NodeSpec(name="cpu", count=cpus, gpu_type=None, gpus=0, cpus=1, mem_gb=16),
    ])
    return Scenario(cluster=cluster, workload=Workload.from_frame(df),
                    options=SimOptions(restart_delay=0.0))


def hybrid_cluster() -> ClusterSpec:
    """The paper's simulated cluster: 20 K80 GPUs, 20 CPUs x 20 cores, 1280 GB."""
    return ClusterSpec(nodes=[
        NodeSpec(name="k80", count=20, gpu_type="K80", gpus=1, cpus=4, mem_gb=32),
        NodeSpec(name="cpu", count=20, gpu_type=None, gpus=0, cpus=20, mem_gb=32),
    ])


def _lognormal(mean: float, sigma: float):
    mu = np.log(mean) - sigma**2 / 2.0

    def draw(rng: np.random.Generator, n: int) -> np.ndarray:
        return rng.lognormal(mu, sigma, size=n)

    return draw


def allox_hybrid(n_jobs: int | None = None, seed: int = 0, users: int = 10, load: float | None = None,
                 mean_duration: float = 1800.0, sigma: float = 1.0,
                 arrivals: str = "google", setting: str = "trace") -> Scenario:
    """The paper's simulated hybrid cluster with Google-2011 arrivals (sec. 5.1).

    ``setting="trace"`` (default) replays the shipped Google excerpt (914 jobs, trace users
    folded onto ``users``); ``setting="paper"`` builds the paper's simulation regime
    (:mod:`hetgym.presets.allox_paper`: 10 users with 1,024 jobs each from 10 templates
    per user, the trace's arrival gaps repeated, ``load`` on speed-weighted capacity,
    default 0.9; ``arrivals`` does not apply).

    Args:
        n_jobs: Keep the first ``n_jobs`` jobs of the trace (``None``: all 914 of the
            shipped excerpt whose submission falls inside the trace).
        seed: Seed of job types, speedups and durations.
        users: Number of users; trace users are folded onto them (dense id in order
            of first submission, modulo ``users``).
        load: ``setting="trace"``: offered load on the GPUs alone (default 1.0): the
            trace's arrival times are stretched so that ``sum of K80 times / (20 GPUs x
            arrival span) = load``; the CPUs add about 20% of GPU capacity, so 1.0 is a
            high but sustainable load. ``setting="paper"``: load on speed-weighted
            capacity (default 0.9).
        mean_duration: Mean run time on a K80 (s), lognormal.
        sigma: Lognormal shape.
        arrivals: ``"google"`` (the trace excerpt) or ``"poisson"``.
        setting: ``"trace"`` or ``"paper"`` (above).
    """
    cluster = hybrid_cluster()
    if setting == "paper":
        from hetgym.presets.allox_paper import allox_paper

        return allox_paper(cluster, n_jobs=n_jobs, seed=seed, users=users,
                           load=0.9 if load is None else load, mean_duration=mean_duration,
                           sigma=sigma)
    if setting != "trace":
        raise ValueError(f"allox-hybrid: setting must be 'trace' or 'paper', got {setting!r}")
    load = 1.0 if load is None else load
    rng = np.random.default_rng(seed)
    dur = _lognormal(mean_duration, sigma)
    if arrivals == "google":
        from hetgym.traces.google import load_google2011

        df, _ = load_google2011(devices=["cpu", "k80"], statuses=None, duration=dur,
                                duration_device="k80", cpus=1.0, mem_gb=8.0, rng=rng,
                                cpu_speedup=uniform_speedup(1.8, 10.0))
        if n_jobs is not None:
            df = df.iloc[:n_jobs].copy()
        codes = {u: i for i, u in enumerate(pd.unique(df["user"]))}
        df["user"] = [codes[u] % users for u in df["user"]]
        df["cpus"], df["mem_gb"] = 1.0, 8.0
    elif arrivals == "poisson":
        from hetgym.generators import SyntheticGenerator

        gen = SyntheticGenerator(devices=("cpu", "k80"), rate=1.0, duration="lognormal",
                                 mean_duration=mean_duration, sigma=sigma, workers={1: 1.0},
                                 users=users, reference="k80", cpus=1.0, mem_gb=8.0)
        df = gen.generate(n_jobs or 914, seed=rng)
    else:
        raise ValueError(f"arrivals must be 'google' or 'poisson', got {arrivals!r}")
    gpu_time = (df["work"] / df["tput_k80"]).to_numpy()
    arr = df["arrival"].to_numpy(dtype=np.float64)
    span = float(arr.max() - arr.min())
    if span > 0:
        # stretch factor: new span = total GPU work / (20 GPUs x load)
        df["arrival"] = (arr - arr.min()) * gpu_time.sum() / (load * 20.0 * span)
    return Scenario(cluster=cluster, workload=Workload.from_frame(df),
                    options=SimOptions(cpu_slot_cores=20, restart_delay=0.0))


def allox_paper_regime(n_jobs: int | None = None, seed: int = 0, users: int = 10, load: float = 0.9,
                       mean_duration: float = 1800.0, sigma: float = 1.0) -> Scenario:
    """``allox-hybrid`` in the paper's simulation regime (``setting="paper"``; see
    :mod:`hetgym.presets.allox_paper`): 10 users x 1,024 jobs, load 0.9 on speed-weighted
    capacity."""
    return allox_hybrid(n_jobs=n_jobs, seed=seed, users=users, load=load, mean_duration=mean_duration,
                        sigma=sigma, setting="paper")


scenarios.register("allox-hybrid", allox_hybrid)
scenarios.register("allox-paper", allox_paper_regime)
