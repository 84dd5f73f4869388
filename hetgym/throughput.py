"""Throughput model: per-worker iterations/s of a job type on each device type.

Measured values come from Gavel's ``simulation_throughputs.json`` (K80, P100,
V100; MIT licence, shipped in ``hetgym/data/gavel`` with its LICENSE). Gavel
keys are ``"('<job type>', <scale factor>)"`` and the value under ``"null"`` is
the job's throughput (steps/s) when it runs alone on ``scale factor`` GPUs.

Per-worker throughput for a gang of ``W`` workers is ``gavel(type, W) / W``
when Gavel measured that scale factor, else the single-GPU value (linear
scaling). Other GPU types are estimated from V100 by the catalogue's
``relative_speed`` (HadarE's estimate, see :mod:`hetgym.devices`). CPU
throughput is the K80 throughput divided by a per-job-type GPU/CPU speedup
drawn from a distribution (AlloX measured 1.8x to 10x between a K80 and a
20-core CPU); the distribution is a parameter.

**When a job has a CPU configuration** (:func:`cpu_offered`, :func:`restrict_cpu`). A
throughput on a CPU does not mean a user would submit a CPU configuration. AlloX offers
one only for the jobs it measured: one worker (a whole GPU or one whole CPU per job, "we
do not run distributed jobs", sec. 4.1 and 5.1) at a GPU/CPU speedup in [1.8, 10], i.e.
small TensorFlow jobs that run in minutes to hours. The rule used by the default scenario:
a job keeps its CPU configuration iff it has at most ``CPU_MAX_WORKERS`` (1) worker and
its run time on the CPU is at most ``CPU_MAX_HOURS`` (24 h; at the largest measured
speedup, a job of 2.4 h on a K80). Every other job gets ``tput_cpu = 0`` (GPU only). The
24-hour bound is a modelling choice (the paper gives no job sizes); it keeps 98.8-99.5% of
``allox-hybrid``'s jobs (K80 times lognormal with mean 30 min; seeds 0-4) and withdraws the multi-day
CPU configurations of the Philly trace that no user would submit.
"""

from __future__ import annotations

import ast
import functools
import json
from dataclasses import dataclass, field
from importlib import resources
from typing import Callable, Iterable

import numpy as np
import pandas as pd

from hetgym.devices import get_device
from hetgym.sim.rules import scaled_rate

__all__ = ["ThroughputModel", "uniform_speedup", "cpu_offered", "restrict_cpu",
           "CPU_MAX_WORKERS", "CPU_MAX_HOURS"]

MEASURED = ("k80", "p100", "v100")
CPU_MAX_WORKERS = 1
CPU_MAX_HOURS = 24.0


def uniform_speedup(low: float = 1.8, high: float = 10.0) -> Callable[[np.random.Generator, int], np.ndarray]:
    """GPU/CPU speedup sampler: uniform on ``[low, high]`` (AlloX's measured range)."""

    def draw(rng: np.random.Generator, n: int) -> np.ndarray:
        return rng.uniform(low, high, size=n)

    return draw


@functools.lru_cache(maxsize=1)
def _gavel_tables() -> dict[str, dict[tuple[str, int], float]]:
    """Gavel's measured throughputs, ``{device_key: {(job_type, scale): steps_per_s}}``,
    parsed from the packaged JSON (1.2 MB, mostly co-location pairs that are not used)."""
    path = resources.files("hetgym").joinpath("data/gavel/simulation_throughputs.json")
    with path.open("r") as fh:
        raw = json.load(fh)
    measured: dict[str, dict[tuple[str, int], float]] = {}
    for dev in MEASURED:
        table: dict[tuple[str, int], float] = {}
        for key, val in raw[dev].items():
            job_type, scale = ast.literal_eval(key)  # a tuple literal, never eval'd code
            table[(str(job_type), int(scale))] = float(val["null"])
        measured[dev] = table
    return measured


