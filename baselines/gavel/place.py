"""Gavel's per-round worker assignment and the decisions that carry it out.

``scheduler/scheduler.py::_schedule_jobs_on_workers`` and ``_assign_workers_to_job``
(``stanford-futuredata/gavel``): per GPU type, the jobs scheduled on it are taken by
decreasing gang size; for each gang size, first every job that ran on this type in the
previous round keeps its exact GPUs if none of them is taken yet, then the other jobs
get GPUs server by server (a pointer over the type's servers that never moves back, i.e.
the first free GPUs in node order, GPU order). hetgym adds CPU-core and memory checks
per node (Gavel schedules GPUs only; with the trace loaders' defaults they never bind).
The walk runs compiled, one call a round (:func:`baselines.gavel.kernels.assign_nb`).
"""

from __future__ import annotations

import numpy as np

from baselines.gavel.kernels import assign_nb
from baselines.common.ledger import Ledger, preemptible
from hetgym.decisions import Decision, Move, Placement, Preempt, Start
from hetgym.sim.codes import GRACE, QUEUED, RUNNING
from hetgym.sim.rules import slots

__all__ = ["assign_workers", "carry_out", "current", "worker_counts"]


def worker_counts(view) -> np.ndarray:
    """int64[C]: workers each device type can hold: its GPUs, or for a CPU type its
    worker slots (each node's cores over ``SimOptions.cpu_slot_cores``, else over the
    median cores per worker of the jobs that can run there)."""
    nd = np.asarray(view.node_device)
    out = np.zeros(len(view.devices), dtype=np.int64)
    for k in range(len(view.devices)):
        on = nd == k
        if not bool(np.asarray(view.dev_is_cpu)[k]):
            out[k] = int(np.asarray(view.node_gpus)[on].sum())
            continue
        slot = view.options.cpu_slot_cores
        if slot is None:
            need = np.asarray(view.cpus_need)[:, k][np.asarray(view.tput)[:, k] > 0]
            slot = float(np.median(need)) if len(need) else 0.0
        if slot > 0:
            out[k] = int(slots(np.asarray(view.node_cpus, dtype=np.float64)[on], slot).sum())
    return out


def current(view, job: int) -> tuple[np.ndarray, np.ndarray]:
    """The nodes and GPUs ``job`` holds now."""
    w = int(view.workers[job])
    return np.asarray(view.worker_node[job, :w]), np.asarray(view.worker_gpu[job, :w])


def assign_workers(view, scheduled: dict[int, list[int]], held: np.ndarray
                   ) -> dict[int, tuple[int, Placement]]:
    """Placements for the round: ``{job: (type, placement)}``.

    Args:
        view: The simulator's view.
        scheduled: Per type (in the round's type order), the jobs scheduled on it in
            walk order.
        held: Jobs whose resources stay taken this round (in a grace period, or to be
            preempted with a grace period).

    Jobs that get no GPUs (only possible when CPU cores, memory or ``held`` bind) are
    left out. The placements are in the order the walk made them (each a view of one
    fresh array); a job scheduled on two types is refused (``ValueError``).
    """
    types = list(scheduled)
    per_type = [[int(j) for j in scheduled[k]] for k in types]
    jobs = np.fromiter((j for js in per_type for j in js), dtype=np.int64)
    if len(np.unique(jobs)) < len(jobs):
        ids, n = np.unique(jobs, return_counts=True)
        raise ValueError(f"Gavel: a job is scheduled on more than one type (jobs "
                         f"{ids[n > 1].tolist()}; each job may be on one type of the round)")
    ptr = np.zeros(len(types) + 1, dtype=np.int64)
    ptr[1:] = np.cumsum([len(js) for js in per_type])
    workers = np.asarray(view.workers)
    width = max(int(view.worker_node.shape[1]), int(workers[jobs].max(initial=0)))
    count, out_job, out_type, out_nodes, out_gpus = assign_nb(
        np.asarray(view.node_gpus), np.asarray(view.node_cpus, dtype=np.float64),
        np.asarray(view.node_mem, dtype=np.float64), np.asarray(view.node_device),
        np.asarray(view.dev_is_cpu, dtype=np.bool_), np.asarray(view.cpus_need, dtype=np.float64),
        np.asarray(view.mem, dtype=np.float64), workers, np.asarray(view.status),
        np.asarray(view.device), np.asarray(view.worker_node), np.asarray(view.worker_gpu),
        np.asarray(held, dtype=np.int64), np.asarray(types, dtype=np.int64), ptr, jobs,
        RUNNING, width)
    out: dict[int, tuple[int, Placement]] = {}
    for i, j, k in zip(range(count), out_job[:count].tolist(), out_type[:count].tolist()):
        w = int(workers[j])
        out[j] = (k, Placement(out_nodes[i, :w], out_gpus[i, :w]))
    return out


