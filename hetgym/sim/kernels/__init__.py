"""Numba kernels of the simulator: small, pure, array in / array out.

Small helpers are ``inline="always"`` (a call that is not inlined would copy a
NamedTuple argument whole; a structref argument costs one pointer). Compile time
after install is part of the cost: inline a helper into one or two callers, but
compile a large one that several kernels (or one kernel at several sites) call
once, as its own dispatcher (:func:`~hetgym.sim.kernels.fit.mask_nb` ->
:func:`~hetgym.sim.kernels.fit.mask_fill_nb`), and never
pass a call-site constant to a non-inlined callee (it is compiled again for the
literal; see :mod:`hetgym.sim.events`). Each compiled function costs a fixed part after
install (its wrappers, its own LLVM module, a cache file), and inlining a large one
deep-copies its IR at every site (about as costly), so: kernels take ``no_cfunc_wrapper=True``
(the C-callable wrapper serves first-class function values, which nothing here uses); and
kernels write ``a if a < b else b`` rather than the builtins ``min``/``max``/``int`` and use
caller-given scratch rather than ``np.empty``/``np.zeros``, each of which compiles an
overload of its own. No kernel draws random numbers,
reads a clock, does I/O or touches globals other than the named constants.
Kernels take the typed
NamedTuples of :mod:`hetgym.sim.state.layout` (``nodes`` = ``NodeArrays``,
``jobs`` = ``JobArrays``, ``ns`` = ``NodeState`` or a scratch copy of
it, ``run`` / ``js`` = ``RunState`` / ``JobState``) or plain arrays,
and write into caller-allocated outputs. Names end in ``_nb``.

The kernels are grouped by what they do (import each from its module):
:mod:`hetgym.sim.kernels.fit` (free slots, fit tests, the start mask),
:mod:`hetgym.sim.kernels.place` (placement policies, placement checks, allocation),
:mod:`hetgym.sim.kernels.queue` (the job queue), :mod:`hetgym.sim.kernels.rate` (the rate
of a job on a placement) and :mod:`hetgym.sim.kernels.interference` (co-location
interference on those rates).
"""
