"""Parts of the TOPO-AWARE family (:mod:`baselines.topo.schedulers`): the utility model, the search
over a server's GPU subsets, and the GPU choices of the authors' FCFS and BF.

Amaral, Polo, Carrera, Seelam, Steinder, *Topology-Aware GPU Scheduling for Learning
Workloads in Cloud Environments*, SC'17, sec. 4 (eqs. 1-5, Algorithms 1-3), as the
authors' code computes it (``HiEST/gpu-topo-aware``, ``src/schedule/algorithms/``
``utils/utility.py``, ``utilityaware.py``, ``fcfs.py``, ``bf.py``). The assumptions
The assumptions are listed in docs/topo.md (*Assumptions*).

Every placement here is on ONE node (assumption *exhaustive search*: the authors' recursion
bottoms out at a machine and a job needing more GPUs than any machine has free is not placed).
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from baselines.topo import kernels as TK
from hetgym.sim.rules import covers

__all__ = ["LEVEL_COST", "MIN_COST", "Candidate", "SubsetSearch", "UtilityModel", "best_fit",
           "first_fit", "fit_mask", "gpus_by_socket", "level_cost"]

#: The authors' ``min_cost``: the floor of every normalised cost.
MIN_COST = 0.01
#: assumption *level costs*: TOPO distance of a pair of GPUs at a simulator distance level
#: (paper Fig. 7: 1 next to the GPU, 20 at the socket level; the authors' code: 40 across machines).
LEVEL_COST = {1.0: 1.0, 2.0: 10.0, 3.0: 20.0}


def level_cost(level: float) -> float:
    """TOPO path cost of a GPU pair at ``level`` (assumption *level costs*; a level outside {1,
    2, 3} of a custom matrix costs ``20 x level / 3``, which meets 20 at level 3)."""
    return LEVEL_COST.get(float(level), 20.0 * float(level) / 3.0)


@dataclass(frozen=True)
class UtilityModel:
    """The authors' normalised utility (``utility.py::calculate_utility``, policy
    "neutral"): costs normalised to [MIN_COST, 1] (lower is better), weights ``w_cc``,
    ``w_int``, ``w_frag`` (1/3 each).

    * job utility (fragmentation dropped, its weight spread over the other two, L = 2):
      ``U_job = L MIN^(1/L) / sum_m n_m ^ (w_m (1 + 1/L))``, 1 at best;
    * system utility (L = 3): ``U_sys = 3 MIN^(1/3) / (n_cc^w_cc + n_I'^w_int + n_frag^w_frag)``.
    """

    w_cc: float = 1 / 3
    w_int: float = 1 / 3
    w_frag: float = 1 / 3
    min_cost: float = MIN_COST

    def job_utility(self, n_cc: float, n_int: float) -> float:
        """Eq. (2) as normalised by the authors (assumption *normalisation*): utility of the job
        alone."""
        ln = 2
        cost = n_cc ** (self.w_cc * (1 + 1 / ln)) + n_int ** (self.w_int * (1 + 1 / ln))
        return ln * self.min_cost ** (1 / ln) / cost

    def system_utility(self, n_cc: float, n_int: float, n_frag: float) -> float:
        """Utility of the node after the placement (communication, interference suffered
        and caused, fragmentation)."""
        ln = 3
        cost = n_cc ** self.w_cc + n_int ** self.w_int + n_frag ** self.w_frag
        return ln * self.min_cost ** (1 / ln) / cost

    def floor(self, x: float) -> float:
        """``max(MIN_COST, x)``: the authors' floor of a cost."""
        return max(self.min_cost, x)


@dataclass(frozen=True)
class Candidate:
    """A placement of a job on GPUs ``gpus`` of node ``node`` with its utilities."""

    node: int
    gpus: tuple[int, ...]
    u_sys: float
    u_job: float


def fit_mask(view: Any, cap: Any, j: int) -> np.ndarray:
    """bool[N]: job ``j``'s whole gang fits node n now (GPUs, cores, memory) on a GPU
    type where its throughput is positive."""
    d = view.node_device
    w = int(view.workers[j])
    return ((cap.free_gpus >= w) & (view.tput[j, d] > 0) & ~view.dev_is_cpu[d]
            & covers(cap.free_cpus, w * view.cpus_need[j, d])
            & covers(cap.free_mem, w * view.mem[j]))


@dataclass
class SubsetSearch:
    """Exhaustive search over every W-subset of every node's free GPUs (assumption *exhaustive
    search*: the authors' ``get_machine_best_placement`` enumerates all subsets of a machine; their
    recursive bipartitioning only chooses which machine, and an exhaustive pass over the
    machines finds the same optimum). Returns the candidate with the highest system
    utility; ties go to the lower node index, then to the lexicographically smaller GPU
    tuple.

    Costs of a candidate ``g`` for job ``j`` on node ``n`` (docs/topo.md, *Semantics* item 4):

    * ``n_cc``: MIN for one GPU, else (t(g) - t_min) / (t_max - t_min) clipped to
      [MIN, 1], t = summed pairwise :func:`level_cost` (eq. 3), t_min / t_max over every
      W-subset of the empty node (assumption *normalisation*);
    * ``n_I = max(MIN, kappa s_j sum p_k)`` over the running jobs sharing an
      interference domain with ``g`` (the simulator's model, assumption *interference cost*);
      ``n_I,others = max(MIN, mean_k kappa s_k p_j)``; ``n_I' = (n_I + n_I,others) / 2``
      when the node runs a job, else ``n_I``;
    * ``n_frag``: eq. (5), the mean over sockets of free / total GPUs after the
      placement; MIN if it is 0 or 1.

    ``kappa`` defaults to the scenario's ``interference_coeff``; ``domain`` to its
    ``interference_domain``. ``compiled``: :meth:`best` through :mod:`baselines.topo.kernels`
    (False: :meth:`best_grouped`, the same answers in Python).
    """

    model: UtilityModel = field(default_factory=UtilityModel)
    kappa: float | None = None
    compiled: bool = True
    _bounds: dict = field(default_factory=dict, repr=False)
    _classes: list | None = field(default=None, repr=False)
    _tables: _RunTables | None = field(default=None, repr=False)

    def reset(self) -> None:
        """Forget the per-node bounds, node classes and kernel tables (a new run)."""
        self._bounds.clear()
        self._classes = None
        self._tables = None

    def comm(self, view: Any, n: int, gpus: tuple[int, ...]) -> float:
        """t(g): summed pairwise TOPO cost of GPUs ``gpus`` of node ``n`` (eq. 3)."""
        dist = view.node_dist[n]
        return sum(level_cost(dist[a, b]) for a, b in itertools.combinations(gpus, 2))

    def bounds(self, view: Any, n: int, w: int) -> tuple[float, float]:
        """(t_min, t_max) over every ``w``-subset of node ``n`` empty."""
        key = (n, w)
        hit = self._bounds.get(key)
        if hit is None:
            ts = [self.comm(view, n, g)
                  for g in itertools.combinations(range(int(view.node_gpus[n])), w)]
            hit = self._bounds[key] = (min(ts), max(ts))
        return hit

    def n_cc(self, view: Any, n: int, gpus: tuple[int, ...]) -> float:
        """Normalised communication cost of ``gpus`` on node ``n``."""
        w = len(gpus)
        if w <= 1:
            return self.model.min_cost
        lo, hi = self.bounds(view, n, w)
        if hi <= lo:
            return self.model.min_cost
        x = (self.comm(view, n, gpus) - lo) / (hi - lo)
        return min(1.0, self.model.floor(x))

    def interference(self, view: Any, owner: np.ndarray, j: int, n: int,
                     mine: set[int]) -> tuple[float, float]:
        """``(n_I, n_I')`` of job ``j`` on node ``n`` next to the GPU owners ``owner`` when
        its GPUs are on the sockets ``mine`` (class docstring)."""
        m = self.model
        kappa = view.options.interference_coeff if self.kappa is None else self.kappa
        sock = view.node_socket_of_gpu[n]
        g_n = int(view.node_gpus[n])
        by_node = view.options.interference_domain == "node"
        near = {int(owner[h]) for h in range(g_n)
                if owner[h] >= 0 and (by_node or int(sock[h]) in mine)}
        near.discard(j)
        n_int = m.floor(kappa * view.sens[j] * sum(view.press[k] for k in near))
        if (owner[:g_n] >= 0).any():
            others = (m.floor(sum(kappa * view.sens[k] * view.press[j] for k in near) / len(near))
                      if near else m.min_cost)
            return n_int, (n_int + others) / 2
        return n_int, n_int

    def evaluate(self, view: Any, owner: np.ndarray, j: int, n: int,
                 gpus: tuple[int, ...]) -> Candidate:
        """Utilities of job ``j`` on GPUs ``gpus`` of node ``n``, next to the GPU owners
        ``owner`` (``cap.gpu_owner[n]``)."""
        m = self.model
        sock = view.node_socket_of_gpu[n]
        g_n = int(view.node_gpus[n])
        n_int, n_int_sys = self.interference(view, owner, j, n, {int(sock[g]) for g in gpus})
        total: dict[int, int] = {}
        free: dict[int, int] = {}
        for h in range(g_n):
            s = int(sock[h])
            total[s] = total.get(s, 0) + 1
            free[s] = free.get(s, 0) + int(owner[h] < 0 and h not in gpus)
        frag = sum(free[s] / total[s] for s in total) / len(total)
        n_frag = m.min_cost if frag in (0.0, 1.0) else frag
        n_cc = self.n_cc(view, n, gpus)
        return Candidate(n, gpus, m.system_utility(n_cc, n_int_sys, n_frag),
                         m.job_utility(n_cc, n_int))

    def best(self, view: Any, cap: Any, j: int) -> Candidate | None:
        """The best candidate for job ``j`` on the free GPUs of ``cap``, or None.

        :meth:`best_grouped` compiled (:mod:`baselines.topo.kernels`): the same nodes,
        subsets, floating-point operations and ties, so the same candidate, utilities
        included; interference with ``kappa != 0`` is still summed in Python (per node and
        socket set, :meth:`interference`). Falls back to :meth:`best_grouped` when
        ``compiled`` is off or a node's sockets do not fit the kernel's socket masks."""
        t = self._run_tables(view) if self.compiled else None
        if t is None:
            return self.best_grouped(view, cap, j)
        w = int(view.workers[j])
        if t.flat:
            node, u_sys, u_job = TK.best_flat_nb(
                w, view.tput[j], view.cpus_need[j], float(view.mem[j]), view.node_device,
                view.dev_is_cpu, view.node_gpus, t.cls, cap.free_gpus, cap.free_cpus,
                cap.free_mem, cap.gpu_owner, view.press, view.sens, view.node_socket_of_gpu,
                t.cost, t.lo, t.hi, t.params, t.nodes, t.gpus)
        else:
            k = TK.reps_nb(w, view.tput[j], view.cpus_need[j], float(view.mem[j]),
                           view.node_device, view.dev_is_cpu, view.node_gpus, t.cls,
                           cap.free_gpus, cap.free_cpus, cap.free_mem, cap.gpu_owner,
                           view.press, view.sens, t.nodes)
            nodes = t.nodes[:k]
            n_int, n_sys = self._interference_tables(view, cap, j, nodes, t.n_masks)
            node, u_sys, u_job = TK.scan_nb(nodes, w, cap.gpu_owner, view.node_gpus,
                                            view.node_socket_of_gpu, t.cost, t.lo, t.hi,
                                            n_int, n_sys, False, t.params, t.gpus)
        if node < 0:
            return None
        return Candidate(int(node), tuple(t.gpus[:w].tolist()), float(u_sys), float(u_job))

    def _interference_tables(self, view: Any, cap: Any, j: int, nodes: np.ndarray,
                             n_masks: int) -> tuple[np.ndarray, np.ndarray]:
        """``(n_I, n_I')[k, mask]`` on the ``k``-th of ``nodes`` for every set ``mask`` of
        sockets with free GPUs there (one bit per socket id; nan elsewhere)."""
        n_int = np.full((len(nodes), n_masks), np.nan)
        n_sys = np.full((len(nodes), n_masks), np.nan)
        w = int(view.workers[j])
        for k, n in enumerate(nodes.tolist()):
            owner = cap.gpu_owner[n]
            g_n = int(view.node_gpus[n])
            sock = view.node_socket_of_gpu[n, :g_n]
            socks = sorted({int(s) for s in sock[owner[:g_n] < 0].tolist()})
            for r in range(1, min(w, len(socks)) + 1):
                for mine in itertools.combinations(socks, r):
                    mask = sum(1 << s for s in mine)
                    n_int[k, mask], n_sys[k, mask] = self.interference(view, owner, j, n,
                                                                       set(mine))
        return n_int, n_sys

    def _run_tables(self, view: Any) -> _RunTables | None:
        """This run's tables for the kernels (built at the first call with ``view``)."""
        t = self._tables
        if t is None or t.view is not view:
            t = self._tables = _RunTables.build(view, self)
        return t if t.ok else None

    def best_grouped(self, view: Any, cap: Any, j: int) -> Candidate | None:
        """:meth:`best` in Python (the definition the compiled path follows; tests
        compare the two).

        Same answer as :meth:`best_naive` (every node in index order), faster: nodes of
        one class (device, GPU count, distances, sockets) whose free GPUs and running
        neighbours look alike (free flags, the neighbours' ``press``/``sens`` and which
        GPUs share an owner) have the same candidates, so only the lowest-index node of
        each such group is evaluated; a later node of a group never wins a tie."""
        if self._classes is None:
            self._classes = _node_classes(view)
        w = int(view.workers[j])
        if cap.free_gpus.max() < w:
            return None
        ok = fit_mask(view, cap, j)
        reps: list[int] = []
        for _, g_n, idx in self._classes:
            fit = ok[idx]
            if g_n < w or not fit.any():
                continue
            sub = idx[fit]
            own = cap.gpu_owner[sub, :g_n]
            busy = own >= 0
            o = np.where(busy, own, 0)
            first = np.argmax(own[:, :, None] == own[:, None, :], axis=2)
            feat = np.concatenate([np.where(busy, view.press[o], -1.0),
                                   np.where(busy, view.sens[o], -1.0), first], axis=1)
            _, rows = np.unique(feat, axis=0, return_index=True)
            reps.extend(sub[rows].tolist())
        return self._scan(view, cap, j, sorted(reps))

    def best_naive(self, view: Any, cap: Any, j: int) -> Candidate | None:
        """:meth:`best` evaluated on every node (the definition; tests compare the two)."""
        return self._scan(view, cap, j, np.flatnonzero(fit_mask(view, cap, j)).tolist())

    def _scan(self, view: Any, cap: Any, j: int, nodes: list[int]) -> Candidate | None:
        w = int(view.workers[j])
        best: Candidate | None = None
        for n in nodes:
            owner = cap.gpu_owner[n]
            free = [g for g in range(int(view.node_gpus[n])) if owner[g] < 0]
            for gpus in itertools.combinations(free, w):
                c = self.evaluate(view, owner, j, n, gpus)
                if best is None or c.u_sys > best.u_sys + 1e-12:
                    best = c
        return best


def _node_classes(view: Any) -> list[tuple[int, int, np.ndarray]]:
    """GPU nodes grouped by (device, GPU count, distance matrix, socket map):
    ``(device, gpus, node indices ascending)``."""
    groups: dict[tuple, list[int]] = {}
    for n in range(len(view.node_device)):
        g = int(view.node_gpus[n])
        if g == 0:
            continue
        key = (int(view.node_device[n]), g, view.node_dist[n, :g, :g].tobytes(),
               view.node_socket_of_gpu[n, :g].tobytes())
        groups.setdefault(key, []).append(n)
    return [(k[0], k[1], np.asarray(v, dtype=np.int64)) for k, v in groups.items()]


#: Most sockets a node may have for the kernels' interference tables (2^this columns).
MAX_MASK_SOCKETS = 10


@dataclass
class _RunTables:
    """What :func:`baselines.topo.kernels.scan_nb` needs of one run, built once: node
    classes (``cls``, -1 without GPUs), level costs ``cost[n, a, b]``, bounds
    ``lo``/``hi[n, w]``, the utility constants ``params``, whether interference is flat
    (``kappa = 0`` on finite ``press``/``sens``: every ``n_I`` is ``MIN``), and buffers."""

    view: Any
    ok: bool
    cls: np.ndarray
    cost: np.ndarray
    lo: np.ndarray
    hi: np.ndarray
    params: np.ndarray
    flat: bool
    n_masks: int
    nodes: np.ndarray
    gpus: np.ndarray

    @classmethod
    def build(cls, view: Any, search: SubsetSearch) -> _RunTables:
        """The tables of ``view``'s cluster for ``search``'s model and ``kappa``."""
        m = search.model
        n_nodes, g_max = view.node_socket_of_gpu.shape
        g_n = np.asarray(view.node_gpus, dtype=np.int64)
        ids = np.full(n_nodes, -1, dtype=np.int64)
        for c, (_, _, idx) in enumerate(_node_classes(view)):
            ids[idx] = c
        dist = np.asarray(view.node_dist, dtype=np.float64)
        levels, where = np.unique(dist, return_inverse=True)
        cost = np.asarray([level_cost(x) for x in levels.tolist()],
                          dtype=np.float64)[where].reshape(dist.shape)
        lo = np.zeros((n_nodes, g_max + 1))
        hi = np.zeros((n_nodes, g_max + 1))
        TK.bounds_nb(cost, g_n, lo, hi)
        params = np.asarray([m.w_cc, m.w_int, m.w_frag, m.w_cc * (1 + 1 / 2),
                             m.w_int * (1 + 1 / 2), 3 * m.min_cost ** (1 / 3),
                             2 * m.min_cost ** (1 / 2), m.min_cost], dtype=np.float64)
        kappa = view.options.interference_coeff if search.kappa is None else search.kappa
        flat = bool(kappa == 0.0 and np.isfinite(view.press).all()
                    and np.isfinite(view.sens).all())
        used = view.node_socket_of_gpu[np.arange(g_max)[None, :] < g_n[:, None]]
        n_sock = int(used.max()) + 1 if len(used) else 0
        ok = bool(len(used) == 0 or used.min() >= 0) and (flat or n_sock <= MAX_MASK_SOCKETS)
        return cls(view, ok, ids, cost, lo, hi, params, flat, 1 << min(n_sock, MAX_MASK_SOCKETS),
                   np.empty(n_nodes, dtype=np.int64), np.empty(g_max, dtype=np.int64))


def gpus_by_socket(view: Any, owner: np.ndarray, n: int) -> dict[int, list[int]]:
    """Free GPU ids of node ``n`` per socket (ascending ids), sockets ascending."""
    out: dict[int, list[int]] = {}
    sock = view.node_socket_of_gpu[n]
    for g in range(int(view.node_gpus[n])):
        if owner[g] < 0:
            out.setdefault(int(sock[g]), []).append(g)
    return dict(sorted(out.items()))


def first_fit(view: Any, cap: Any, j: int) -> tuple[int, tuple[int, ...]] | None:
    """FCFS GPU choice (``fcfs.py``): the lowest-index node that holds the gang, its free
    GPUs socket by socket in socket order, lowest ids first."""
    w = int(view.workers[j])
    fit = np.flatnonzero(fit_mask(view, cap, j))
    if not len(fit):
        return None
    n = int(fit[0])
    ids = [g for gs in gpus_by_socket(view, cap.gpu_owner[n], n).values() for g in gs]
    return n, tuple(sorted(ids[:w]))


def best_fit(view: Any, cap: Any, j: int) -> tuple[int, tuple[int, ...]] | None:
    """BF GPU choice (``bf.py``, assumption *FCFS/BF server choice*): the fitting node with the
    fewest free GPUs (ties: lower index); on it, repeatedly the socket with the fewest free GPUs
    > 0 (ties: the HIGHER socket id, as ``get_socket_id``'s ``>=`` does), its lowest free ids
    first."""
    w = int(view.workers[j])
    fit = np.flatnonzero(fit_mask(view, cap, j))
    if not len(fit):
        return None
    node = int(fit[np.argmin(cap.free_gpus[fit])])  # argmin: the first (lowest index) of ties
    socks = gpus_by_socket(view, cap.gpu_owner[node], node)
    chosen: list[int] = []
    while len(chosen) < w:
        s = min((s for s in socks if socks[s]), key=lambda s: (len(socks[s]), -s))
        take = socks[s][: w - len(chosen)]
        chosen += take
        socks[s] = socks[s][len(take):]
    return node, tuple(sorted(chosen))
