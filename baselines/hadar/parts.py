"""Parts of Hadar / HadarE (Sultana et al., TPDS, sec. III; docs/hadar.md): prices, allocation
candidates, the payoff DP with backfill and HadarE's fork fill (a round's plan as
decisions: :mod:`baselines.hadar.emit`).

A :class:`PlanState` holds what this round's plan has not given yet (GPUs by id, cores
and memory per node); an *allocation* is a :class:`~hetgym.decisions.Placement` whose
per-node counts are the paper's ``w_jh``. Hadar's nodes have one device type each, so
``r(h)`` is the node's type. CPU nodes (not in the paper) take part with their cores as
the capacity in the price.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from baselines.hadar.compiled import CompiledSearch
from hetgym.decisions import Placement
from hetgym.sim.rules import EPS, covers, scaled_rate, slots

__all__ = [
    "Candidate",
    "FindAlloc",
    "PlanState",
    "PriceBook",
    "backfill",
    "fork_fill",
    "payoff_dp",
    "price_eq5",
    "same_pairs",
]

_TIE = 1e-12


class PlanState:
    """Free resources of a plan: ``gpu`` bool[N, G] (free GPU ids), ``cpus``, ``mem``."""

    __slots__ = ("cpu_node", "cpus", "gpu", "mem")

    def __init__(self, gpu: np.ndarray, cpus: np.ndarray, mem: np.ndarray,
                 cpu_node: np.ndarray) -> None:
        self.gpu, self.cpus, self.mem, self.cpu_node = gpu, cpus, mem, cpu_node

    @classmethod
    def of(cls, view, empty: bool) -> PlanState:
        """The whole cluster (``empty``) or what is free now."""
        cpu_node = np.asarray(view.dev_is_cpu)[np.asarray(view.node_device)]
        gpus = np.asarray(view.node_gpus)
        exists = np.arange(int(max(1, gpus.max())))[None, :] < gpus[:, None]  # padding is not a GPU
        if empty:
            return cls(exists, np.array(view.node_cpus, dtype=float),
                       np.array(view.node_mem, dtype=float), cpu_node)
        cap = view.capacity()
        return cls(exists & (np.asarray(cap.gpu_owner) < 0), np.array(cap.free_cpus, dtype=float),
                   np.array(cap.free_mem, dtype=float), cpu_node)

    def slots(self, view, j: int, node_dev: np.ndarray) -> np.ndarray:
        """Workers of job ``j`` that fit on each node (GPUs, cores, memory)."""
        need = np.asarray(view.cpus_need[j])[node_dev]
        s = np.where(self.cpu_node, 1 << 20, self.gpu.sum(axis=1))
        with np.errstate(divide="ignore", invalid="ignore"):
            s = np.where(need > 0, np.minimum(s, slots(self.cpus, need)), s)
            m = float(view.mem[j])
            if m > 0:
                s = np.minimum(s, slots(self.mem, m))
        return s.astype(np.int64)

    def take(self, view, j: int, pl: Placement) -> PlanState:
        """A new state without ``pl``'s resources."""
        gpu, cpus, mem = self.gpu.copy(), self.cpus.copy(), self.mem.copy()
        nd = np.asarray(view.node_device)
        for n, g in zip(pl.nodes.tolist(), pl.gpus.tolist()):
            if g >= 0:
                gpu[n, g] = False
            cpus[n] -= float(view.cpus_need[j, nd[n]])
            mem[n] -= float(view.mem[j])
        return PlanState(gpu, cpus, mem, self.cpu_node)

    def key(self) -> bytes:
        """Memo key of the DP."""
        return self.gpu.tobytes() + self.cpus.tobytes() + self.mem.tobytes()

    def any(self) -> bool:
        """Whether some GPU, or some core of a CPU node, is left."""
        return bool(self.gpu.any() or (self.cpus[self.cpu_node] > EPS).any())

    def used_fraction(self, h: int, cap_gpus: float, cap_cpus: float) -> float:
        """``gamma_h / c_h``: share of node h given (GPUs; cores on a CPU node)."""
        if self.cpu_node[h]:
            return (cap_cpus - self.cpus[h]) / cap_cpus if cap_cpus > 0 else 1.0
        return (cap_gpus - float(self.gpu[h].sum())) / cap_gpus


