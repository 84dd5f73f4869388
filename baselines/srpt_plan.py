"""SRPT's plan at one decision point, as arrays (the fast path of :class:`baselines.classic.SRPT`).

:class:`SRPTPlan` holds, for one run, what :func:`baselines.kernels.srpt_decide_nb`
needs besides the simulator's arrays: the per-job divisors of the remaining time,
scratch capacity and the output arrays, all allocated once (they grow when a
decision point needs more), and the kernel's compiled entry point. :meth:`SRPTPlan.decide`
leaves the plan in :attr:`pre` (jobs to preempt, in order) and :attr:`job`,
:attr:`dev`, :attr:`nodes`, :attr:`gpus` (jobs to start and their placements), which
``SRPT.decide`` turns into decision objects and ``SRPT.decide_and_apply`` hands to
:meth:`hetgym.sim.engine.Simulator.apply_plan` as they are.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from baselines.kernels import best_time_nb, srpt_decide_nb
from baselines.parts import WaitingGroups
from hetgym.sim.codes import JobStatus
from hetgym.sim.dispatch import entry
from hetgym.sim.mirror import NodeStateK
from hetgym.sim.state import CTR_QHEAD, CTR_QTAIL, NodeState
from hetgym.sim.view import View

__all__ = ["SRPTPlan"]

_GRACE = int(JobStatus.GRACE)


@njit(cache=True)
def node_state_k(ns):
    """A :class:`~hetgym.sim.mirror.NodeStateK` over the arrays of a ``NodeState``."""
    return NodeStateK(*ns)


def exact_sums(sim) -> bool:
    """Whether every amount of cores and memory of the run (jobs' needs per worker and device
    type, nodes' capacities) is an integer below 2**40, so that the free capacity, summed
    and subtracted in any order, comes out the same to the last bit."""
    amounts = (sim.jobs.cpus_need, sim.jobs.mem, sim.nodes.cpus, sim.nodes.mem)
    return all(bool(np.all(np.isfinite(a)) and np.all(a == np.round(a)) and np.all(np.abs(a) < 2.0**40))
               for a in (np.asarray(x, dtype=np.float64) for x in amounts))


class SRPTPlan:
    """Everything SRPT's kernel needs for one run, allocated once (module docstring).

    Args:
        view: The simulator's view (its arrays are read in place, never copied).
        table: ``(J, k)`` candidate device types of every job, -1 padded.
    """

    def __init__(self, view: View, table: np.ndarray) -> None:
        sim = view.simulator
        self.sim = sim
        self.n_jobs = view.n_jobs
        self.status, self.remaining = view.status, view.remaining
        self.n_preempt = np.asarray(view.n_preempt)
        self.workers = view.workers
        tput = np.asarray(view.tput)
        w = np.asarray(view.workers).astype(np.float64)
        # the kernel ranks running jobs with the run's scaling exponent (as it always did);
        # waiting jobs' keys are View.durations' (each job's own exponent)
        eff = w ** (view.options.scaling_exponent - 1.0)
        self.denom = np.ascontiguousarray(w[:, None] * tput * eff[:, None])
        self.valid = np.ascontiguousarray((tput > 0) & np.asarray(view.holdable))
        jb = sim.jobs
        eff_j = w ** (jb.scale_exp - 1.0)
        self.key_den = np.ascontiguousarray(w[:, None] * jb.tput * eff_j[:, None])
        self.key_valid = np.ascontiguousarray((jb.tput > 0) & jb.holdable)
        self.table = np.ascontiguousarray(table, dtype=np.int64)
        limit = view.max_preemptions
        self.limit = -1 if limit is None else int(limit)
        self.policy = int(sim.policy)
        self.exact_sums = exact_sums(sim)
        self.scr_f = np.zeros((2, len(view.node_device)))
        # scratch capacity, filled by the kernel on each call; structrefs like the simulator's
        # own (hetgym.sim.mirror): a call that passes one increfs one object, not its arrays
        self.plan_ns = node_state_k(NodeState(*[np.array(a) for a in sim.ns]))
        self.now_ns = node_state_k(NodeState(*[np.array(a) for a in sim.ns]))
        self.out_n = np.zeros(1, dtype=np.int64)
        self.pre = np.empty(0, dtype=np.int64)
        self._starts(16)
        self._keys = np.empty(16)
        self._entry = None  # compiled entry point (typing ~30 arguments on each call costs more)
        self._key_entry = None

    def _starts(self, n: int) -> None:
        """Output arrays for up to ``n`` starts."""
        wmax = self.sim.js.worker_node.shape[1]
        self.job = np.empty(n, dtype=np.int64)
        self.dev = np.empty(n, dtype=np.int64)
        self.nodes = np.empty((n, wmax), dtype=np.int64)
        self.gpus = np.empty((n, wmax), dtype=np.int64)

    def queue_head(self, k: int) -> np.ndarray:
        """``view.queue[:k]`` without compacting the whole queue: the first ``k`` live
        entries of the queue buffer, in order (starts leave tombstones anywhere in the
        queue; squeezing them all out costs the length of the queue)."""
        run = self.sim.state.run
        h, t = int(run.ctr[CTR_QHEAD]), int(run.ctr[CTR_QTAIL])
        seg = run.queue[h: min(t, h + 4 * k + 16)]
        live = seg[seg >= 0]
        if len(live) < k:  # many tombstones near the head: compact after all
            return np.array(self.sim.queued()[:k])
        return live[:k]

    def keys(self, jobs: np.ndarray) -> np.ndarray:
        """Ranking keys of waiting ``jobs``: remaining time on the fastest type (as
        ``View.durations(jobs, remaining=True).min(axis=1)``); a new array."""
        jobs = np.ascontiguousarray(jobs, dtype=np.int64)
        out = np.empty(len(jobs))
        args = (jobs, self.remaining, self.key_den, self.key_valid, out)
        if self._key_entry is None:
            self._key_entry = entry(best_time_nb, *args)
        self._key_entry(*args)
        return out

    def decide(self, view: View, groups: WaitingGroups) -> tuple[int, int]:
        """Plan one decision point: ``(starts, preemptions)`` written to :attr:`job`,
        :attr:`dev`, :attr:`nodes`, :attr:`gpus` and :attr:`pre` (module docstring).
        One Numba call (:func:`baselines.kernels.srpt_decide_nb`) walks the running jobs
        and the heads of the shape groups merged in rank order, taking further jobs of a
        group only while its jobs start; the free capacity is copied into the scratch
        inside it."""
        sim = self.sim
        kernel = sim.kernel_state
        live = np.flatnonzero(groups.count > 0).tolist()
        if not live:
            return 0, 0
        lists = groups.lists
        running = sim.running_jobs()
        if len(self.pre) < len(running):
            self.pre = np.empty(2 * len(running) + 16, dtype=np.int64)
        plen = 8
        while True:
            parts = [groups.prefix(g, plen) for g in live]  # cached while a group is unchanged
            heads = np.concatenate(parts)
            n = len(heads)
            hoff = np.zeros(len(live) + 1, dtype=np.int64)
            np.cumsum([len(a) for a in parts], out=hoff[1:])
            hfull = np.asarray([len(lists[g]) <= plen for g in live])
            if len(self.job) < n:
                self._starts(2 * n)
            args = (
                running, self.status, _GRACE, self.n_preempt, self.limit, self.remaining,
                self.denom, self.valid, sim.jobs.grace, heads, hoff, hfull, self.table,
                self.workers, sim.jobs.cpus_need, sim.jobs.mem, sim.js.worker_node,
                sim.js.worker_gpu, self.policy, kernel.nodes, kernel.ns, self.plan_ns, self.now_ns,
                sim.state.run.scr_i, self.scr_f, self.exact_sums, self.pre, self.job, self.dev, self.nodes,
                self.gpus, self.out_n)
            if self._entry is None:  # the arguments' types do not change during a run
                self._entry = entry(srpt_decide_nb, *args)
            k = self._entry(*args)
            if k >= 0:
                return k, int(self.out_n[0])
            plen *= 4  # a group's prefix ran out while its jobs kept starting