def carry_out(view, plan: dict[int, tuple[int, Placement]]) -> list[Decision]:
    """Decisions that turn the running set into ``plan``: ``Preempt`` for running jobs
    left out, ``Move`` for running jobs whose placement changes, ``Start`` for waiting
    jobs. Each decision is issued once it is valid on the resources the earlier ones
    leave (GPUs, and each node's cores and memory: :class:`~baselines.common.ledger.Ledger`),
    so a move waits until the jobs leaving its target GPUs or cores have moved. A cycle
    of moves (A onto B's GPUs or cores and B onto A's) is broken by preempting one of its
    jobs that may be preempted (:func:`~baselines.common.ledger.preemptible`: no grace period,
    below ``max_preemptions``) and starting it after the moves (counted as a
    preemption). When no job of the cycle may be preempted, the moves left are dropped:
    those jobs keep running where they are this round, and a start whose resources they
    still hold is dropped too (the job waits for the next round)."""
    status = np.asarray(view.status)
    ledger = Ledger(view)
    out: list[Decision] = []
    moves: dict[int, tuple[int, Placement]] = {}
    starts: list[tuple[int, int, Placement]] = []
    for j in np.asarray(view.running).tolist():
        if status[j] != RUNNING:
            continue
        if j not in plan:
            out.append(Preempt(j))
            ledger.preempt(j)
            continue
        k, pl = plan[j]
        nodes, gpus = current(view, j)
        if (nodes.tolist() != np.asarray(pl.nodes).tolist()
                or gpus.tolist() != np.asarray(pl.gpus).tolist()):
            moves[j] = (k, pl)
    for j, (k, pl) in plan.items():
        if status[j] == QUEUED:
            starts.append((j, k, pl))
        elif status[j] == GRACE:
            raise AssertionError(f"Gavel: job {j} in its grace period was planned")
    # the moving jobs holding each GPU (a CPU node's cores: key (node, -1)) now
    holders: dict[tuple[int, int], set[int]] = {}
    for j in moves:
        for key in zip(*(a.tolist() for a in current(view, j))):
            holders.setdefault(key, set()).add(j)

    def release(j: int) -> None:
        for hs in holders.values():
            hs.discard(j)

    pending = dict(moves)
    while pending:
        ready = [j for j, (_, pl) in pending.items()
                 if all(holders.get(key, set()) <= {j}
                        for key in zip(pl.nodes.tolist(), pl.gpus.tolist()))]
        moved = False
        for j in ready:
            k, pl = pending[j]
            if not ledger.move(j, pl):  # cores or memory still held by a later move
                continue
            del pending[j]
            out.append(Move(j, pl, k))
            release(j)
            moved = True
        if moved:
            continue
        # a cycle: give one job's resources back now, start it after the moves
        free = [i for i in pending if preemptible(view, i) and float(view.grace[i]) <= 0]
        if not free:
            break  # no job of the cycle may be preempted: they stay where they are
        j = min(free)
        k, pl = pending.pop(j)
        out.append(Preempt(j))
        ledger.preempt(j)
        starts.insert(0, (j, k, pl))
        release(j)
    return out + [Start(j, k, pl) for j, k, pl in starts if ledger.start(j, pl)]