def price_eq5(u_min: float, u_max: float, gamma: float, capacity: float) -> float:
    """Eq. (5): ``k(gamma) = U_min (U_max / U_min) ** (gamma / c)``."""
    return float(u_min * (u_max / u_min) ** (gamma / capacity))


class PriceBook:
    """Eq. (5)-(7): per-type U_max, U_min and the price of a node's next GPU.

    ``U_max^r = max_{j in Q} X_j^r`` (assumption *utility*: per-GPU utility on type r; the
    largest over all types when no job of Q runs on r); ``U_min^r = (1 / (4 eta)) min_j min_r
    X_j^r / (T - a_j)`` with ``t_j^max = work_j / (W_j min_r X_j^r)``, horizon ``T = now + sum_j
    t_j^max`` (assumption *horizon*) and ``eta = max_j C / (t_j^max W_j)`` (C = all GPUs: the
    smallest eta of the proof of Thm 2). Guard: ``U_min = U_max / 1e6`` when ``U_min >= U_max``.
    """

    def __init__(self, view, jobs: np.ndarray) -> None:
        nd = view.node_device
        gpu_nodes = np.asarray(view.node_gpus) > 0
        self.cap = np.asarray(view.node_gpus, dtype=np.float64)
        self.cap_cpus = np.asarray(view.node_cpus, dtype=np.float64)
        tput = np.asarray(view.tput)[jobs]
        w = np.asarray(view.workers, dtype=np.float64)[jobs]
        work = np.asarray(view.work)[jobs]
        pos = np.where(tput > 0, tput, np.inf)
        slow = pos.min(axis=1)
        slow = np.where(np.isfinite(slow), slow, 1.0)
        t_max = work / scaled_rate(w, slow, 1.0)
        total = float(self.cap[gpu_nodes].sum()) or float(len(gpu_nodes))
        horizon = view.now + float(t_max.sum())
        self.eta = float(np.max(total / (t_max * w))) if len(jobs) else 1.0
        arr = np.asarray(view.arrival)[jobs]
        u_min = (1.0 / (4.0 * self.eta)) * float(np.min(slow / np.maximum(horizon - arr, EPS))) \
            if len(jobs) else 1.0
        n_dev = tput.shape[1] if len(jobs) else len(view.devices)
        top = tput.max(axis=0) if len(jobs) else np.ones(n_dev)
        fallback = float(top.max()) if len(jobs) and top.max() > 0 else 1.0
        self.u_max = np.where(top > 0, top, fallback)
        self.u_min = np.full(n_dev, u_min)
        bad = self.u_min >= self.u_max
        self.u_min[bad] = self.u_max[bad] / 1e6
        self.node_dev = np.asarray(nd)
        self.ratio = self.u_max / self.u_min

    def price(self, node: int, frac: float) -> float:
        """Eq. (5) on node ``node`` with ``frac = gamma_h / c_h`` of it given."""
        r = self.node_dev[node]
        return float(self.u_min[r] * self.ratio[r] ** frac)


    def cost(self, counts: dict[int, int], state: PlanState) -> float:
        """``sum_h k_h(gamma_h) w_h`` at the plan's current gamma (Algorithm 2 line 28)."""
        c = 0.0
        for h, k in counts.items():
            c += self.price(h, state.used_fraction(h, self.cap[h], self.cap_cpus[h])) * k
        return c


@dataclass
class Candidate:
    """One allocation of a job: placement, per-node counts, cost, utility and payoff."""

    placement: Placement
    counts: dict
    cost: float
    utility: float
    kind: int  # 0 current, 1 packed, 2 non-packed (tie order)

    @property
    def payoff(self) -> float:
        """``mu_j = U_j - cost`` (Eq. 8)."""
        return self.utility - self.cost


