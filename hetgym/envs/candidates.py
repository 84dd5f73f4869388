"""Candidate decisions the decision envs offer (:mod:`hetgym.envs.decision_base`): which
servers hold a gang, the simulator's default placements, and placement keys."""

from __future__ import annotations

from typing import Any

import numpy as np

from hetgym.decisions import Decision, Placement, Start
from hetgym.sim.rules import covers

__all__ = ["default_starts", "holds_gang", "own_on_nodes", "placement_key", "single_server"]


def placement_key(pl: Placement) -> tuple[tuple[int, int], ...]:
    """The (node, GPU) pairs of a placement, sorted: two placements with the same key
    hold the same devices (worker order does not matter to the simulator's rates)."""
    return tuple(sorted(zip(np.asarray(pl.nodes).tolist(), np.asarray(pl.gpus).tolist())))


def holds_gang(view: Any, j: int, w: int, gpus: np.ndarray, cpus: np.ndarray,
               mem: np.ndarray) -> np.ndarray:
    """bool[N]: GPU servers of a type where job ``j`` runs that hold ``w`` of its workers
    with ``gpus`` / ``cpus`` / ``mem`` available per node."""
    d = view.node_device
    return ((gpus >= w) & (view.tput[j, d] > 0) & ~view.dev_is_cpu[d]
            & covers(cpus, w * view.cpus_need[j, d]) & covers(mem, w * view.mem[j]))


def single_server(view: Any, j: int, w: int) -> bool:
    """Whether some GPU server where job ``j`` runs holds ``w`` of its workers when empty."""
    return bool(holds_gang(view, j, w, view.node_gpus, view.node_cpus, view.node_mem).any())


def default_starts(view: Any, j: int) -> list[Decision]:
    """One start of job ``j`` per device type where its gang fits now, placed by the
    simulator's placement policy (jobs no single server holds)."""
    out: list[Decision] = []
    for c in range(len(view.devices)):
        if view.holdable[j, c]:
            pl = view.capacity().place(j, c)
            if pl is not None:
                out.append(Start(j, c, pl))
    return out


def own_on_nodes(view: Any, j: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per node: GPUs, cores and memory that running job ``j`` holds there (what a
    :class:`~hetgym.decisions.Move` may reuse)."""
    n_nodes = len(view.node_device)
    g, c, m = np.zeros(n_nodes, np.int64), np.zeros(n_nodes), np.zeros(n_nodes)
    w = int(view.nworkers[j])
    for n, gpu in zip(view.worker_node[j, :w].tolist(), view.worker_gpu[j, :w].tolist()):
        g[n] += gpu >= 0
        c[n] += view.cpus_need[j, view.node_device[n]]
        m[n] += view.mem[j]
    return g, c, m
