"""Lab clusters and workloads from three papers (numbers in ``hetgym/data/lab``).

* FitGpp (Yabuuchi et al., PFN): :func:`fitgpp_jobs`, :func:`fitgpp_cluster`. TE and
  BE jobs from truncated normal distributions (duration, grace period, CPU, RAM, GPU);
  30 % TE; arrivals Poisson, then scaled so the offered dominant-resource load on 84 x
  (32 CPU, 256 GB, 8 GPU) is 2.0 (:func:`hetgym.traces.windows.offered_load`).
* Hadar/HadarE testbed (Sultana et al.): :func:`hadar_mix`, :func:`hadar_testbed_cluster`.
  Five single-GPU nodes (Titan RTX, T4, T400, RTX 3090, RTX A2000) and the workload
  mixes M-1, M-3, M-4, M-5, M-8, M-10, M-12 (all jobs at time 0, forkable).
* ANDREAS validation (Filippini et al.): :func:`andreas_jobs`, :func:`andreas_cluster`.
  The 8 jobs of Table V (submission, due date, weight, epochs) on armida-05/06/07.

Numbers the papers' text does not give are placeholders flagged "assumed" in the data
files (std devs and demands of FitGpp, run times of the Hadar and ANDREAS jobs, ...).
"""

from __future__ import annotations

import json
from importlib import resources
from typing import Any, Mapping, Sequence

import numpy as np
import pandas as pd

from hetgym.devices import get_device
from hetgym.specs import ClusterSpec, NodeSpec
from hetgym.throughput import ThroughputModel
from hetgym.traces._common import (
    DEFAULT_CPUS, DEFAULT_MEM_GB, JobTypes, SpeedupSampler, device_keys, draw_job_types, finish,
    make_rng, model_or_default,
)
from hetgym.traces.report import LoadReport
from hetgym.traces.windows import rebase, scale_to_load

__all__ = [
    "lab_data", "fitgpp_cluster", "fitgpp_jobs", "hadar_testbed_cluster", "hadar_mix",
    "HADAR_MIXES", "andreas_cluster", "andreas_jobs", "andreas_table",
]

HADAR_MIXES = ("M-1", "M-3", "M-4", "M-5", "M-8", "M-10", "M-12")


def lab_data(name: str) -> Any:
    """A file of ``hetgym/data/lab`` (``.json`` parsed, ``.csv`` as a DataFrame)."""
    path = resources.files("hetgym").joinpath(f"data/lab/{name}")
    with path.open("r", encoding="utf-8") as fh:
        return json.load(fh) if name.endswith(".json") else pd.read_csv(fh)


def _truncnorm(rng: np.random.Generator, p: Mapping[str, float], n: int) -> np.ndarray:
    mean, std = float(p["mean"]), float(p["std"])
    a, b = (float(p["low"]) - mean) / std, (float(p["high"]) - mean) / std
    from scipy.stats import truncnorm  # imported on use: scipy.stats takes 0.2 s

    return truncnorm.rvs(a, b, loc=mean, scale=std, size=n, random_state=rng)


# ---------------------------------------------------------------- FitGpp


def fitgpp_cluster(gpu_type: str | None = None) -> ClusterSpec:
    """84 nodes x (32 CPUs, 256 GB, 8 GPUs) (FitGpp Sec. 4.1); GPU model assumed V100."""
    c = lab_data("fitgpp.json")["cluster"]
    return ClusterSpec([NodeSpec("fitgpp", count=int(c["nodes"]), gpu_type=gpu_type or c["gpu_type"],
                                 gpus=int(c["gpus"]), cpus=int(c["cpus"]), mem_gb=float(c["mem_gb"]),
                                 sockets=2)])


