"""Fused Numba paths of the simulator over the typed state: one call per event instant, per start.

Every kernel takes ``P`` (:class:`~hetgym.sim.state.layout.Params`) and ``S``
(:class:`~hetgym.sim.state.layout.State`) whole, as the simulator passes them: their
structref mirrors (:mod:`hetgym.sim.state.mirror`; the NamedTuples work too, at a cost in
reference counting and compile time). ``step_nb`` processes every event of
the next instant (completions, grace ends, arrivals, round boundary) and is the
one step function that both :func:`hetgym.simulate` and ``HetCluster-v0`` drive;
``start_nb`` / ``place_start_nb`` validate and start a job; ``move_nb``
re-allocates a running job in one instant; ``release_nb`` gives a job's resources
back; ``admit_nb`` is the greedy admission of FIFO-like baselines. They compose the small kernels of :mod:`hetgym.sim.kernels` and
follow the same rules (pure, no RNG or I/O).

Flags are never passed to a compiled callee as constants: Numba types a constant
argument as a literal and compiles the callee again for it (several seconds for a
kernel over the whole state), so call sites pass run-time values instead. A
mechanism a run does not use is left out of its compiled kernels by type, chosen
in Python: a run without interference passes a
:data:`~hetgym.sim.state.mirror.PlainParamsK`, for which :func:`~hetgym.sim.kernels.interference.refresh_rates` and the
interfered rate resolve to nothing and to the plain rate at compile time
(:mod:`hetgym.sim.kernels.interference`).

Compile time after install grows with every inlined copy of a helper (Numba types and
lowers it again at each site, and LLVM optimises each copy): the resource and power
books (:func:`~hetgym.sim.kernels.place.alloc_call_nb`, :func:`~hetgym.sim.events.release.power_busy_nb`), which start,
release and move all take, are kernels of their own, compiled once and linked into
each. Helpers with one site per kernel stay inlined: as kernels of their own they
measured more compile work, not less (instruction counts of a cold run).

The paths are in :mod:`hetgym.sim.events.step` (the event step),
:mod:`hetgym.sim.events.release` (release, checkpoint loss, suspend, preempt, the power
books), :mod:`hetgym.sim.events.start` (start, move, placed start, admission) and
:mod:`hetgym.sim.events.plan` (a scheduler's whole plan in one call); import each name
from its module. Their return codes are in :mod:`hetgym.sim.codes`.
"""
