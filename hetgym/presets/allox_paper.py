"""The AlloX paper's simulation regime: ``allox-hybrid`` with ``setting="paper"`` (sec. 5.1).

What the paper says of its simulations (sec. 5.1, "Simulator" and the paragraph after it):
20 GPUs, 20 CPUs of 20 cores, 1280 GB of RAM; "we use the workload trace from the Google
cluster to generate arrival times for Tensorflow jobs. There are 10 users and over 1000
jobs for each user"; alpha = 0.1; and of the workload (sec. 5.1, "Workload"): "Each user
has 10 popular Tensorflow jobs [...] resulting in the speedup rates of using one GPU
versus one CPU ranging from 1.8 to 10". The load is not given; the text says it is high
("When the arrival rates are high, the completion time of other baselines are much
higher", "DRFF cannot process the jobs fast enough so queues are built up", sec. 5.2.2).

Our reading, fixed before any run and not tuned afterwards:

* **Jobs per user**: ``jobs_per_user`` (default 1,024, i.e. "over 1000") for each of the
  ``users`` (10), assigned to arrival slots in a seeded random order, so every user has
  the same number of jobs and they interleave in time.
* **Each user's 10 jobs**: every user gets 10 job templates of her own, each with a K80
  run time (lognormal, mean ``mean_duration`` = 1800 s, sigma 1) and a GPU/CPU speedup
  (uniform in [1.8, 10]); each of her jobs is one of her templates, drawn uniformly. Jobs
  take one worker (the paper runs no distributed jobs), one core on a GPU node, 8 GB.
  Users therefore differ in job length (the paper's Fig. 15 follows "the user with longer
  jobs than others").
* **Arrivals**: the gaps between consecutive submissions of the Google 2011 excerpt
  shipped with hetgym (913 gaps), repeated in order until every job has an arrival, so the
  trace's bursts recur; the result is then stretched to the load below.
* **Load** on *speed-weighted* capacity: ``load = W / T``, ``T`` the arrival span and ``W``
  the least time in which the 40 machines could process all the work if it were fluid:
  jobs sorted by speedup, the least GPU-friendly ones moved to the CPUs until both device
  types carry equal work (:func:`hybrid_fluid_time`). Load 1 is the most any scheduler
  could sustain; the default 0.9 is high for a hybrid-aware scheduler and far above what
  the GPUs alone can take (1.17-1.23 on the GPUs alone for seeds 0-2, see
  :func:`offered_loads`), which is where the paper's GPU-only baselines build queues.
* ``restart_delay = 0``; no estimation error or profiling jobs (as in ``allox-hybrid``).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from hetgym.specs import ClusterSpec, Scenario, SimOptions
from hetgym.workload import Workload

__all__ = ["PAPER_JOBS_PER_USER", "allox_paper", "google_gaps", "hybrid_fluid_time", "offered_loads"]

#: "over 1000 jobs for each user" (sec. 5.1).
PAPER_JOBS_PER_USER = 1024


def hybrid_fluid_time(gpu_time: np.ndarray, speedup: np.ndarray, gpus: int = 20,
                      cpus: int = 20) -> float:
    """Least time in which ``gpus`` GPUs and ``cpus`` CPU machines process all the work as a
    fluid: jobs with the smallest GPU/CPU speedup go to the CPUs (their CPU time is
    ``gpu_time * speedup``) until the busier device type cannot be relieved any more.

    Returns ``min over k of max(GPU work of the rest / gpus, CPU work of the k least
    GPU-friendly jobs / cpus)``, the work of the job at the boundary split between them.
    """
    gpu_time = np.asarray(gpu_time, dtype=np.float64)
    speedup = np.asarray(speedup, dtype=np.float64)
    if len(gpu_time) == 0:
        return 0.0
    order = np.argsort(speedup, kind="stable")
    g = gpu_time[order]
    c = g * speedup[order]
    cpu_load = np.concatenate([[0.0], np.cumsum(c)]) / cpus       # first k jobs on CPUs
    gpu_load = (g.sum() - np.concatenate([[0.0], np.cumsum(g)])) / gpus
    k = int(np.argmax(cpu_load >= gpu_load))  # first k where the CPUs carry at least as much
    if k == 0:
        return float(gpu_load[0])
    # split job k-1 (fraction x on the CPUs) so both types finish together
    gk, ck = g[k - 1], c[k - 1]
    base_c, base_g = cpu_load[k - 1], gpu_load[k]
    x = (base_g + gk / gpus - base_c) / (ck / cpus + gk / gpus)
    return float(base_c + x * ck / cpus)


def google_gaps() -> np.ndarray:
    """Gaps (s) between consecutive submissions of the shipped Google 2011 excerpt."""
    from hetgym.traces.google import load_google2011

    df, _ = load_google2011(devices=["cpu", "k80"], statuses=None,
                            duration=lambda rng, n: np.ones(n), duration_device="k80",
                            rng=np.random.default_rng(0))
    arr = np.sort(df["arrival"].to_numpy(dtype=np.float64))
    return np.diff(arr)


def allox_paper(cluster: ClusterSpec, n_jobs: int | None = None, seed: int = 0, users: int = 10,
                load: float = 0.9, mean_duration: float = 1800.0, sigma: float = 1.0,
                jobs_per_user: int = PAPER_JOBS_PER_USER, templates: int = 10) -> Scenario:
    """The paper's simulation regime on ``cluster`` (module docstring).

    Args:
        cluster: The ``allox-hybrid`` cluster (20 K80 nodes, 20 CPU nodes).
        n_jobs: Total jobs; ``None`` = ``users * jobs_per_user``. Users get equal shares
            (the first ``n_jobs mod users`` one more).
        seed: Seed of templates, job draws, user order.
        users: Number of users.
        load: Offered load on speed-weighted capacity (:func:`hybrid_fluid_time`).
        mean_duration: Mean K80 run time of a template (s), lognormal.
        sigma: Lognormal shape of template run times.
        jobs_per_user: Jobs of each user when ``n_jobs`` is None.
        templates: Job templates ("popular Tensorflow jobs") per user.
    """
    if users < 1 or templates < 1:
        raise ValueError(f"allox_paper: users and templates must be >= 1, got {users}, {templates}")
    if not load > 0:
        raise ValueError(f"allox_paper: load must be > 0, got {load}")
    n = int(n_jobs) if n_jobs is not None else users * int(jobs_per_user)
    if n < 1:
        raise ValueError(f"allox_paper: n_jobs must be >= 1, got {n}")
    rng = np.random.default_rng(seed)
    mu = np.log(mean_duration) - sigma**2 / 2.0
    t_gpu = rng.lognormal(mu, sigma, size=(users, templates))      # per user, per template
    t_speed = rng.uniform(1.8, 10.0, size=(users, templates))
    user = np.resize(np.arange(users), n)
    rng.shuffle(user)
    tmpl = rng.integers(0, templates, size=n)
    gpu_time = t_gpu[user, tmpl]
    speedup = t_speed[user, tmpl]
    gaps = google_gaps()
    arr = np.concatenate([[0.0], np.cumsum(np.resize(gaps, n - 1))]) if n > 1 else np.zeros(1)
    n_gpu = sum(s.count * s.gpus for s in cluster.nodes if s.gpu_type is not None)
    n_cpu = sum(s.count for s in cluster.nodes if s.gpu_type is None)
    fluid = hybrid_fluid_time(gpu_time, speedup, n_gpu, n_cpu)
    if arr[-1] > 0:
        arr = arr * fluid / (load * arr[-1])
    df = pd.DataFrame({
        "job_id": np.arange(n), "arrival": arr, "user": user, "job_class": "BE", "workers": 1,
        "work": gpu_time, "tput_k80": 1.0, "tput_cpu": 1.0 / speedup, "cpus": 1.0, "mem_gb": 8.0,
        "job_type": [f"u{u}-t{t}" for u, t in zip(user.tolist(), tmpl.tolist())],
    })
    return Scenario(cluster=cluster, workload=Workload.from_frame(df),
                    options=SimOptions(cpu_slot_cores=20, restart_delay=0.0))


def offered_loads(scenario: Scenario) -> dict[str, float]:
    """Offered load of a K80 + CPU scenario: ``hybrid`` (on speed-weighted capacity,
    :func:`hybrid_fluid_time`) and ``gpu_only`` (K80 time of all jobs over the GPUs'
    capacity), both over the span of arrivals."""
    f = scenario.workload.frame
    gpu_time = (f["work"] / f["tput_k80"]).to_numpy(dtype=np.float64)
    speedup = (f["tput_k80"] / f["tput_cpu"]).to_numpy(dtype=np.float64)
    n_gpu = sum(s.count * s.gpus for s in scenario.cluster.nodes if s.gpu_type is not None)
    n_cpu = sum(s.count for s in scenario.cluster.nodes if s.gpu_type is None)
    arr = f["arrival"].to_numpy(dtype=np.float64)
    span = float(arr.max() - arr.min())
    if span <= 0:
        return {"hybrid": float("inf"), "gpu_only": float("inf")}
    return {"hybrid": hybrid_fluid_time(gpu_time, speedup, n_gpu, n_cpu) / span,
            "gpu_only": float(gpu_time.sum() / (n_gpu * span))}