def fitgpp_jobs(
    n_jobs: int = 1000,
    *,
    te_fraction: float | None = None,
    load: float | None = None,
    gpu_type: str | None = None,
    params: Mapping[str, Any] | None = None,
    devices: Sequence[str] | None = None,
    throughput: ThroughputModel | None = None,
    job_types: JobTypes = None,
    n_users: int = 1,
    rng: np.random.Generator | None = None,
    seed: int | None = 0,
    cpu_speedup: SpeedupSampler | None = None,
) -> pd.DataFrame:
    """FitGpp's synthetic lab workload (the paper used ``n_jobs = 2**16``).

    Per job: class TE with probability ``te_fraction`` (exactly ``round(n x frac)`` TE
    jobs, shuffled), duration / grace period / GPUs / CPUs / RAM from the class's
    truncated normals (GPUs rounded; per-worker CPU and RAM = job totals / GPUs), a job
    type drawn from the throughput model and ``work`` such that the job runs its
    duration on ``gpu_type``. Inter-arrivals are exponential, then scaled so that the
    offered dominant-resource load on :func:`fitgpp_cluster` equals ``load``.

    Args:
        n_jobs: Number of jobs.
        te_fraction: Share of TE jobs (default 0.3, paper).
        load: Target offered load (default 2.0, paper).
        gpu_type: GPU type of the cluster (default from the data file: V100, assumed).
        params: Overrides merged into ``fitgpp.json`` (same keys, e.g.
            ``{"duration_s": {"BE": {...}}}``).
        devices: ``tput_`` columns (default: the GPU type only).
        throughput, job_types, rng, seed, cpu_speedup: As the trace loaders.
        n_users: Users ``u0..u{n-1}`` drawn uniformly (the paper models none).
    """
    p = lab_data("fitgpp.json")
    for k, v in (params or {}).items():
        p[k] = _merge(p.get(k), v)
    te_fraction = p["te_fraction"]["value"] if te_fraction is None else te_fraction
    load = p["load"]["value"] if load is None else load
    gpu = get_device(gpu_type or p["cluster"]["gpu_type"]).key
    devs = device_keys(devices, (gpu,))
    model = model_or_default(throughput)
    gen = make_rng(rng, seed)
    n_te = int(round(n_jobs * te_fraction))
    cls = np.array(["TE"] * n_te + ["BE"] * (n_jobs - n_te), dtype=object)
    gen.shuffle(cls)
    cols = {k: np.zeros(n_jobs) for k in ("duration", "gpus", "cpus", "mem_gb")}
    for c in ("TE", "BE"):
        m = cls == c
        k = int(m.sum())
        if k == 0:
            continue
        cols["duration"][m] = _truncnorm(gen, p["duration_s"][c], k)
        d = p["demand"][c]
        cols["gpus"][m] = np.clip(np.round(_truncnorm(gen, d["gpus"], k)), d["gpus"]["low"], d["gpus"]["high"])
        cols["cpus"][m] = _truncnorm(gen, d["cpus"], k)
        cols["mem_gb"][m] = _truncnorm(gen, d["mem_gb"], k)
    grace = _truncnorm(gen, p["grace_period_s"], n_jobs)
    workers = cols["gpus"].astype(np.int64)
    arrivals = np.cumsum(gen.exponential(1.0, size=n_jobs))
    df = pd.DataFrame({
        "arrival": arrivals, "user": [f"u{i}" for i in gen.integers(0, n_users, size=n_jobs)],
        "job_class": cls, "workers": workers, "duration": cols["duration"],
        "cpus": cols["cpus"] / workers, "mem_gb": cols["mem_gb"] / workers,
        "grace_period": grace, "trace_id": [f"fitgpp:{i}" for i in range(n_jobs)],
    })
    df["job_type"] = draw_job_types(gen, n_jobs, model, job_types)
    out = finish(df, source="fitgpp", report=LoadReport("fitgpp", rows_read=n_jobs), devices=devs,
                 throughput=model, rng=gen, cpu_speedup=cpu_speedup, duration_device=gpu)
    if n_jobs > 1:
        out = scale_to_load(out, fitgpp_cluster(gpu), load, resources="dominant")
    return out


def _merge(base: Any, over: Any) -> Any:
    if isinstance(base, dict) and isinstance(over, Mapping):
        out = dict(base)
        for k, v in over.items():
            out[k] = _merge(base.get(k), v)
        return out
    return over


# ---------------------------------------------------------------- Hadar testbed


def hadar_testbed_cluster(cpus: int | None = None, mem_gb: float | None = None) -> ClusterSpec:
    """Hadar/HadarE's lab testbed: five nodes, one GPU used on each (Sec. VI-A).

    CPU cores and RAM per node are not in the paper (default 16 cores, 64 GB, assumed).
    """
    h = lab_data("hadar_testbed.json")
    return ClusterSpec([NodeSpec(n["name"], count=1, gpu_type=n["gpu_type"], gpus=1,
                                 cpus=int(cpus or h["node_cpus"]), mem_gb=float(mem_gb or h["node_mem_gb"]))
                        for n in h["nodes"]])


