"""Per-node arrays (:class:`~hetgym.sim.state.layout.NodeArrays`) of a cluster, and the one
gang-fit rule (:func:`gang_fits`) on them
(:mod:`hetgym.sim.state` describes the whole)."""

from __future__ import annotations

import numpy as np

from hetgym.sim.rules import slots
from hetgym.sim.state.layout import NodeArrays
from hetgym.specs import ClusterSpec, Scenario


def node_names(scenario: Scenario) -> list[str]:
    """Per-node names ``"<group>-<i>"`` in node index order."""
    return [f"{s.name}-{i}" for s in scenario.cluster.nodes for i in range(s.count)]


_NODE_CACHE: dict[int, tuple[Scenario, NodeArrays]] = {}


def build_nodes(scenario: Scenario) -> NodeArrays:
    """Expand node groups into per-node arrays (cached per scenario object; read-only use)."""
    hit = _NODE_CACHE.get(id(scenario))
    if hit is not None and hit[0] is scenario:
        return hit[1]
    nodes = cluster_nodes(scenario.cluster)
    if len(_NODE_CACHE) > 8:
        _NODE_CACHE.clear()
    _NODE_CACHE[id(scenario)] = (scenario, nodes)
    return nodes


def cluster_nodes(cluster: ClusterSpec) -> NodeArrays:
    """Per-node arrays of a cluster (node groups expanded, in group order)."""
    devices = cluster.device_types
    spec_nodes = [s for s in cluster.nodes for _ in range(s.count)]
    n = len(spec_nodes)
    gmax = max(1, max(s.gpus for s in spec_nodes))
    dist = np.zeros((n, gmax, gmax))
    socket = np.full((n, gmax), -1, dtype=np.int64)
    for k, s in enumerate(spec_nodes):
        if s.gpus:
            dist[k, : s.gpus, : s.gpus] = s.distance_matrix()
            socket[k, : s.gpus] = s.socket_map()
    power = np.asarray([s.power_w() for s in spec_nodes], dtype=np.float64).reshape(n, 3)
    dev = np.asarray([devices.index(s.device) for s in spec_nodes], dtype=np.int64)
    by_dev = np.argsort(dev, kind="stable").astype(np.int64)
    dev_start = np.searchsorted(dev[by_dev], np.arange(len(devices) + 1)).astype(np.int64)
    return NodeArrays(
        dev=dev,
        gpus=np.asarray([s.gpus for s in spec_nodes], dtype=np.int64),
        cpus=np.asarray([float(s.cpus) for s in spec_nodes]),
        mem=np.asarray([float(s.mem_gb) for s in spec_nodes]),
        dist=dist,
        idle_w=np.ascontiguousarray(power[:, 0]),
        gpu_w=np.ascontiguousarray(power[:, 1]),
        core_w=np.ascontiguousarray(power[:, 2]),
        dev_is_cpu=np.asarray([d == "cpu" for d in devices], dtype=np.bool_),
        dev_start=dev_start,
        by_dev=by_dev,
        socket=socket,
        sockets=np.asarray([max(1, int(s.sockets)) for s in spec_nodes], dtype=np.int64),
        switch_w=np.zeros(n),
    )


def gang_fits(workers: np.ndarray, cpus_need: np.ndarray, mem: np.ndarray,
              nodes: NodeArrays) -> np.ndarray:
    """``bool[J, C]``: the nodes of device type c, all free, could hold job j's whole gang.

    The one rule behind :attr:`JobArrays.holdable`, ``View.holdable``, the
    baselines' device choice and :meth:`Workload.check_cluster`: a worker takes
    1 GPU (none on a CPU node), ``cpus_need[j, c]`` cores and ``mem[j]`` GB; the
    gang fits type c when the per-node worker counts of its nodes add up to
    ``workers[j]``. Throughput is not looked at.
    """
    return gang_slots(workers, cpus_need, mem, nodes) >= workers[:, None]


def gang_slots(workers: np.ndarray, cpus_need: np.ndarray, mem: np.ndarray,
               nodes: NodeArrays) -> np.ndarray:
    """``int64[J, C]``: workers of job j that all nodes of type c, free, hold together
    (the count behind :func:`gang_fits`, capped at 2**30)."""
    j_n, c_n = cpus_need.shape
    tot = np.zeros((j_n, c_n), dtype=np.int64)
    for n in range(len(nodes.dev)):
        tot[:, int(nodes.dev[n])] += node_slots(n, cpus_need, mem, nodes)
    return np.minimum(tot, _BIG)


_BIG = 1 << 30


def node_slots(n: int, cpus_need: np.ndarray, mem: np.ndarray, nodes: NodeArrays) -> np.ndarray:
    """``int64[J]``: workers of each job that node ``n``, all free, holds (1 GPU each on a
    GPU node; ``cpus_need[:, type of n]`` cores and ``mem`` GB each; capped at 2**30)."""
    d = int(nodes.dev[n])
    per = np.full(len(mem), _BIG if nodes.dev_is_cpu[d] else int(nodes.gpus[n]), dtype=np.int64)
    c = cpus_need[:, d]
    k = slots(nodes.cpus[n], np.where(c > 0, c, 1.0))
    per = np.where(c > 0, np.minimum(per, k), per)
    k = slots(nodes.mem[n], np.where(mem > 0, mem, 1.0))
    per = np.where(mem > 0, np.minimum(per, k), per).astype(np.int64)
    return np.minimum(per, _BIG)