class FindAlloc:
    """FIND_ALLOC (Algorithm 2 lines 22-32) with the utility of docs/hadar.md (*Assumptions*).

    Candidates: *packed* (the fastest node holding the whole gang, else nodes by free
    GPUs, speed, index until the gang is complete), *non-packed* (free GPUs of nodes
    ordered by the job's speed desc, free desc, index asc), and *current* (the job's
    running placement, when ``sticky`` and still free in the plan). The cheapest wins;
    ties: larger utility, then current, packed, non-packed. ``U_j(w) = work_j / (f - a_j)``
    (``utility="throughput"``) or ``t_j^min / (f - a_j)`` (``"normalized"``), with
    ``f = now + d(w) + R_j / rho(w)``, ``rho`` = ``view.rate_of`` (the engine's rate:
    slowest type, scaling, cross-node topology factor, so no separate communication cost,
    assumption *communication cost*) and ``d(w)`` = the restart delay unless ``w`` is the job's
    current placement or the job never ran. GPU ids on a node: the job's own if it holds some
    there, then GPUs no running job holds, then the lowest.

    On the simulator's own view (``compiled``, the default) :meth:`best` and the greedy
    pass and backfill (:meth:`greedy`) run compiled (:mod:`baselines.hadar.kernels`, same
    results bit for bit); :meth:`candidates` and the rest are the pure-Python reference,
    used on other views and with ``compiled=False``. ``cpu_node``: the plan's CPU-node
    mask (computed from the view when not given).
    """

    def __init__(self, view, prices: PriceBook, utility: str = "throughput",
                 sticky: bool = True, current: dict | None = None, compiled: bool = True,
                 cpu_node: np.ndarray | None = None) -> None:
        if utility not in ("throughput", "normalized"):
            raise ValueError(f"Hadar: utility must be 'throughput' or 'normalized', got {utility!r}")
        self.view = view
        self.prices = prices
        self.utility = utility
        self.sticky = sticky
        self.now = float(view.now)
        self.delay = float(view.restart_delay)
        self.node_dev = np.asarray(view.node_device)
        self.current = current if current is not None else {}
        owner = np.full((len(self.node_dev), int(max(1, np.max(view.node_gpus)))), -1)
        for j, pl in self.current.items():
            g = pl.gpus >= 0
            owner[pl.nodes[g], pl.gpus[g]] = j
        self.held_by = owner
        self.compiled: CompiledSearch | None = None
        if compiled and CompiledSearch.usable(view):
            if cpu_node is None:
                cpu_node = np.asarray(view.dev_is_cpu)[self.node_dev]
            self.compiled = CompiledSearch(view, prices, cpu_node, sticky,
                                           utility == "normalized", self.current, owner)

    # ---------------------------------------------------------------- helpers
    def _gpus(self, j: int, h: int, k: int, state: PlanState) -> list[int]:
        if state.cpu_node[h]:
            return [-1] * k
        ids = np.flatnonzero(state.gpu[h])
        key = np.where(self.held_by[h, ids] == j, 0, np.where(self.held_by[h, ids] < 0, 1, 2))
        return ids[np.argsort(key, kind="stable")][:k].tolist()

    def _placement(self, j: int, counts: dict, state: PlanState) -> Placement:
        nodes: list[int] = []
        gpus: list[int] = []
        for h in sorted(counts):
            g = self._gpus(j, h, counts[h], state)
            nodes += [h] * len(g)
            gpus += g
        return Placement(np.asarray(nodes, dtype=np.int64), np.asarray(gpus, dtype=np.int64))

    def utility_of(self, j: int, placement: Placement, same: bool) -> float:
        """``U_j`` of ``j`` on ``placement`` from now (class docstring)."""
        v = self.view
        rho = v.rate_of(j, placement)
        if rho <= 0:
            return 0.0
        ran = not math.isnan(float(v.first_start[j]))
        d = 0.0 if (same or not ran) else self.delay
        f = self.now + d + float(v.remaining[j]) / rho
        span = max(f - float(v.arrival[j]), EPS)
        if self.utility == "throughput":
            return float(v.work[j]) / span
        t_min = float(v.work[j]) / scaled_rate(float(v.workers[j]), float(np.max(v.tput[j])), 1.0)
        return t_min / span

    def _fits(self, j: int, pl: Placement, state: PlanState) -> bool:
        """Whether a given placement (the current one) is still free in ``state``."""
        v = self.view
        need_c: dict[int, float] = {}
        for n, g in zip(pl.nodes.tolist(), pl.gpus.tolist()):
            if g >= 0 and not state.gpu[n, g]:
                return False
            need_c[n] = need_c.get(n, 0.0) + float(v.cpus_need[j, self.node_dev[n]])
        m = float(v.mem[j])
        for n, c in need_c.items():
            k = c / max(float(v.cpus_need[j, self.node_dev[n]]), 1e-300)
            if not (covers(state.cpus[n], c) and covers(state.mem[n], k * m)):
                return False
        return True

    def greedy(self, jobs: list[int], chosen: dict, state: PlanState, greedy: bool
               ) -> tuple[dict[int, Candidate], PlanState]:
        """Compiled path only: the greedy pass of :func:`payoff_dp` (``greedy``) or the
        :func:`backfill` (jobs not in ``chosen``, which gets the new ones) in one call."""
        picks, (gpu, cpus, mem) = self.compiled.greedy(jobs, chosen, greedy, not greedy,
                                                       state.gpu, state.cpus, state.mem)
        for j, got in picks:
            chosen[j] = Candidate(*got)
        return chosen, PlanState(gpu, cpus, mem, state.cpu_node)

    # ------------------------------------------------------------ candidates
    def candidates(self, j: int, state: PlanState) -> list[Candidate]:
        """The job's candidate allocations on the plan ``state`` (may be empty)."""
        v = self.view
        w = int(v.workers[j])
        x = np.asarray(v.tput[j])[self.node_dev]
        nfree = state.slots(v, j, self.node_dev)
        idx = np.flatnonzero((x > 0) & (nfree > 0))
        if nfree[idx].sum() < w:
            return []
        order = sorted(idx.tolist(), key=lambda h: (-x[h], -nfree[h], h))
        out: list[tuple[int, dict]] = []
        cur = self.current.get(j) if self.sticky else None
        if cur is not None and self._fits(j, cur, state):
            counts: dict = {}
            for h in cur.nodes.tolist():
                counts[h] = counts.get(h, 0) + 1
            out.append((0, counts))
        single = [h for h in order if nfree[h] >= w]
        if single:
            out.append((1, {single[0]: w}))
        else:
            out.append((1, _fill(sorted(idx.tolist(), key=lambda h: (-nfree[h], -x[h], h)),
                                 nfree, w)))
        out.append((2, _fill(order, nfree, w)))
        res = []
        seen: list[dict] = []
        for kind, counts in out:
            if kind > 0 and any(counts == c for c in seen):
                continue
            seen.append(counts)
            pl = cur if kind == 0 else self._placement(j, counts, state)
            same = cur is not None and _same(pl, cur)
            res.append(Candidate(pl, counts, self.prices.cost(counts, state),
                                 self.utility_of(j, pl, same), 0 if same else kind))
        return res

    def best(self, j: int, state: PlanState) -> Candidate | None:
        """The chosen allocation of ``j`` if its payoff is positive (Algorithm 2 l. 28-32)."""
        if self.compiled is not None:
            got = self.compiled.best(j, state.gpu, state.cpus, state.mem)
            return None if got is None else Candidate(*got)
        cands = self.candidates(j, state)
        if not cands:
            return None
        best = cands[0]
        for c in cands[1:]:
            tol = _TIE * max(1.0, abs(best.cost))
            if c.cost < best.cost - tol or abs(c.cost - best.cost) <= tol and (c.utility, -c.kind) > (best.utility, -best.kind):
                best = c
        return best if best.payoff > 0 else None


