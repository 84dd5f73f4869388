"""Parts of the ANDREAS baselines (docs/andreas.md): node classes, the configuration table
of a decision point, and turning a plan into decisions.

* :class:`NodeClasses` groups GPU nodes that are interchangeable for ANDREAS (one GPU
  type, GPU count, cores, memory and power model, assumption *node classes and binding*) and
  prices a node with g busy GPUs: c_{ng} = (idle_w + g x gpu_w) x price x PUE / 3.6e6 EUR/s
  (docs/andreas.md, *Semantics* item 2).
* :func:`config_table` runs :func:`~baselines.andreas.configs.config_table_nb` for a set
  of jobs: every (class, g) with g in [min_workers, min(max_workers, G_n)], its time
  t_{jng} (restart delay and checkpoint loss included for a job that ran before unless
  it keeps its configuration), its cost t x c, the D* / D*^C lists and the pressure Delta_j (Eq. 2).
* :func:`current_configs` gives the (node, class, g) of running jobs. Which running jobs
  a plan may not touch (pinned), what they leave per node, and the cores and memory of the
  search are built in one compiled call by :func:`~baselines.andreas.prep.plan_tables_nb`
  (its NumPy reference is in ``tests/baselines/andreas/test_andreas_prep.py``).
* :func:`plan_decisions` turns a plan (node and g per job) into Preempt / Move / Start
  decisions with the lowest free GPU ids of each node (ANDREAS has no topology).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from baselines.andreas.configs import config_table_nb, current_configs_nb
from hetgym.decisions import Decision, Move, Placement, Preempt, Start
from hetgym.sim.codes import GRACE, RUNNING
from hetgym.sim.rules import covers

__all__ = [
    "ConfigTable",
    "NodeClasses",
    "config_table",
    "current_configs",
    "eur_per_joule",
    "fits_node",
    "may_fit",
    "plan_decisions",
    "start_outside_model",
    "take_gpus",
]


def eur_per_joule(view) -> float:
    """EUR per joule of IT energy: price (EUR/kWh) x PUE / 3.6e6."""
    return float(view.options.energy_price * view.options.pue / 3.6e6)


@dataclass
class NodeClasses:
    """GPU nodes grouped into classes of interchangeable nodes (assumption *node classes and
    binding*).

    ``of_node[n]`` = class of node n (-1 for CPU nodes); class k: device ``dev[k]``,
    ``gpus[k]``, ``cpus[k]``, ``mem[k]``, ``idle_w[k]``, ``gpu_w[k]``, its nodes
    ``nodes[start[k]:start[k+1]]`` (ascending), and ``rate[k, g]`` = EUR/s with g busy GPUs.
    """

    of_node: np.ndarray
    dev: np.ndarray
    gpus: np.ndarray
    cpus: np.ndarray
    mem: np.ndarray
    idle_w: np.ndarray
    gpu_w: np.ndarray
    start: np.ndarray
    nodes: np.ndarray
    rate: np.ndarray

    @classmethod
    def of(cls, view) -> NodeClasses:
        """The classes of the view's cluster (static for a run)."""
        keys: dict[tuple, int] = {}
        n_nodes = len(view.node_device)
        of_node = np.full(n_nodes, -1, dtype=np.int64)
        for n in range(n_nodes):
            d = int(view.node_device[n])
            if view.dev_is_cpu[d] or view.node_gpus[n] <= 0:
                continue
            key = (d, int(view.node_gpus[n]), float(view.node_cpus[n]), float(view.node_mem[n]),
                   float(view.node_idle_w[n]), float(view.node_gpu_w[n]))
            of_node[n] = keys.setdefault(key, len(keys))
        ks = list(keys)
        arr = np.asarray(ks, dtype=np.float64).reshape(len(ks), 6)
        order = np.argsort(of_node[of_node >= 0], kind="stable")
        members = np.flatnonzero(of_node >= 0)[order].astype(np.int64)
        start = np.searchsorted(of_node[members], np.arange(len(ks) + 1)).astype(np.int64)
        gmax = int(arr[:, 1].max()) if len(ks) else 0
        g = np.arange(gmax + 1, dtype=np.float64)
        rate = (arr[:, 4:5] + g[None, :] * arr[:, 5:6]) * eur_per_joule(view)
        return cls(of_node=of_node, dev=arr[:, 0].astype(np.int64), gpus=arr[:, 1].astype(np.int64),
                   cpus=arr[:, 2].copy(), mem=arr[:, 3].copy(), idle_w=arr[:, 4].copy(),
                   gpu_w=arr[:, 5].copy(), start=start, nodes=members, rate=np.ascontiguousarray(rate))


