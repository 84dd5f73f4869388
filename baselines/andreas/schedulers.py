"""ANDREAS Randomized Greedy and the first-principle methods it is compared with.

Filippini, Ardagna, Lattuada, Amaldi, Ciavotta, Riedl, Materka, Skrzypek, Magugliani,
Cicala, *ANDREAS: Artificial intelligence traiNing scheDuler foR accElerAted resource
clusterS* (2021). Each job runs on ONE node with g GPUs of it (g between the job's
``min_workers`` and ``max_workers``); the scheduler minimises the energy cost of the
cluster plus the weighted tardiness of late jobs.

Schedulers (``baselines.names()``):

* ``andreas-rg`` :class:`AndreasRG` (paper section IV, Algorithm 1; docs/andreas.md): at every
  submission, completion and every H = 300 s (``round_length``) it re-plans every
  arrived unfinished job (running or waiting): pressure order (Eq. 2), best
  configuration by the D* rule, node binding, proxy objective (Eq. 1); iteration 0 is
  the deterministic greedy, iterations 1 .. ``max_iter`` - 1 are randomised (Numba,
  :mod:`baselines.andreas.kernel`), seeded from ``view.rng`` so a run repeats. The draws
  are counter-based (splitmix64 of the decision point's seed, the iteration and the
  position in the order), so the iterations are independent and one whose proxy objective
  provably exceeds the best so far is abandoned early, with the same result. The plan
  is applied: unchanged jobs keep running, changed ones move (``Move``: restart delay,
  checkpoint rule, no preemption counted), postponed ones are preempted.
* ``andreas-fifo``, ``andreas-edf``, ``andreas-ps`` :class:`FirstPrinciple` (paper
  section V-B, "first-principle methods never change the configuration assigned to a
  job once it has been started"; ref-code ``first_principle_methods.cpp``):
  non-preemptive; at each event the waiting jobs in FIFO (submission), EDF (deadline)
  or PS (tardiness weight, heaviest first) order each take the first configuration of
  D* (cheapest meeting the due date) then D*^C (fastest) whose node class has a node
  with no other job (assumption *dedicated nodes*), non-blocking.

Assumptions (docs/andreas.md, *Assumptions*; tested in tests/baselines/andreas/test_andreas.py):

* Swap rule: adjacent pairs, probability 0.5 -/+ ``pi`` keeps heavier jobs ahead.
* Execution times: t_{jng} = restart delay (if the job ran before and changes configuration) +
  R / (g x tput x g^(e_j - 1)), R = the work left, after the checkpoint rule when the
  configuration changes (whole epochs with ``checkpoint_unit="work"``); topology and
  interference are not looked at (ANDREAS' jobs have comm = 0).
* Node classes and binding: nodes of one class are interchangeable; binding order (i) stay, (ii)
  open node best fit, (iii) lowest unused node, (iv) other configurations on open nodes,
  (v) any unused node, (vi) postpone. A node takes a configuration only if it has its g
  GPUs *and* g x cores and g x memory free in the plan (the paper's "has g* free GPUs":
  its nodes have no other scarce resource; hetgym's simulator enforces cores and memory,
  :mod:`baselines.andreas.fit`), the running jobs' cores and memory held back like their
  GPUs. The best plan's nodes are then permuted within
  each class to keep running jobs where they are (same f_OBJ, fewer migrations).
* Running jobs stay: a running job keeps its node when its chosen configuration still fits
  there; its GPUs are held back from the jobs placed before it in the order: steps (ii)-(v) bind
  them around it first, and only then on any free GPU (without that, every arrival at the head
  of the order displaced a chain of running jobs: 12,690 restarts for 400 jobs on andreas-sim N
  = 40, see docs/andreas.md).
* Dedicated nodes: first-principle methods give each job a node of its own (``exclusive_nodes``).
* Units: tardiness weights are EUR per second late; H for the worst-case tardiness of a
  postponed job is ``round_length``; rho = 100.
* First-ending job's cost: f_OBJ charges the first-ending job of a node t x c_{n, g_j} (its own g).

Outside the paper's model (documented, not in the paper): running jobs the plan may not
move (in or with a grace period, at the preemption limit, across nodes) keep their GPUs;
waiting jobs that no single GPU node can hold start with the default placement on the
fastest device type with room. The proxy objective's pitfall (the three-orders example of
docs/andreas.md: a random swap can win the proxy and lose real tardiness) is the paper's
behaviour, kept.
"""