def _fill(order: list[int], room: np.ndarray, w: int) -> dict[int, int]:
    """Take workers from the nodes in ``order``, each as far as it goes, until ``w``."""
    left, counts = w, {}
    for h in order:
        t = min(left, int(room[h]))
        counts[h] = t
        left -= t
        if left == 0:
            break
    return counts


def _same(a: Placement, b: Placement) -> bool:
    return same_pairs(a.nodes, a.gpus, b.nodes, b.gpus)


def same_pairs(an: np.ndarray, ag: np.ndarray, bn: np.ndarray, bg: np.ndarray) -> bool:
    """Whether two placements (as node and GPU arrays) hold the same (node, GPU) pairs."""
    return sorted(zip(an.tolist(), ag.tolist())) == sorted(zip(bn.tolist(), bg.tolist()))


def payoff_dp(jobs: list[int], state: PlanState, find: FindAlloc, dp_limit: int
              ) -> tuple[dict[int, Candidate], PlanState]:
    """Algorithm 2 as a payoff maximisation (assumption *DP objective*): ``V(i, s) = max(V(i+1, s),
    mu_i + V(i+1, s - w_i))``, memoised on (i, plan state), ties -> take; exact when
    ``len(jobs) <= dp_limit``, else greedy (take whenever ``mu > 0``, in order). Returns
    the chosen allocations and the plan state left."""
    v = find.view
    if len(jobs) > dp_limit and find.compiled is not None:
        return find.greedy(jobs, {}, state, greedy=True)
    if len(jobs) > dp_limit:
        chosen: dict[int, Candidate] = {}
        for j in jobs:
            if not state.any():
                break
            c = find.best(j, state)
            if c is not None:
                chosen[j] = c
                state = state.take(v, j, c.placement)
        return chosen, state
    memo: dict = {}

    def value(i: int, st: PlanState) -> float:
        if i == len(jobs) or not st.any():
            return 0.0
        key = (i, st.key())
        hit = memo.get(key)
        if hit is not None:
            return hit[0]
        skip = value(i + 1, st)
        c = find.best(jobs[i], st)
        best, pick = skip, None
        if c is not None:
            nxt = st.take(v, jobs[i], c.placement)
            take = c.payoff + value(i + 1, nxt)
            if take >= skip:
                best, pick = take, (c, nxt)
        memo[key] = (best, pick)
        return best

    value(0, state)
    chosen = {}
    i = 0
    while i < len(jobs) and state.any():
        pick = memo[(i, state.key())][1]
        if pick is not None:
            chosen[jobs[i]], state = pick
        i += 1
    return chosen, state


