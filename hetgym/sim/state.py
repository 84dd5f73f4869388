"""Typed arrays that cross into the Numba kernels, built from a :class:`~hetgym.specs.Scenario`.

The simulator's whole state is two NamedTuples, passed whole to every kernel
(the gymnax / Jumanji shape; the kernels get their structref mirror, the same
arrays, from :mod:`hetgym.sim.mirror`):

* :class:`Params` (static for a run): :class:`JobArrays`, :class:`NodeArrays`,
  :class:`Options` (scalars).
* :class:`State` (dynamic): :class:`JobState`, :class:`NodeState`,
  :class:`RunState` (queue, running set, counters, accumulators, logs and the
  kernels' scratch arrays, allocated once).

Counters and accumulators are arrays indexed by the named constants below
(``run.ctr[CTR_Q]``, ``run.acc[ACC_NOW]``) so that kernels can update them in place.

The queue keeps arrival order with suspended jobs at the head, in a buffer
``run.queue[ctr[CTR_QHEAD]:ctr[CTR_QTAIL]]`` where removed entries are
tombstones (-1): removing a job costs O(1) (``job.qpos`` gives its slot) and
:func:`hetgym.sim.kernels.queue_compact_nb` squeezes the tombstones out when
a reader needs the live queue.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from hetgym.sim.codes import PlacementPolicy
from hetgym.specs import ClusterSpec, Scenario

__all__ = [
    "ACC_ENERGY",
    "ACC_NOW",
    "ACC_POWER",
    "ACC_ROUND",
    "ACC_WAKE",
    "CTR_ARR",
    "CTR_DONE",
    "CTR_ERR",
    "CTR_EV",
    "CTR_Q",
    "CTR_QHEAD",
    "CTR_QTAIL",
    "CTR_RUN",
    "CTR_SEG",
    "JobArrays",
    "JobState",
    "NodeArrays",
    "NodeState",
    "Options",
    "Params",
    "RunState",
    "State",
    "best_durations",
    "build_jobs",
    "build_nodes",
    "build_params",
    "cluster_nodes",
    "cut_window",
    "gang_fits",
    "gang_slots",
    "max_copies",
    "min_units",
    "new_state",
    "node_names",
    "refill",
]

# run.ctr (int64): next arrival, queue buffer head / tail, live queue length, running,
# done, event instants, job of an error, segments logged
CTR_ARR, CTR_QHEAD, CTR_QTAIL, CTR_Q, CTR_RUN, CTR_DONE, CTR_EV, CTR_ERR, CTR_SEG = range(9)
N_CTR = 9
# run.acc (float64): now, energy (J), active power above idle (W), next round boundary,
# the scheduler's next wake-up (+inf if none)
ACC_NOW, ACC_ENERGY, ACC_POWER, ACC_ROUND, ACC_WAKE = range(5)
N_ACC = 5


class NodeArrays(NamedTuple):
    """Static node parameters (N nodes, G = max GPUs per node >= 1, C device types)."""

    dev: np.ndarray         # int64[N], device index of the node's workers
    gpus: np.ndarray        # int64[N], GPUs (0 for CPU nodes)
    cpus: np.ndarray        # float64[N], cores
    mem: np.ndarray         # float64[N], GB
    dist: np.ndarray        # float64[N, G, G], GPU distances, 0-padded
    idle_w: np.ndarray      # float64[N], idle power while on
    gpu_w: np.ndarray       # float64[N], power per busy GPU
    core_w: np.ndarray      # float64[N], power per busy core of a CPU worker
    dev_is_cpu: np.ndarray  # bool[C]
    dev_start: np.ndarray   # int64[C + 1], nodes of type c are by_dev[dev_start[c]:dev_start[c+1]]
    by_dev: np.ndarray      # int64[N], node indices grouped by device type (ascending in a group)
    socket: np.ndarray      # int64[N, G], CPU socket of each GPU, -1 padding
    sockets: np.ndarray     # int64[N], CPU sockets per node
    switch_w: np.ndarray    # float64[N], idle power drawn only while the node hosts a worker
                            # (idle_w with SimOptions.idle_power="busy_nodes", else 0)


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
    holdable: np.ndarray   # bool[J, C], see :func:`gang_fits` (with min_workers)
    min_workers: np.ndarray  # int64[J], least gang size (elastic jobs; = workers if not)
    max_workers: np.ndarray  # int64[J], largest gang size
    scale_exp: np.ndarray    # float64[J], per-job scaling exponent
    sens: np.ndarray       # float64[J], interference sensitivity s_j (comm if W >= 2, else 0)
    press: np.ndarray      # float64[J], interference pressure p_j (column bw, default as sens)
    itype: np.ndarray      # int64[J], dense id of job_type (interference table rows)
    min_utility: np.ndarray  # float64[J], least placement utility accepted (TOPO-AWARE-P)


class Options(NamedTuple):
    """Scalar options of a run (from :class:`~hetgym.specs.SimOptions` and the scheduler)."""

    horizon: float
    round_len: float        # 0 = no rounds
    ckpt: float             # checkpoint interval (s), 0 = none
    restart_delay: float
    scaling_exponent: float
    topology_coeff: float
    network_distance: float
    idle_power: float       # W, all nodes
    policy: int             # PlacementPolicy code
    limit: int              # preemption limit per job, -1 = none
    ckpt_work: bool         # checkpoint_interval counts iterations (checkpoint_unit="work")
    interf_mode: int        # 0 no interference, 1 coefficient model, 2 pairwise table
    interf_coeff: float
    interf_domain: int      # 0 socket, 1 node
    fork_sync: float        # no-progress time of a job holding >= 2 copies (M4)
    max_copies: int         # copies a forkable job may hold (worker slots = Wmax x max_copies)


class Params(NamedTuple):
    """Everything static in a run."""

    jobs: JobArrays
    nodes: NodeArrays
    opts: Options
    min_unit: np.ndarray  # float64[C], least a worker of any job takes of free_dev[c] (1 GPU, or cores)
    itab: np.ndarray      # float64[T, T], interference slowdown of type a next to type b (1 = none)


class JobState(NamedTuple):
    """Dynamic job state (float times in s; NaN = not yet)."""

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
    qpos: np.ndarray        # int64[J], slot in run.queue while queued, -1 otherwise
    worker_node: np.ndarray  # int64[J, Wmax], -1 padding
    worker_gpu: np.ndarray   # int64[J, Wmax], -1 padding / CPU worker
    attained: np.ndarray     # float64[J], worker-seconds held in finished runs
    nworkers: np.ndarray     # int64[J], workers of the current/last run, all copies (0 = never ran)
    n_copies: np.ndarray     # int64[J], copies of the current/last run (1 unless forked, M4)


class NodeState(NamedTuple):
    """Dynamic node state, with a per-device-type summary kept incrementally."""

    free_gpus: np.ndarray  # int64[N]
    free_cpus: np.ndarray  # float64[N]
    free_mem: np.ndarray   # float64[N]
    gpu_owner: np.ndarray  # int64[N, G], -1 free
    free_dev: np.ndarray   # float64[C], free GPUs of a GPU type / free cores of a CPU type


class RunState(NamedTuple):
    """Dynamic run state: queue, running set, counters, accumulators, logs, scratch."""

    ctr: np.ndarray        # int64[N_CTR], see CTR_*
    acc: np.ndarray        # float64[N_ACC], see ACC_*
    queue: np.ndarray      # int64[3 (J + 1)], queue buffer with tombstones (-1)
    running: np.ndarray    # int64[J + 1], jobs holding resources, in start order
    service: np.ndarray    # float64[U], per-user worker-seconds held
    busy: np.ndarray       # float64[C], busy GPUs / cores per device type now
    busy_time: np.ndarray  # float64[C], integral of busy over time
    seg_i: np.ndarray      # int64[S, 4], job, device (-2 mixed), first node, GPUs held (all copies)
    seg_f: np.ndarray      # float64[S, 2], start, end of each finished run
    out_done: np.ndarray   # int64[J + 1], jobs completed at the last instant
    out_grace: np.ndarray  # int64[J + 1], jobs whose grace ended at the last instant
    out_node: np.ndarray   # int64[Wmax], placement found by the last place
    out_gpu: np.ndarray    # int64[Wmax]
    scr_i: np.ndarray      # int64[3, N], placement scratch (slots, take, order)
    scr_f: np.ndarray      # float64[2, N], placement-check scratch (cores, memory per node)
    qtmp: np.ndarray       # int64[J + 1], queue compaction scratch
    node_units: np.ndarray  # int64[N], workers on each node now
    node_pw: np.ndarray     # float64[N], each node's power now (W)
    node_e: np.ndarray      # float64[N], each node's energy (J) up to node_t
    node_busy: np.ndarray   # float64[N], seconds each node hosted >= 1 worker, up to node_t
    node_t: np.ndarray      # float64[N], time of the node's last update


class State(NamedTuple):
    """Everything dynamic in a run."""

    job: JobState
    node: NodeState
    run: RunState


def node_names(scenario: Scenario) -> list[str]:
    """Per-node names ``"<group>-<i>"`` in node index order."""
    return [f"{s.name}-{i}" for s in scenario.cluster.nodes for i in range(s.count)]


_NODE_CACHE: dict[int, tuple[Scenario, NodeArrays]] = {}


def build_nodes(scenario: Scenario) -> NodeArrays:
    """Expand node groups into per-node arrays (cached per scenario object; read-only use)."""
    hit = _NODE_CACHE.get(id(scenario))
    if hit is not None and hit[0] is scenario:
        return hit[1]
    nodes = cluster_nodes(scenario.cluster)
    if len(_NODE_CACHE) > 8:
        _NODE_CACHE.clear()
    _NODE_CACHE[id(scenario)] = (scenario, nodes)
    return nodes


def cluster_nodes(cluster: ClusterSpec) -> NodeArrays:
    """Per-node arrays of a cluster (node groups expanded, in group order)."""
    devices = cluster.device_types
    spec_nodes = [s for s in cluster.nodes for _ in range(s.count)]
    n = len(spec_nodes)
    gmax = max(1, max(s.gpus for s in spec_nodes))
    dist = np.zeros((n, gmax, gmax))
    socket = np.full((n, gmax), -1, dtype=np.int64)
    for k, s in enumerate(spec_nodes):
        if s.gpus:
            dist[k, : s.gpus, : s.gpus] = s.distance_matrix()
            socket[k, : s.gpus] = s.socket_map()
    power = np.asarray([s.power_w() for s in spec_nodes], dtype=np.float64).reshape(n, 3)
    dev = np.asarray([devices.index(s.device) for s in spec_nodes], dtype=np.int64)
    by_dev = np.argsort(dev, kind="stable").astype(np.int64)
    dev_start = np.searchsorted(dev[by_dev], np.arange(len(devices) + 1)).astype(np.int64)
    return NodeArrays(
        dev=dev,
        gpus=np.asarray([s.gpus for s in spec_nodes], dtype=np.int64),
        cpus=np.asarray([float(s.cpus) for s in spec_nodes]),
        mem=np.asarray([float(s.mem_gb) for s in spec_nodes]),
        dist=dist,
        idle_w=np.ascontiguousarray(power[:, 0]),
        gpu_w=np.ascontiguousarray(power[:, 1]),
        core_w=np.ascontiguousarray(power[:, 2]),
        dev_is_cpu=np.asarray([d == "cpu" for d in devices], dtype=np.bool_),
        dev_start=dev_start,
        by_dev=by_dev,
        socket=socket,
        sockets=np.asarray([max(1, int(s.sockets)) for s in spec_nodes], dtype=np.int64),
        switch_w=np.zeros(n),
    )


def gang_fits(workers: np.ndarray, cpus_need: np.ndarray, mem: np.ndarray,
              nodes: NodeArrays) -> np.ndarray:
    """``bool[J, C]``: the nodes of device type c, all free, could hold job j's whole gang.

    The one rule behind :attr:`JobArrays.holdable`, ``View.holdable``, the
    baselines' device choice and :meth:`Workload.check_cluster`: a worker takes
    1 GPU (none on a CPU node), ``cpus_need[j, c]`` cores and ``mem[j]`` GB; the
    gang fits type c when the per-node worker counts of its nodes add up to
    ``workers[j]``. Throughput is not looked at.
    """
    return gang_slots(workers, cpus_need, mem, nodes) >= workers[:, None]


def gang_slots(workers: np.ndarray, cpus_need: np.ndarray, mem: np.ndarray,
               nodes: NodeArrays) -> np.ndarray:
    """``int64[J, C]``: workers of job j that all nodes of type c, free, hold together
    (the count behind :func:`gang_fits`, capped at 2**30)."""
    j_n, c_n = cpus_need.shape
    tot = np.zeros((j_n, c_n), dtype=np.int64)
    for n in range(len(nodes.dev)):
        tot[:, int(nodes.dev[n])] += node_slots(n, cpus_need, mem, nodes)
    return np.minimum(tot, _BIG)


_BIG = 1 << 30


def node_slots(n: int, cpus_need: np.ndarray, mem: np.ndarray, nodes: NodeArrays) -> np.ndarray:
    """``int64[J]``: workers of each job that node ``n``, all free, holds (1 GPU each on a
    GPU node; ``cpus_need[:, type of n]`` cores and ``mem`` GB each; capped at 2**30)."""
    d = int(nodes.dev[n])
    per = np.full(len(mem), _BIG if nodes.dev_is_cpu[d] else int(nodes.gpus[n]), dtype=np.int64)
    c = cpus_need[:, d]
    k = np.floor(nodes.cpus[n] / np.where(c > 0, c, 1.0) + 1e-9)
    per = np.where(c > 0, np.minimum(per, k), per)
    k = np.floor(nodes.mem[n] / np.where(mem > 0, mem, 1.0) + 1e-9)
    per = np.where(mem > 0, np.minimum(per, k), per).astype(np.int64)
    return np.minimum(per, _BIG)


def build_jobs(scenario: Scenario, rows: np.ndarray | None = None) -> JobArrays:
    """Job arrays in workload order (sorted by arrival, then job_id).

    With ``rows`` (sorted row indices of the workload), only those jobs, cut by
    :func:`cut_window` (arrivals and deadlines shifted so the first job arrives at 0).
    """
    full = _build_jobs(scenario)
    return full if rows is None else cut_window(full, rows)


def cut_window(jobs: JobArrays, rows: np.ndarray) -> JobArrays:
    """The jobs at ``rows`` as an episode window: arrivals and deadlines move together so
    that the first job arrives at 0 (the array form of ``hetgym.traces.windows.rebase``)."""
    rows = np.asarray(rows, dtype=np.int64)
    out = JobArrays(*(a[rows] for a in jobs))
    t0 = out.arrival[0] if len(rows) else 0.0
    return out._replace(arrival=out.arrival - t0, deadline=out.deadline - t0)


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
    workers = fr["workers"].to_numpy(dtype=np.int64)
    least = fr["min_workers"].to_numpy(dtype=np.int64) if "min_workers" in fr.columns else workers
    most = fr["max_workers"].to_numpy(dtype=np.int64) if "max_workers" in fr.columns else workers
    exp = np.full(len(fr), float(scenario.options.scaling_exponent))
    if "scaling_exponent" in fr.columns:
        own = fr["scaling_exponent"].to_numpy(dtype=np.float64)
        exp = np.where(np.isnan(own), exp, own)
    mem = fr["mem_gb"].to_numpy(dtype=np.float64)
    comm = fr["comm"].to_numpy(dtype=np.float64)
    sens = np.where(workers >= 2, comm, 0.0)
    bw = fr["bw"].to_numpy(dtype=np.float64)
    jobs = JobArrays(
        job_id=fr["job_id"].to_numpy(dtype=np.int64),
        arrival=fr["arrival"].to_numpy(dtype=np.float64),
        user=wl.user_ids(),
        job_class=(fr["job_class"] == "TE").to_numpy().astype(np.int64),
        workers=workers,
        work=fr["work"].to_numpy(dtype=np.float64),
        tput=np.ascontiguousarray(tput),
        cpus_need=np.ascontiguousarray(cpus_need),
        mem=mem,
        deadline=fr["deadline"].to_numpy(dtype=np.float64),
        weight=fr["weight"].to_numpy(dtype=np.float64),
        grace=grace,
        comm=comm,
        forkable=fr["forkable"].to_numpy(dtype=np.bool_),
        holdable=gang_fits(least, cpus_need, mem, build_nodes(scenario)),
        min_workers=least,
        max_workers=most,
        scale_exp=exp,
        sens=sens,
        press=np.where(np.isnan(bw), sens, bw),
        itype=np.searchsorted(job_types(scenario), fr["job_type"].to_numpy()).astype(np.int64),
        min_utility=fr["min_utility"].to_numpy(dtype=np.float64),
    )
    # owned, writable, C-contiguous copies: one Numba type for whole workloads and windows
    # (pandas hands out read-only views, which Numba types apart and compiles again)
    return JobArrays(*(np.array(a, copy=True, order="C") for a in jobs))


def job_types(scenario: Scenario) -> np.ndarray:
    """Sorted distinct ``job_type`` names of the workload and of the interference table
    (``JobArrays.itype`` indexes it)."""
    names = set(scenario.workload.frame["job_type"].astype(str))
    for (a, b), _ in scenario.options.interference_table or ():
        names.update((a, b))
    return np.array(sorted(names), dtype=object)


_ITAB_CACHE: dict[int, tuple[Scenario, np.ndarray]] = {}


def interference_matrix(scenario: Scenario) -> np.ndarray:
    """``float64[T, T]`` slowdown of a type-a job next to a type-b job (1 where not given);
    cached per scenario object (every run and every env reset asks for it)."""
    hit = _ITAB_CACHE.get(id(scenario))
    if hit is not None and hit[0] is scenario:
        return hit[1]
    if len(_ITAB_CACHE) > 8:
        _ITAB_CACHE.clear()
    tab = _interference_matrix(scenario)
    _ITAB_CACHE[id(scenario)] = (scenario, tab)
    return tab


def _interference_matrix(scenario: Scenario) -> np.ndarray:
    names = job_types(scenario)
    tab = np.ones((max(1, len(names)), max(1, len(names))))
    for (a, b), v in scenario.options.interference_table or ():
        tab[np.searchsorted(names, a), np.searchsorted(names, b)] = v
    return tab


def best_durations(jobs: JobArrays, amount: np.ndarray | None = None,
                   scaling_exponent: float = 1.0) -> np.ndarray:
    """float64[J]: each job's run time on its fastest device type that can hold its gang.

    ``amount / (W x tput x W^(e-1))`` minimised over the types where ``tput > 0``
    and the gang fits (:func:`gang_fits`); ``amount`` defaults to the whole work and
    ``e`` to 1 (linear scaling: the reference of slowdown and progress metrics).
    The scalar form inside kernels is :func:`hetgym.sim.kernels.best_duration_nb`.
    """
    amount = jobs.work if amount is None else amount
    w = jobs.workers.astype(np.float64)
    eff = w ** (scaling_exponent - 1.0)
    ok = (jobs.tput > 0) & jobs.holdable
    with np.errstate(divide="ignore", invalid="ignore"):
        d = amount[:, None] / (w[:, None] * jobs.tput * eff[:, None])
    return np.min(np.where(ok, d, np.inf), axis=1)


def build_params(scenario: Scenario, jobs: JobArrays, round_length: float | None) -> Params:
    """Static parameters of a run."""
    o = scenario.options
    nodes = build_nodes(scenario)
    busy_nodes = o.idle_power == "busy_nodes"
    if busy_nodes:
        nodes = nodes._replace(switch_w=nodes.idle_w.copy())
    opts = Options(
        horizon=float(o.horizon), round_len=float(round_length or 0.0),
        ckpt=float(o.checkpoint_interval), restart_delay=float(o.restart_delay),
        scaling_exponent=float(o.scaling_exponent), topology_coeff=float(o.topology_coeff),
        network_distance=float(o.network_distance),
        idle_power=0.0 if busy_nodes else float(nodes.idle_w.sum()),
        policy=int(PlacementPolicy.of(o.placement)),
        limit=-1 if o.max_preemptions is None else int(o.max_preemptions),
        ckpt_work=o.checkpoint_unit == "work",
        fork_sync=float(o.restart_delay if o.fork_sync_delay is None else o.fork_sync_delay),
        max_copies=max_copies(o.max_copies, jobs, nodes),
        interf_mode=2 if o.interference_table else (1 if o.interference_coeff > 0 else 0),
        interf_coeff=float(o.interference_coeff),
        interf_domain=0 if o.interference_domain == "socket" else 1)
    return Params(jobs=jobs, nodes=nodes, opts=opts, min_unit=min_units(jobs, nodes.dev_is_cpu),
                  itab=interference_matrix(scenario))


def min_units(jobs: JobArrays, dev_is_cpu: np.ndarray) -> np.ndarray:
    """float64[C] (:attr:`Params.min_unit`): the least a worker of ``jobs`` takes of each
    device type's free capacity: 1 GPU on a GPU type; on a CPU type, the fewest cores any
    job that runs there needs (``inf`` when none runs there)."""
    unit = np.ones(len(dev_is_cpu))
    for c in np.flatnonzero(dev_is_cpu):
        need = jobs.cpus_need[:, c][jobs.tput[:, c] > 0]
        unit[c] = float(need.min()) if len(need) else np.inf
    return unit


def max_copies(option: int | None, jobs: JobArrays, nodes: NodeArrays) -> int:
    """Copies a forkable job may hold (M4): ``option``, else the number of GPU nodes when
    some job is forkable, else 1 (so that workloads without forking keep their layout)."""
    if option is not None:
        return int(option)
    if not bool(np.any(jobs.forkable)):
        return 1
    return max(1, int(np.count_nonzero(nodes.gpus > 0)))


def new_state(params: Params) -> State:
    """Initial state: every job in the future, nothing done, every node free."""
    jobs, nodes = params.jobs, params.nodes
    j = len(jobs.arrival)
    n = len(nodes.dev)
    c = len(nodes.dev_is_cpu)
    wmax = int(jobs.max_workers.max())
    slots = wmax * params.opts.max_copies
    nan = np.full(j, np.nan)
    job = JobState(
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
        qpos=np.full(j, -1, dtype=np.int64),
        worker_node=np.full((j, slots), -1, dtype=np.int64),
        worker_gpu=np.full((j, slots), -1, dtype=np.int64),
        attained=np.zeros(j),
        nworkers=np.zeros(j, dtype=np.int64),
        n_copies=np.ones(j, dtype=np.int64),
    )
    free_dev = np.zeros(c)
    for k in range(n):
        d = nodes.dev[k]
        free_dev[d] += nodes.cpus[k] if nodes.dev_is_cpu[d] else nodes.gpus[k]
    node = NodeState(
        free_gpus=nodes.gpus.copy(),
        free_cpus=nodes.cpus.copy(),
        free_mem=nodes.mem.copy(),
        gpu_owner=np.full(nodes.dist.shape[:2], -1, dtype=np.int64),
        free_dev=free_dev,
    )
    ctr = np.zeros(N_CTR, dtype=np.int64)
    ctr[CTR_QHEAD] = ctr[CTR_QTAIL] = j + 1
    acc = np.zeros(N_ACC)
    acc[ACC_ROUND] = params.opts.round_len if params.opts.round_len > 0 else np.inf
    acc[ACC_WAKE] = np.inf
    run = RunState(
        ctr=ctr, acc=acc,
        queue=np.full(3 * (j + 1), -1, dtype=np.int64),
        running=np.zeros(j + 1, dtype=np.int64),
        service=np.zeros(int(jobs.user.max()) + 1),
        busy=np.zeros(c), busy_time=np.zeros(c),
        seg_i=np.zeros((2 * j + 16, 4), dtype=np.int64),
        seg_f=np.zeros((2 * j + 16, 2)),
        out_done=np.zeros(j + 1, dtype=np.int64),
        out_grace=np.zeros(j + 1, dtype=np.int64),
        out_node=np.zeros(wmax, dtype=np.int64),
        out_gpu=np.zeros(wmax, dtype=np.int64),
        scr_i=np.zeros((3, n), dtype=np.int64),
        scr_f=np.zeros((2, n)),
        qtmp=np.zeros(j + 1, dtype=np.int64),
        node_units=np.zeros(n, dtype=np.int64),
        node_pw=nodes.idle_w - nodes.switch_w,
        node_e=np.zeros(n),
        node_busy=np.zeros(n),
        node_t=np.zeros(n),
    )
    return State(job=job, node=node, run=run)


def _refillable(old: object, new: object) -> bool:
    if isinstance(old, tuple):
        return isinstance(new, tuple) and len(old) == len(new) and all(
            _refillable(a, b) for a, b in zip(old, new))
    if not isinstance(old, np.ndarray):
        return old == new
    if old.dtype != new.dtype or old.ndim != new.ndim:
        return False
    if old.shape == new.shape:
        return True
    # a larger array (a grown log, a wider scratch) takes a constant-filled one
    return all(a >= b for a, b in zip(old.shape, new.shape)) and (
        new.size == 0 or bool((new == new.flat[0]).all()) or bool(np.isnan(new).all()))


def _refill(old: object, new: object) -> None:
    if isinstance(old, tuple):
        for a, b in zip(old, new):
            _refill(a, b)
    elif isinstance(old, np.ndarray):
        if old.shape == new.shape:
            np.copyto(old, new)
        else:
            old.fill(new.flat[0] if new.size else 0)


def refill(old: tuple, new: tuple) -> bool:
    """Copy the arrays of ``new`` into those of ``old`` (NamedTuples of the same layout,
    e.g. a :class:`State` and a fresh one), so that compiled code holding ``old`` sees
    the new values. An array of ``old`` larger than its counterpart (a grown segment log)
    takes it only if the counterpart is constant (then ``old`` is filled with that
    value); scalars must be equal. Returns False, changing nothing, if ``new`` does not
    fit into ``old``."""
    if not _refillable(old, new):
        return False
    _refill(old, new)
    return True
