"""Typed parts of the AlloX family (kept as one import point).

The parts live in two modules, by what they hold:

* :mod:`baselines.allox.machines`: machines per device type, the machine pool at a
  decision point, AlloX's min-cost matching, starting (job, device type) pairs;
* :mod:`baselines.allox.shares`: DRF share models, AlloX's per-user progress and the
  paper's fairness metric.
"""

from __future__ import annotations

from baselines.allox.machines import (
    MachinePool,
    admit_pairs,
    match_first_jobs,
    may_fit,
    run_start_kernel,
    slot_cores,
    slot_mem,
    slots_per_device,
)
from baselines.allox.shares import (
    AlloXProgress,
    DominantShare,
    PooledShare,
    ShareModel,
    allox_progress_timeline,
    ceil_users,
    job_shares,
)

__all__ = [
    "AlloXProgress",
    "DominantShare",
    "MachinePool",
    "PooledShare",
    "ShareModel",
    "admit_pairs",
    "allox_progress_timeline",
    "ceil_users",
    "job_shares",
    "match_first_jobs",
    "may_fit",
    "run_start_kernel",
    "slot_cores",
    "slot_mem",
    "slots_per_device",
]
