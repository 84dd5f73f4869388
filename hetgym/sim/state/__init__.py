"""Typed arrays that cross into the Numba kernels, built from a :class:`~hetgym.specs.Scenario`.

The simulator's whole state is two NamedTuples, passed whole to every kernel
(the gymnax / Jumanji shape; the kernels get their structref mirror, the same
arrays, from :mod:`hetgym.sim.state.mirror`):

* :class:`~hetgym.sim.state.layout.Params` (static for a run): :class:`JobArrays`, :class:`NodeArrays`,
  :class:`Options` (scalars).
* :class:`~hetgym.sim.state.layout.State` (dynamic): :class:`JobState`, :class:`NodeState`,
  :class:`RunState` (queue, running set, counters, accumulators, logs and the
  kernels' scratch arrays, allocated once).

Counters and accumulators are arrays indexed by the named constants ``CTR_*`` / ``ACC_*``
(``run.ctr[CTR_Q]``, ``run.acc[ACC_NOW]``) so that kernels can update them in place.

The queue keeps arrival order with suspended jobs at the head, in a buffer
``run.queue[ctr[CTR_QHEAD]:ctr[CTR_QTAIL]]`` where removed entries are
tombstones (-1): removing a job costs O(1) (``job.qpos`` gives its slot) and
:func:`hetgym.sim.kernels.queue.queue_compact_nb` squeezes the tombstones out when
a reader needs the live queue.

Modules (import each name from its module):

* :mod:`hetgym.sim.state.layout`: the NamedTuples and the ``CTR_*`` / ``ACC_*`` indices;
* :mod:`hetgym.sim.state.nodes`: node arrays and the gang-fit rule
  (:func:`~hetgym.sim.state.nodes.gang_fits`);
* :mod:`hetgym.sim.state.jobs`: job arrays, episode windows, the interference table and
  :func:`~hetgym.sim.state.jobs.best_durations`;
* :mod:`hetgym.sim.state.build`: :func:`~hetgym.sim.state.build.build_params`,
  :func:`~hetgym.sim.state.build.new_state`, :func:`~hetgym.sim.state.build.refill`;
* :mod:`hetgym.sim.state.mirror`: the kernels' structref mirror of the same arrays.
"""
