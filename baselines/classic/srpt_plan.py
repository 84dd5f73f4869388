"""SRPT's decision points as one compiled call each (the fast path of :class:`baselines.classic.schedulers.SRPT`).

:class:`SRPTPlan` holds, for one run, the :class:`~baselines.classic.srpt_kernels.SRPTArrays`
that :func:`baselines.classic.srpt_kernels.srpt_step_nb` keeps between decision points (the
waiting jobs in one heap per shape group, the jobs we preempted that are not back
yet), the per-job divisors of the remaining time, scratch capacity and the output
arrays, all allocated once (the start arrays grow when a decision point needs more),
and the kernel's compiled entry point. :meth:`SRPTPlan.step` brings the heaps in step
with the queue and plans one decision point; with ``apply`` it also carries the plan
out. The plan stays in :attr:`pre` (jobs to preempt, in order) and :attr:`job`,
:attr:`dev`, :attr:`nodes`, :attr:`gpus` (jobs to start and their placements), which
``SRPT.decide`` turns into decision objects.
"""

from __future__ import annotations

import numpy as np

from baselines.classic.srpt_kernels import (
    C_WAIT,
    NEED_ROOM,
    OUT_DONE,
    OUT_PRE,
    OUT_ST,
    SYNC_FAILED,
    SRPTArrays,
    node_state_k,
    pack_arrays,
    srpt_step_nb,
)
from baselines.common.parts import shape_groups
from hetgym.sim.codes import JobStatus
from hetgym.sim.fastpath import entry
from hetgym.sim.rules import limit_code, scaled_rate
from hetgym.sim.state.layout import NodeState
from hetgym.sim.view import View

__all__ = ["SRPTPlan", "exact_sums"]

_GRACE = int(JobStatus.GRACE)


def exact_sums(sim) -> bool:
    """``sim``: a :class:`~hetgym.sim.view.KernelView` (or anything with its ``jobs`` and
    ``nodes`` records, the simulator itself). Whether every amount of cores and memory of the run (jobs' needs per worker and device
    type, nodes' capacities) is an integer below 2**40, so that the free capacity, summed
    and subtracted in any order, comes out the same to the last bit."""
    amounts = (sim.jobs.cpus_need, sim.jobs.mem, sim.nodes.cpus, sim.nodes.mem)
    return all(bool(np.all(np.isfinite(a)) and np.all(a == np.round(a)) and np.all(np.abs(a) < 2.0**40))
               for a in (np.asarray(x, dtype=np.float64) for x in amounts))


