"""The AlloX paper's SRPT: every job re-planned at every event, moves free of restart cost.

The AlloX paper (sec. 5.1) compares against SRPT as an "unrealistic lower bound": "at any
time, the job with the shortest remaining processing time is executed, which requires
preemption", and "SRPT is preemptive at no cost". :class:`MigratingSRPT` is that rule:

* it is called at **every** event, also when no job waits (``call_when_queue_empty``),
  so a job running on a slow device type moves to a faster one as soon as one frees up;
* at each call, every movable job (running or waiting; running jobs in a grace period or
  at the preemption limit keep their resources, as in :class:`baselines.classic.schedulers.SRPT`)
  is ranked by remaining time on its fastest device type, and walked in that order on the
  capacity of the whole cluster: each takes the first device type of its candidates
  (``devices``: fastest type with room, or the fastest type only) that has room;
* a running job that keeps its device type keeps its placement when that is still free;
  one that changes type, or node, is **moved** (:class:`~hetgym.decisions.Move`), a
  running job that finds no room is preempted, a waiting job that finds room starts.

What a move costs is the scenario's: a :class:`~hetgym.decisions.Move` waits the
``restart_delay`` and loses the progress since the last checkpoint
(``checkpoint_interval``). The paper's regime (``allox-paper``) sets ``restart_delay=0``,
``checkpoint_interval=0`` and no grace periods, so there every move and preemption is
free, as the paper's SRPT is; on a scenario that charges restarts this SRPT pays them.
Moves whose targets are held by other moving jobs are ordered so that each is carried
out on free resources; a cycle of moves that cannot be ordered is broken by a preemption
and a restart of one of its jobs (free in the paper's regime).

The registered ``srpt`` stays the sticky form (:class:`baselines.classic.schedulers.SRPT`): it keeps a
running job where it is, is not called while no job waits, and is compiled for speed; it
is the form the other families' studies use. ``baselines.make("srpt", migrate=True)``
builds this one.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np

from baselines.common.parts import DeviceChoice, FastestFirst
from hetgym.decisions import Decision, Move, Placement, Preempt, SchedulerBase, Start
from hetgym.sim.rules import below_limit, covers, limit_code

if TYPE_CHECKING:  # pragma: no cover
    from hetgym.sim.view import View

__all__ = ["MigratingSRPT"]


@dataclass
class MigratingSRPT(SchedulerBase):
    """Preemptive SRPT that re-plans every job at every event (module docstring).

    Attributes:
        devices: Device choice of every job at every call (default: fastest type with room).
    """

    devices: DeviceChoice = field(default_factory=FastestFirst)
    round_length: float | None = None
    #: Called at every event, also with an empty queue (a freed GPU pulls a CPU job over).
    call_when_queue_empty = True

    def reset(self, view: View) -> None:
        """The least amount of each device type any job needs (to stop walking when full)."""
        need = np.asarray(view.cpus_need, dtype=np.float64)
        gpu_type = ~np.asarray(view.dev_is_cpu, dtype=bool)
        least = np.empty(len(view.devices))
        for d in range(len(view.devices)):
            if gpu_type[d]:
                least[d] = 1.0
            else:
                pos = need[:, d][need[:, d] > 0]
                least[d] = pos.min() if len(pos) else 1.0
        self._least = least

    def _full(self, cap) -> bool:
        """Whether no device type has room for the smallest worker of any job."""
        return not bool(np.any(covers(np.asarray(cap.free_dev, dtype=np.float64), self._least)))

    def decide(self, view: View) -> list[Decision]:
        """Preemptions, moves and starts that make the cluster run the SRPT order."""
        q = np.asarray(view.queue, dtype=np.int64)
        r = np.asarray(view.running, dtype=np.int64)
        if len(q) == 0 and len(r) == 0:
            return []
        limit = limit_code(view.max_preemptions)
        movable = np.asarray([j for j in r.tolist()
                              if not view.in_grace(j) and below_limit(int(view.n_preempt[j]), limit)],
                             dtype=np.int64)
        cand = np.concatenate([movable, q])
        if len(cand) == 0:
            return []
        rem = view.durations(cand, remaining=True).min(axis=1)
        order = cand[np.argsort(rem, kind="stable")].tolist()
        # pass 1: each job's device type, walking the ranking on the whole cluster
        plan = view.capacity()
        plan.give_many(movable)
        kind: dict[int, int] = {}
        for j in order:
            if self._full(plan):
                break
            for d in self.devices.candidates(view, j):
                if plan.place(j, d) is not None:
                    kind[j] = d
                    break
        running = set(movable.tolist())
        dropped = [j for j in movable.tolist() if j not in kind]
        # pass 2: placements. The jobs preempted with a grace period keep theirs for now.
        lay = view.capacity()
        lay.give_many(np.asarray([j for j in movable.tolist() if j in kind or view.grace[j] <= 0],
                                 dtype=np.int64))
        target: dict[int, Placement] = {}
        for j in order:  # running jobs that keep their type keep their place if it is free
            if j in running and j in kind and int(view.device[j]) == kind[j]:
                nodes, gpus = _current(view, j)
                if _free_in(lay, view, j, nodes, gpus):
                    lay.take(j, nodes, gpus)
                    target[j] = Placement(nodes, gpus)
        for j in order:
            if j in kind and j not in target:
                pl = lay.place(j, kind[j])
                if pl is not None:
                    target[j] = pl
                elif j in running:
                    dropped.append(j)
        return self._carry_out(view, running, dropped, target)

    def _carry_out(self, view: View, running: set[int], dropped: list[int],
                   target: dict[int, Placement]) -> list[Decision]:
        """Preemptions first, then the moves in an order in which each finds its target
        free (a cycle broken by preempting and restarting one job), then the starts."""
        out: list[Decision] = []
        cur = view.capacity()
        for j in dropped:
            out.append(Preempt(j))
            if view.grace[j] <= 0:
                cur.give(j)
        moves = []
        for j, pl in target.items():
            if j in running:
                nodes, gpus = _current(view, j)
                if not _same(nodes, gpus, pl):
                    moves.append(j)
        restart: list[int] = []
        while moves:
            left = []
            for j in moves:
                cur.give(j)
                pl = target[j]
                if _free_in(cur, view, j, pl.nodes, pl.gpus):
                    cur.take(j, pl.nodes, pl.gpus)
                    out.append(Move(j, pl))
                else:
                    cur.take_many(np.asarray([j], dtype=np.int64))
                    left.append(j)
            if len(left) == len(moves):  # a cycle: one job leaves (and starts again below)
                free = [i for i in left if view.grace[i] <= 0]
                j = free[0] if free else left[0]
                left.remove(j)
                out.append(Preempt(j))
                if view.grace[j] <= 0:
                    cur.give(j)
                    restart.append(j)
            moves = left
        starts = restart + [j for j in target if j not in running]
        for j in starts:  # each on its target if that is free by now (else it waits)
            pl = target[j]
            if _free_in(cur, view, j, pl.nodes, pl.gpus):
                cur.take(j, pl.nodes, pl.gpus)
                out.append(Start(j, None, pl))
        return out


def _current(view: View, job: int) -> tuple[np.ndarray, np.ndarray]:
    """A running job's placement (copies of its worker nodes and GPUs)."""
    w = int(view.nworkers[job])
    return np.array(view.worker_node[job, :w]), np.array(view.worker_gpu[job, :w])


def _same(nodes: np.ndarray, gpus: np.ndarray, pl: Placement) -> bool:
    """Whether ``pl`` is the placement ``(nodes, gpus)`` (as a multiset of pairs)."""
    return len(nodes) == len(pl.nodes) and sorted(zip(nodes.tolist(), gpus.tolist())) == \
        sorted(zip(pl.nodes.tolist(), pl.gpus.tolist()))


def _free_in(cap, view: View, job: int, nodes: np.ndarray, gpus: np.ndarray) -> bool:
    """Whether a placement of ``job`` is free in the scratch capacity ``cap``."""
    from baselines.classic.schedulers import _free_in as free_in

    return free_in(cap, view, job, nodes, gpus)
