"""Integer codes shared by the Python facade and the Numba kernels."""

from __future__ import annotations

from enum import IntEnum

__all__ = ["JobStatus", "PlacementPolicy", "JobClass"]


class JobStatus(IntEnum):
    """Life cycle of a job in the simulator."""

    FUTURE = 0  #: not arrived yet
    QUEUED = 1  #: arrived (or suspended) and waiting
    RUNNING = 2  #: holding resources
    GRACE = 3  #: preempted, still running until its grace period ends
    DONE = 4  #: completed


class PlacementPolicy(IntEnum):
    """How the simulator places a job's workers when the decision gives no placement."""

    PACK = 0  #: fewest nodes; tightest single node, else largest nodes first; lowest GPU ids
    SPREAD = 1  #: one worker per node, round robin over nodes with most room
    TOPOLOGY = 2  #: like PACK for nodes; GPUs chosen to minimise pairwise distance

    @classmethod
    def of(cls, name: str) -> "PlacementPolicy":
        """Code from a name (``"pack"``, ``"spread"``, ``"topology"``)."""
        try:
            return cls[name.upper()]
        except KeyError:
            raise ValueError(f"unknown placement {name!r}; expected pack, spread or topology") from None


class JobClass(IntEnum):
    """FitGpp job classes."""

    BE = 0  #: best effort
    TE = 1  #: trial and error


#: Plain-int status codes for the Numba kernels (the values of :class:`JobStatus`).
FUTURE, QUEUED, RUNNING, GRACE, DONE = 0, 1, 2, 3, 4
#: Return codes of :func:`~hetgym.sim.events.step.step_nb`.
STEP_MOVED, STEP_NONE, STEP_WORK_LEFT, STEP_TIME_BACK, STEP_LOG_FULL = 1, 0, -1, -2, -3
#: Return codes of :func:`~hetgym.sim.events.start.start_nb` / :func:`~hetgym.sim.events.start.place_start_nb`
#: / :func:`~hetgym.sim.events.start.move_nb` besides those of
#: :func:`~hetgym.sim.kernels.place.check_placement_nb` (1-6).
START_OK, START_NOT_QUEUED, START_TPUT_ZERO, START_NO_ROOM, START_NOT_RUNNING = 0, 7, 8, 9, 10
START_WRONG_DEVICE = 11