@dataclass
class ConfigTable:
    """Configurations of ``jobs`` (rows) at one decision point (see :func:`config_table`)."""

    jobs: np.ndarray
    cls: np.ndarray
    g: np.ndarray
    t: np.ndarray
    cost: np.ndarray
    dl: np.ndarray
    dlen: np.ndarray
    cl: np.ndarray
    clen: np.ndarray
    delta: np.ndarray
    mj: np.ndarray

    def entries(self, i: int) -> list[int]:
        """Row i's entries in ANDREAS order: D* by cost, then D*^C by time."""
        return self.dl[i, : self.dlen[i]].tolist() + self.cl[i, : self.clen[i]].tolist()


def current_configs(view, classes: NodeClasses, jobs: np.ndarray) -> tuple[np.ndarray, ...]:
    """(node, class, g) of each job's current run when it holds GPUs of one GPU node
    (running or in a grace period), else (-1, -1, -1); int64 arrays."""
    jobs = np.ascontiguousarray(jobs, dtype=np.int64)
    out = np.empty((3, len(jobs)), dtype=np.int64)
    sim = getattr(view, "simulator", None)  # its arrays as they are (the view's are read-only views)
    js = sim.js if sim is not None else view
    current_configs_nb(jobs, js.nworkers, js.status, js.worker_node, classes.of_node, RUNNING,
                       GRACE, out[0], out[1], out[2])
    return out[0], out[1], out[2]


def config_table(view, classes: NodeClasses, jobs: np.ndarray,
                 current: tuple[np.ndarray, np.ndarray] | None = None) -> ConfigTable:
    """The configuration table of ``jobs`` now (module docstring; docs/andreas.md, *Semantics*
    items 1-3). ``current``: the jobs' (class, g) from :func:`current_configs`, if already known."""
    jobs = np.ascontiguousarray(jobs, dtype=np.int64)
    nj = len(jobs)
    kmax = max(1, int(classes.gpus.sum()))
    if current is None:
        _, cur_cls, cur_g = current_configs(view, classes, jobs)
    else:
        cur_cls, cur_g = current
    out = ConfigTable(jobs=jobs, cls=np.zeros((nj, kmax), np.int64), g=np.zeros((nj, kmax), np.int64),
                      t=np.zeros((nj, kmax)), cost=np.zeros((nj, kmax)),
                      dl=np.zeros((nj, kmax), np.int64), dlen=np.zeros(nj, np.int64),
                      cl=np.zeros((nj, kmax), np.int64), clen=np.zeros(nj, np.int64),
                      delta=np.zeros(nj), mj=np.zeros(nj))
    if nj == 0:
        return out
    o = view.options
    ckpt = float(o.checkpoint_interval) if o.checkpoint_unit == "work" else 0.0
    config_table_nb(jobs, view.remaining, view.work, ckpt, view.first_start, float(o.restart_delay),
                    view.tput, view.scale_exp, view.min_workers, view.max_workers, view.cpus_need,
                    view.mem, view.deadline, np.ascontiguousarray(cur_cls, dtype=np.int64),
                    np.ascontiguousarray(cur_g, dtype=np.int64), classes.dev, classes.gpus,
                    classes.cpus, classes.mem, classes.idle_w, classes.gpu_w, eur_per_joule(view),
                    float(view.now), out.cls, out.g, out.t, out.cost, out.dl, out.dlen, out.cl,
                    out.clen, out.delta, out.mj)
    return out


def fits_node(view, cap, j: int, n: int, g: int) -> bool:
    """Whether g workers of job j fit on node n of the scratch capacity ``cap``."""
    d = int(view.node_device[n])
    return (cap.free_gpus[n] >= g and covers(cap.free_cpus[n], g * view.cpus_need[j, d])
            and covers(cap.free_mem[n], g * view.mem[j]))


