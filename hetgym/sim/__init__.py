"""The event-driven simulator: state arrays, Numba kernels, engine and view."""

from hetgym.sim.codes import JobClass, JobStatus, PlacementPolicy
from hetgym.sim.engine import InvariantError, Simulator
from hetgym.sim.view import CapacityModel, View

__all__ = ["Simulator", "View", "CapacityModel", "InvariantError", "JobStatus", "JobClass",
           "PlacementPolicy"]
