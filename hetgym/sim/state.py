"""Arrays that cross into the Numba kernels, built from a :class:`~hetgym.specs.Scenario`.

Static parameters (:class:`NodeArrays`, :class:`JobArrays`) and the dynamic
state (:class:`JobState`, :class:`NodeState`) are NamedTuples of arrays.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from hetgym.specs import Scenario

__all__ = ["NodeArrays", "JobArrays", "JobState", "NodeState", "build_nodes", "build_jobs",
           "best_durations"]


class NodeArrays(NamedTuple):
    """Static node parameters (N nodes, G = max GPUs per node, >= 1)."""

    name: list            # list[str], N names "group-i"
    dev: np.ndarray       # int64[N], device index of the node's workers
    gpus: np.ndarray      # int64[N], GPUs (0 for CPU nodes)
    cpus: np.ndarray      # float64[N], cores
    mem: np.ndarray       # float64[N], GB
    dist: np.ndarray      # float64[N, G, G], GPU distances, 0-padded
    idle_w: np.ndarray    # float64[N], idle power while on
    gpu_w: np.ndarray     # float64[N], power per busy GPU
    core_w: np.ndarray    # float64[N], power per busy core of a CPU worker
    dev_is_cpu: np.ndarray  # bool[C]


class JobArrays(NamedTuple):
    """Static job parameters (J jobs, C device types), in workload order."""

    job_id: np.ndarray     # int64[J]
    arrival: np.ndarray    # float64[J]
    user: np.ndarray       # int64[J], dense user ids
    job_class: np.ndarray  # int64[J], 0 BE, 1 TE
    workers: np.ndarray    # int64[J]
    work: np.ndarray       # float64[J], iterations
    tput: np.ndarray       # float64[J, C], per-worker iterations/s, 0 = cannot run
    cpus_need: np.ndarray  # float64[J, C], cores per worker on each device type
    mem: np.ndarray        # float64[J], GB per worker
    deadline: np.ndarray   # float64[J], absolute, +inf if none
    weight: np.ndarray     # float64[J]
    grace: np.ndarray      # float64[J], grace period (s)
    comm: np.ndarray       # float64[J], 0..1
    forkable: np.ndarray   # bool[J]


class JobState(NamedTuple):
    """Dynamic job state (all float times in s; NaN = not yet)."""

    status: np.ndarray      # int64[J], JobStatus codes
    remaining: np.ndarray   # float64[J], iterations left as of the current time
    rate: np.ndarray        # float64[J], iterations/s while running, 0 otherwise
    resume_at: np.ndarray   # float64[J], progress resumes at (restart delay)
    finish: np.ndarray      # float64[J], projected completion, +inf if not running
    grace_end: np.ndarray   # float64[J], end of grace period, +inf if none
    run_start: np.ndarray   # float64[J], start of the current run
    first_start: np.ndarray  # float64[J]
    end: np.ndarray         # float64[J]
    exec_time: np.ndarray   # float64[J], total time holding resources
    n_preempt: np.ndarray   # int64[J]
    n_restart: np.ndarray   # int64[J]
    device: np.ndarray      # int64[J], device index of the current/last run, -2 mixed, -1 never
    worker_node: np.ndarray  # int64[J, Wmax], -1 padding
    worker_gpu: np.ndarray   # int64[J, Wmax], -1 padding / CPU worker


class NodeState(NamedTuple):
    """Dynamic node state."""

    free_gpus: np.ndarray  # int64[N]
    free_cpus: np.ndarray  # float64[N]
    free_mem: np.ndarray   # float64[N]
    gpu_owner: np.ndarray  # int64[N, G], -1 free


_NODE_CACHE: dict[int, tuple[Scenario, NodeArrays]] = {}


def build_nodes(scenario: Scenario) -> NodeArrays:
    """Expand node groups into per-node arrays (cached per scenario object; read-only use)."""
    hit = _NODE_CACHE.get(id(scenario))
    if hit is not None and hit[0] is scenario:
        return hit[1]
    nodes = _build_nodes(scenario)
    if len(_NODE_CACHE) > 8:
        _NODE_CACHE.clear()
    _NODE_CACHE[id(scenario)] = (scenario, nodes)
    return nodes


def _build_nodes(scenario: Scenario) -> NodeArrays:
    devices = scenario.device_types
    spec_nodes = [(s, i) for s in scenario.cluster.nodes for i in range(s.count)]
    n = len(spec_nodes)
    gmax = max(1, max(s.gpus for s, _ in spec_nodes))
    dist = np.zeros((n, gmax, gmax))
    names, dev, gpus, cpus, mem, idle, gw, cw = [], [], [], [], [], [], [], []
    for k, (s, i) in enumerate(spec_nodes):
        names.append(f"{s.name}-{i}")
        dev.append(devices.index(s.device))
        gpus.append(s.gpus)
        cpus.append(float(s.cpus))
        mem.append(float(s.mem_gb))
        if s.gpus:
            dist[k, : s.gpus, : s.gpus] = s.distance_matrix()
        p = s.power_w()
        idle.append(p[0])
        gw.append(p[1])
        cw.append(p[2])
    return NodeArrays(
        name=names,
        dev=np.asarray(dev, dtype=np.int64),
        gpus=np.asarray(gpus, dtype=np.int64),
        cpus=np.asarray(cpus),
        mem=np.asarray(mem),
        dist=dist,
        idle_w=np.asarray(idle),
        gpu_w=np.asarray(gw),
        core_w=np.asarray(cw),
        dev_is_cpu=np.asarray([d == "cpu" for d in devices], dtype=np.bool_),
    )


def build_jobs(scenario: Scenario, rows: np.ndarray | None = None) -> JobArrays:
    """Job arrays in workload order (sorted by arrival, then job_id).

    With ``rows`` (sorted row indices of the workload), only those jobs, with
    arrivals rebased so that the first arrives at 0 (an episode window).
    """
    full = _build_jobs(scenario)
    if rows is None:
        return full
    rows = np.asarray(rows, dtype=np.int64)
    out = JobArrays(*(a[rows] for a in full))
    return out._replace(arrival=out.arrival - out.arrival[0])


_CACHE: dict[int, tuple[Scenario, JobArrays]] = {}


def _build_jobs(scenario: Scenario) -> JobArrays:
    key = id(scenario)
    hit = _CACHE.get(key)
    if hit is not None and hit[0] is scenario:
        return hit[1]
    jobs = _build_jobs_uncached(scenario)
    if len(_CACHE) > 8:
        _CACHE.clear()
    _CACHE[key] = (scenario, jobs)
    return jobs


def _build_jobs_uncached(scenario: Scenario) -> JobArrays:
    wl = scenario.workload
    fr = wl.frame
    devices = scenario.device_types
    tput = wl.tput_matrix(devices)
    cpus = fr["cpus"].to_numpy(dtype=np.float64)
    cpus_need = np.repeat(cpus[:, None], len(devices), axis=1)
    if scenario.options.cpu_slot_cores is not None and "cpu" in devices:
        cpus_need[:, devices.index("cpu")] = float(scenario.options.cpu_slot_cores)
    grace = fr["grace_period"].to_numpy(dtype=np.float64)
    if scenario.options.grace_period is not None:
        grace = np.full(len(fr), float(scenario.options.grace_period))
    return JobArrays(
        job_id=fr["job_id"].to_numpy(dtype=np.int64),
        arrival=fr["arrival"].to_numpy(dtype=np.float64),
        user=wl.user_ids(),
        job_class=(fr["job_class"] == "TE").to_numpy().astype(np.int64),
        workers=fr["workers"].to_numpy(dtype=np.int64),
        work=fr["work"].to_numpy(dtype=np.float64),
        tput=np.ascontiguousarray(tput),
        cpus_need=np.ascontiguousarray(cpus_need),
        mem=fr["mem_gb"].to_numpy(dtype=np.float64),
        deadline=fr["deadline"].to_numpy(dtype=np.float64),
        weight=fr["weight"].to_numpy(dtype=np.float64),
        grace=grace,
        comm=fr["comm"].to_numpy(dtype=np.float64),
        forkable=fr["forkable"].to_numpy(dtype=np.bool_),
    )


def best_durations(jobs: JobArrays) -> np.ndarray:
    """float64[J]: each job's run time from scratch on its fastest device type,
    ``work / (workers x tput)`` (linear scaling; the reference for slowdown and progress)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        d = jobs.work[:, None] / (jobs.workers[:, None] * jobs.tput)
    return np.min(np.where(jobs.tput > 0, d, np.inf), axis=1)


