"""SRPT's decision point in one compiled call: waiting jobs in shape heaps, plan, apply.

:class:`SRPTArrays` (one per run, its kernel mirror :data:`SRPTArraysK`) keeps the
waiting jobs between decision points: one binary heap per *shape* group (as in
:class:`baselines.common.parts.WaitingGroups`: jobs of one shape fit, or do not, alike), ordered
by ``(key, tie)`` (remaining time on the fastest type when the job started waiting, and
its arrival index, or a tie below every earlier one for a job we preempted that came
back). :func:`srpt_step_nb` does one whole decision point:

1. **sync**: the jobs that arrived since the last call join their heaps; the jobs we
   preempted that are back in the queue join theirs, in the order they stand at the
   head of the queue; if the heaps then do not hold exactly the queue's number of jobs
   (someone else decides too), it returns :data:`SYNC_FAILED` and the caller ranks the
   whole queue from then on;
2. **plan** (:func:`decide_nb`): SRPT's rule (below) on the running jobs and the heaps'
   heads merged in rank order; a group's head is taken from its heap when it starts, and
   the group is dropped at its first job that finds no room (capacity only shrinks
   during the walk, and the rest of the group has the same shape);
3. **apply** (optional): the plan through :func:`hetgym.sim.fastpath.apply_plan_nb`, the
   kernel behind :meth:`hetgym.sim.view.KernelView.apply_plan` (a refused decision, or
   a full segment log, is left to that method: ``out[OUT_DONE]`` says how far it got).
   This is the one place where a scheduler's compiled code writes the simulator's state
   (``View.kernel.P`` / ``S``): the plan and its application are one compiled call, so a
   decision point has no Python round trip, and the writes are the simulator's own
   kernels and checks (those of ``Simulator.apply``), in the order ``decide`` returns
   the same decisions.

A decision point costs the running jobs, what starts and one job per group, plus
``log(queue)`` per job that joins or leaves a heap; nothing in it is a Python loop.

SRPT's rule (see :class:`baselines.classic.schedulers.SRPT`) at one decision point: movable
running jobs (not in a grace period, under the preemption limit) and waiting jobs are
walked in order of remaining time on their fastest type (running jobs first on ties,
waiting jobs by ``(key, tie)``), on a scratch copy of free capacity from which every
movable job's resources were given back. A running job keeps its placement if it is
still free there; a waiting job takes the first device type of its ``table`` row with
room (the simulator's placement kernel). Then the movable jobs not kept are preempted,
and the planned starts are placed on what is free once the preempted jobs without a
grace period have left.

The state lives in :mod:`baselines.classic.srpt_arrays` (:class:`SRPTArrays`, the heaps, step 1)
and the plan in :mod:`baselines.classic.srpt_decide` (step 2); their public names are re-exported
here.
"""

from __future__ import annotations

from numba import njit

from baselines.classic.srpt_arrays import (
    C_AWAY,
    C_WAIT,
    NEED_ROOM,
    OUT_DONE,
    OUT_PRE,
    OUT_ST,
    O_LIMIT,
    SYNC_FAILED,
    SRPTArrays,
    SRPTArraysK,
    node_state_k,
    pack_arrays,
    sync_nb,
)
from baselines.classic.srpt_decide import decide_nb
from hetgym.sim.fastpath import PLAN_OK, apply_plan_nb
from hetgym.sim.state.layout import CTR_Q, CTR_SEG

__all__ = ["C_WAIT", "NEED_ROOM", "OUT_DONE", "OUT_PRE", "OUT_ST", "SYNC_FAILED", "SRPTArrays", "SRPTArraysK",
           "decide_nb", "node_state_k", "pack_arrays", "srpt_step_nb"]


@njit(cache=True)
def srpt_step_nb(A, P, S, grace_code, apply):
    """One decision point of SRPT (module docstring): sync, plan, and with ``apply`` carry
    the plan out. Returns :data:`SYNC_FAILED`, :data:`NEED_ROOM`, or the number of
    decisions planned (``A.out``: preemptions in ``A.pre``, starts in ``A.job``,
    ``A.dev``, ``A.nodes``, ``A.gpus``, decisions applied). Does nothing when no job waits."""
    out = A.out
    out[OUT_PRE] = 0
    out[OUT_ST] = 0
    out[OUT_DONE] = 0
    run = S.run
    if run.ctr[CTR_Q] == 0:
        return 0
    if not sync_nb(A, S):
        return SYNC_FAILED
    n_st = decide_nb(A, P, S, grace_code)
    if n_st < 0:
        return NEED_ROOM
    n_pre = out[OUT_PRE]
    away = A.away
    for i in range(n_pre):  # preempted by us: they come back at the head of the queue
        away[A.ctr[C_AWAY]] = A.pre[i]
        A.ctr[C_AWAY] += 1
    if apply and n_pre + n_st > 0 and run.ctr[CTR_SEG] + n_pre <= run.seg_i.shape[0]:
        code, i = apply_plan_nb(A.pre, n_pre, A.opt[O_LIMIT], A.job, A.dev, A.nodes, A.gpus, n_st,
                                P, S)
        out[OUT_DONE] = i if code != PLAN_OK else n_pre + n_st
    return n_pre + n_st