@dataclass
class ThroughputModel:
    """Per-worker throughput of job types on device types.

    Attributes:
        measured: ``{device_key: {(job_type, scale): steps_per_s}}`` for measured devices.
    """

    measured: dict[str, dict[tuple[str, int], float]] = field(default_factory=dict)

    @classmethod
    def gavel(cls) -> ThroughputModel:
        """Load Gavel's measured throughputs shipped with the package (the file is read
        once per process; each call returns a model with tables of its own)."""
        return cls(measured={dev: dict(table) for dev, table in _gavel_tables().items()})

    @property
    def job_types(self) -> list[str]:
        """Job types with a single-GPU measurement, in a stable order."""
        return sorted({jt for (jt, sf) in self.measured["v100"] if sf == 1})

    def gpu_throughput(self, job_type: str, device: str, workers: int = 1) -> float:
        """Per-worker throughput (iterations/s) of ``job_type`` on a GPU type.

        Args:
            job_type: A Gavel job type name.
            device: GPU type name (any catalogue GPU).
            workers: Gang size; uses Gavel's multi-GPU measurement when it exists.

        Raises:
            KeyError: unknown job type or device.
        """
        key = get_device(device).key
        base = key if key in self.measured else "v100"
        table = self.measured[base]
        if (job_type, 1) not in table:
            raise KeyError(f"unknown job type {job_type!r}; known: {self.job_types}")
        if workers > 1 and (job_type, workers) in table:
            per_worker = table[(job_type, workers)] / workers
        else:
            per_worker = table[(job_type, 1)]
        if base != key:
            per_worker *= get_device(device).relative_speed
        return float(per_worker)

    def cpu_speedups(
        self,
        rng: np.random.Generator,
        sampler: Callable[[np.random.Generator, int], np.ndarray] | None = None,
    ) -> dict[str, float]:
        """Draw one GPU(K80)/CPU speedup per job type."""
        sampler = sampler or uniform_speedup()
        types = self.job_types
        return dict(zip(types, (float(x) for x in sampler(rng, len(types)))))

    def attach(
        self,
        df: pd.DataFrame,
        devices: Iterable[str],
        rng: np.random.Generator | None = None,
        cpu_speedup: Callable[[np.random.Generator, int], np.ndarray] | None = None,
    ) -> pd.DataFrame:
        """Return ``df`` with a ``tput_<device>`` column per device type.

        ``df`` needs ``job_type`` and ``workers``. Existing ``tput_*`` columns are kept.
        """
        out = df.copy()
        rng = rng if rng is not None else np.random.default_rng(0)
        speedups: dict[str, float] | None = None
        for dev in devices:
            key = "cpu" if dev in (None, "cpu") else get_device(dev).key
            col = f"tput_{key}"
            if col in out.columns:
                continue
            # one call per distinct job type (and gang size), in order of first appearance
            if key == "cpu":
                speedups = speedups or self.cpu_speedups(rng, cpu_speedup)
                types = out["job_type"].tolist()
                per_type = {jt: self.gpu_throughput(jt, "K80", 1) / speedups[jt]
                            for jt in dict.fromkeys(types)}
                vals = [per_type[jt] for jt in types]
            else:
                keys = list(zip(out["job_type"].tolist(), [int(w) for w in out["workers"].tolist()]))
                per_key = {k: self.gpu_throughput(k[0], dev, k[1]) for k in dict.fromkeys(keys)}
                vals = [per_key[k] for k in keys]
            out[col] = np.asarray(vals, dtype=np.float64)
        return out


def cpu_offered(df: pd.DataFrame, max_workers: int = CPU_MAX_WORKERS,
                max_hours: float = CPU_MAX_HOURS) -> np.ndarray:
    """Rows of a job table that keep a CPU configuration (rule in the module docstring).

    ``df`` needs ``work``, ``workers`` and ``tput_cpu``: a job is offered a CPU
    configuration iff ``tput_cpu > 0``, ``workers <= max_workers`` and its CPU run time
    ``work / (workers x tput_cpu)`` is at most ``max_hours``.
    """
    missing = [c for c in ("work", "workers", "tput_cpu") if c not in df.columns]
    if missing:
        raise ValueError(f"cpu_offered: the job table has no column(s) {missing}")
    if max_workers < 1 or not max_hours > 0:
        raise ValueError(f"cpu_offered: max_workers must be >= 1 and max_hours > 0, "
                         f"got {max_workers} and {max_hours}")
    tput = df["tput_cpu"].to_numpy(dtype=np.float64)
    w = df["workers"].to_numpy(dtype=np.float64)
    with np.errstate(divide="ignore"):
        hours = np.where(tput > 0, df["work"].to_numpy(dtype=np.float64) / scaled_rate(w, tput, 1.0), np.inf) / 3600.0
    return (tput > 0) & (w <= max_workers) & (hours <= max_hours)


def restrict_cpu(df: pd.DataFrame, max_workers: int = CPU_MAX_WORKERS,
                 max_hours: float = CPU_MAX_HOURS) -> pd.DataFrame:
    """A copy of ``df`` whose jobs outside :func:`cpu_offered` get ``tput_cpu = 0``.

    The number of CPU configurations withdrawn is in ``attrs["cpu_withdrawn"]``. A table
    without a ``tput_cpu`` column is returned unchanged (copied).
    """
    out = df.copy()
    if "tput_cpu" not in out.columns:
        out.attrs["cpu_withdrawn"] = 0
        return out
    keep = cpu_offered(out, max_workers, max_hours)
    had = out["tput_cpu"].to_numpy() > 0
    out.loc[~keep, "tput_cpu"] = 0.0
    out.attrs["cpu_withdrawn"] = int((had & ~keep).sum())
    return out