def take_gpus(view, cap, j: int, n: int, g: int) -> Placement:
    """Take the g lowest free GPU ids of node n from ``cap`` for job j; their placement."""
    gpus = np.flatnonzero(cap.gpu_owner[n, : int(view.node_gpus[n])] < 0)[:g]
    pl = Placement.of([n] * g, gpus.tolist())
    cap.take(j, pl.nodes, pl.gpus)
    return pl


def relabel_nodes(targets: dict[int, tuple[int, int]], current: dict[int, tuple[int, int]],
                  classes: NodeClasses, free0: np.ndarray,
                  rc: tuple[dict[int, np.ndarray], np.ndarray] | None = None) -> dict[int, tuple[int, int]]:
    """The same plan with its nodes permuted within each class to keep running jobs where
    they are (assumption *node classes and binding*: nodes of a class are interchangeable, so
    f_OBJ does not change).

    ``current[j] = (node, g)`` of the running jobs. Each planned node's set of jobs (a bin)
    goes to a node of its class that can hold it (``free0``: GPUs left by pinned jobs;
    ``rc = (need, node_rc0)``: each planned job's (cores, memory) and the cores and memory
    left by pinned jobs, as :func:`~baselines.andreas.prep.plan_tables_nb` gives them), greedily by the number of its jobs
    that would keep their node and g there (most first; ties: the bin's own node, then
    lower indices); the other bins keep their node when it is still free, else take the
    lowest free node of the class that holds them. If some bin is then left without a
    node, the plan is returned as it is (every bin fits its own node).
    """
    if not current:  # every bin keeps its own node (it fits there: the plan put it there)
        return dict(targets)
    bins: dict[int, list[int]] = {}
    for j, (n, _) in targets.items():
        bins.setdefault(n, []).append(j)
    need = {n: sum(targets[j][1] for j in js) for n, js in bins.items()}
    if rc is not None:
        need_rc = {n: sum((rc[0][j] for j in js), np.zeros(2)) for n, js in bins.items()}

    def holds(n: int, m: int) -> bool:
        return need[n] <= free0[m] and (rc is None or bool(covers(rc[1][m], need_rc[n]).all()))

    pairs = []
    for n, js in bins.items():
        score: dict[int, int] = {}
        for j in js:
            c = current.get(j)
            if c is not None and c[1] == targets[j][1] and classes.of_node[c[0]] == classes.of_node[n]:
                score[c[0]] = score.get(c[0], 0) + 1
        pairs += [(-k, m != n, n, m) for m, k in score.items() if holds(n, m)]
    pairs.sort()
    where: dict[int, int] = {}
    taken: set[int] = set()
    for _, _, n, m in pairs:
        if n not in where and m not in taken:
            where[n] = m
            taken.add(m)
    for n in sorted(bins):
        if n in where:
            continue
        k = int(classes.of_node[n])
        cands = [n] + classes.nodes[classes.start[k]:classes.start[k + 1]].tolist()
        m = next((m for m in cands if m not in taken and holds(n, m)), None)
        if m is None:
            return dict(targets)
        where[n] = m
        taken.add(m)
    return {j: (where[n], g) for j, (n, g) in targets.items()}


def may_fit(view, free_gpus: np.ndarray, free_cpus: np.ndarray, free_mem: np.ndarray,
            targets: dict[int, tuple[int, int]]) -> np.ndarray:
    """Whether each target ``(node, g)`` of job j (in ``targets`` order) fits its node's free
    GPUs, cores and memory: one vectorised test (most planned jobs do not fit there)."""
    tj = np.fromiter(targets.keys(), dtype=np.int64, count=len(targets))
    tn = np.fromiter((v[0] for v in targets.values()), dtype=np.int64, count=len(targets))
    tg = np.fromiter((v[1] for v in targets.values()), dtype=np.int64, count=len(targets))
    td = np.asarray(view.node_device)[tn]
    return ((np.asarray(free_gpus)[tn] >= tg)
            & covers(np.asarray(free_cpus)[tn], tg * view.cpus_need[tj, td])
            & covers(np.asarray(free_mem)[tn], tg * view.mem[tj]))


