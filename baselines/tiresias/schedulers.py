"""Tiresias (Gu et al., NSDI'19): discretised 2D-LAS, information-agnostic.

Source: ``SymbioticLab/Tiresias`` ``simulator/run_sim.py::dlas_sim_jobs`` (``dlas-gpu``,
``--scheme=count``), ``simulator/jobs.py``, README §4; docs/gavel.md.

* Attained service ``a_j`` = workers x time holding resources, summed over the job's
  runs (GPU-seconds, ``view.attained_service``; Tiresias' ``executed_time x num_gpu``).
* ``K = len(thresholds) + 1`` queues: ``Q_0 = [0, theta_1)``, ``Q_1 = [theta_1, theta_2)``,
  ...; every job enters ``Q_0`` and is demoted when ``a_j`` reaches its queue's upper
  threshold. The scheduler asks for a wake-up (``next_wakeup``, docs/semantics.md *Timers*) at
  the next crossing while a job waits, so a demotion is acted on at the instant it happens.
* At every decision point the jobs are ordered ``Q_0`` first, then ``Q_1``, ...; within a
  queue running jobs first (by the start of their current run), then waiting jobs by the
  time they entered the queue (arrival, or the crossing time for a demoted job), ties by
  job index. Walking that order on the whole cluster (running jobs' resources released),
  a job "should run" if its gang fits in what is left: a running job keeps its GPUs if
  they are still free, a waiting job takes a placement on the device types it can run on
  in a random order (:class:`~baselines.common.unaware.AnyType`, heterogeneity-unaware);
  otherwise it is skipped, not blocking. Running jobs that should not run are preempted
  (progress kept); waiting jobs that should run start in what is free once the preempted
  jobs without a grace period have left (the walk and carry-out of
  :class:`~baselines.classic.schedulers.SRPT`, whose ``_carry_out`` this class reuses).
* PromoteKnob is off (Hadar's setting) and not offered.

Assumptions (docs/gavel.md): Tiresias threshold (two queues, ``theta_1 = 3600`` GPU-seconds, the
Tiresias README's two-queue example; the repo's ``jobs.py`` uses 3250 s with three queues). Jobs
in a grace period, or at the scenario's preemption limit, keep their resources. GPU
counting follows hetgym's placement (a gang that fits in the free GPU count but not on
any node set of one type is skipped), where Tiresias' ``count`` scheme counts GPUs only.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from baselines.classic.schedulers import SRPT, _free_in
from baselines.gavel.place import current
from baselines.common.parts import is_view
from baselines.common.unaware import AnyType
from hetgym.decisions import Cadence, Decision
from hetgym.sim.codes import GRACE, RUNNING
from hetgym.sim.rules import below_limit, limit_code
from hetgym.sim.view import CapacityModel

__all__ = ["Tiresias"]

_EPS = 1e-6  # GPU-seconds: service within this of a threshold counts as crossed


@dataclass
class Tiresias(SRPT):
    """Discretised 2D-LAS with ``len(thresholds) + 1`` queues (module docstring).

    Attributes:
        thresholds: Queue thresholds in GPU-seconds, increasing (default one: 3600).
        order: Device-type order for waiting jobs (``"random"`` or ``"cluster"``).
        compiled: Pass over the waiting jobs that find no room in compiled code
            (:meth:`_decide_all`); False tries them one by one (the same decisions).
    """

    devices: AnyType = field(default_factory=AnyType)
    thresholds: tuple = (3600.0,)
    order: str = "random"
    compiled: bool = True

    def __post_init__(self) -> None:
        th = np.asarray(self.thresholds, dtype=np.float64).reshape(-1)
        if (th <= 0).any() or (np.diff(th) <= 0).any():
            raise ValueError(f"Tiresias: thresholds must be positive and increasing, got {self.thresholds}")
        self.thresholds = tuple(float(x) for x in th)
        self.devices = AnyType(self.order)

    @property
    def cadence(self) -> Cadence:
        """Wake-ups at the threshold crossings (:meth:`next_wakeup`); no fast path (SRPT's
        plan does not apply to the MLFQ order)."""
        return Cadence(round_length=self.round_length, wakeups=True)

    @classmethod
    def make(cls, thresholds=(3600.0,), order: str = "random") -> Tiresias:
        """Factory for the registry and Hydra."""
        return cls(thresholds=tuple(thresholds), order=order)

    def reset(self, view) -> None:
        """Queue bookkeeping: each job's queue and the time it entered it."""
        self._groups = None  # SRPT's fast path does not apply (MLFQ order)
        self._th = np.asarray(self.thresholds)
        self._q = np.full(view.n_jobs, -1, dtype=np.int64)
        self._entry = np.zeros(view.n_jobs)

    def queue_of(self, service: np.ndarray) -> np.ndarray:
        """Queue index of each attained service (GPU-seconds)."""
        return np.searchsorted(self._th, np.asarray(service) + _EPS, side="right")

    def _decide_all(self, view) -> list[Decision]:
        """The MLFQ walk of the module docstring.

        Same walk as :meth:`_walk_plain` (kept for the tests), with shortcuts that
        change no decision: the order is one ``lexsort``; and until the first waiting job
        is placed, the running jobs met in the walk get their own resources back in one
        call (``take_many``, the same floating-point operations in the same order as one
        ``take`` each) without the test that they are free: only running jobs have
        taken resources back by then, and those hold other GPUs (cores and memory: what
        the job gave back is still there, far beyond the test's 1e-9 slack). A waiting
        job does not try a GPU type with fewer free GPUs than its workers (``place``
        refuses it there in the same way). With ``compiled`` (on a simulator's view),
        the waiting jobs that would find no room, up to the next running job, are passed
        over in one call (:func:`~baselines.tiresias.kernels.next_fit_nb`); only the
        job that fits is placed here."""
        plan = view.capacity()
        if not all(hasattr(plan, a) for a in ("give_many", "take_many", "free_dev")):
            return self._walk_plain(view)  # a capacity model without them (the tests' reference)
        key, movable, running, waiting = self._order(view)
        plan.give_many(movable)
        workers = np.asarray(view.workers)
        batchable = (np.asarray(view.nworkers)[movable] == workers[movable]) \
            & (np.asarray(view.n_copies)[movable] == 1)
        can_batch = dict(zip(movable.tolist(), batchable.tolist()))
        free_dev = plan.free_dev  # kept up to date by every take and place on ``plan``
        is_cpu = np.asarray(view.dev_is_cpu).tolist()
        keep: set[int] = set()
        starts: list[int] = []
        batch: list[int] = []
        placed = False
        skip = self._skipper(view, plan, key, waiting)
        keys = key.tolist()
        if skip is not None:  # run_end[i]: where the batchable running jobs from i end
            ok = np.zeros(view.n_jobs, dtype=np.bool_)
            ok[movable] = batchable
            stop = np.where(ok[key] & ~waiting, len(keys), np.arange(len(keys)))
            run_end = np.minimum.accumulate(stop[::-1])[::-1].tolist()
            kept = np.zeros(len(keys), dtype=np.bool_)
            keep_run = self._keeper(view, plan, key, waiting)
        i, fits_at, drawn = 0, -1, False
        while i < len(keys):
            j = keys[i]
            if batch and (j not in running or placed or not can_batch[j]):
                plan.take_many(np.asarray(batch, dtype=np.int64))  # in walk order
                keep.update(batch)
                batch = []
            if j not in running:
                if skip is not None and i != fits_at:
                    if not drawn:  # the type order of this decision point, drawn as before
                        self.devices.candidates(view, j)
                        drawn = True
                    k = skip(i)  # the waiting jobs before k would find no room
                    if k > i:
                        i = fits_at = k
                        continue
                w = int(workers[j])  # a GPU type with fewer free GPUs than workers: no room
                if any(plan.place(j, d) is not None for d in self.devices.candidates(view, j)
                       if is_cpu[d] or free_dev[d] >= w):
                    starts.append(j)
                    placed = True
                i += 1
                continue
            if not placed and can_batch[j]:
                if skip is not None:  # the whole run of batchable running jobs
                    batch.extend(keys[i:run_end[i]])
                    i = run_end[i]
                else:
                    batch.append(j)
                    i += 1
                continue
            if skip is not None and placed:  # each running job up to the next waiting one
                e = keep_run(i, kept)
                keep.update(key[i:e][kept[i:e]].tolist())
                i = e
                continue
            i += 1
            where = current(view, j)  # a running job keeps its GPUs if still free
            if _free_in(plan, view, j, *where):
                plan.take(j, *where)
                keep.add(j)
        keep.update(batch)  # the walk ends here: what they would take is not read again
        return self._carry_out(view, movable, keep, starts)

    def _skipper(self, view, plan, key: np.ndarray, waiting: np.ndarray):
        """``skip(i)``: :func:`~baselines.tiresias.kernels.next_fit_nb` from walk position
        ``i`` on ``plan`` as it is then; None when it does not apply (``compiled`` off, a
        capacity model or view without the simulator's arrays, a device choice whose
        ``type_set`` is None)."""
        if not (self.compiled and is_view(view) and isinstance(plan, CapacityModel)):
            return None
        types = self.devices.type_set(view)
        if types is None:
            return None
        from baselines.tiresias.kernels import next_fit_nb

        key = np.ascontiguousarray(key, dtype=np.int64)
        args = (np.ascontiguousarray(waiting), np.asarray(view.workers), types,
                np.asarray(view.tput), np.asarray(view.cpus_need), np.asarray(view.mem),
                view.kernel.mirror.nodes, plan.ns)
        return lambda i: next_fit_nb(key, i, *args)

    @staticmethod
    def _keeper(view, plan, key: np.ndarray, waiting: np.ndarray):
        """``keep_run(i, kept)``: :func:`~baselines.tiresias.kernels.keep_running_nb` from
        walk position ``i`` on ``plan`` (only with :meth:`_skipper`'s conditions)."""
        from baselines.tiresias.kernels import keep_running_nb

        key = np.ascontiguousarray(key, dtype=np.int64)
        args = (np.ascontiguousarray(waiting), np.asarray(view.workers),
                np.asarray(view.worker_node), np.asarray(view.worker_gpu),
                np.asarray(view.cpus_need), np.asarray(view.mem), np.asarray(view.node_device),
                view.kernel.mirror.nodes, plan.ns)
        return lambda i, kept: keep_running_nb(key, i, *args, kept)

    def _order(self, view) -> tuple[np.ndarray, np.ndarray, set[int], np.ndarray]:
        """The walk order (queue, running first, start or entry time, index), the running
        jobs the walk may preempt, them as a set, and which places of the walk hold a
        waiting job."""
        q = np.asarray(view.queue, dtype=np.int64)
        r = np.asarray(view.running, dtype=np.int64)
        limit = view.max_preemptions
        pin = np.asarray(view.status)[r] == GRACE
        if limit is not None:
            pin |= ~below_limit(np.asarray(view.n_preempt)[r], limit_code(limit))
        movable = r[~pin]
        cand = np.concatenate([movable, q]).astype(np.int64)
        svc = np.asarray(view.attained_service(), dtype=np.float64)
        self._enter(view, cand, svc)
        is_run = np.zeros(len(cand), dtype=np.int64)
        is_run[len(movable):] = 1  # 0 = running (first), 1 = waiting
        t = np.where(is_run == 0, np.asarray(view.run_start)[cand], self._entry[cand])
        perm = np.lexsort((cand, t, is_run, self._q[cand]))
        return cand[perm], movable, set(movable.tolist()), is_run[perm] == 1

    def _walk_plain(self, view) -> list[Decision]:
        """The walk as first written (every running job given back, then tested and taken
        one by one, in a Python ``sorted`` order); tests compare it with the fast one."""
        q = np.asarray(view.queue)
        r = np.asarray(view.running)
        limit = limit_code(view.max_preemptions)
        pinned = {j for j in r.tolist()
                  if view.in_grace(j) or not below_limit(view.n_preempt[j], limit)}
        movable = np.asarray([j for j in r.tolist() if j not in pinned], dtype=np.int64)
        cand = np.concatenate([movable, q]).astype(np.int64)
        svc = np.asarray(view.attained_service(), dtype=np.float64)
        self._enter(view, cand, svc)
        run_start = np.asarray(view.run_start)
        running = set(movable.tolist())
        key = sorted(cand.tolist(), key=lambda j: (
            int(self._q[j]), 0 if j in running else 1,
            float(run_start[j]) if j in running else float(self._entry[j]), j))
        plan = view.capacity()
        for j in movable.tolist():
            plan.give(j)
        keep: set[int] = set()
        starts: list[int] = []
        for j in key:
            if j not in running:
                if any(plan.place(j, d) is not None for d in self.devices.candidates(view, j)):
                    starts.append(j)
                continue
            where = current(view, j)
            if _free_in(plan, view, j, *where):
                plan.take(j, *where)
                keep.add(j)
        return self._carry_out(view, movable, keep, starts)

    def _enter(self, view, jobs: np.ndarray, svc: np.ndarray) -> None:
        """Record queue changes: a new job enters Q_0 at its arrival, a demoted one at
        the instant its service crossed the threshold."""
        qi = self.queue_of(svc[jobs])
        moved = self._q[jobs] != qi
        now = float(view.now)
        status = np.asarray(view.status)
        for j, qq in zip(jobs[moved].tolist(), qi[moved].tolist()):
            if self._q[j] < 0 and qq == 0:
                self._entry[j] = float(view.arrival[j])
            elif status[j] == RUNNING:
                w = float(view.workers[j])
                self._entry[j] = now - (svc[j] - self._th[qq - 1]) / w if qq > 0 else now
            else:
                self._entry[j] = now
            self._q[j] = qq

    def next_wakeup(self, view) -> float | None:
        """The next instant a running job's service reaches its queue's threshold, while
        some job waits (otherwise a demotion changes nothing)."""
        if len(view.queue) == 0:
            return None
        r = np.asarray(view.running)
        r = r[np.asarray(view.status)[r] == RUNNING]
        if len(r) == 0:
            return None
        svc = np.asarray(view.attained_service(), dtype=np.float64)[r]
        qi = self.queue_of(svc)
        top = qi < len(self._th)
        if not top.any():
            return None
        gap = self._th[qi[top]] - svc[top]
        now = float(view.now)
        return max(now + float((gap / np.asarray(view.workers)[r[top]]).min()),
                   float(np.nextafter(now, np.inf)))


BASELINES = {"tiresias": Tiresias.make}