from __future__ import annotations

from time import perf_counter
from typing import Any

import numpy as np

from baselines.andreas.kernel import rg_search_nb, rg_search_par_nb
from baselines.andreas.parts import (
    NodeClasses,
    config_table,
    eur_per_joule,
    fits_node,
    plan_decisions,
    relabel_nodes,
    start_outside_model,
    take_gpus,
)
from baselines.andreas.prep import plan_tables_nb, start_walk_nb
from baselines.common.parts import is_view
from hetgym.autopar import BOTH
from hetgym.decisions import Decision, Placement, SchedulerBase, Start
from hetgym.sim.codes import GRACE, RUNNING
from hetgym.sim.rules import limit_code

__all__ = ["BASELINES", "AndreasRG", "FirstPrinciple"]


class AndreasRG(SchedulerBase):
    """ANDREAS Randomized Greedy (paper section IV, Algorithm 1; docs/andreas.md).

    Args:
        max_iter: Iterations per decision point, the first deterministic (paper: 1,000).
        alpha: Randomised configuration choice among the first round(alpha x |list|).
        beta: Randomised open-node choice among the first round(beta x count).
        pi: Swap bias (assumption *swap rule*).
        rho: Penalty coefficient of postponed jobs (paper section V-B: 100).
        round_length: H, seconds between periodic decision points (paper: 5 min).
        parallel: The search's iterations in parallel chunks (``rg_search_par_nb``,
            ``prange``) or serially (``rg_search_nb``); both give the same plan bit for
            bit. None (default): whichever runs faster here and now, timed as the run goes
            (:class:`hetgym.autopar.KernelChooser`; serial when Numba has one thread).
    """

    call_when_queue_empty = True

    def __init__(self, max_iter: int = 1000, alpha: float = 0.05, beta: float = 0.2,
                 pi: float = 0.05, rho: float = 100.0, round_length: float = 300.0,
                 parallel: bool | None = None) -> None:
        if max_iter < 1:
            raise ValueError(f"andreas-rg: max_iter must be >= 1, got {max_iter}")
        for name, v in (("alpha", alpha), ("beta", beta), ("pi", pi)):
            if not 0.0 <= v <= 1.0:
                raise ValueError(f"andreas-rg: {name} must be in [0, 1], got {v}")
        self.max_iter, self.alpha, self.beta, self.pi, self.rho = max_iter, alpha, beta, pi, rho
        self.round_length = float(round_length)
        self.parallel = parallel
        self.last_objective = float("nan")

    def reset(self, view: Any) -> None:
        self.classes = NodeClasses.of(view)
        o = view.options
        self._ckpt = float(o.checkpoint_interval) if o.checkpoint_unit == "work" else 0.0
        self._eur = eur_per_joule(view)
        self._kmax = max(1, int(self.classes.gpus.sum()))  # config_table's width
        self._table_args: tuple | None = None
        self._wmax = max(1, int(self.classes.gpus.max(initial=0)))  # GPUs a plan gives a job, at most
        import numba

        from hetgym.autopar import KernelChooser, prefer_workqueue

        self._chunks = int(numba.get_num_threads())
        par = self.parallel if self._chunks > 1 else False
        # both kernels timed on the same calls, a trial at least every 1,000 calls: the
        # search's time swings 2-5x between consecutive calls (BENCHMARKS.md)
        self._chooser = KernelChooser(paired=True, max_gap=1000) if par is None else None
        self._kernel = 1 if par else 0
        if par is not False:
            prefer_workqueue()  # OpenMP's spinning threads made the search 5x slower under load

    def _search(self, *args: Any) -> float:
        """The search kernel on ``args`` (:func:`rg_search_nb`'s), serial or threaded; on
        the chooser's trial calls both, the one not kept on copies of ``args`` (both give
        the same plan bit for bit, so the copy's is dropped)."""
        ch = self._chooser
        k = self._kernel if ch is None else ch.pick()
        if k != BOTH:
            f, seconds = self._run(k, args)
            if ch is not None:
                ch.record(k, seconds)
            return f
        copy = tuple(a.copy() if isinstance(a, np.ndarray) else a for a in args)
        first = ch.first_of_both()
        f, secs = [0.0, 0.0], [0.0, 0.0]
        for kk in (first, 1 - first):
            f[kk], secs[kk] = self._run(kk, args if kk == ch.best else copy)
        ch.record_both(*secs)
        return f[ch.best]

    def _run(self, k: int, args: tuple) -> tuple[float, float]:
        """Kernel ``k`` (0 serial, 1 threaded) on ``args``: its f_OBJ and wall time (s)."""
        t = perf_counter()
        f = rg_search_nb(*args) if k == 0 else rg_search_par_nb(*args, self._chunks)
        return f, perf_counter() - t

    def _tables(self, view: Any) -> tuple:
        """:func:`~baselines.andreas.prep.plan_tables_nb` on the simulator's arrays now (a
        view without a simulator: on copies of the view's)."""
        sim = getattr(view, "simulator", None)
        if sim is None:
            st = _ViewState(view)
            lead, tail = self._static_args(view, st, st, st)
            return plan_tables_nb(_ints(view.running), _ints(view.queue), *lead, float(view.now), *tail)
        args = self._table_args
        if args is None or args[0] is not sim.js or args[1] is not sim.ns:
            # the simulator's job and node state (fixed for a run, as the view's) and the
            # static arguments, gathered once
            lead, tail = self._static_args(view, sim.js, sim.jobs, _NodeView(sim.nodes, sim.ns))
            args = self._table_args = (sim.js, sim.ns, lead, tail)
        return plan_tables_nb(sim.running_jobs(), sim.queued(), *args[2], float(view.now), *args[3])

    def _static_args(self, view: Any, js: Any, jb: Any, nodes: Any) -> tuple[tuple, tuple]:
        """:func:`plan_tables_nb`'s arguments but the running jobs, the queue and the time:
        job state ``js``, job arrays ``jb``, node arrays ``nodes`` (as a view names them)."""
        cl = self.classes
        limit = view.max_preemptions
        lead = (js.nworkers, js.status, js.worker_node, js.worker_gpu, js.finish, js.n_preempt,
                js.remaining, js.first_start, jb.grace, jb.work, jb.tput, jb.scale_exp,
                jb.min_workers, jb.max_workers, jb.cpus_need, jb.mem, jb.deadline, jb.arrival,
                jb.weight, nodes.node_gpus, nodes.node_device, nodes.free_cpus, nodes.free_mem,
                cl.of_node, cl.dev, cl.gpus, cl.cpus, cl.mem, cl.idle_w, cl.gpu_w, cl.rate,
                self._kmax, self._ckpt, float(view.options.restart_delay), self._eur)
        return lead, (limit_code(limit), RUNNING, GRACE)

    def _plan_arrays(self, view: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray, list[int],
                                                list[int], float]:
        """:meth:`plan` as arrays: ``(jobs, nodes, gs, replanned running jobs, waiting jobs
        outside the model, f_OBJ)``, the planned jobs in pressure order (the targets' order)."""
        seed = int(view.rng.integers(2**31 - 1))
        cl = self.classes
        (cand, n_run, running, outside, base, cur, cur_g, cls, g, t, dl, dlen, ccl, clen, mj, free,
         is_open, first_t, first_c, node_rc0, cfg_rc, cur_rc, weight, deadline) = self._tables(view)
        running, outside = running.tolist(), outside.tolist()
        if len(base) == 0:
            e = np.empty(0, dtype=np.int64)
            return e, e, e, running, outside, 0.0
        out_node = np.empty(len(cand), dtype=np.int64)
        out_cfg = np.empty(len(cand), dtype=np.int64)
        f = self._search(base, weight, deadline, cls, g, t, dl, dlen, ccl, clen, mj, cur, cur_g,
                         cl.of_node, free, is_open, first_t, first_c, node_rc0, cfg_rc, cur_rc,
                         cl.start, cl.nodes, cl.rate, float(view.now), self.round_length,
                         float(self.rho), float(self.alpha), float(self.beta), float(self.pi),
                         int(self.max_iter), seed, out_node, out_cfg, False, True)
        # scan=False, prune=True passed, not omitted: a call with omitted arguments takes
        # Numba's slow dispatch path (~0.4 ms per omitted argument, measured)
        sel = base[out_node[base] >= 0]  # planned rows, in pressure order
        jobs, nodes, gs = cand[sel], out_node[sel], g[sel, out_cfg[sel]]
        current = {int(cand[r]): (int(cur[r]), int(cur_g[r])) for r in range(n_run) if cur[r] >= 0}
        if current:  # re-planned running jobs: keep them where they are (same f_OBJ)
            targets = dict(zip(jobs.tolist(), zip(nodes.tolist(), gs.tolist())))
            rc = (dict(zip(jobs.tolist(), cfg_rc[sel, out_cfg[sel]])), node_rc0)
            targets = relabel_nodes(targets, current, cl, free, rc)
            nodes = np.fromiter((v[0] for v in targets.values()), dtype=np.int64, count=len(targets))
        return jobs, nodes, gs, running, outside, float(f)

    def plan(self, view: Any) -> tuple[dict[int, tuple[int, int]], list[int], list[int], float]:
        """The best plan now: ``({job: (node, g)}, replanned running jobs, waiting jobs
        outside the model, f_OBJ)``."""
        jobs, nodes, gs, running, outside, f = self._plan_arrays(view)
        return dict(zip(jobs.tolist(), zip(nodes.tolist(), gs.tolist()))), running, outside, f

    def decide(self, view: Any) -> list[Decision]:
        jobs, nodes, gs, running, outside, f = self._plan_arrays(view)
        self.last_objective = f
        if not running and not outside and is_view(view):
            # nothing to preempt or move: the targets that fit their node start, in order
            # (plan_decisions' walk with nothing re-planned, in one compiled call)
            if len(jobs) == 0:
                return []
            kv = view.kernel
            ns = kv.node_state
            gpus = np.empty((len(jobs), self._wmax), dtype=np.int64)
            ok = start_walk_nb(jobs, nodes, gs, ns.free_gpus, ns.free_cpus, ns.free_mem,
                               ns.gpu_owner, kv.nodes.gpus, kv.nodes.dev, kv.jobs.cpus_need,
                               kv.jobs.mem, gpus)
            return [Start(j, None, Placement(np.full(k, n, dtype=np.int64), gpus[i, :k].copy()))
                    for i, j, n, k in zip(np.flatnonzero(ok).tolist(), jobs[ok].tolist(),
                                          nodes[ok].tolist(), gs[ok].tolist())]
        targets = dict(zip(jobs.tolist(), zip(nodes.tolist(), gs.tolist())))
        cap = view.capacity()
        out = plan_decisions(view, cap, targets, running)
        return out + start_outside_model(view, cap, outside)