def backfill(jobs: list[int], chosen: dict, state: PlanState, find: FindAlloc) -> PlanState:
    """Backfill (docs/hadar.md, *Semantics* item 5): jobs the DP skipped, in order, on the
    leftover state (take if ``mu > 0``)."""
    if find.compiled is not None:
        return find.greedy(jobs, chosen, state, greedy=False)[1]
    for j in jobs:
        if j in chosen or not state.any():
            continue
        c = find.best(j, state)
        if c is not None:
            chosen[j] = c
            state = state.take(find.view, j, c.placement)
    return state


def fork_fill(view, jobs: list[int], plan: dict[int, list[Placement]], state: PlanState,
              current: dict[int, list[Placement]]) -> PlanState:
    """HadarE's fill (sec. V; assumption *HadarE fill order*, docs/hadar.md): while some node
    has room, the unfinished forkable job with the largest estimated remaining time ``R_j /
    rho_j(planned copies)`` (inf with none; ties: lower index) among those whose gang fits on
    one node without a copy of it gets a copy there, on the node fastest for it (ties: a node it
    has a copy on now, then the lower index). One extra copy = the whole gang on one node."""
    nd = np.asarray(view.node_device)
    workers = np.asarray(view.workers)
    forkable = [j for j in jobs if view.forkable[j]]
    rate = {j: (view.rate_of(j, plan[j]) if plan.get(j) else 0.0) for j in forkable}
    while state.any():
        best_j, best_key, best_h = -1, None, -1
        for j in forkable:
            w = int(workers[j])
            used = {h for pl in plan.get(j, []) for h in pl.nodes.tolist()}
            x = np.asarray(view.tput[j])[nd]
            room = state.slots(view, j, nd)
            ok = [h for h in np.flatnonzero((room >= w) & (x > 0)).tolist() if h not in used]
            if not ok:
                continue
            r = rate[j]
            key = (-(math.inf if r <= 0 else float(view.remaining[j]) / r), j)
            if best_key is None or key < best_key:
                mine = {h for pl in current.get(j, []) for h in pl.nodes.tolist()}
                best_j, best_key = j, key
                best_h = min(ok, key=lambda h: (-x[h], h not in mine, h))
        if best_j < 0:
            break
        j, h, w = best_j, best_h, int(workers[best_j])
        if state.cpu_node[h]:
            ids = [-1] * w
        else:
            own = {g for pl in current.get(j, [])
                   for n, g in zip(pl.nodes.tolist(), pl.gpus.tolist()) if n == h}
            ids = sorted(np.flatnonzero(state.gpu[h]).tolist(), key=lambda g: (g not in own, g))[:w]
        pl = Placement(np.full(w, h, dtype=np.int64), np.asarray(ids, dtype=np.int64))
        plan.setdefault(j, []).append(pl)
        state = state.take(view, j, pl)
        rate[j] = view.rate_of(j, plan[j])
    return state
