"""The batched env's episode reset: a sub-env's simulator refilled for a new window in
one compiled call.

``HetClusterEnv.reset`` refills its simulator in place
(:meth:`hetgym.sim.engine.Simulator.reset_window`): it cuts the window's job arrays
(:func:`~hetgym.sim.state.jobs.cut_window`), builds fresh parameters and a fresh state
(:func:`~hetgym.sim.state.build.build_params`, :func:`~hetgym.sim.state.build.new_state`) and copies
them into the simulator's arrays, some 100 arrays one by one in Python (about 0.14 ms
of the 0.16 ms of a reset). :class:`Refiller` gives the same arrays with one compiled
call (:func:`refill_nb`) that copies bytes:

* every job array of the window from the whole workload's (cut once per scenario;
  windows are consecutive rows, so each is one contiguous block), arrivals and
  deadlines shifted as ``cut_window`` does;
* every state array from a *template*: the state of a fresh simulator of a window
  with the same array shapes (the largest gang sets the worker-slot width), built
  once per shape and shared by the sub-envs; an array larger than the template's
  (a grown segment log) is filled with the template's constant, as
  :func:`~hetgym.sim.state.build.refill` does;
* what depends on the window's job values: ``remaining`` (the jobs' work, as in
  ``new_state``), ``min_unit`` (as in ``build_params``), the env's
  ``1 / best duration`` (the whole workload's, cut: the rule is per job) and its
  zeroed reward accumulators (:func:`hetgym.envs.reward.start_window`, the reset of
  ``RewardTracker.reset``);
* the simulator's own attributes as ``reset_window`` sets them, but its
  :class:`~hetgym.sim.view.View` is built when first used (:class:`ViewOnDemand`).

A window whose arrays would have other shapes, or another ``max_copies``, is not
refilled (``Refiller.reset`` returns False; the caller resets the env the usual way).
The result equals ``reset_window``'s array for array (tests/envs/test_refill.py), so
the episodes are those of the single env.
"""

from __future__ import annotations

import weakref
from typing import Any

import numpy as np
from numba import njit, types
from numba.core import cgutils
from numba.extending import intrinsic
from numba.typed import List

from hetgym._internals.dispatch import entry
from hetgym.envs.reward import inv_best_durations, start_window_nb
from hetgym.sim.state.jobs import build_jobs

__all__ = ["Refiller", "ViewOnDemand", "leaves", "refill_nb"]


def leaves(tup: Any) -> list[np.ndarray]:
    """The arrays of a NamedTuple of NamedTuples (scalars skipped), in field order."""
    out: list[np.ndarray] = []
    for x in tup:
        if isinstance(x, tuple):
            out.extend(leaves(x))
        elif isinstance(x, np.ndarray):
            out.append(x)
    return out


def _bytes(a: np.ndarray) -> np.ndarray:
    """``a``'s memory as uint8[nbytes] (a view: writes reach ``a``)."""
    if not a.flags.c_contiguous:
        raise ValueError(f"refill: array of shape {a.shape} is not C-contiguous")
    return a.reshape(-1).view(np.uint8)


def _typed(arrays: list[np.ndarray]) -> List:
    """A typed list of ``arrays`` (uint8 views of one type), built in one compiled call: a
    list built in Python costs a compiled ``append`` call per array (~60 us each, some
    5 ms per simulator), and its ``len()`` from Python compiles a method in every process
    (about 1 s, at a batched env's first refill)."""
    return _list_nb(tuple(arrays))


@njit(cache=True)
def _list_nb(arrays):
    out = List()
    for a in arrays:
        out.append(a)
    return out


@intrinsic
def _copy_bytes(typingctx, dst, dst_at, src, src_at, n):
    """``dst[dst_at:dst_at + n] = src[src_at:src_at + n]`` for uint8 arrays, as one
    ``memcpy`` (the caller keeps the ranges inside both arrays; they never overlap)."""
    if not (isinstance(dst, types.Array) and isinstance(src, types.Array)
            and dst.dtype == types.uint8 and src.dtype == types.uint8):
        return None

    def codegen(context, builder, sig, args):
        d, da, s, sa, cnt = args
        dptr = context.make_array(sig.args[0])(context, builder, d).data
        sptr = context.make_array(sig.args[2])(context, builder, s).data
        cgutils.raw_memcpy(builder, builder.gep(dptr, [da]), builder.gep(sptr, [sa]), cnt, 1)
        return context.get_dummy_value()

    return types.none(dst, types.int64, src, types.int64, types.int64), codegen


