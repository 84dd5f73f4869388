"""Seeded synthetic workload generator (canonical job tables).

Jobs arrive by a Poisson process (or at given times); each gets a job type
drawn from Gavel's measured job types, a gang size, and a duration on a
reference device type drawn from an exponential, lognormal or empirical
distribution; work = duration x W x per-worker throughput on the reference
type, so the job runs exactly that long there. Throughputs on every device
type come from :class:`~hetgym.throughput.ThroughputModel`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Sequence

import numpy as np
import pandas as pd

from hetgym.throughput import ThroughputModel, uniform_speedup

__all__ = ["SyntheticGenerator", "poisson_arrivals"]


def poisson_arrivals(rng: np.random.Generator, n: int, rate: float) -> np.ndarray:
    """``n`` arrival times of a Poisson process with ``rate`` jobs/s, first at 0."""
    if rate <= 0:
        raise ValueError(f"arrival rate must be > 0, got {rate}")
    gaps = rng.exponential(1.0 / rate, size=n)
    gaps[0] = 0.0
    return np.cumsum(gaps)


@dataclass
class SyntheticGenerator:
    """Builds canonical job tables.

    Attributes:
        devices: Device keys that get a ``tput_`` column.
        rate: Poisson arrival rate (jobs/s), used when ``arrivals`` is None.
        duration: ``"exponential"``, ``"lognormal"`` or ``"empirical"``.
        mean_duration: Mean duration (s) on ``reference`` (exponential / lognormal).
        sigma: Lognormal shape parameter.
        empirical: Sample of durations (s) for ``"empirical"``.
        workers: ``{gang size: probability}``.
        users: Number of users (drawn uniformly).
        te_fraction: Share of TE jobs.
        reference: Device type on which the drawn duration holds.
        job_types: Restrict to these Gavel job types (default: all).
        cpus: Cores per worker; mem_gb: memory per worker.
        cpu_speedup: (low, high) of the uniform GPU(K80)/CPU speedup per job type.
    """

    devices: Sequence[str] = ("cpu", "k80", "p100", "v100")
    rate: float = 1.0 / 60.0
    duration: str = "lognormal"
    mean_duration: float = 1800.0
    sigma: float = 1.0
    empirical: Sequence[float] | None = None
    workers: dict[int, float] = field(default_factory=lambda: {1: 0.7, 2: 0.15, 4: 0.1, 8: 0.05})
    users: int = 4
    te_fraction: float = 0.0
    reference: str = "v100"
    job_types: Sequence[str] | None = None
    cpus: float = 4.0
    mem_gb: float = 16.0
    cpu_speedup: tuple[float, float] = (1.8, 10.0)

    def durations(self, rng: np.random.Generator, n: int) -> np.ndarray:
        """Draw ``n`` durations (s) on the reference device type."""
        if self.duration == "exponential":
            return rng.exponential(self.mean_duration, size=n)
        if self.duration == "lognormal":
            mu = np.log(self.mean_duration) - self.sigma**2 / 2.0
            return rng.lognormal(mu, self.sigma, size=n)
        if self.duration == "empirical":
            if self.empirical is None or len(self.empirical) == 0:
                raise ValueError("duration='empirical' needs a non-empty `empirical` sample")
            sample = np.asarray(self.empirical, dtype=np.float64)
            return rng.choice(sample[sample > 0], size=n, replace=True)
        raise ValueError(f"unknown duration distribution {self.duration!r}; "
                         "expected exponential, lognormal or empirical")

    def generate(self, n: int, seed: int | np.random.Generator = 0,
                 arrivals: Sequence[float] | None = None,
                 model: ThroughputModel | None = None) -> pd.DataFrame:
        """A canonical job table of ``n`` jobs (arrivals given or Poisson)."""
        rng = seed if isinstance(seed, np.random.Generator) else np.random.default_rng(seed)
        model = model or ThroughputModel.gavel()
        arr = np.asarray(arrivals, dtype=np.float64) if arrivals is not None else poisson_arrivals(rng, n, self.rate)
        if len(arr) != n:
            raise ValueError(f"got {len(arr)} arrivals for {n} jobs")
        types = list(self.job_types or model.job_types)
        sizes = np.asarray(list(self.workers), dtype=np.int64)
        probs = np.asarray(list(self.workers.values()), dtype=np.float64)
        df = pd.DataFrame({
            "job_id": np.arange(n, dtype=np.int64),
            "arrival": arr,
            "user": rng.integers(0, self.users, size=n),
            "job_class": np.where(rng.random(n) < self.te_fraction, "TE", "BE"),
            "workers": rng.choice(sizes, size=n, p=probs / probs.sum()),
            "job_type": rng.choice(np.asarray(types, dtype=object), size=n),
            "cpus": self.cpus,
            "mem_gb": self.mem_gb,
        })
        df = model.attach(df, self.devices, rng=rng, cpu_speedup=uniform_speedup(*self.cpu_speedup))
        ref = df[f"tput_{self.reference}"].to_numpy()
        df["work"] = self.durations(rng, n) * df["workers"].to_numpy() * ref
        return df
