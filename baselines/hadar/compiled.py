"""The arrays of one Hadar round for the compiled search (:mod:`baselines.hadar.kernels`).

:class:`CompiledSearch` is what :class:`~baselines.hadar.parts.FindAlloc` uses on the
simulator's own view (its kernel records, :attr:`View.kernel <hetgym.sim.view.View.kernel>`): it gathers
the job, node and price arrays and the running jobs' placements once per round and
answers ``best`` (one job) and ``greedy`` (the greedy pass and the backfill of a whole
queue in one call). Other views (the reference simulator of the tests) keep the
pure-Python search, which is also the reference the compiled one is tested against.
Results come back as plain tuples ``(placement, counts, cost, utility, kind)`` (the
fields of :class:`~baselines.hadar.parts.Candidate`).
"""

from __future__ import annotations

import numpy as np

from baselines.common.parts import is_view
from baselines.hadar.kernels import best_nb, greedy_nb
from hetgym.decisions import Placement

__all__ = ["CompiledSearch"]


class CompiledSearch:
    """One round's arguments of :func:`~baselines.hadar.kernels.best_nb` and
    :func:`~baselines.hadar.kernels.greedy_nb` (layout in that module's docstring)."""

    def __init__(self, view, prices, cpu_node: np.ndarray, sticky: bool, normalized: bool,
                 current: dict, held_by: np.ndarray) -> None:
        k = view.kernel
        self.P, self.ns = k.P, k.mirror.ns
        workers = np.asarray(view.workers)
        self.workers = workers
        self.jb = (np.asarray(view.tput), np.asarray(view.cpus_need), np.asarray(view.mem),
                   workers, np.asarray(view.work), np.asarray(view.remaining),
                   np.asarray(view.arrival), np.asarray(view.first_start))
        self.nd = (np.asarray(view.node_device), np.ascontiguousarray(cpu_node, dtype=np.bool_),
                   np.ascontiguousarray(prices.u_min, dtype=np.float64),
                   np.ascontiguousarray(prices.ratio, dtype=np.float64),
                   np.ascontiguousarray(prices.cap, dtype=np.float64),
                   np.ascontiguousarray(prices.cap_cpus, dtype=np.float64))
        cur_pos = np.full(len(workers), -1, dtype=np.int64)
        size = 0
        for j in current:
            cur_pos[j] = size
            size += int(workers[j])
        cn = np.zeros(size, dtype=np.int64)
        cg = np.zeros(size, dtype=np.int64)
        for j, pl in current.items():
            p = cur_pos[j]
            cn[p:p + len(pl.nodes)] = pl.nodes
            cg[p:p + len(pl.nodes)] = pl.gpus
        self.cu = (cur_pos, cn, cg, np.ascontiguousarray(held_by, dtype=np.int64))
        self.opt = np.array([float(view.now), float(view.restart_delay), float(sticky),
                             float(normalized)])
        n = len(self.nd[0])
        self.width = w = int(max(1, workers.max())) if len(workers) else 1
        self.scr = (np.zeros(n, dtype=np.int64), np.zeros((3, w), dtype=np.int64),
                    np.zeros((3, w), dtype=np.int64), np.zeros(3, dtype=np.int64),
                    np.zeros((3, w), dtype=np.int64), np.zeros((3, w), dtype=np.int64),
                    np.zeros((3, 2)), np.zeros(3, dtype=np.int64))
        self.ok = np.zeros(n, dtype=np.bool_)
        self.used = np.zeros(n, dtype=np.bool_)

    @staticmethod
    def usable(view) -> bool:
        """Whether ``view`` is the simulator's own (with the kernel records the rate needs)."""
        return is_view(view)

    @staticmethod
    def _state(gpu: np.ndarray, cpus: np.ndarray, mem: np.ndarray, copy: bool) -> tuple:
        if copy:
            gpu, cpus, mem = gpu.copy(), cpus.copy(), mem.copy()
        return (np.ascontiguousarray(gpu, dtype=np.bool_), gpu.sum(axis=1).astype(np.int64),
                np.ascontiguousarray(cpus, dtype=np.float64),
                np.ascontiguousarray(mem, dtype=np.float64))

    def best(self, j: int, gpu: np.ndarray, cpus: np.ndarray, mem: np.ndarray):
        """Job ``j``'s chosen allocation on the plan state as ``(placement, counts, cost,
        utility, kind)``, or None (no candidate, or a payoff <= 0)."""
        st = self._state(gpu, cpus, mem, copy=False)
        b = best_nb(j, st, self.jb, self.nd, self.cu, self.opt, self.P, self.ns, self.scr,
                    self.ok, self.used)
        if b < 0:
            return None
        _, cn, ck, ncnt, pn, pg, cf, kind = self.scr
        w = int(self.workers[j])
        return _result(cn[b], ck[b], int(ncnt[b]), pn[b, :w], pg[b, :w], cf[b], int(kind[b]))

    def greedy(self, jobs: list[int], chosen: set, greedy: bool, fill: bool, gpu: np.ndarray,
               cpus: np.ndarray, mem: np.ndarray) -> tuple[list, tuple]:
        """The greedy pass (``greedy``) and/or the backfill (``fill``) over ``jobs`` (those in
        ``chosen`` are skipped) on a copy of the plan state: ``([(job, result), ...] in the
        order chosen, (gpu, cpus, mem) left)``."""
        q = len(jobs)
        w = self.width
        arr = np.asarray(jobs, dtype=np.int64)
        mask = np.array([j in chosen for j in jobs], dtype=np.bool_)
        st = self._state(gpu, cpus, mem, copy=True)
        out = (np.zeros(q, dtype=np.int64), np.zeros((q, w), dtype=np.int64),
               np.zeros((q, w), dtype=np.int64), np.zeros((q, w), dtype=np.int64),
               np.zeros((q, w), dtype=np.int64), np.zeros(q, dtype=np.int64),
               np.zeros(q, dtype=np.int64), np.zeros((q, 2)))
        k = greedy_nb(arr, mask, greedy, fill, st, self.jb, self.nd, self.cu, self.opt, self.P,
                      self.ns, self.scr, self.ok, self.used, out)
        seq, on, og, ocn, ock, oncnt, okind, ocf = out
        picks = []
        for i in seq[:k].tolist():
            j = jobs[i]
            wj = int(self.workers[j])
            picks.append((j, _result(ocn[i], ock[i], int(oncnt[i]), on[i, :wj], og[i, :wj],
                                     ocf[i], int(okind[i]))))
        return picks, (st[0], st[2], st[3])


def _result(cn, ck, m, nodes, gpus, cf, kind) -> tuple:
    counts = dict(zip(cn[:m].tolist(), ck[:m].tolist()))
    pl = Placement(np.array(nodes, dtype=np.int64), np.array(gpus, dtype=np.int64))
    return pl, counts, float(cf[0]), float(cf[1]), kind