def hadar_mix(
    name: str = "M-5",
    *,
    durations: Mapping[str, float] | None = None,
    reference_device: str = "v100",
    devices: Sequence[str] | None = None,
    throughput: ThroughputModel | None = None,
    cpus: float = 2.0,
    mem_gb: float = 8.0,
    forkable: bool = True,
    rng: np.random.Generator | None = None,
    seed: int | None = 0,
    cpu_speedup: SpeedupSampler | None = None,
) -> pd.DataFrame:
    """One of Hadar's testbed workload mixes as a job table (all jobs at time 0).

    Args:
        name: ``"M-1"``, ``"M-3"``, ``"M-4"``, ``"M-5"``, ``"M-8"``, ``"M-10"`` or ``"M-12"``.
        durations: ``{model: seconds}`` run time alone on ``reference_device`` per model
            (IC, LM, LT, RS, MM); default the assumed values of ``hadar_testbed.json``.
        reference_device: Device the durations are taken on.
        devices: ``tput_`` columns (default the testbed's five GPU types).
        throughput: Throughput model (default Gavel's; other GPUs by relative speed).
        cpus, mem_gb: Per-worker demand (not in the paper).
        forkable: HadarE forks jobs across nodes.
    """
    h = lab_data("hadar_testbed.json")
    if name not in h["mixes"]:
        raise ValueError(f"unknown Hadar mix {name!r}; the paper has {list(h['mixes'])}")
    dur = {k: float(v["duration_s"]) for k, v in h["models"].items()} | dict(durations or {})
    models = h["mixes"][name]
    devs = device_keys(devices, [get_device(n["gpu_type"]).key for n in h["nodes"]])
    model = model_or_default(throughput)
    df = pd.DataFrame({
        "arrival": 0.0, "user": "hadar", "job_class": "BE", "workers": 1,
        "duration": [dur[m] for m in models], "cpus": float(cpus), "mem_gb": float(mem_gb),
        "forkable": bool(forkable), "job_type": [h["models"][m]["job_type"] for m in models],
        "trace_id": [f"{name}:{i}:{m}" for i, m in enumerate(models)],
    })
    return finish(df, source=f"hadar {name}", report=LoadReport(f"hadar {name}", rows_read=len(df)),
                  devices=devs, throughput=model, rng=make_rng(rng, seed), cpu_speedup=cpu_speedup,
                  duration_device=reference_device)


# ---------------------------------------------------------------- ANDREAS


def andreas_table() -> pd.DataFrame:
    """Table V of the ANDREAS paper, verbatim (job_id, application, epochs, batch_size,
    submission_s, due_date_s, weight)."""
    return lab_data("andreas_table5.csv")


def andreas_cluster() -> ClusterSpec:
    """ARMIDA validation nodes armida-05 (1 V100), armida-06 (2 V100), armida-07 (1 T4);
    2 sockets x 64 cores and 2 x 256 GB per node (Table II, Appendix B)."""
    a = lab_data("andreas.json")
    return ClusterSpec([NodeSpec(n["name"], count=1, gpu_type=n["gpu_type"], gpus=int(n["gpus"]),
                                 cpus=int(a["node_cpus"]), mem_gb=float(a["node_mem_gb"]),
                                 sockets=int(a["sockets"])) for n in a["nodes"]])


def andreas_jobs(
    *,
    epoch_seconds: Mapping[str, float] | None = None,
    devices: Sequence[str] = ("v100", "t4"),
    cpus: float = DEFAULT_CPUS,
    mem_gb: float = DEFAULT_MEM_GB,
) -> pd.DataFrame:
    """The 8 ANDREAS validation jobs (Table V) as a job table.

    ``work`` = epochs (one iteration = one epoch); per-worker throughput on a V100 =
    1 / epoch time (``epoch_seconds``, default the assumed values of ``andreas.json``),
    on other devices scaled by the catalogue's relative speed; arrival = S_j; deadline =
    S_j + d_j (relative reading, see ``andreas.json``); weight = omega_j; one worker.
    """
    a = lab_data("andreas.json")
    ep = dict(a["epoch_seconds_v100"]) | dict(epoch_seconds or {})
    t = andreas_table()
    unknown = sorted(set(t["application"]) - set(ep))
    if unknown:
        raise ValueError(f"epoch_seconds: no time for {unknown}")
    base = np.asarray([1.0 / float(ep[x]) for x in t["application"]])
    v100 = get_device("v100").relative_speed
    df = pd.DataFrame({
        "job_id": np.arange(len(t)), "arrival": t["submission_s"].astype(float),
        "user": "andreas", "job_class": "BE", "workers": 1, "work": t["epochs"].astype(float),
    })
    for d in device_keys(devices):
        df[f"tput_{d}"] = 0.0 if d == "cpu" else base * get_device(d).relative_speed / v100
    df["cpus"] = float(cpus)
    df["mem_gb"] = float(mem_gb)
    df["deadline"] = (t["submission_s"] + t["due_date_s"]).astype(float)
    df["weight"] = t["weight"].astype(float)
    df["job_type"] = t["application"].astype(str)
    df["trace_id"] = t["job_id"].astype(str)
    return rebase(df)