@njit(cache=True)
def refill_nb(start, n, src, rowb, dst, tmpl, tdst, item, arrival, deadline, remaining, work,
              inv_full, inv_best, tput, cpus_need, dev_is_cpu, min_unit, rew):
    """Refill a simulator for the window of rows ``[start, start + n)`` (module docstring).

    ``src[k]`` / ``dst[k]``: the whole workload's and the simulator's k-th job array as
    bytes (``rowb[k]`` bytes a job); ``tmpl[k]`` / ``tdst[k]``: the template's and the
    simulator's k-th state array as bytes (``item[k]`` bytes an element); then the named
    arrays of the window-dependent values."""
    for k in range(len(dst)):
        b = rowb[k]
        _copy_bytes(dst[k], 0, src[k], start * b, n * b)  # window rows: one block
    t0 = arrival[0]  # cut_window: the first job arrives at 0, deadlines move with it
    for r in range(n):
        arrival[r] = arrival[r] - t0
        deadline[r] = deadline[r] - t0
    for k in range(len(tdst)):
        d = tdst[k]
        t = tmpl[k]
        if d.shape[0] == t.shape[0]:
            _copy_bytes(d, 0, t, 0, d.shape[0])
        else:  # larger than the template's (a grown log): its constant everywhere
            isz = item[k]
            for p in range(d.shape[0]):
                d[p] = t[p % isz]
    for r in range(n):
        remaining[r] = work[r]  # new_state: every job's whole work remains
    for c in range(min_unit.shape[0]):  # build_params: the least cores a CPU worker needs
        if dev_is_cpu[c]:
            m = np.inf
            for r in range(n):
                if tput[r, c] > 0 and cpus_need[r, c] < m:
                    m = cpus_need[r, c]
            min_unit[c] = m
        else:
            min_unit[c] = 1.0
    start_window_nb(rew, inv_best, inv_full, start)  # the reward's reset (RewardTracker.reset)


