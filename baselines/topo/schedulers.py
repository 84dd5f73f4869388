"""TOPO-AWARE, TOPO-AWARE-P and the FCFS and BF baselines they are compared with.

Amaral, Polo, Carrera, Seelam, Steinder, *Topology-Aware GPU Scheduling for Learning
Workloads in Cloud Environments*, SC'17. Placement rules from the paper (sec. 4:
eqs. 1-5, Algorithms 1-3) as the authors' code computes them
(``HiEST/gpu-topo-aware`` 8125c28, ``src/schedule/algorithms/``). docs/topo.md lists
the assumptions and the results.

============== ================== ============================================================
name           class              rule
============== ================== ============================================================
``topo-aware``   :class:`TopoAware`  sec. 4, Alg. 1 without postponement: each waiting job, in
                                  arrival order, on the GPU subset of highest system utility
``topo-aware-p`` :class:`TopoAware`  the same, but a job whose best placement has a job utility
                                  below its ``min_utility`` is postponed (left waiting)
``topo-fcfs``    :class:`TopoFCFS`   ``fcfs.py``: strict FIFO, first-fit node, GPUs socket by
                                  socket, lowest ids first
``topo-bf``      :class:`TopoBF`     ``bf.py``: arrival order, jobs that do not fit are skipped;
                                  best-fit node, most-used socket first
============== ================== ============================================================

Common rules: decision points are the simulator's events (assumption *exhaustive search*: the
authors' timer interval adds nothing in a simulation where nothing changes between events);
every job runs on ONE node (a job needing more GPUs than any node has free waits, as in the
authors' ``rdb``); device types are not told apart (any GPU type where the job's
throughput is positive; the paper's cluster is homogeneous); a job whose only device
types are CPU types is placed by the simulator's default placement on a scratch copy
(the paper has none). No scheduler here preempts.

Assumptions used by all four (docs/topo.md, *Assumptions*): exhaustive subset search,
level costs 1/10/20, normalisation, interference cost = the simulator's model,
FCFS / BF server choice. FCFS and BF are topology-oblivious: they ignore
``comm``, interference and utilities.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


from baselines.andreas.parts import start_outside_model
from baselines.topo.parts import SubsetSearch, UtilityModel, best_fit, first_fit
from hetgym.decisions import Placement, Start
from hetgym.sim.rules import covers

__all__ = ["BASELINES", "TopoAware", "TopoBF", "TopoFCFS"]


def _start(j: int, n: int, gpus: tuple[int, ...], view: Any, cap: Any) -> Start:
    pl = Placement.of([n] * len(gpus), list(gpus))
    cap.take(j, pl.nodes, pl.gpus)
    return Start(j, int(view.node_device[n]), pl)


def _fallback_start(view: Any, cap: Any, j: int) -> Start | None:
    """A job no single GPU server can hold (see :func:`_one_server`): the simulator's
    placement on ``cap``, fastest type first (the rule ANDREAS uses for such jobs)."""
    out = start_outside_model(view, cap, [j])
    return out[0] if out else None


def _one_server(view: Any, j: int) -> bool:
    """Whether some GPU server where job ``j`` can run could hold its whole gang (GPUs,
    cores, memory) when empty."""
    d = view.node_device
    w = view.workers[j]
    ok = ((view.tput[j, d] > 0) & ~view.dev_is_cpu[d] & (view.node_gpus >= w)
          & covers(view.node_cpus, w * view.cpus_need[j, d])
          & covers(view.node_mem, w * view.mem[j]))
    return bool(ok.any())


@dataclass
class _Greedy:
    """A topology-oblivious admission: jobs in queue order, each on the GPUs ``choose``
    gives; ``blocking`` stops at the first job that does not fit."""

    blocking = False

    @staticmethod
    def choose(view: Any, cap: Any, j: int) -> tuple[int, tuple[int, ...]] | None:
        raise NotImplementedError

    def __post_init__(self) -> None:
        self._single: dict[int, bool] = {}

    def reset(self, view: Any) -> None:
        """Start of a run."""
        self._single = {}

    def decide(self, view: Any) -> list:
        """Start jobs in queue order (until one does not fit, if blocking). A job on one
        server needing more GPUs than any server has free is passed over at once."""
        cap = view.capacity()
        out: list = []
        most = int(cap.free_gpus.max()) if len(cap.free_gpus) else 0
        single = self._single
        for j in view.queue.tolist():
            one = single.get(j)
            if one is None:
                one = single[j] = _one_server(view, j)
            if not one:
                s = _fallback_start(view, cap, j)
            elif view.workers[j] > most:
                s = None
            else:
                hit = self.choose(view, cap, j)
                s = None if hit is None else _start(j, hit[0], hit[1], view, cap)
            if s is not None:
                out.append(s)
                most = int(cap.free_gpus.max())
            elif self.blocking:
                break
        return out


@dataclass
class TopoAware(_Greedy):
    """TOPO-AWARE (``postpone=False``) and TOPO-AWARE-P (``postpone=True``), paper sec. 4.

    At each decision point the waiting jobs are taken in queue (arrival) order; each gets
    the candidate of highest system utility found by :class:`SubsetSearch` (an exact
    search over every W-subset of every node's free GPUs, assumption *exhaustive search*, not
    the paper's bipartitioning heuristic: at the node level the authors' code enumerates all subsets
    too, and with at most C(8, 4) = 70 subsets per node the exact optimum is cheap).
    Jobs that fit nowhere are skipped (out-of-order, as the authors' ``get_jobs``).
    TOPO-AWARE-P postpones a job whose best candidate's job utility is below its
    ``min_utility`` column (Alg. 1 line 6); it is looked at again at the next event.

    Args:
        postpone: TOPO-AWARE-P's rule.
        kappa: Interference coefficient of the cost model (assumption *interference cost*);
        ``None`` = the
            scenario's ``interference_coeff``.
        w_cc, w_int, w_frag: Utility weights (the authors' "neutral" policy: 1/3 each).
    """

    postpone: bool = False
    kappa: float | None = None
    w_cc: float = 1 / 3
    w_int: float = 1 / 3
    w_frag: float = 1 / 3
    search: SubsetSearch = field(init=False)

    def __post_init__(self) -> None:
        self.search = SubsetSearch(UtilityModel(self.w_cc, self.w_int, self.w_frag), self.kappa)
        self.postponed: list[tuple[float, int, float]] = []
        super().__post_init__()

    def reset(self, view: Any) -> None:
        """Start of a run."""
        super().reset(view)
        self.search.reset()
        self.postponed = []

    def choose(self, view: Any, cap: Any, j: int) -> tuple[int, tuple[int, ...]] | None:
        """The best candidate of job ``j``, or None (no room, or postponed)."""
        c = self.search.best(view, cap, j)
        if c is None:
            return None
        if self.postpone and c.u_job < view.min_utility[j] - 1e-12:
            self.postponed.append((float(view.now), j, c.u_job))
            return None
        return c.node, c.gpus


@dataclass
class TopoFCFS(_Greedy):
    """FCFS of the authors' code (``fcfs.py``, sec. 5): strict first-come first-served,
    head-of-line blocking (the walk stops at the first job that does not fit); the
    lowest-index node that holds the gang; GPUs socket by socket, lowest free ids first
    (:func:`~baselines.topo.parts.first_fit`). Topology- and interference-oblivious.
    Assumption *FCFS/BF server choice* (docs/topo.md): first-fit node on a multi-server cluster."""

    blocking = True
    choose = staticmethod(first_fit)


@dataclass
class TopoBF(_Greedy):
    """Best fit of the authors' code (``bf.py``, sec. 5): jobs in arrival order, those
    that do not fit are skipped; the fitting node with the fewest free GPUs (ties: lower
    index, assumption *FCFS/BF server choice*); on it "allocating first the GPUs from highly
    used domains": the socket with the fewest free GPUs > 0 first (ties: the higher socket id,
    as the authors' ``get_socket_id``), its lowest free ids first
    (:func:`~baselines.topo.parts.best_fit`). Topology- and interference-oblivious."""

    blocking = False
    choose = staticmethod(best_fit)


def _aware(**params: Any) -> TopoAware:
    return TopoAware(postpone=False, **params)


def _aware_p(**params: Any) -> TopoAware:
    return TopoAware(postpone=True, **params)


BASELINES = {"topo-aware": _aware, "topo-aware-p": _aware_p, "topo-fcfs": TopoFCFS,
             "topo-bf": TopoBF}