def plan_decisions(view, cap, targets: dict[int, tuple[int, int]], replan: list[int]) -> list[Decision]:
    """Decisions that carry out a plan.

    ``targets[j] = (node, g)`` for every job the plan runs; ``replan`` = running jobs the
    plan was free to change. A running job whose node and g are unchanged keeps its GPUs;
    one not in the plan is preempted (GP = 0); one whose configuration changes is moved
    (:class:`~hetgym.decisions.Move`: restart delay, checkpoint rule, no preemption
    counted); new jobs start. Moved and new jobs take, in ``targets`` order, the lowest
    GPU ids of their node left free by the jobs that stay. Moves are ordered so that
    each one's GPUs are free when it is applied; a cycle (two jobs swapping GPUs) is
    broken by preempting one and starting it afterwards. A job whose cores or memory do
    not fit is not started (a moving one is preempted instead). ``cap`` (a scratch
    capacity model) ends in the state after the decisions.
    """
    preempts: list[Decision] = []
    movers: list[int] = []
    keep: set[int] = set()
    for j in replan:
        tgt = targets.get(j)
        if tgt is None:
            preempts.append(Preempt(j))
            cap.give(j)
        elif tgt[1] == int(view.nworkers[j]) and int(view.worker_node[j, 0]) == tgt[0]:
            keep.add(j)
        else:
            movers.append(j)
    live = cap.copy()  # the engine's state once the preemptions above are applied
    for j in movers:
        cap.give(j)
    placements: dict[int, Placement] = {}
    # whether each target fits its node before any start (capacity only shrinks below, so
    # a job that does not fit now does not fit later)
    may = may_fit(view, cap.free_gpus, cap.free_cpus, cap.free_mem, targets).tolist()
    for i, (j, (n, g)) in enumerate(targets.items()):
        if j in keep:
            continue
        if may[i] and fits_node(view, cap, j, n, g):
            placements[j] = take_gpus(view, cap, j, n, g)
        elif j in movers:
            preempts.append(Preempt(j))
            live.give(j)
    pending = [j for j in movers if j in placements]
    moves: list[Decision] = []
    restart: set[int] = set()
    while pending:
        for j in pending:
            if _can_move(view, live, j, placements[j]):
                live.give(j)
                live.take(j, placements[j].nodes, placements[j].gpus)
                moves.append(Move(j, placements[j]))
                pending.remove(j)
                break
        else:
            j = pending.pop(0)
            preempts.append(Preempt(j))
            live.give(j)
            restart.add(j)
    starts = [Start(j, None, pl) for j, pl in placements.items() if j not in movers or j in restart]
    return preempts + moves + starts


def _can_move(view, live, j: int, pl: Placement) -> bool:
    """Whether running job j can move to ``pl`` on the scratch state ``live`` (its GPUs free
    or j's own; cores and memory within what is free plus what j holds on each node)."""
    g = int(view.nworkers[j])
    own = view.worker_node[j, :g].tolist()
    for n, q in zip(pl.nodes.tolist(), pl.gpus.tolist()):
        if live.gpu_owner[n, q] not in (-1, j):
            return False
    for n in set(pl.nodes.tolist()):
        d = int(view.node_device[n])
        k = int((pl.nodes == n).sum()) - own.count(n)
        if not (covers(live.free_cpus[n], k * view.cpus_need[j, d])
                and covers(live.free_mem[n], k * view.mem[j])):
            return False
    return True


def start_outside_model(view, cap, jobs: list[int]) -> list[Decision]:
    """Start waiting jobs that no single GPU node can hold (outside ANDREAS' model) on the
    fastest device type that can hold them and has room, with the default placement."""
    out: list[Decision] = []
    for j in jobs:
        speed = np.where(view.holdable[j], view.tput[j], 0.0)
        for d in np.argsort(-speed, kind="stable").tolist():
            if speed[d] <= 0:
                break
            pl = cap.place(j, d)
            if pl is not None:
                out.append(Start(j, d, pl))
                break
    return out
