"""Free resources as a list of decisions leaves them, for ordering round decisions.

A round-based scheduler (Gavel, Hadar) plans every job's placement at once and then
emits ``Preempt``/``Move``/``Start`` decisions that the engine applies one after the
other. Each decision must be valid on the resources the earlier ones leave: a ``Move``
onto a node whose GPUs are free but whose CPU cores or memory are still held by a job
that moves away later is rejected by the engine (``CPU cores exceeded``). A
:class:`Ledger` replays the decisions on a scratch copy of the free resources
(:meth:`hetgym.sim.view.View.capacity`) with the engine's placement test (GPU owner,
cores and memory per node, tolerance ``1e-9``), so that the emitter can hold a decision
back until it fits.

:func:`preemptible` is the rule every preemption here obeys: the job runs (not in a
grace period) and has been preempted fewer times than the scenario's
``max_preemptions``.
"""

from __future__ import annotations

import numpy as np

from hetgym.decisions import Placement
from hetgym.sim.rules import below_limit, covers, limit_code, may_preempt

__all__ = ["Ledger", "at_limit", "preemptible"]


def at_limit(view, job: int) -> bool:
    """Whether ``job`` has used up the scenario's preemption limit (``max_preemptions``)."""
    return not below_limit(int(view.n_preempt[job]), limit_code(view.max_preemptions))


def preemptible(view, job: int) -> bool:
    """Whether a ``Preempt`` of ``job`` is valid now: it is RUNNING (not in a grace period)
    and below the preemption limit."""
    return may_preempt(int(view.status[job]), int(view.n_preempt[job]),
                       limit_code(view.max_preemptions))


class Ledger:
    """Free GPUs, cores and memory per node after the decisions recorded so far.

    Starts from what is free now; :meth:`preempt`, :meth:`move` and :meth:`start` record a
    decision if it is valid on the resources left (returning whether it was).
    """

    def __init__(self, view) -> None:
        self.view = view
        self.cap = view.capacity()
        self._nd = np.asarray(view.node_device)

    def fits(self, job: int, pl: Placement) -> bool:
        """Whether ``pl`` is free for ``job`` on the resources left (the engine's test)."""
        v, cap = self.view, self.cap
        nodes = np.asarray(pl.nodes).tolist()
        gpus = np.asarray(pl.gpus).tolist()
        owner = cap.gpu_owner
        cpu: dict[int, float] = {}
        mem: dict[int, float] = {}
        seen: set[tuple[int, int]] = set()
        m = float(v.mem[job])
        for n, g in zip(nodes, gpus):
            if g >= 0:
                if owner[n, g] >= 0 or (n, g) in seen:
                    return False
                seen.add((n, g))
            cpu[n] = cpu.get(n, 0.0) + float(v.cpus_need[job, self._nd[n]])
            mem[n] = mem.get(n, 0.0) + m
        free_c, free_m = cap.free_cpus, cap.free_mem
        return all(covers(free_c[n], c) and covers(free_m[n], mem[n]) for n, c in cpu.items())

    def preempt(self, job: int) -> None:
        """Record a preemption: a job with no grace period gives its resources back now
        (one with a grace period keeps them until it ends)."""
        if float(self.view.grace[job]) <= 0:
            self.cap.give(job)

    def move(self, job: int, pl: Placement) -> bool:
        """Record a move of running ``job`` to ``pl`` if it fits on what is left plus what
        the job holds; else change nothing and return False."""
        self.cap.give(job)
        if self.fits(job, pl):
            self.cap.take(job, pl.nodes, pl.gpus)
            return True
        self.cap.take_many(np.array([job], dtype=np.int64))
        return False

    def start(self, job: int, pl: Placement) -> bool:
        """Record a start of ``job`` on ``pl`` if it fits; else return False."""
        if self.fits(job, pl):
            self.cap.take(job, pl.nodes, pl.gpus)
            return True
        return False
