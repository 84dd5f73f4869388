"""A run's static :class:`~hetgym.sim.state.layout.Params` and its initial
:class:`~hetgym.sim.state.layout.State`, and :func:`refill` to reuse the arrays of one for
another window (:mod:`hetgym.sim.state` describes the whole)."""

from __future__ import annotations

import numpy as np

from hetgym.sim.codes import PlacementPolicy
from hetgym.sim.rules import limit_code
from hetgym.sim.state.jobs import interference_matrix
from hetgym.sim.state.layout import (
    ACC_ROUND,
    ACC_WAKE,
    CTR_QHEAD,
    CTR_QTAIL,
    N_ACC,
    N_CTR,
    JobArrays,
    JobState,
    NodeArrays,
    NodeState,
    Options,
    Params,
    RunState,
    State,
)
from hetgym.sim.state.nodes import build_nodes
from hetgym.specs import Scenario


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
        limit=limit_code(o.max_preemptions),
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
    """Copies a forkable job may hold (forking): ``option``, else the number of GPU nodes when
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
