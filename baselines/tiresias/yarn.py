"""YARN-CS: YARN's capacity scheduler as Tiresias and Hadar use it.

Source: ``SymbioticLab/Tiresias`` ``simulator/run_sim.py::one_queue_fifo_sim_jobs`` with
``--scheme=yarn`` and ``simulator/switch.py::ms_yarn_alloc_res``; docs/gavel.md.
One FIFO queue (arrival order), non-preemptive, gang (all workers at once), strict: the
scan stops at the first job that cannot start. Placement is consolidated: the
simulator's ``pack`` policy (a job that fits one node takes the tightest such node,
larger jobs the fewest nodes), whatever the scenario's default placement. GPU types
are ignored: a job tries the types it can run on in a random order drawn once per
decision point (:class:`~baselines.common.unaware.AnyType`).

Assumptions: Gavel's and Tiresias' (docs/gavel.md) do not apply; the random type order is
hetgym's reading of "unaware of GPU types" (Tiresias' simulator has a single GPU type).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from baselines.common.parts import ArrivalOrder, GreedyAdmission
from baselines.common.unaware import AnyType
from hetgym.decisions import Decision, SchedulerBase
from hetgym.sim.codes import PlacementPolicy

__all__ = ["YarnCS"]


@dataclass
class YarnCS(SchedulerBase):
    """Strict FIFO, gang, consolidated (pack) placement, heterogeneity-unaware.

    Attributes:
        order: Device-type order of :class:`~baselines.common.unaware.AnyType`
            (``"random"`` or ``"cluster"``).
    """

    order: str = "random"
    round_length: float | None = None
    devices: AnyType = field(init=False)

    def __post_init__(self) -> None:
        self.devices = AnyType(self.order)
        self._admission = GreedyAdmission(blocking=True)

    def reset(self, view) -> None:
        """Nothing to prepare."""

    def decide(self, view) -> list[Decision]:
        """Start waiting jobs in arrival order until one does not fit."""
        q = view.queue
        if len(q) == 0:
            return []
        cap = view.capacity(int(PlacementPolicy.PACK))
        return list(self._admission.admit(view, ArrivalOrder().order(view, q), self.devices, cap))


BASELINES = {"yarn-cs": YarnCS}