def _ints(a: Any) -> np.ndarray:
    """A writable int64 copy (the compiled calls take the simulator's writable arrays)."""
    return np.array(a, dtype=np.int64)


def _floats(a: Any) -> np.ndarray:
    """A writable float64 copy."""
    return np.array(a, dtype=np.float64)


class _NodeView:
    """The simulator's node arrays under the view's names."""

    def __init__(self, nd: Any, ns: Any) -> None:
        self.node_gpus, self.node_device = nd.gpus, nd.dev
        self.free_cpus, self.free_mem = ns.free_cpus, ns.free_mem


class _ViewState:
    """Copies of a view's arrays for :func:`plan_tables_nb`, for a view without a simulator
    (the pure-Python reference simulator's): ``finish`` = each running job's expected end."""

    def __init__(self, view: Any) -> None:
        for name in ("nworkers", "status", "worker_node", "worker_gpu", "n_preempt", "min_workers",
                     "max_workers", "node_gpus", "node_device"):
            setattr(self, name, _ints(getattr(view, name)))
        for name in ("remaining", "first_start", "grace", "work", "tput", "scale_exp", "cpus_need",
                     "mem", "deadline", "arrival", "weight", "free_cpus", "free_mem"):
            setattr(self, name, _floats(getattr(view, name)))
        self.finish = np.full(len(self.status), np.inf)
        for j in np.asarray(view.running).tolist():
            self.finish[j] = view.expected_finish(j)


