"""The faster forms of the AlloX paper's baselines give exactly the schedules of the
straightforward rules kept here (the code they replaced, written for clarity).

``JSQPlus`` keeps the machines' projected free times incrementally (a Numba walk over
the jobs queued at machines) instead of recomputing them per arrival.
"""

from __future__ import annotations

import numpy as np
import pytest

import baselines
import hetgym
from baselines.allox import JSQPlus
from baselines.allox_parts import slots_per_device
from hetgym.decisions import Start
from tests.baselines.test_fast_paths import assert_same_schedule

SCENARIOS = [("fitgpp-lab", {"n_jobs": 300}), ("fitgpp-lab", {"n_jobs": 200, "seed": 3}),
             ("allox-hybrid", {}), ("hetero-small", {}), ("synthetic-hybrid", {})]


class PlainJSQ:
    """JSQ+ as the paper's text puts it: per arrival, every machine's projected free time
    is recomputed from the running jobs and every job queued at machines; then every
    idle machine whose head job has all its machines starts it, until none does."""

    round_length = None

    def reset(self, view) -> None:
        slots = slots_per_device(view)
        self.mdev = np.repeat(np.arange(len(slots)), slots)
        self.queues = [[] for _ in range(len(self.mdev))]
        self.holder = np.full(len(self.mdev), -1, dtype=np.int64)
        self.assigned, self.seq = {}, {}

    def omega(self, view) -> np.ndarray:
        omega = np.full(len(self.mdev), view.now)
        for i, j in enumerate(self.holder.tolist()):
            if j >= 0 and view.rate[j] > 0:
                omega[i] = view.now + float(view.remaining[j]) / float(view.rate[j])
        for j in sorted({j for qu in self.queues for j in qu}, key=self.seq.__getitem__):
            d, ms = self.assigned[j]
            omega[ms] = max(omega[m] for m in ms) + view.duration(j, d)
        return omega

    def decide(self, view) -> list:
        status = np.asarray(view.status)
        for i, j in enumerate(self.holder.tolist()):
            if j >= 0 and status[j] not in (2, 3):
                self.holder[i] = -1
        new = [int(j) for j in view.queue.tolist() if int(j) not in self.assigned]
        if new:
            omega = self.omega(view)
            p = view.durations(np.asarray(new, dtype=np.int64))
            for k, j in enumerate(new):
                w = int(view.workers[j])
                best, choice = np.inf, None
                for d in range(p.shape[1]):
                    ids = np.flatnonzero(self.mdev == d)
                    if not np.isfinite(p[k, d]) or len(ids) < w:
                        continue
                    pick = ids[np.argsort(omega[ids], kind="stable")[:w]]
                    done = omega[pick].max() + p[k, d]
                    if done < best:
                        best, choice = done, (d, pick)
                if choice is None:
                    continue
                d, pick = choice
                omega[pick] = best
                self.assigned[j] = (d, pick.tolist())
                self.seq[j] = len(self.seq)
                for i in pick.tolist():
                    self.queues[i].append(j)
        cap = view.capacity()
        out = []
        progress = True
        while progress:
            progress = False
            for i in range(len(self.queues)):
                if self.holder[i] >= 0 or not self.queues[i]:
                    continue
                j = self.queues[i][0]
                d, ms = self.assigned[j]
                if any(self.holder[m] >= 0 or self.queues[m][0] != j for m in ms):
                    continue
                pl = cap.place(j, d)
                if pl is not None:
                    out.append(Start(j, d, pl))
                    for m in ms:
                        self.queues[m].pop(0)
                        self.holder[m] = j
                    progress = True
        return out


@pytest.mark.parametrize("name, kw", SCENARIOS)
def test_jsq_plus_matches_plain_rule(name, kw) -> None:
    sc = hetgym.scenarios.get(name, **kw)
    assert_same_schedule(sc, baselines.make("jsq+"), PlainJSQ())
    assert isinstance(baselines.make("jsq+"), JSQPlus)
