"""Gavel's per-round worker assignment and the decisions that carry it out.

``scheduler/scheduler.py::_schedule_jobs_on_workers`` and ``_assign_workers_to_job``
(``stanford-futuredata/gavel``): per GPU type, the jobs scheduled on it are taken by
decreasing gang size; for each gang size, first every job that ran on this type in the
previous round keeps its exact GPUs if none of them is taken yet, then the other jobs
get GPUs server by server (a pointer over the type's servers that never moves back, i.e.
the first free GPUs in node order, GPU order). hetgym adds CPU-core and memory checks
per node (Gavel schedules GPUs only; with the trace loaders' defaults they never bind).
"""

from __future__ import annotations

import numpy as np

from baselines.ledger import Ledger, preemptible
from hetgym.decisions import Decision, Move, Placement, Preempt, Start
from hetgym.sim.codes import GRACE, QUEUED, RUNNING

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
            out[k] = int(np.floor(np.asarray(view.node_cpus, dtype=np.float64)[on] / slot + 1e-9).sum())
    return out


class _Free:
    """Which GPUs, cores and memory a round's assignment has not given out yet.

    ``nfree[n]`` (free GPUs of node ``n``) and ``type_free[k]`` (of type ``k``) are kept
    with ``gpu`` (and ``cpu_l``, ``mem_l`` with ``cpu``, ``mem``, as Python floats) so
    that :meth:`first` passes over full nodes and nodes without room for one worker, and
    rejects a gang larger than its type's free GPUs, without looking at their GPUs."""

    def __init__(self, view, held: np.ndarray) -> None:
        self.gpu = np.arange(view.node_gpus.max(initial=0))[None, :] < np.asarray(view.node_gpus)[:, None]
        self.cpu = np.asarray(view.node_cpus, dtype=np.float64).copy()
        self.mem = np.asarray(view.node_mem, dtype=np.float64).copy()
        self.view = view
        self.node_dev = np.asarray(view.node_device).tolist()
        self.nfree = self.gpu.sum(axis=1).tolist()
        self.type_free = [0] * len(view.devices)
        for n, f in enumerate(self.nfree):
            self.type_free[self.node_dev[n]] += f
        self._nodes: dict[int, list[int]] = {}
        self.cpu_l, self.mem_l = self.cpu.tolist(), self.mem.tolist()  # the same, as floats
        for j in held.tolist():  # jobs that keep what they hold whatever we decide
            self.take(int(j), *current(view, int(j)))

    def fits(self, job: int, nodes: np.ndarray, gpus: np.ndarray) -> bool:
        v = self.view
        g = gpus >= 0
        pairs = set(zip(nodes[g].tolist(), gpus[g].tolist()))
        if not self.gpu[nodes[g], gpus[g]].all() or len(pairs) < int(g.sum()):
            return False
        need_c: dict[int, float] = {}
        for n in nodes.tolist():
            need_c[n] = need_c.get(n, 0.0) + 1.0
        return all(self.cpu[n] + 1e-9 >= c * v.cpus_need[job, v.node_device[n]]
                   and self.mem[n] + 1e-9 >= c * v.mem[job] for n, c in need_c.items())

    def take(self, job: int, nodes: np.ndarray, gpus: np.ndarray) -> None:
        v = self.view
        for n, g in zip(nodes.tolist(), gpus.tolist()):
            if g >= 0 and self.gpu[n, g]:
                self.gpu[n, g] = False
                self.nfree[n] -= 1
                self.type_free[self.node_dev[n]] -= 1
            self.cpu[n] -= v.cpus_need[job, v.node_device[n]]
            self.mem[n] -= v.mem[job]
            self.cpu_l[n] = float(self.cpu[n])
            self.mem_l[n] = float(self.mem[n])

    def first(self, job: int, dev: int, w: int) -> Placement | None:
        """The first ``w`` free GPUs of type ``dev`` in node, GPU order (room for the job's
        cores and memory on each node; on a CPU type, worker slots node by node), or None."""
        v = self.view
        cpu_type = bool(np.asarray(v.dev_is_cpu)[dev])
        if not cpu_type and self.type_free[dev] < w:
            return None  # fewer free GPUs of the type than workers: the walk finds no room
        of_type = self._nodes.get(dev)
        if of_type is None:
            of_type = self._nodes[dev] = np.flatnonzero(np.asarray(v.node_device) == dev).tolist()
        nodes: list[int] = []
        gpus: list[int] = []
        c, m = float(v.cpus_need[job, dev]), float(v.mem[job])
        nfree = self.nfree
        cpus, mems = self.cpu_l, self.mem_l
        for n in of_type:
            if not cpu_type and nfree[n] == 0:
                continue  # a full node gives no GPU
            cpu, mem = cpus[n], mems[n]
            if cpu + 1e-9 < c or mem + 1e-9 < m:
                continue  # no room for one worker: the node gives nothing
            for g in ([-1] * w if cpu_type else np.flatnonzero(self.gpu[n]).tolist()):
                if len(nodes) == w or cpu + 1e-9 < c or mem + 1e-9 < m:
                    break
                nodes.append(n)
                gpus.append(g)
                cpu -= c
                mem -= m
            if len(nodes) == w:
                break
        if len(nodes) < w:
            return None
        pl = Placement.of(nodes, gpus)
        self.take(job, pl.nodes, pl.gpus)
        return pl


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
    left out.
    """
    free = _Free(view, held)
    status = np.asarray(view.status)
    dev = np.asarray(view.device)
    out: dict[int, tuple[int, Placement]] = {}
    for k, jobs in scheduled.items():
        by_size = sorted(jobs, key=lambda j: -int(view.workers[j]))  # stable: walk order on ties
        for size in sorted({int(view.workers[j]) for j in jobs}, reverse=True):
            same = [j for j in by_size if int(view.workers[j]) == size]
            for j in same:  # keep the GPUs of the previous round where all are free
                if status[j] == RUNNING and dev[j] == k:
                    nodes, gpus = current(view, j)
                    if free.fits(j, nodes, gpus):
                        free.take(j, nodes, gpus)
                        out[j] = (k, Placement(nodes.copy(), gpus.copy()))
            for j in same:
                if j not in out:
                    pl = free.first(j, k, size)
                    if pl is not None:
                        out[j] = (k, pl)
    return out


def carry_out(view, plan: dict[int, tuple[int, Placement]]) -> list[Decision]:
    """Decisions that turn the running set into ``plan``: ``Preempt`` for running jobs
    left out, ``Move`` for running jobs whose placement changes, ``Start`` for waiting
    jobs. Each decision is issued once it is valid on the resources the earlier ones
    leave (GPUs, and each node's cores and memory: :class:`~baselines.ledger.Ledger`),
    so a move waits until the jobs leaving its target GPUs or cores have moved. A cycle
    of moves (A onto B's GPUs or cores and B onto A's) is broken by preempting one of its
    jobs that may be preempted (:func:`~baselines.ledger.preemptible`: no grace period,
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
        if not (np.array_equal(nodes, pl.nodes) and np.array_equal(gpus, pl.gpus)):
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
