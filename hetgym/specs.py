"""Static parameters of a simulation: nodes, cluster, options, scenario.

Everything here is a frozen dataclass; the simulator turns it
into arrays (:mod:`hetgym.sim.state`) before anything runs.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, Sequence

import numpy as np

from hetgym import validate as _v

from hetgym.devices import get_device

if TYPE_CHECKING:  # pragma: no cover
    from hetgym.workload import Workload

__all__ = [
    "PowerModel",
    "NodeSpec",
    "ClusterSpec",
    "SimOptions",
    "Objective",
    "Scenario",
    "default_topology",
    "default_gpu_sockets",
    "minsky_topology",
    "dgx1_topology",
]

OBJECTIVES = ("jct", "slowdown", "makespan", "energy_cost", "tardiness")


def default_topology(gpus: int, sockets: int) -> np.ndarray:
    """GPU distance matrix of a server with ``gpus`` GPUs split evenly over ``sockets``.

    Distances (TOPO-AWARE levels): 0 on the diagonal, 1 for two GPUs under the
    same PCIe switch (pairs 2k, 2k+1), 2 on the same socket, 3 across sockets.
    """
    d = np.zeros((gpus, gpus), dtype=np.float64)
    per_socket = max(1, -(-gpus // max(1, sockets)))
    for a in range(gpus):
        for b in range(gpus):
            if a == b:
                continue
            if a // per_socket != b // per_socket:
                d[a, b] = 3.0
            elif a // 2 == b // 2:
                d[a, b] = 1.0
            else:
                d[a, b] = 2.0
    return d


def default_gpu_sockets(gpus: int, sockets: int) -> np.ndarray:
    """Socket of each GPU of a server with ``gpus`` GPUs split evenly over ``sockets``
    (the split :func:`default_topology` assumes)."""
    per_socket = max(1, -(-gpus // max(1, sockets)))
    return np.arange(gpus, dtype=np.int64) // per_socket


def minsky_topology() -> np.ndarray:
    """GPU distance levels of an IBM Power8 S822LC "Minsky" server (TOPO-AWARE, SC'17 sec. 3.1).

    2 sockets x 2 P100; GPUs 0, 1 on socket 0 and 2, 3 on socket 1; each pair is joined
    by NVLink (level 1); pairs across sockets go over the system bus (level 3).
    """
    return np.array([[0, 1, 3, 3], [1, 0, 3, 3], [3, 3, 0, 1], [3, 3, 1, 0]], dtype=np.float64)


#: NVLink edges of a DGX-1 (V100) hybrid cube-mesh.
DGX1_NVLINK = ((0, 1), (0, 2), (0, 3), (0, 4), (1, 2), (1, 3), (1, 5), (2, 3), (2, 6), (3, 7),
               (4, 5), (4, 6), (4, 7), (5, 6), (5, 7), (6, 7))


def dgx1_topology() -> np.ndarray:
    """GPU distance levels of an NVIDIA DGX-1 (8 V100, hybrid cube-mesh).

    Level 1 for the NVLink pairs of :data:`DGX1_NVLINK`, 2 for other pairs on one
    socket (GPUs 0-3 / 4-7), 3 across sockets.
    """
    d = np.zeros((8, 8), dtype=np.float64)
    for a in range(8):
        for b in range(8):
            if a != b:
                d[a, b] = 2.0 if a // 4 == b // 4 else 3.0
    for a, b in DGX1_NVLINK:
        d[a, b] = d[b, a] = 1.0
    return d


@dataclass(frozen=True)
class PowerModel:
    """Node power: ``idle_w`` while on, plus ``gpu_active_w`` per busy GPU and
    ``cpu_core_active_w`` per busy CPU core. ``None`` fields take the defaults
    of the node's device type from the catalogue."""

    idle_w: float | None = None
    gpu_active_w: float | None = None
    cpu_core_active_w: float | None = None

    def __post_init__(self) -> None:
        for name in ("idle_w", "gpu_active_w", "cpu_core_active_w"):
            _v.optional(_v.number, getattr(self, name), f"PowerModel.{name} (W)", lo=0, finite=True)


@dataclass(frozen=True)
class NodeSpec:
    """A group of ``count`` identical nodes.

    Attributes:
        name: Group name (node ``i`` of the group is ``f"{name}-{i}"``).
        count: Number of identical nodes.
        gpu_type: GPU type name from the catalogue, or ``None`` for a CPU node.
        gpus: GPUs per node (0 for a CPU node).
        cpus: CPU cores per node.
        mem_gb: Memory per node in GB.
        sockets: CPU sockets (used by the default GPU topology).
        topology: ``gpus x gpus`` GPU distance matrix (nested lists or array);
            ``None`` builds :func:`default_topology`.
        power: Power model; defaults come from the device catalogue.
        gpu_socket: CPU socket of each GPU (``gpus`` ints in ``0..sockets-1``);
            ``None``: :func:`default_gpu_sockets` (an even split). Interference with the
            ``"socket"`` domain and ``View.node_socket_of_gpu`` read it.
    """

    name: str
    count: int = 1
    gpu_type: str | None = None
    gpus: int = 0
    cpus: int = 8
    mem_gb: float = 64.0
    sockets: int = 1
    topology: Any = None
    power: PowerModel = field(default_factory=PowerModel)
    gpu_socket: Sequence[int] | None = None

    def __post_init__(self) -> None:
        where = f"NodeSpec {self.name!r}"
        for name, lo in (("count", 1), ("gpus", 0), ("sockets", 1)):
            object.__setattr__(self, name, _v.integer(getattr(self, name), f"{where}: {name}", lo=lo))
        for name in ("cpus", "mem_gb"):
            _v.number(getattr(self, name), f"{where}: {name}", lo=0, finite=True)
        if not isinstance(self.power, PowerModel):
            raise TypeError(f"{where}: power must be a PowerModel, got {type(self.power).__name__}")
        if self.gpu_type is not None:
            get_device(self.gpu_type)  # raises on unknown type
            if not get_device(self.gpu_type).is_gpu:
                raise ValueError(f"{where}: gpu_type {self.gpu_type!r} is not a GPU; use None")
            if self.gpus < 1:
                raise ValueError(f"{where}: a GPU node needs gpus >= 1, got {self.gpus}")
        elif self.gpus != 0:
            raise ValueError(f"{where}: gpus={self.gpus} but gpu_type is None")
        if self.topology is not None:
            t = np.asarray(self.topology, dtype=np.float64)
            if t.shape != (self.gpus, self.gpus):
                raise ValueError(
                    f"{where}: topology must be {self.gpus}x{self.gpus}, got shape {t.shape}"
                )
            if not (np.isfinite(t).all() and (t >= 0).all()):
                raise ValueError(f"{where}: topology distances must be finite and >= 0, got {t.tolist()}")
        if self.gpu_socket is not None:
            gs = tuple(int(x) for x in self.gpu_socket)
            if len(gs) != self.gpus or any(not 0 <= x < max(1, self.sockets) for x in gs):
                raise ValueError(f"{where}: gpu_socket must list {self.gpus} socket ids in "
                                 f"0..{max(1, self.sockets) - 1}, got {list(self.gpu_socket)}")
            object.__setattr__(self, "gpu_socket", gs)

    @property
    def device(self) -> str:
        """Device-type key of the node's workers (``"cpu"`` for a CPU node)."""
        return "cpu" if self.gpu_type is None else get_device(self.gpu_type).key

    def distance_matrix(self) -> np.ndarray:
        """GPU distance matrix (``gpus x gpus``)."""
        if self.topology is not None:
            return np.asarray(self.topology, dtype=np.float64)
        return default_topology(self.gpus, self.sockets)

    def socket_map(self) -> np.ndarray:
        """int64[gpus]: CPU socket of each GPU (``gpu_socket``, else an even split over
        ``sockets``)."""
        if self.gpu_socket is not None:
            return np.asarray(self.gpu_socket, dtype=np.int64)
        return default_gpu_sockets(self.gpus, self.sockets)

    def power_w(self) -> tuple[float, float, float]:
        """(idle W of the node, W per busy GPU, W per busy core)."""
        cpu = get_device("cpu")
        if self.gpu_type is None:
            idle_default = 100.0
            gpu_w = 0.0
        else:
            dev = get_device(self.gpu_type)
            idle_default = 100.0 + dev.idle_w * self.gpus
            gpu_w = dev.active_w
        p = self.power
        return (
            idle_default if p.idle_w is None else float(p.idle_w),
            gpu_w if p.gpu_active_w is None else float(p.gpu_active_w),
            cpu.active_w if p.cpu_core_active_w is None else float(p.cpu_core_active_w),
        )


@dataclass(frozen=True)
class ClusterSpec:
    """A cluster: a list of node groups."""

    nodes: Sequence[NodeSpec]

    def __post_init__(self) -> None:
        object.__setattr__(self, "nodes", tuple(self.nodes))
        if not self.nodes:
            raise ValueError("ClusterSpec: needs at least one NodeSpec")
        names = [n.name for n in self.nodes]
        if len(set(names)) != len(names):
            raise ValueError(f"ClusterSpec: node group names must be unique, got {names}")

    @property
    def device_types(self) -> list[str]:
        """Device-type keys present in the cluster, ``cpu`` first, then by catalogue order."""
        from hetgym.devices import CATALOGUE

        present = {n.device for n in self.nodes}
        return [d.key for d in CATALOGUE.values() if d.key in present]

    @property
    def num_nodes(self) -> int:
        """Total number of nodes."""
        return sum(n.count for n in self.nodes)

    def capacity(self, device: str) -> int:
        """Total GPUs of a GPU type, or total CPU cores of CPU nodes for ``"cpu"``."""
        if device == "cpu":
            return sum(n.count * n.cpus for n in self.nodes if n.gpu_type is None)
        return sum(n.count * n.gpus for n in self.nodes if n.device == device)


@dataclass(frozen=True)
class SimOptions:
    """Simulation options (docs/semantics.md).

    Attributes:
        restart_delay: Seconds without progress after a restart or re-allocation.
        checkpoint_interval: Seconds of progress between checkpoints; a job preempted with
            grace period 0 loses progress since its last checkpoint. 0 = no loss.
        round_length: Round length in seconds for round-based schedulers.
        energy_price: EUR per kWh.
        pue: Power usage effectiveness.
        max_preemptions: Per-job preemption limit (``None`` = unlimited).
        scaling_exponent: Multi-worker scaling efficiency ``W ** (exponent - 1)``; 1 = linear.
        topology_coeff: Slowdown per unit of mean GPU distance above 1, times ``comm``.
        network_distance: Distance between workers on different nodes.
        cpu_slot_cores: Cores a worker takes on a CPU node (``None``: the job's ``cpus``).
        placement: Default placement policy: ``"pack"``, ``"spread"`` or ``"topology"``.
        grace_period: Override of every job's grace period (``None``: the job table's).
        horizon: Stop the simulation at this time (s); jobs not done are unfinished.
        idle_power: ``"always"`` (every node draws its idle power for the whole run) or
            ``"busy_nodes"`` (a node draws idle power only while it hosts a worker).
        tardiness_price: EUR per (weight x second) of tardiness in ``total_cost``.
        checkpoint_unit: ``"seconds"`` (``checkpoint_interval`` is seconds of progress) or
            ``"work"`` (it is iterations: a GP=0 preemption or a move keeps whole multiples).
        interference_coeff: Co-location interference (docs/semantics.md, *Interference*):
            a job's rate is divided by ``1 + coeff x s_j x sum of p_k`` over the other
            running jobs sharing an interference domain with it. 0 = off (factor exactly 1).
        interference_domain: ``"socket"`` (share a CPU socket of a node) or ``"node"``.
        interference_table: Optional ``{(job_type_a, job_type_b): slowdown >= 1}``: when
            given, the factor of a job of type a is ``1 / (1 + sum (slowdown - 1))`` over
            its neighbours of type b (missing pairs count 1) and the coefficient is unused.
        slo_slack: A finished job violates its SLO when its placement slowdown
            (exec_time / ideal run time) exceeds this (metric ``slo_violations``).
        fork_sync_delay: Seconds without progress for a job holding >= 2 copies (forking,
            HadarE) when it is started/moved with copies and at every round boundary it keeps
            them (model consolidation); ``None`` = ``restart_delay``. With a restart delay at
            the same instant the larger of the two applies, not their sum.
        max_copies: Most copies a forkable job may hold at once (``None``: the number of GPU
            nodes when some job is ``forkable``, else 1).
    """

    restart_delay: float = 10.0
    checkpoint_interval: float = 0.0
    round_length: float = 360.0
    energy_price: float = 0.172
    pue: float = 1.33
    max_preemptions: int | None = None
    scaling_exponent: float = 1.0
    topology_coeff: float = 0.1
    network_distance: float = 4.0
    cpu_slot_cores: int | None = None
    placement: str = "pack"
    grace_period: float | None = None
    horizon: float = float("inf")
    idle_power: str = "always"
    tardiness_price: float = 1.0
    checkpoint_unit: str = "seconds"
    interference_coeff: float = 0.0
    interference_domain: str = "socket"
    interference_table: Any = None
    slo_slack: float = 1.05
    fork_sync_delay: float | None = None
    max_copies: int | None = None

    def __post_init__(self) -> None:
        if self.idle_power not in ("always", "busy_nodes"):
            raise ValueError(
                f"SimOptions.idle_power must be 'always' or 'busy_nodes', got {self.idle_power!r}")
        if self.checkpoint_unit not in ("seconds", "work"):
            raise ValueError(
                f"SimOptions.checkpoint_unit must be 'seconds' or 'work', got {self.checkpoint_unit!r}")
        for name in ("restart_delay", "checkpoint_interval", "energy_price", "pue",
                     "topology_coeff", "network_distance", "tardiness_price",
                     "interference_coeff", "slo_slack"):
            _v.number(getattr(self, name), f"SimOptions.{name}", lo=0)
        _v.optional(_v.number, self.fork_sync_delay, "SimOptions.fork_sync_delay", lo=0)
        _v.optional(_v.number, self.grace_period, "SimOptions.grace_period", lo=0)
        _v.number(self.horizon, "SimOptions.horizon (s)", lo=0, lo_open=True)
        _v.number(self.round_length, "SimOptions.round_length (s)", lo=0, lo_open=True)
        for name, lo in (("max_copies", 1), ("max_preemptions", 0), ("cpu_slot_cores", 1)):
            value = _v.optional(_v.integer, getattr(self, name), f"SimOptions.{name}", lo=lo)
            object.__setattr__(self, name, value)
        if not 0 < _v.number(self.scaling_exponent, "SimOptions.scaling_exponent") <= 1:
            raise ValueError(
                f"SimOptions.scaling_exponent must be in (0, 1], got {self.scaling_exponent}"
            )
        if self.placement not in ("pack", "spread", "topology"):
            raise ValueError(
                f"SimOptions.placement must be pack, spread or topology, got {self.placement!r}"
            )
        if self.interference_domain not in ("socket", "node"):
            raise ValueError("SimOptions.interference_domain must be socket or node, "
                             f"got {self.interference_domain!r}")
        if self.interference_table is not None:
            object.__setattr__(self, "interference_table",
                               _interference_table(self.interference_table))

    @property
    def interference_on(self) -> bool:
        """Whether co-location interference changes any rate."""
        return self.interference_coeff > 0 or bool(self.interference_table)


def _interference_table(table: Any) -> tuple[tuple[tuple[str, str], float], ...]:
    """``{(type_a, type_b): slowdown}`` (or its items) as a sorted, hashable tuple."""
    items = table.items() if hasattr(table, "items") else table
    out = {}
    for key, v in items:
        if len(key) != 2:
            raise ValueError(f"SimOptions.interference_table: key {key!r} is not a pair of "
                             "job types")
        v = float(v)
        if not v >= 1.0 or v == float("inf"):
            raise ValueError(f"SimOptions.interference_table[{tuple(key)!r}] = {v}; expected a "
                             "finite slowdown >= 1")
        out[(str(key[0]), str(key[1]))] = v
    return tuple(sorted(out.items()))


@dataclass(frozen=True)
class Objective:
    """Reward objective: weights of named terms (see :mod:`hetgym.envs.reward`).

    ``Objective.of("jct")`` is the default. Terms: ``jct``, ``slowdown``,
    ``makespan``, ``energy_cost``, ``tardiness``.
    """

    weights: tuple[tuple[str, float], ...] = (("jct", 1.0),)

    @classmethod
    def of(cls, spec: "str | dict[str, float] | Objective") -> "Objective":
        """Build an objective from a term name or a ``{term: weight}`` dict."""
        if isinstance(spec, Objective):
            return spec
        items = {spec: 1.0} if isinstance(spec, str) else dict(spec)
        for k in items:
            if k not in OBJECTIVES:
                raise ValueError(f"unknown objective term {k!r}; expected one of {OBJECTIVES}")
        return cls(weights=tuple((k, float(v)) for k, v in items.items()))

    def as_dict(self) -> dict[str, float]:
        """Weights as a dict."""
        return dict(self.weights)


@dataclass(frozen=True)
class Scenario:
    """Everything one simulation needs: cluster, jobs, options and objective."""

    cluster: ClusterSpec
    workload: "Workload"
    options: SimOptions = field(default_factory=SimOptions)
    objective: Objective = field(default_factory=Objective)
    name: str = "custom"

    def __post_init__(self) -> None:
        if not isinstance(self.objective, Objective):
            object.__setattr__(self, "objective", Objective.of(self.objective))
        self.workload.check_cluster(self.cluster, self.options)

    @property
    def device_types(self) -> list[str]:
        """Device-type keys of the scenario (its cluster's)."""
        return self.cluster.device_types

    def replace(self, **changes: Any) -> "Scenario":
        """A copy with fields replaced; ``options`` may be a dict of option overrides."""
        opts = changes.pop("options", None)
        if isinstance(opts, dict):
            changes["options"] = replace(self.options, **opts)
        elif opts is not None:
            changes["options"] = opts
        return replace(self, **changes)
