"""One Numba call per environment step: advance to the next decision point,
accumulate the reward terms, and write the action mask and the observation.

Every kernel takes the simulator's typed state whole (``P``
:class:`~hetgym.sim.state.layout.Params`, ``S`` :class:`~hetgym.sim.state.layout.State`) and the
env's own (:class:`EnvParams`, :class:`EnvState`), all four as structref mirrors of the
NamedTuples (:mod:`hetgym.sim.state.mirror`, :func:`env_mirror`), and drives the simulator's
one step function :func:`hetgym.sim.events.step.step_nb`; the semantics are its.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
from numba import njit, prange
from numba.typed import List

from hetgym.envs.features import observe_nb
from hetgym.envs.reward import accrue_nb, take_terms_nb, weighted_sum_nb
from hetgym.sim.codes import STEP_LOG_FULL, STEP_MOVED, STEP_NONE
from hetgym.sim.events.release import preempt_nb
from hetgym.sim.events.start import place_start_nb
from hetgym.sim.events.step import step_nb
from hetgym.sim.kernels.fit import mask_fill_nb
from hetgym.sim.kernels.queue import queue_compact_nb
from hetgym.sim.rules import may_preempt_nb
from hetgym.sim.state.layout import (
    ACC_ENERGY,
    ACC_NOW,
    CTR_ARR,
    CTR_DONE,
    CTR_Q,
    CTR_QHEAD,
    CTR_QTAIL,
    CTR_RUN,
)
from hetgym.sim.state.mirror import packer, struct_of

__all__ = ["EnvParams", "EnvState", "EnvParamsK", "EnvStateK", "env_mirror", "decide_point_nb", "update_mask_nb", "window_mask_nb", "refresh_nb",
           "start_and_decide_nb", "act_nb", "step_reward_nb", "step_batch_nb", "step_batch_par_nb", "finish_row_nb",
           "new_batch_nb", "set_batch_nb", "reset_row_nb", "write_row_nb",
           "ACT_NOOP", "ACT_INVALID", "ACT_GROW"]

#: Codes of :func:`act_nb` besides those of :func:`decide_point_nb` (and ``100 +`` a
#: start code): an infeasible action that did nothing (waiting masked), an infeasible
#: action refused (``invalid_action="raise"``), and "grow the segment log and act again".
ACT_NOOP, ACT_INVALID, ACT_GROW = 50, 51, 52


class EnvParams(NamedTuple):
    """Static parameters of an env episode."""

    inv_best: np.ndarray   # float64[J], 1 / best duration from scratch
    scale: float           # reward_scale (s)
    run_window: int        # R
    cap_dev: np.ndarray    # float64[C], capacity per device type
    max_cap: float
    max_workers: float
    time_scale: float       # s, of the squashed time features
    raise_invalid: bool     # invalid_action == "raise"
    term_idx: np.ndarray    # int64[m], reward terms with a weight (TERMS order indices)
    term_w: np.ndarray      # float64[m], their weights, in the objective's order
    energy_price: float     # EUR per J (price x PUE / 3.6e6)
    obs_mode: int = 0       # observation layout (hetgym.envs.features.OBSERVATIONS index)


class EnvState(NamedTuple):
    """Outputs and accumulators of the env kernels (allocated once per env, zeroed).

    Only :func:`update_mask_nb` (:func:`window_mask_nb`) writes ``win``, ``nwin``, ``mask2d``
    and ``mask``; it relies on rows ``nwin[0]`` on of ``mask2d`` (and their entries of
    ``mask``) being False."""

    win: np.ndarray      # int64[K], jobs of the job window
    rwin: np.ndarray     # int64[max(R, 1)], jobs of the running window
    nwin: np.ndarray     # int64[2], filled lengths of win / rwin
    mask2d: np.ndarray   # bool[K, C]
    mask: np.ndarray     # bool[K*C + R + 1]
    rew: np.ndarray      # float64[N_REW], see hetgym.envs.reward.REW_*
    obs: np.ndarray      # float32[obs_size]
    scratch: np.ndarray  # float64[C]


#: The kernels take ``EP`` / ``ES`` as structrefs over the NamedTuples' arrays (lent, like
#: the simulator's ``P`` / ``S``, :mod:`hetgym.sim.state.mirror`): a NamedTuple argument costs a
#: reference count increment and decrement per array at every non-inlined call (``EP`` 4,
#: ``ES`` 8; the batch loop's list item all of them), a structref one.
EnvParamsK = struct_of(EnvParams, module=__name__, lend=True)
EnvStateK = struct_of(EnvState, module=__name__, lend=True)
_pack_ep, _pack_es = packer(EnvParamsK), packer(EnvStateK)


@njit(cache=True, no_cfunc_wrapper=True)
def _env_mirror_nb(EP, ES):
    return _pack_ep(EP), _pack_es(ES)


def env_mirror(ep: EnvParams, es: EnvState) -> tuple:
    """The kernels' ``(EP, ES)``: structrefs over the arrays of ``ep`` / ``es`` (no copies;
    build them again when an array of either tuple is replaced)."""
    return _env_mirror_nb(ep, es)


@njit(cache=True, inline="always")
def update_mask_nb(P, S, EP, ES):
    """Fill the job window, running window and action mask; True if any start/preempt is feasible."""
    return window_mask_nb(P, S, EP.run_window, ES)


@njit(cache=True, inline="always")
def window_mask_nb(P, S, run_window, ES):
    """:func:`update_mask_nb` given ``EP.run_window``; the env kernels call this form (each
    array or structref handed to an inlined function costs a reference count increment and
    decrement per call)."""
    win, rwin, nwin, mask2d, mask = ES.win, ES.rwin, ES.nwin, ES.mask2d, ES.mask
    jobs, js, run = P.jobs, S.job, S.run
    ctr = run.ctr
    k_n = win.shape[0]
    c_n = jobs.tput.shape[1]
    if (ctr[CTR_QTAIL] - ctr[CTR_QHEAD]) > 2 * ctr[CTR_Q]:
        queue_compact_nb(run, js.qpos)
    nq = np.int64(0)  # typed: a literal 0 compiled mask_fill_nb once more, for Literal[int](0)
    for i in range(ctr[CTR_QHEAD], ctr[CTR_QTAIL]):
        if nq == k_n:
            break
        j = run.queue[i]
        if j >= 0:
            win[nq] = j
            nq += 1
    # rows from the last call's window length on are False in mask2d and in mask (only this
    # function writes them, and each call leaves the rows past its window False): only the
    # rows of this window and of the last one are written again
    n_rows = nq if nq > nwin[0] else nwin[0]  # noqa: FURB136 (builtin max compiles an overload)
    mask_fill_nb(win, nq, n_rows, jobs, P.nodes, S.node, mask2d)  # int64 counts: not mask_nb
    feasible = False
    for k in range(n_rows):
        for c in range(c_n):
            m = mask2d[k, c]
            mask[k * c_n + c] = m
            if m:
                feasible = True
    base = k_n * c_n
    r = 0
    limit = P.opts.limit
    for i in range(ctr[CTR_RUN]):
        if r == run_window:
            break
        j = run.running[i]
        if jobs.job_class[j] == 0 and may_preempt_nb(js.status[j], js.n_preempt[j], limit):
            rwin[r] = j
            mask[base + r] = True
            r += 1
            feasible = True
    for q in range(r, run_window):
        mask[base + q] = False
    # waiting is feasible unless nothing could ever happen after it: nothing runs, every
    # job has arrived, and a start is possible (else "wait" would end the episode early
    # with the waiting jobs' JCT never counted)
    mask[base + run_window] = not (feasible and ctr[CTR_RUN] == 0
                                      and ctr[CTR_ARR] == jobs.arrival.shape[0])
    nwin[0] = nq
    nwin[1] = r
    return feasible


@njit(cache=True)
def decide_point_nb(force, P, S, EP, ES):
    """Advance events until a start or preemption is feasible (at least one event if ``force``).

    Returns 1 at a decision point or when every job is done, 0 when no event
    is left (or the horizon is reached) with jobs unfinished, or a negative
    code of :func:`~hetgym.sim.events.step.step_nb` (-3: grow the segment log
    and call again with ``force=True``).
    """
    jobs, run = P.jobs, S.run
    ctr, acc = run.ctr, run.acc
    rew = ES.rew
    n_jobs = jobs.arrival.shape[0]
    if not force:
        if (window_mask_nb(P, S, EP.run_window, ES)
                or ctr[CTR_DONE] == n_jobs):
            observe_nb(P, S, EP, ES)
            return 1
    while True:
        t0 = acc[ACC_NOW]
        arrived = ctr[CTR_ARR]
        done = ctr[CTR_DONE]
        code, nd, ng = step_nb(P, S)
        if code < 0:
            return code
        accrue_nb(rew, EP.inv_best, EP.scale, jobs.deadline, jobs.weight, run.out_done, nd,
                  t0, acc[ACC_NOW], arrived, ctr[CTR_ARR], done)
        feasible = window_mask_nb(P, S, EP.run_window, ES)
        if code == STEP_NONE:
            observe_nb(P, S, EP, ES)
            return 1 if ctr[CTR_DONE] == n_jobs else 0
        if ctr[CTR_DONE] == n_jobs or feasible:
            observe_nb(P, S, EP, ES)
            return STEP_MOVED


@njit(cache=True)
def refresh_nb(P, S, EP, ES):
    """Window, mask and observation of the current state, advancing nothing; True if a
    start or preemption is feasible."""
    feasible = window_mask_nb(P, S, EP.run_window, ES)
    observe_nb(P, S, EP, ES)
    return feasible


@njit(cache=True)
def start_and_decide_nb(job, dev, P, S, EP, ES):
    """Start ``job`` on ``dev`` (the run's placement policy), then :func:`decide_point_nb`
    (not forced). Returns ``100 + code`` if the start fails (codes of
    :func:`~hetgym.sim.events.start.place_start_nb`), else the code of ``decide_point_nb``."""
    code = place_start_nb(job, dev, P, S)
    if code != 0:
        return 100 + code
    # job < 0 is a run-time False: a constant would compile decide_point_nb again for a
    # literal argument (see hetgym.sim.events)
    return decide_point_nb(job < 0, P, S, EP, ES)


@njit(cache=True)
def act_nb(a, P, S, EP, ES):
    """Apply action ``a`` of ``HetCluster-v0`` (see its docstring) and run to the next
    decision point; the one action rule of the single and the batched env.

    An infeasible action is refused (``ACT_INVALID``) when ``EP.raise_invalid``, does
    nothing (``ACT_NOOP``) when waiting is masked too, and waits otherwise. Returns the
    code of :func:`decide_point_nb`, ``ACT_NOOP``, ``ACT_INVALID``, ``ACT_GROW`` (a
    preemption needs a bigger segment log; nothing done) or ``100 +`` a start code.
    """
    c_n = P.jobs.tput.shape[1]
    n_start = ES.win.shape[0] * c_n
    wait = n_start + EP.run_window
    force = a >= 0  # a run-time True (see hetgym.sim.events)
    if not ES.mask[a]:
        if EP.raise_invalid:
            return ACT_INVALID
        if not ES.mask[wait]:
            return ACT_NOOP
        return decide_point_nb(force, P, S, EP, ES)
    if a == wait:
        return decide_point_nb(force, P, S, EP, ES)
    if a < n_start:
        return start_and_decide_nb(ES.win[a // c_n], a % c_n, P, S, EP, ES)
    if preempt_nb(ES.rwin[a - n_start], P, S) == STEP_LOG_FULL:
        return ACT_GROW
    return decide_point_nb(a < 0, P, S, EP, ES)


@njit(cache=True, inline="always")
def step_reward_nb(S, EP, ES, terms):
    """The step's reward terms into ``terms`` (float64[5], ``reward.TERMS`` order) and their
    weighted sum: :func:`~hetgym.envs.reward.take_terms` and
    :func:`~hetgym.envs.reward.weighted_sum`, as ``RewardTracker.terms`` / ``combine``."""
    take_terms_nb(ES.rew, S.run.acc[ACC_ENERGY], EP.energy_price, terms)
    return weighted_sum_nb(terms, EP.term_idx, EP.term_w)


@njit(cache=True, inline="always")
def _step_envs_nb(lo, hi, actions, pending, envs, steps, stuck, max_steps, codes, invalid,
                  rewards, terms, term, trunc, obs, masks, stat):
    """Envs ``lo .. hi - 1`` of a batch step. A loop here rather than a per-env helper: the
    arrays handed to an inlined function are reference counted at each call (13 increments
    and decrements per env, when the serial kernel called a per-env helper)."""
    for i in range(lo, hi):
        codes[i] = 1
        invalid[i] = False
        if pending[i]:
            continue
        a = actions[i]
        P, S, EP, ES = envs[i]
        invalid[i] = not ES.mask[a]
        steps[i] += 1
        code = act_nb(a, P, S, EP, ES)
        codes[i] = code
        if code < 0 or code >= ACT_INVALID:
            continue
        if code != ACT_NOOP:
            stuck[i] = code == 0
        finish_step_nb(i, P, S, EP, ES, steps, stuck, max_steps, rewards, terms, term, trunc,
                       obs, masks, stat)


@njit(cache=True, inline="always")
def _bad_action_nb(actions, pending, n_actions):
    """1 + the first env (not ``pending``) whose action is outside ``0..n_actions-1``; 0 if none."""
    for i in range(actions.shape[0]):
        if not pending[i] and (actions[i] < 0 or actions[i] >= n_actions):
            return i + 1
    return 0


@njit(cache=True, inline="always")
def _tally_nb(codes, term, trunc):
    """(envs whose step is left to the caller, envs whose episode ended)."""
    slow = 0
    ended = 0
    for i in range(codes.shape[0]):
        if codes[i] < 0 or codes[i] >= ACT_INVALID:
            slow += 1
        elif term[i] or trunc[i]:
            ended += 1
    return slow, ended


@njit(cache=True)
def step_batch_nb(actions, pending, envs, steps, stuck, max_steps, codes, invalid, rewards, terms,
                  term, trunc, obs, masks, stat):
    """One step of every env of a batch (``envs[i] = (P, S, EP, ES)``): :func:`act_nb`,
    then row ``i`` of the outputs (:func:`finish_step_nb`); ``invalid[i]``: the action
    was masked. Envs with ``pending[i]`` are skipped (being reset). An env whose code is
    exceptional (``codes[i]`` < 0 or >= ``ACT_INVALID``) is left for the caller to
    finish (a bigger segment log, an error); its outputs are not written.

    Returns ``(bad, slow, ended)``: ``bad`` is 1 + the first env whose action is out of
    range (then nothing was stepped), else 0; ``slow`` the envs left to the caller,
    ``ended`` the others whose episode ended."""
    bad = _bad_action_nb(actions, pending, masks.shape[1])
    if bad:
        return bad, 0, 0
    _step_envs_nb(0, len(envs), actions, pending, envs, steps, stuck, max_steps, codes, invalid,
                  rewards, terms, term, trunc, obs, masks, stat)
    slow, ended = _tally_nb(codes, term, trunc)
    return 0, slow, ended


@njit(cache=True, parallel=True)
def step_batch_par_nb(actions, pending, envs, steps, stuck, max_steps, codes, invalid, rewards,
                      terms, term, trunc, obs, masks, stat):
    """:func:`step_batch_nb` with the envs spread over Numba's threads (envs share no
    writable state: each has its own ``S``, ``EP``, ``ES`` and output rows)."""
    bad = _bad_action_nb(actions, pending, masks.shape[1])
    if bad:
        return bad, 0, 0
    for k in prange(len(envs)):
        _step_envs_nb(np.int64(k), np.int64(k) + 1, actions, pending, envs, steps, stuck,
                      max_steps, codes, invalid, rewards, terms, term, trunc, obs, masks, stat)
    slow, ended = _tally_nb(codes, term, trunc)
    return 0, slow, ended


@njit(cache=True, inline="always")
def finish_step_nb(i, P, S, EP, ES, steps, stuck, max_steps, rewards, terms, term, trunc, obs,
                   masks, stat):
    """Row ``i`` of the batch outputs after an action: terminated (every job done),
    truncated (``max_steps`` or no event left), the reward (:func:`step_reward_nb`; the
    caller adds the truncation charge), observation, mask, and time / queued / running /
    done in ``stat[i]``."""
    run = S.run
    done = run.ctr[CTR_DONE] == P.jobs.arrival.shape[0]
    term[i] = done
    trunc[i] = (not done) and (steps[i] >= max_steps or stuck[i])
    rewards[i] = step_reward_nb(S, EP, ES, terms[i])
    write_row_nb(i, S, ES, obs, masks, stat)


@njit(cache=True, inline="always")
def write_row_nb(i, S, ES, obs, masks, stat):
    """Observation, mask and time / queued / running / done of one env into row ``i``."""
    run = S.run
    # the batched env's sub-envs observe into their rows (ES.obs / ES.mask are views of
    # them): nothing to copy then
    if ES.obs.ctypes.data != obs[i].ctypes.data:
        for k in range(ES.obs.shape[0]):  # loops: a slice copy compiles Numba's shape-error path
            obs[i, k] = ES.obs[k]
    if ES.mask.ctypes.data != masks[i].ctypes.data:
        for k in range(ES.mask.shape[0]):
            masks[i, k] = ES.mask[k]
    stat[i, 0] = run.acc[ACC_NOW]
    stat[i, 1] = run.ctr[CTR_Q]
    stat[i, 2] = run.ctr[CTR_RUN]
    stat[i, 3] = run.ctr[CTR_DONE]


@njit(cache=True)
def finish_row_nb(i, P, S, EP, ES, steps, stuck, max_steps, rewards, terms, term, trunc, obs,
                  masks, stat):
    """:func:`finish_step_nb` for one env, callable from Python."""
    finish_step_nb(i, P, S, EP, ES, steps, stuck, max_steps, rewards, terms, term, trunc, obs,
                   masks, stat)


@njit(cache=True)
def reset_row_nb(i, S, ES, steps, rewards, terms, term, trunc, obs, masks, stat):
    """Row ``i`` of the batch outputs after a reset: reward 0, not ended, the first
    observation and mask."""
    steps[i] = 0
    rewards[i] = 0.0
    for k in range(terms.shape[1]):
        terms[i, k] = 0.0
    term[i] = False
    trunc[i] = False
    write_row_nb(i, S, ES, obs, masks, stat)


@njit(cache=True)
def new_batch_nb(item, n):
    """A typed list of ``n`` references to ``item`` (a batch's ``(P, S, EP, ES)``; made in
    compiled code so that its methods are cached, not compiled in every process)."""
    out = List()
    for _ in range(n):
        out.append(item)
    return out


@njit(cache=True)
def set_batch_nb(batch, i, item):
    """``batch[i] = item`` (see :func:`new_batch_nb`)."""
    batch[i] = item