class _Source:
    """The whole workload's job arrays as bytes, and per window start the values that
    decide whether a simulator's arrays fit the window."""

    def __init__(self, scenario: Any, size: int) -> None:
        full = build_jobs(scenario)
        self.n_total = len(full.arrival)
        self.size = size
        self.arrays = [np.array(a, copy=True, order="C") for a in full]  # owned copies
        self.src = _typed([_bytes(a) for a in self.arrays])
        self.rowb = np.array([a.nbytes // max(len(a), 1) for a in self.arrays], dtype=np.int64)
        self.inv_full = inv_best_durations(full)
        starts = self.n_total - size + 1
        win = np.lib.stride_tricks.sliding_window_view
        self.wmax = win(full.max_workers, size).max(axis=1)[:starts]
        self.fork = win(full.forkable, size).any(axis=1)[:starts]
        self.n_gpu_nodes = None


class Refiller:
    """Compiled episode resets for the sub-envs of one batched env (module docstring).

    Args:
        scenario: The sub-envs' scenario (one object for all).
        size: Jobs per window.
    """

    def __init__(self, scenario: Any, size: int) -> None:
        self.scenario = scenario
        self.source = _Source(scenario, size)
        self._templates: dict[int, tuple[list[np.ndarray], Any]] = {}
        # sim -> (its state, the kernel's lists over it); entries go with their simulator
        self._bound: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()

    # ----------------------------------------------------------------- internals
    def _template(self, sim: Any) -> list[np.ndarray]:
        """State arrays of a fresh simulator of ``sim``'s current window (same shapes)."""
        wmax = int(sim.state.run.out_node.shape[0])
        hit = self._templates.get(wmax)
        if hit is None:
            from hetgym.sim.engine import Simulator

            fresh = Simulator(sim.scenario, seed=0, round_length=sim.round_length, rows=sim.rows)
            arrays = [a.copy() for a in leaves(fresh.state)]
            hit = self._templates[wmax] = (arrays, _typed([_bytes(a) for a in arrays]))
        return hit

    def _lists(self, sim: Any) -> tuple | None:
        """The kernel's lists for ``sim``'s current arrays (None if they cannot take the
        template: another layout, or a larger array holding more than one value)."""
        hit = self._bound.get(sim)
        if hit is not None and hit[0] is sim.state:
            return hit[1]
        arrays, tmpl = self._template(sim)
        have = leaves(sim.state)
        if len(have) != len(arrays):
            return None
        for a, t in zip(have, arrays):
            if a.dtype != t.dtype or a.ndim != t.ndim:
                return None
            if a.shape != t.shape and (t.size == 0 or not _constant(t)
                                       or any(x < y for x, y in zip(a.shape, t.shape))):
                return None
        jobs = sim.params.jobs
        if len(jobs) != len(self.source.arrays):
            return None
        dst = _typed([_bytes(a) for a in jobs])
        item = np.array([t.itemsize for t in arrays], dtype=np.int64)
        lists = (dst, tmpl, _typed([_bytes(a) for a in have]), item)
        self._bound[sim] = (sim.state, lists, [None])  # [None]: refill_nb's entry point, once typed
        return lists

    def fits(self, sim: Any, start: int) -> bool:
        """Whether ``sim``'s arrays take the window starting at ``start`` (same gang width,
        same ``max_copies``, same number of jobs)."""
        src = self.source
        if sim.n_jobs != src.size or not 0 <= start < len(src.wmax):
            return False
        if int(src.wmax[start]) != sim.state.run.out_node.shape[0]:
            return False
        opt = sim.options.max_copies
        if opt is None:
            if src.n_gpu_nodes is None:
                src.n_gpu_nodes = int(np.count_nonzero(sim.nodes.gpus > 0))
            want = max(1, src.n_gpu_nodes) if src.fork[start] else 1
        else:
            want = int(opt)
        return want == sim.params.opts.max_copies

    def reset(self, sim: Any, rows: np.ndarray | None, seed: int, inv_best: np.ndarray,
              rew: np.ndarray) -> bool:
        """Refill ``sim`` for ``rows`` with run seed ``seed``, and the env's ``inv_best`` and
        ``rew``, as ``Simulator.reset_window`` and the env's restart do; False (nothing
        changed) when the window does not fit ``sim``'s arrays."""
        start = 0 if rows is None else int(rows[0])
        if (rows is None) != (sim.rows is None) or not self.fits(sim, start):
            return False
        lists = self._lists(sim)
        if lists is None:
            return False
        dst, tmpl, tdst, item = lists
        jobs, src = sim.params.jobs, self.source
        args = (start, src.size, src.src, src.rowb, dst, tmpl, tdst, item, jobs.arrival,
                jobs.deadline, sim.state.job.remaining, jobs.work, src.inv_full, inv_best,
                jobs.tput, jobs.cpus_need, sim.nodes.dev_is_cpu, sim.params.min_unit, rew)
        # the entry point, resolved once for this simulator's arrays (the dispatcher would type
        # the four typed lists in Python on every call, ~100 us)
        slot = self._bound[sim][2]
        if slot[0] is None:
            slot[0] = entry(refill_nb, *args)
        slot[0](*args)
        sim.begin_window(rows, seed, ViewOnDemand)
        return True


class ViewOnDemand:
    """``sim.view`` after a compiled reset: builds the simulator's
    :class:`~hetgym.sim.view.View` when first used (the env's kernels never read it; a
    View costs some 20 us, an eighth of an episode's Python work in the batched env),
    puts it in its own place and hands every attribute to it."""

    __slots__ = ("_cls", "_sim", "_view")

    def __init__(self, sim: Any) -> None:
        old = sim.view
        self._cls = old._cls if isinstance(old, ViewOnDemand) else type(old)
        self._sim = sim
        self._view = None

    def _real(self) -> Any:
        v = self._view
        if v is None:
            sim = self._sim
            v = self._view = self._cls(sim)
            if sim.view is self:
                sim.view = v
        return v

    def __getattr__(self, name: str) -> Any:
        return getattr(self._real(), name)

    def __setattr__(self, name: str, value: Any) -> None:
        if name in ViewOnDemand.__slots__:
            object.__setattr__(self, name, value)
        else:
            setattr(self._real(), name, value)


def _constant(a: np.ndarray) -> bool:
    """Whether every element of ``a`` has the bytes of its first (empty: True)."""
    if a.size == 0:
        return True
    b = _bytes(a).reshape(a.size, a.itemsize)
    return bool((b == b[0]).all())
