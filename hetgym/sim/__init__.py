"""The event-driven simulator: state arrays, Numba kernels, engine and view.

The names below load on first use (PEP 562), so that importing a light submodule
(``hetgym.sim.codes``) does not import Numba and the kernels.
"""

from hetgym._lazy import lazy_attributes

_LAZY = {
    "Simulator": "hetgym.sim.engine",
    "InvariantError": "hetgym.sim.engine",
    "View": "hetgym.sim.view",
    "CapacityModel": "hetgym.sim.view",
    "JobStatus": "hetgym.sim.codes",
    "JobClass": "hetgym.sim.codes",
    "PlacementPolicy": "hetgym.sim.codes",
}

__all__ = [
    "CapacityModel",
    "InvariantError",
    "JobClass",
    "JobStatus",
    "PlacementPolicy",
    "Simulator",
    "View",
]

__getattr__, __dir__ = lazy_attributes(__name__, globals(), _LAZY, set())