class SRPTPlan:
    """What SRPT's kernel keeps and needs for one run, allocated once (module docstring).

    Args:
        view: The simulator's view (its arrays are read in place, never copied).
        table: ``(J, k)`` candidate device types of every job, -1 padded.
    """

    #: Rows of the start arrays at first (they grow when a decision point starts more jobs).
    first_rows = 16

    def __init__(self, view: View, table: np.ndarray) -> None:
        sim = self.kernel = view.kernel
        self.n_preempt = np.asarray(view.n_preempt)
        # own writable copies of the view's read-only arrays (table: read-only or not by the
        # device rule): one Numba type of SRPTArraysK, so its kernels compile once per run kind
        self.workers = np.array(view.workers, dtype=np.int64)
        tput = np.asarray(view.tput)
        w = self.workers.astype(np.float64)
        # running jobs are ranked with the run's scaling exponent (as they always were);
        # waiting jobs' keys are View.durations' (each job's own exponent)
        jb = sim.jobs
        gid, _ = shape_groups(view, table)
        n_groups = int(gid.max()) + 1 if len(gid) else 0
        goff = np.zeros(n_groups + 1, dtype=np.int64)
        np.cumsum(np.bincount(gid, minlength=n_groups), out=goff[1:])
        n = view.n_jobs
        limit = view.max_preemptions
        r = sim.run_slots
        wmax = sim.state.job.worker_node.shape[1]
        ns = [NodeState(*[np.array(a) for a in sim.node_state]) for _ in range(2)]
        self._fields = {
            "gid": gid, "goff": goff, "heap": np.zeros(n, dtype=np.int64),
            "hn": np.zeros(n_groups, dtype=np.int64), "key": np.zeros(n),
            "tie": np.zeros(n, dtype=np.int64), "inheap": np.zeros(n, dtype=np.bool_),
            "flag": np.zeros(n, dtype=np.bool_), "away": np.zeros(n, dtype=np.int64),
            "denom": np.ascontiguousarray(scaled_rate(w[:, None], tput, view.options.scaling_exponent)),
            "valid": np.ascontiguousarray((tput > 0) & np.asarray(view.holdable)),
            "key_den": np.ascontiguousarray(scaled_rate(w[:, None], jb.tput, jb.scale_exp[:, None])),
            "key_valid": np.ascontiguousarray((jb.tput > 0) & jb.holdable),
            "table": np.array(table, dtype=np.int64, order="C"), "workers": self.workers,
            "ctr": np.zeros(5, dtype=np.int64),
            "opt": np.array([limit_code(limit), int(sim.policy),
                             int(exact_sums(sim))], dtype=np.int64),
            # scratch capacity, filled by the kernel on each call; structrefs like the
            # simulator's own (hetgym.sim.state.mirror)
            "plan": node_state_k(ns[0]), "now": node_state_k(ns[1]),
            "scr_f": np.zeros((2, len(view.node_device))),
            "pre": np.zeros(r, dtype=np.int64), "out": np.zeros(3, dtype=np.int64),
            "rj": np.zeros(r, dtype=np.int64), "rw": np.zeros(r, dtype=np.int64),
            "rnode": np.zeros((r, wmax), dtype=np.int64), "rgpu": np.zeros((r, wmax), dtype=np.int64),
            "rcpu": np.zeros((r, wmax)), "rmem": np.zeros(r), "rdmax": np.zeros(r),
            "rdmin": np.zeros(r), "rrem": np.zeros(r), "perm": np.zeros(r, dtype=np.int64),
            "remap": np.zeros(r, dtype=np.int64)}
        self._starts(self.first_rows)
        self._entry = None  # compiled entry point

    def _starts(self, n: int) -> None:
        """Output arrays for up to ``n`` starts (and the kernel's mirror of the arrays)."""
        wmax = self.kernel.state.job.worker_node.shape[1]
        f = self._fields
        f["job"] = self.job = np.zeros(n, dtype=np.int64)
        f["dev"] = self.dev = np.zeros(n, dtype=np.int64)
        f["nodes"] = self.nodes = np.zeros((n, wmax), dtype=np.int64)
        f["gpus"] = self.gpus = np.zeros((n, wmax), dtype=np.int64)
        self.arrays = SRPTArrays(**f)
        self.pre, self.out, self.count = self.arrays.pre, self.arrays.out, self.arrays.hn
        self._k = pack_arrays(tuple(self.arrays))

    def __len__(self) -> int:
        """Jobs waiting in the heaps."""
        return int(self.arrays.ctr[C_WAIT])

    def step(self, apply: bool) -> int | None:
        """One decision point: bring the heaps in step with the queue and plan it
        (:func:`baselines.classic.srpt_kernels.srpt_step_nb`); with ``apply``, carry the plan out
        (what the compiled call left to do, through
        :meth:`KernelView.apply_plan <hetgym.sim.view.KernelView.apply_plan>`, which says
        why a decision is refused). Returns the number of decisions (preemptions :attr:`n_pre` first, then
        starts :attr:`n_st`), or None when the heaps may not stand for the queue (someone
        else decides too)."""
        sim = self.kernel
        while True:
            args = (self._k, sim.P, sim.S, _GRACE, apply)
            if self._entry is None:  # the arguments' types do not change during a run
                self._entry = entry(srpt_step_nb, *args)
            k = self._entry(*args)
            if k != NEED_ROOM:
                break
            self._starts(4 * int(self.out[OUT_ST]))
        if k == SYNC_FAILED:
            return None
        out = self.out
        self.n_pre, self.n_st = n_pre, n_st = int(out[OUT_PRE]), int(out[OUT_ST])
        done = int(out[OUT_DONE])
        if apply and done < k:  # refused, or the segment log is full: apply_plan knows why
            if done < n_pre:
                sim.apply_plan(self.pre[done:], n_pre - done, self.job, self.dev, self.nodes,
                               self.gpus, n_st)
            else:
                s = done - n_pre
                sim.apply_plan(self.pre, 0, self.job[s:], self.dev[s:], self.nodes[s:],
                               self.gpus[s:], n_st - s)
        return k
