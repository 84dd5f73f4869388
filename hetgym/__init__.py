"""hetgym: scheduling deep-learning jobs on hybrid clusters as Gymnasium environments.

``import hetgym`` registers the environments (``HetCluster-v0`` and the decision envs
``HetClusterPlacement-v0``, ``HetClusterElastic-v0``, ``HetClusterRounds-v0``, docs/envs.md)
with Gymnasium, when Gymnasium is imported (before or after hetgym). The heavier parts
(the simulator with Numba, workloads and metrics with pandas, scenarios) load on
first use of their names, so that a process that only needs some of them starts fast.
"""

from __future__ import annotations

from types import ModuleType as _ModuleType

from hetgym._internals.gym_registration import register_envs as _register_envs
from hetgym._lazy import lazy_attributes
from hetgym.decisions import Move, Placement, Preempt, Scheduler, SchedulingError, Start, Wait
from hetgym.devices import CATALOGUE, DeviceType, device_names
from hetgym.specs import ClusterSpec, NodeSpec, Objective, PowerModel, Scenario, SimOptions

__version__ = "0.1.0"

#: Public names loaded on first use: name -> module that defines it.
_LAZY = {
    "Result": "hetgym.metrics",
    "simulate": "hetgym.runner",
    "StalledRunWarning": "hetgym.runner",
    "Workload": "hetgym.workload",
    "WorkloadError": "hetgym.workload",
}
_SUBMODULES = {"scenarios", "traces", "envs", "sim", "metrics", "runner", "workload", "episodes",
               "schedulers", "compare", "presets", "generators", "throughput"}

__all__ = [
    "ClusterSpec", "NodeSpec", "PowerModel", "SimOptions", "Objective", "Scenario",
    "Workload", "WorkloadError", "simulate", "StalledRunWarning", "Result", "Start", "Preempt", "Move", "Wait",
    "Placement", "Scheduler", "SchedulingError", "DeviceType", "CATALOGUE", "device_names",
    "scenarios", "__version__",
]


__getattr__, __dir__ = lazy_attributes(__name__, globals(), _LAZY, _SUBMODULES)


def _register(registration: _ModuleType) -> None:
    """Register the environment ids with Gymnasium's registry (``registration``)."""
    register = registration.register
    register(id="HetCluster-v0", entry_point="hetgym.envs.hetcluster:HetClusterEnv",
             vector_entry_point="hetgym.envs.batched:HetClusterVecEnv")
    register(id="HetClusterPlacement-v0", entry_point="hetgym.envs.placement:HetClusterPlacementEnv",
             vector_entry_point="hetgym.envs.decision_vec:PlacementVecEnv")
    register(id="HetClusterElastic-v0", entry_point="hetgym.envs.elastic:HetClusterElasticEnv",
             vector_entry_point="hetgym.envs.decision_vec:ElasticVecEnv")
    register(id="HetClusterRounds-v0", entry_point="hetgym.envs.rounds:HetClusterRoundsEnv",
             vector_entry_point="hetgym.envs.decision_vec:RoundsVecEnv")


# now if Gymnasium is imported, else as soon as it is (it is not imported for this alone:
# a process that only simulates never needs it; hetgym/_internals/gym_registration.py)
_register_envs(_register)
