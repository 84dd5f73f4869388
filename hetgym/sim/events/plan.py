"""A scheduler's plan applied in one compiled call: preemptions, then starts.

A scheduler that plans a whole decision point in a kernel (``baselines.classic.schedulers.SRPT``)
gets its preemptions and starts as arrays. Applying them one by one through
:meth:`~hetgym.sim.engine.Simulator.apply` costs a Python round trip per decision
(building ``Preempt``/``Start`` objects, checking them, one kernel call each: about
4 us); :func:`apply_plan_nb` applies the same plan with the same kernels
(:func:`~hetgym.sim.events.release.preempt_nb`, :func:`~hetgym.sim.events.start.start_nb`) in the
same order (every preemption, then every start), so the run is bit for bit the same.
:meth:`~hetgym.sim.engine.Simulator.apply_plan` is its Python side.

Every check the one-by-one path makes is made here too, before the decision it
concerns changes anything: a preempted job must be RUNNING and under the preemption
limit; a start's placement is validated by ``start_nb`` itself (free GPUs, cores,
memory, device type, job QUEUED). The kernel stops at the first decision that fails
one of them and returns its index; the caller then applies that decision one by one,
which raises the same :class:`~hetgym.decisions.SchedulingError` as
:meth:`~hetgym.sim.engine.Simulator.apply` would (the decisions before it stay applied,
as there).
"""

from __future__ import annotations

from numba import njit

from hetgym.sim.codes import START_OK, STEP_LOG_FULL
from hetgym.sim.events.release import preempt_nb
from hetgym.sim.events.start import start_nb
from hetgym.sim.rules import may_preempt_nb
from hetgym.sim.state.layout import CTR_SEG

__all__ = ["PLAN_OK", "PLAN_REFUSED", "apply_plan_nb"]

#: First element of :func:`apply_plan_nb`'s result: all applied, or stopped at a decision.
PLAN_OK, PLAN_REFUSED = 0, 1


@njit(cache=True)
def apply_plan_nb(pre, n_pre, limit, jobs, devs, wnodes, wgpus, n_st, P, S):
    """Preempt ``pre[:n_pre]`` in order, then start job ``jobs[k]`` on device type ``devs[k]``
    with workers on ``wnodes[k, :W]`` / ``wgpus[k, :W]`` (``W`` its gang size) for
    ``k < n_st``, in order. ``limit``: the preemption limit (-1: none).

    Returns ``(PLAN_OK, n_pre + n_st)``, or ``(PLAN_REFUSED, i)`` when decision ``i``
    (preemptions first, then starts) would be refused or the segment log is full:
    decisions ``0..i-1`` are applied, ``i`` and later are not.
    """
    js, run = S.job, S.run
    for i in range(n_pre):
        j = pre[i]
        if not may_preempt_nb(js.status[j], js.n_preempt[j], limit):
            return PLAN_REFUSED, i
        if P.jobs.grace[j] <= 0.0 and run.ctr[CTR_SEG] + 1 > run.seg_i.shape[0]:
            return PLAN_REFUSED, i
        if preempt_nb(j, P, S) == STEP_LOG_FULL:  # not reached: tested just above
            return PLAN_REFUSED, i
    workers = P.jobs.workers
    for k in range(n_st):
        j = jobs[k]
        if start_nb(j, workers[j], wnodes[k], wgpus[k], devs[k], P, S) != START_OK:
            return PLAN_REFUSED, n_pre + k
    return PLAN_OK, n_pre + n_st
