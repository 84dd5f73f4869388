"""A Hadar / HadarE round's plan as decisions (Sultana et al., TPDS, sec. III; docs/hadar.md):
:func:`emit`, and the running jobs' copies as placements."""

from __future__ import annotations

import numpy as np

from baselines.hadar.parts import same_pairs
from baselines.common.ledger import Ledger, preemptible
from hetgym.decisions import Decision, Move, Placement, Preempt, Start
from hetgym.sim.codes import JobStatus

__all__ = ["copies_of_job", "emit", "placement_of_job"]

_RUNNING, _GRACE, _QUEUED = int(JobStatus.RUNNING), int(JobStatus.GRACE), int(JobStatus.QUEUED)


def placement_of_job(view, j: int, copy: int = 0) -> Placement:
    """Copy ``copy`` of running job ``j`` as a placement (copy c = worker slots [c W, (c+1) W))."""
    w = int(view.workers[j])
    sl = slice(copy * w, (copy + 1) * w)
    return Placement(np.array(view.worker_node[j, sl]), np.array(view.worker_gpu[j, sl]))


def copies_of_job(view, j: int) -> list[Placement]:
    """Every copy of running job ``j``."""
    return [placement_of_job(view, j, c) for c in range(int(view.n_copies[j]))]


def emit(view, plan: dict[int, list[Placement]]) -> list[Decision]:
    """Decisions that turn the running set into ``plan`` (job -> copies):
    running jobs left out are preempted first; kept placements give nothing; changed ones
    a :class:`Move`, new ones a :class:`Start`, each issued once its GPUs, cores and
    memory are free (:class:`~baselines.common.ledger.Ledger`: a move onto a node waits until
    the jobs leaving that node's GPUs or cores have moved). A cycle of moves is broken by
    preempting one of them that may be preempted (:func:`~baselines.common.ledger.preemptible`)
    and starting it afterwards. A decision whose resources stay taken (a job in a grace
    period, a job at the preemption limit, which keeps running where it is) is dropped
    for this round."""
    out: list[Decision] = []
    ledger = Ledger(view)
    owner = np.array(view.capacity().gpu_owner)
    status = np.asarray(view.status)
    for j in np.asarray(view.running).tolist():
        if j not in plan:
            if not preemptible(view, j):
                continue  # a grace period, or the preemption limit: it keeps its resources
            out.append(Preempt(j))
            ledger.preempt(j)
            if float(view.grace[j]) <= 0:
                owner[owner == j] = -1
    workers, n_copies = np.asarray(view.workers), np.asarray(view.n_copies)
    wnode, wgpu = np.asarray(view.worker_node), np.asarray(view.worker_gpu)
    pending: list[list] = []  # [job, copies, moving, flat placement, its GPU (node, id) pairs]
    for j, copies in plan.items():
        st = int(status[j])
        if st not in (_RUNNING, _GRACE, _QUEUED):
            continue
        pl = _flat(copies)
        if st != _QUEUED:
            k = int(n_copies[j])
            n = k * int(workers[j])  # the running copies: _flat(copies_of_job(view, j))
            if k == len(copies) and same_pairs(wnode[j, :n], wgpu[j, :n], pl.nodes, pl.gpus):
                continue
        g = pl.gpus >= 0
        pending.append([j, copies, st != _QUEUED, pl, (pl.nodes[g], pl.gpus[g])])
    while pending:
        left = []
        for item in pending:
            j, copies, moving, pl, at = item
            if all(h < 0 or h == j for h in owner[at].tolist()) and (
                    ledger.move(j, pl) if moving else ledger.start(j, pl)):
                owner[owner == j] = -1
                owner[at] = j
                arg = copies if len(copies) > 1 else copies[0]
                out.append(Move(j, arg) if moving else Start(j, None, arg))
            else:
                left.append(item)
        if len(left) == len(pending):
            stuck = next((p for p in left if p[2] and float(view.grace[p[0]]) <= 0
                          and preemptible(view, p[0])), None)
            if stuck is None:
                break  # what is left waits for resources held through a grace period
            out.append(Preempt(stuck[0]))
            ledger.preempt(stuck[0])
            owner[owner == stuck[0]] = -1
            stuck[2] = False  # started again once its resources are free
        pending = left
    return out


def _flat(copies: list[Placement]) -> Placement:
    return Placement(np.concatenate([c.nodes for c in copies]),
                     np.concatenate([c.gpus for c in copies]))