def new_job_state(jobs: JobArrays) -> JobState:
    """Initial dynamic state: every job in the future, nothing done."""
    j = len(jobs.arrival)
    wmax = int(jobs.workers.max())
    nan = np.full(j, np.nan)
    return JobState(
        status=np.zeros(j, dtype=np.int64),
        remaining=jobs.work.copy(),
        rate=np.zeros(j),
        resume_at=np.zeros(j),
        finish=np.full(j, np.inf),
        grace_end=np.full(j, np.inf),
        run_start=nan.copy(),
        first_start=nan.copy(),
        end=nan.copy(),
        exec_time=np.zeros(j),
        n_preempt=np.zeros(j, dtype=np.int64),
        n_restart=np.zeros(j, dtype=np.int64),
        device=np.full(j, -1, dtype=np.int64),
        worker_node=np.full((j, wmax), -1, dtype=np.int64),
        worker_gpu=np.full((j, wmax), -1, dtype=np.int64),
    )


def new_node_state(nodes: NodeArrays) -> NodeState:
    """Initial node state: everything free."""
    return NodeState(
        free_gpus=nodes.gpus.copy(),
        free_cpus=nodes.cpus.copy(),
        free_mem=nodes.mem.copy(),
        gpu_owner=np.full(nodes.dist.shape[:2], -1, dtype=np.int64),
    )
