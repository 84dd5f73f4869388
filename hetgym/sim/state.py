"""Typed arrays that cross into the Numba kernels, built from a :class:`~hetgym.specs.Scenario`.

The simulator's whole state is two NamedTuples, passed whole to every kernel
(the gymnax / Jumanji shape; the kernels get their structref mirror, the same
arrays, from :mod:`hetgym.sim.mirror`):

* :class:`Params` (static for a run): :class:`JobArrays`, :class:`NodeArrays`,
  :class:`Options` (scalars).
* :class:`State` (dynamic): :class:`JobState`, :class:`NodeState`,
  :class:`RunState` (queue, running set, counters, accumulators, logs and the
  kernels' scratch arrays, allocated once).

Counters and accumulators are arrays indexed by the named constants ``CTR_*`` / ``ACC_*``
(``run.ctr[CTR_Q]``, ``run.acc[ACC_NOW]``) so that kernels can update them in place.

The queue keeps arrival order with suspended jobs at the head, in a buffer
``run.queue[ctr[CTR_QHEAD]:ctr[CTR_QTAIL]]`` where removed entries are
tombstones (-1): removing a job costs O(1) (``job.qpos`` gives its slot) and
:func:`hetgym.sim.kernels.queue_compact_nb` squeezes the tombstones out when
a reader needs the live queue.

The code is in :mod:`hetgym.sim.state_types` (the NamedTuples and the ``CTR_*`` /
``ACC_*`` indices), :mod:`hetgym.sim.state_nodes` (node arrays, :func:`gang_fits`),
:mod:`hetgym.sim.state_jobs` (job arrays, windows, :func:`best_durations`) and
:mod:`hetgym.sim.state_init` (:func:`build_params`, :func:`new_state`, :func:`refill`);
every name is imported from here.
"""

from __future__ import annotations

from hetgym.sim.state_init import build_params, max_copies, min_units, new_state, refill
from hetgym.sim.state_jobs import (
    best_durations,
    build_jobs,
    cut_window,
    interference_matrix,
    job_types,
)
from hetgym.sim.state_nodes import (
    build_nodes,
    cluster_nodes,
    gang_fits,
    gang_slots,
    node_names,
    node_slots,
)
from hetgym.sim.state_types import (
    ACC_ENERGY,
    ACC_NOW,
    ACC_POWER,
    ACC_ROUND,
    ACC_WAKE,
    CTR_ARR,
    CTR_DONE,
    CTR_ERR,
    CTR_EV,
    CTR_Q,
    CTR_QHEAD,
    CTR_QTAIL,
    CTR_RUN,
    CTR_SEG,
    N_ACC,
    N_CTR,
    JobArrays,
    JobState,
    NodeArrays,
    NodeState,
    Options,
    Params,
    RunState,
    State,
)

__all__ = [
    "ACC_ENERGY",
    "ACC_NOW",
    "ACC_POWER",
    "ACC_ROUND",
    "ACC_WAKE",
    "CTR_ARR",
    "CTR_DONE",
    "CTR_ERR",
    "CTR_EV",
    "CTR_Q",
    "CTR_QHEAD",
    "CTR_QTAIL",
    "CTR_RUN",
    "CTR_SEG",
    "JobArrays",
    "JobState",
    "N_ACC",
    "N_CTR",
    "NodeArrays",
    "NodeState",
    "Options",
    "Params",
    "RunState",
    "State",
    "best_durations",
    "build_jobs",
    "build_nodes",
    "build_params",
    "cluster_nodes",
    "cut_window",
    "gang_fits",
    "gang_slots",
    "interference_matrix",
    "job_types",
    "max_copies",
    "min_units",
    "new_state",
    "node_names",
    "node_slots",
    "refill",
]