class FirstPrinciple:
    """First-principle method (paper section V-B; docs/andreas.md): FIFO, EDF or PS order.

    Non-preemptive and non-blocking: at each decision point the waiting jobs, in
    ``order`` (``"fifo"``: submission time; ``"edf"``: absolute due date; ``"ps"``:
    tardiness weight, heaviest first; ties: submission, then index), each take the first
    configuration of D* (by cost) then D*^C (by time) that fits a node of its class with
    no other job (``exclusive_nodes``, assumption *dedicated nodes*; lowest index first), or any
    node with room when ``exclusive_nodes=False``. The configuration is kept until the job ends.
    """

    def __init__(self, order: str = "fifo", exclusive_nodes: bool = True) -> None:
        if order not in ("fifo", "edf", "ps"):
            raise ValueError(f"first-principle order must be fifo, edf or ps, got {order!r}")
        self.order = order
        self.exclusive_nodes = bool(exclusive_nodes)

    def reset(self, view: Any) -> None:
        self.classes = NodeClasses.of(view)
        # whether a job has any configuration (a (class, g) that fits an empty node of the
        # class): static per job, so computed once; jobs without one are outside the model
        self._inside = np.zeros(view.n_jobs, dtype=bool)
        for lo in range(0, view.n_jobs, 4096):  # in chunks: the table is jobs x configurations
            tab = config_table(view, self.classes, np.arange(lo, min(lo + 4096, view.n_jobs)))
            self._inside[lo:lo + 4096] = (tab.dlen + tab.clen) > 0

    def _sorted(self, view: Any, q: np.ndarray) -> np.ndarray:
        arr = view.arrival[q]
        if self.order == "fifo":
            return q[np.lexsort((q, arr))]
        if self.order == "edf":
            return q[np.lexsort((q, arr, view.deadline[q]))]
        return q[np.lexsort((q, arr, -view.weight[q]))]

    def decide(self, view: Any) -> list[Decision]:
        q = np.asarray(view.queue, dtype=np.int64)
        if len(q) == 0:
            return []
        cl = self.classes
        jobs = self._sorted(view, q)
        inside = self._inside[jobs]
        cap = view.capacity()
        out: list[Decision] = []
        cand = jobs[inside]
        if self.exclusive_nodes:
            # Only a node with no job takes a job: once no class has one left, no job
            # further down the order can start (nodes only fill up within a decision
            # point), so the walk stops, and the configuration table is built in chunks
            # for the jobs actually walked (its rows do not depend on each other).
            empty = (np.asarray(cap.free_gpus) == np.asarray(view.node_gpus)) & (cl.of_node >= 0)
            n_empty = np.bincount(cl.of_node[empty], minlength=len(cl.dev)).astype(np.int64)
            self._walk(view, cap, cand, out, n_empty)
        else:
            self._walk(view, cap, cand, out, None)
        return out + start_outside_model(view, cap, jobs[~inside].tolist())

    def _walk(self, view: Any, cap: Any, cand: np.ndarray, out: list[Decision],
              n_empty: np.ndarray | None) -> None:
        """Start the jobs of ``cand`` (in order) on their first configuration that has a
        node; ``n_empty``: empty nodes per class (exclusive nodes), or None."""
        cl = self.classes
        i, chunk = 0, 16
        while i < len(cand):
            if n_empty is not None and n_empty.sum() == 0:
                return
            part = cand[i:i + chunk]
            tab = config_table(view, cl, part)
            for r, j in enumerate(part.tolist()):
                if n_empty is not None and n_empty.sum() == 0:
                    return
                for e in tab.entries(r):
                    k, g = int(tab.cls[r, e]), int(tab.g[r, e])
                    if n_empty is not None and n_empty[k] == 0:
                        continue
                    n = self._node(view, cap, j, k, g)
                    if n >= 0:
                        out.append(Start(j, None, take_gpus(view, cap, j, n, g)))
                        if n_empty is not None and cap.free_gpus[n] < view.node_gpus[n]:
                            n_empty[k] -= 1
                        break
            i += len(part)
            chunk *= 2

    def _node(self, view: Any, cap: Any, j: int, k: int, g: int) -> int:
        cl = self.classes
        for n in cl.nodes[cl.start[k]:cl.start[k + 1]].tolist():
            if self.exclusive_nodes and cap.free_gpus[n] < view.node_gpus[n]:
                continue
            if fits_node(view, cap, j, n, g):
                return n
        return -1


def andreas_fifo(exclusive_nodes: bool = True) -> FirstPrinciple:
    """``andreas-fifo``: first-principle FIFO (submission order)."""
    return FirstPrinciple("fifo", exclusive_nodes)


def andreas_edf(exclusive_nodes: bool = True) -> FirstPrinciple:
    """``andreas-edf``: first-principle Earliest Deadline First."""
    return FirstPrinciple("edf", exclusive_nodes)


def andreas_ps(exclusive_nodes: bool = True) -> FirstPrinciple:
    """``andreas-ps``: first-principle Priority Scheduling (heaviest tardiness weight first)."""
    return FirstPrinciple("ps", exclusive_nodes)


BASELINES = {"andreas-rg": AndreasRG, "andreas-fifo": andreas_fifo, "andreas-edf": andreas_edf,
             "andreas-ps": andreas_ps}
