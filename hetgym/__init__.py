"""hetgym: scheduling deep-learning jobs on hybrid clusters as Gymnasium environments.

``import hetgym`` registers the environments (``HetCluster-v0``).
"""

from __future__ import annotations

from gymnasium.envs.registration import register as _register

from hetgym.decisions import Placement, Preempt, Scheduler, SchedulingError, Start, Wait
from hetgym.devices import CATALOGUE, DeviceType, device_names
from hetgym.metrics import Result
from hetgym.runner import StalledRunWarning, simulate
from hetgym.specs import ClusterSpec, NodeSpec, Objective, PowerModel, Scenario, SimOptions
from hetgym.workload import Workload, WorkloadError
from hetgym import scenarios

__version__ = "0.1.0"

__all__ = [
    "ClusterSpec", "NodeSpec", "PowerModel", "SimOptions", "Objective", "Scenario",
    "Workload", "WorkloadError", "simulate", "StalledRunWarning", "Result", "Start", "Preempt", "Wait",
    "Placement", "Scheduler", "SchedulingError", "DeviceType", "CATALOGUE", "device_names",
    "scenarios", "__version__",
]

_register(id="HetCluster-v0", entry_point="hetgym.envs.hetcluster:HetClusterEnv")
