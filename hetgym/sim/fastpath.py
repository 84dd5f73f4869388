"""What a scheduler's compiled fast path may use of the simulator: the published kernels.

A scheduler in ``baselines`` (or ``agents``) that plans in Numba calls the simulator's own
kernels for the simulator's own rules (a placement, a fit test, a job's rate), so that
its plan is the one the simulator would make; it takes their arguments from
:attr:`View.kernel <hetgym.sim.view.View.kernel>` (:class:`~hetgym.sim.view.KernelView`),
never from the simulator's attributes. The names below are that interface, with
:mod:`hetgym.sim.view` (what a scheduler reads), :mod:`hetgym.sim.rules` (the rules,
also as kernels), :mod:`hetgym.sim.codes` (status and class codes) and
:mod:`hetgym.sim.state` (the typed records and the counters' indices); every other
module of :mod:`hetgym.sim` (``engine``, ``events``, ``mirror``, ``kernels``, ``batch``,
``dispatch``, ...) is the simulator's inside.

Kernels (``@njit``; each says what it reads and writes):

* :func:`place_nb`, :func:`fits_nb`, :func:`alloc_nb`, :func:`node_slots_nb`,
  :func:`may_fit_arrays_nb`, :func:`same_pairs_nb`: placement on a node state (a
  scratch copy: :attr:`CapacityModel.ns <hetgym.sim.view.CapacityModel>`, or the
  live ``KernelView.node_state`` read only);
* :func:`interfered_rate_nb`: the rate of a job on a placement (reads ``KernelView.P``
  and a node state);
* :func:`apply_plan_nb` (with :data:`PLAN_OK`): the one kernel here that writes the
  simulator's state. It carries out preemptions and starts given as arrays with the
  simulator's own kernels and checks (``Simulator.apply_plan`` is its Python side);
  a fast path that plans and applies a decision point in one compiled call
  (``baselines.classic.srpt_kernels``) calls it there, so that a decision point costs
  no Python round trip. Outside compiled code use ``KernelView.apply_plan``.

Helpers: :class:`NodeStateK` (the structref form of
:class:`~hetgym.sim.state.layout.NodeState`), :func:`struct_of` and :func:`packer` (to give a
fast path's own record of arrays the same structref form), and :func:`entry` (a
kernel's compiled entry point for given arguments, resolved once and reused).

The names load on first use (PEP 562): importing this module loads neither Numba nor
the kernels.
"""

from hetgym._lazy import lazy_attributes

_LAZY = {
    "entry": "hetgym._internals.dispatch",
    "alloc_nb": "hetgym.sim.kernels.place",
    "fits_nb": "hetgym.sim.kernels.fit",
    "may_fit_arrays_nb": "hetgym.sim.kernels.fit",
    "node_slots_nb": "hetgym.sim.kernels.fit",
    "place_nb": "hetgym.sim.kernels.place",
    "same_pairs_nb": "hetgym.sim.kernels.place",
    "interfered_rate_nb": "hetgym.sim.kernels.interference",
    "PLAN_OK": "hetgym.sim.events.plan",
    "apply_plan_nb": "hetgym.sim.events.plan",
    "NodeStateK": "hetgym.sim.state.mirror",
    "packer": "hetgym.sim.state.mirror",
    "struct_of": "hetgym.sim.state.mirror",
}

__all__ = sorted(_LAZY)

__getattr__, __dir__ = lazy_attributes(__name__, globals(), _LAZY, set())
