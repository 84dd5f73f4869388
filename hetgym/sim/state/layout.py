"""The layout of the simulator's state: the typed NamedTuples and the named indices of
its counter and accumulator arrays (:mod:`hetgym.sim.state` describes the whole)."""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

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
    fork_sync: float        # no-progress time of a job holding >= 2 copies (forking)
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
    n_copies: np.ndarray     # int64[J], copies of the current/last run (1 unless forked)


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
