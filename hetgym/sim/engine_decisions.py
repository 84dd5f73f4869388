"""Carrying out scheduling decisions (``Start``, ``Preempt``, ``Move``, ``Wait``) on the
simulator's state: the decision methods of :class:`hetgym.sim.engine.Simulator`, which
inherits them from :class:`SimulatorDecisions` and owns every attribute they use (see
there)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, ClassVar

import numpy as np

from hetgym.decisions import Decision, Move, Placement, Preempt, SchedulingError, Start, Wait
from hetgym.sim.codes import (
    GRACE,
    QUEUED,
    RUNNING,
    START_NO_ROOM,
    START_WRONG_DEVICE,
    STEP_LOG_FULL,
    JobStatus,
)
from hetgym.sim.rules import below_limit, limit_code
from hetgym.sim.state.layout import ACC_WAKE, CTR_SEG

__all__ = ["SimulatorDecisions"]


class SimulatorDecisions:
    """The decision methods of :class:`~hetgym.sim.engine.Simulator` (its base class; not
    used alone)."""

    # ------------------------------------------------------------- decisions
    def apply(self, decisions: Sequence[Decision]) -> None:
        """Carry out decisions in order; raises :class:`SchedulingError` on an invalid one."""
        for d in decisions:
            if isinstance(d, Start):
                self.start(d.job, d.device, d.placement)
            elif isinstance(d, Preempt):
                self.preempt(d.job)
            elif isinstance(d, Move):
                self.move(d.job, d.placement, d.device)
            elif isinstance(d, Wait):
                continue
            else:
                raise SchedulingError(
                    f"unknown decision {d!r}; expected Start, Preempt, Move or Wait")

    def apply_plan(self, pre: np.ndarray, n_pre: int, jobs: np.ndarray, devs: np.ndarray,
                   nodes: np.ndarray, gpus: np.ndarray, n_st: int) -> None:
        """``apply`` of ``Preempt(pre[i])`` for ``i < n_pre``, then ``Start(jobs[k], devs[k],
        Placement(nodes[k, :W], gpus[k, :W]))`` for ``k < n_st`` (``W`` the job's gang size),
        in one compiled call (:func:`hetgym.sim.events.plan.apply_plan_nb`: the same kernels, the
        same order, the same checks; a refused decision raises the same error as ``apply``).
        Arrays: int64, C-contiguous, ``nodes``/``gpus`` of shape ``(>= n_st, >= W)``."""
        from hetgym.sim.events.plan import PLAN_OK, apply_plan_nb

        arr = np.ascontiguousarray
        i64 = np.int64
        pre, jobs, devs = arr(pre, dtype=i64), arr(jobs, dtype=i64), arr(devs, dtype=i64)
        nodes, gpus = arr(nodes, dtype=i64), arr(gpus, dtype=i64)
        limit = limit_code(self.options.max_preemptions)
        if self.ctr[CTR_SEG] + n_pre > self.state.run.seg_i.shape[0]:
            self.grow_segments()
        p0 = s0 = 0
        while True:
            e = self._entries.get("apply_plan_nb")
            if e is None:
                e = self._entries["apply_plan_nb"] = self._binder.entry(
                    apply_plan_nb, pre, 0, 0, jobs, devs, nodes, gpus, 0)
            code, i = e(pre[p0:], n_pre - p0, limit, jobs[s0:], devs[s0:], nodes[s0:],
                        gpus[s0:], n_st - s0, self.kP, self.kS)
            if code == PLAN_OK:
                return
            if i < n_pre - p0:  # refused (or the log is full): apply() would say why
                self.preempt(int(pre[p0 + i]))
                p0 += i + 1
                continue
            k = s0 + i - (n_pre - p0)
            p0 = n_pre
            w = int(self.jobs.workers[jobs[k]])
            self.start(int(jobs[k]), int(devs[k]), Placement(nodes[k, :w], gpus[k, :w]))
            s0 = k + 1

    def device_index(self, device: str | int | None) -> int:
        """Index of a device key or index in this scenario's device types."""
        if isinstance(device, (int, np.integer)):
            if not 0 <= int(device) < len(self.devices):
                raise SchedulingError(f"device index {device} out of range 0..{len(self.devices) - 1}")
            return int(device)
        key = str(device).lower()
        if key not in self.devices:
            raise SchedulingError(f"device {device!r} not in this scenario's {self.devices}")
        return self.devices.index(key)

    _REASONS: ClassVar[dict[int, str]] = {1: "a node index is out of range", 2: "a GPU index is out of range",
                3: "a GPU is busy or used twice", 4: "CPU cores exceeded",
                5: "memory exceeded", 6: "a CPU-node worker has a GPU index",
                8: "a worker is on a device type where the job's throughput is 0"}

    def copies(self, job: int, placement: Any, what: str = "Start") -> Placement | None:
        """Resolve a placement or a list of copy placements (forking) into one flat
        :class:`Placement` (copy c at workers ``[c W, (c + 1) W)``), checking the copy rules:
        each copy a full gang, copies on pairwise distinct nodes, >1 copy only for a
        ``forkable`` job and at most ``max_copies``."""
        if placement is None or isinstance(placement, Placement):
            return placement
        parts = list(placement)
        if not parts:
            raise SchedulingError(f"{what}: job {job} got an empty list of copy placements")
        if len(parts) == 1:
            return parts[0]
        jb = self.jobs
        w = int(jb.workers[job])
        if not jb.forkable[job]:
            raise SchedulingError(f"{what}: job {job} (job_id={jb.job_id[job]}) is not forkable "
                                  f"but was given {len(parts)} copies")
        if jb.min_workers[job] != jb.max_workers[job]:
            raise SchedulingError(f"{what}: job {job} is elastic (min_workers != max_workers); "
                                  "only a fixed gang can be forked")
        limit = int(self.params.opts.max_copies)
        if len(parts) > limit:
            raise SchedulingError(f"{what}: job {job} was given {len(parts)} copies; "
                                  f"max_copies is {limit}")
        seen: set[int] = set()
        for c, p in enumerate(parts):
            if len(p) != w:
                raise SchedulingError(f"{what}: copy {c} of job {job} has {len(p)} workers, "
                                      f"the job has {w}")
            on = set(np.asarray(p.nodes).tolist())
            if on & seen:
                raise SchedulingError(f"{what}: copies of job {job} share node(s) "
                                      f"{sorted(on & seen)}; each copy needs its own nodes")
            seen |= on
        return Placement(np.concatenate([np.asarray(p.nodes, dtype=np.int64) for p in parts]),
                         np.concatenate([np.asarray(p.gpus, dtype=np.int64) for p in parts]))

    def _placement_arrays(self, what: str, job: int, device: str | int | None,
                          placement: Placement | Sequence[Placement], check_device: bool = True
                          ) -> tuple[int, np.ndarray, np.ndarray]:
        """Check an explicit placement's shape (one worker per entry of the job's gang, all on
        ``device`` if given) and return ``(W, nodes, gpus)`` as the kernels take them. A list
        of placements is a forkable job's copies (:meth:`copies`); W is then the gang size
        times the number of copies."""
        jb = self.jobs
        w = int(jb.workers[job])
        lo, hi = int(jb.min_workers[job]), int(jb.max_workers[job])
        if not isinstance(placement, Placement):
            parts = list(placement)
            placement = self.copies(job, parts, what)
            if len(parts) > 1:
                lo = hi = w = len(placement)  # copies checked by copies(): W x copies
        if lo == hi == w and len(placement) != w:
            raise SchedulingError(f"{what}: job {job} has {w} workers, placement has {len(placement)}")
        if not lo <= len(placement) <= hi:
            raise SchedulingError(f"{what}: job {job} takes {lo} to {hi} workers (min_workers, "
                                  f"max_workers), placement has {len(placement)}")
        w = len(placement)
        nodes = np.ascontiguousarray(placement.nodes, dtype=np.int64)
        gpus = np.ascontiguousarray(placement.gpus, dtype=np.int64)
        if device is not None and check_device:
            self._check_device(what, job, self.device_index(device), nodes)
        return w, nodes, gpus

    def _check_device(self, what: str, job: int, dev: int, nodes: np.ndarray) -> None:
        """Raise if a placement whose nodes are all in range is not all on device type ``dev``
        (:func:`~hetgym.sim.events.start.start_nb` makes the same test for ``Start``)."""
        nd = self.nodes
        inside = len(nodes) == 0 or (nodes.min() >= 0 and nodes.max() < len(nd.dev))
        if inside and not (nd.dev[nodes] == dev).all():
            on = set(nd.dev[nodes].tolist())
            raise SchedulingError(
                f"{what}: job {job} asks for {self.devices[dev]} but its placement is on "
                f"{sorted(self.devices[d] for d in on)} (give device=None for a mixed allocation)")

    def start(self, job: int, device: str | int | None = None,
              placement: Placement | Sequence[Placement] | None = None) -> None:
        """Start a queued job on ``device`` (default placement) or on ``placement``
        (a list of placements = copies of a forkable job)."""
        job = int(job)
        if not 0 <= job < self.n_jobs:
            raise SchedulingError(f"Start: job index {job} out of range 0..{self.n_jobs - 1}")
        js, jb = self.js, self.jobs
        if js.status[job] != QUEUED:
            raise SchedulingError(
                f"Start: job {job} (job_id={jb.job_id[job]}) is "
                f"{JobStatus(js.status[job]).name}, not QUEUED"
            )
        w = int(jb.workers[job])
        if placement is None:
            if device is None:
                raise SchedulingError(f"Start: job {job} needs a device or a placement")
            dev = self.device_index(device)
            if jb.tput[job, dev] <= 0:
                raise SchedulingError(f"Start: job {job} cannot run on {self.devices[dev]} (tput 0)")
            code = self._kernel("place_start_nb")(job, dev, self.kP, self.kS)
            if code == START_NO_ROOM:
                raise SchedulingError(
                    f"Start: job {job} ({w} workers, {jb.cpus_need[job, dev]} cores, "
                    f"{jb.mem[job]} GB each) does not fit on free {self.devices[dev]} capacity"
                )
            if code:
                raise SchedulingError(f"Start: job {job} could not start: {self._REASONS[code]}")
            return
        w, nodes, gpus = self._placement_arrays("Start", job, device, placement, False)
        want = -1 if device is None else self.device_index(device)
        code = self._kernel("start_nb")(job, w, nodes, gpus, want, self.kP, self.kS)
        if code == START_WRONG_DEVICE:
            self._check_device("Start", job, want, nodes)
        if code:
            raise SchedulingError(f"Start: placement of job {job} is invalid: {self._REASONS[code]}")

    def move(self, job: int, placement: Placement | Sequence[Placement],
             device: str | int | None = None) -> None:
        """Re-allocate a running job (or one in its grace period) to ``placement`` at once
        (see :class:`~hetgym.decisions.Move`; a list of placements = copies)."""
        job = int(job)
        js = self.js
        if not 0 <= job < self.n_jobs or js.status[job] not in (RUNNING, GRACE):
            st = JobStatus(js.status[job]).name if 0 <= job < self.n_jobs else "out of range"
            raise SchedulingError(f"Move: job {job} is {st}, not RUNNING")
        if not isinstance(placement, (Placement, list, tuple)):
            raise SchedulingError(f"Move: job {job} needs a Placement or a list of them, "
                                  f"got {placement!r}")
        w, nodes, gpus = self._placement_arrays("Move", job, device, placement)
        if self.ctr[CTR_SEG] + 1 > self.state.run.seg_i.shape[0]:
            self.grow_segments()
        code = self._kernel("move_nb")(job, w, nodes, gpus, self.kP, self.kS)
        if code:
            raise SchedulingError(f"Move: placement of job {job} is invalid: {self._REASONS[code]}")

    def set_wakeup(self, t: float | None) -> None:
        """Ask for a decision point at time ``t`` (``None``: none). A wake-up is an event
        instant at which nothing but time changes; it is forgotten once reached."""
        if t is None:
            self.acc[ACC_WAKE] = np.inf
            return
        t = float(t)
        if not t > self.now:
            raise SchedulingError(
                f"next_wakeup returned {t!r} at t={self.now!r}; expected a time later than now "
                "or None")
        self.acc[ACC_WAKE] = t

    def preempt(self, job: int) -> None:
        """Preempt a running job: grace period first, or suspend at once if it is 0."""
        job = int(job)
        js = self.js
        if not 0 <= job < self.n_jobs or js.status[job] != RUNNING:
            st = JobStatus(js.status[job]).name if 0 <= job < self.n_jobs else "out of range"
            raise SchedulingError(f"Preempt: job {job} is {st}, not RUNNING")
        limit = self.options.max_preemptions
        if not below_limit(js.n_preempt[job], limit_code(limit)):
            raise SchedulingError(
                f"Preempt: job {job} was already preempted {js.n_preempt[job]} times (limit {limit})"
            )
        if self._kernel("preempt_nb")(job, self.kP, self.kS) == STEP_LOG_FULL:
            self.grow_segments()
            self._kernel("preempt_nb")(job, self.kP, self.kS)
