"""The faster forms of the paper-family baselines (issue 9, fourth pass) give exactly the
schedules of the straightforward rules kept here (the code they replaced).

Each fast form is run job by job (start, end, device, preemptions, restarts, segments,
decision points) against its plain form on workloads whose queues grow well past a few
jobs (``fitgpp-lab`` slices, the paper families' own presets).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import hetgym
from baselines.andreas import FirstPrinciple
from baselines.andreas_parts import config_table, start_outside_model, take_gpus
from hetgym.decisions import Decision, Start
from tests.baselines.test_fast_paths import assert_same_schedule


class PlainFirstPrinciple(FirstPrinciple):
    """The first-principle methods as written before: the configuration table of the
    whole sorted queue at every decision point, every job tried on every entry."""

    def decide(self, view: Any) -> list[Decision]:
        q = np.asarray(view.queue, dtype=np.int64)
        if len(q) == 0:
            return []
        jobs = self._sorted(view, q)
        tab = config_table(view, self.classes, jobs)
        cap = view.capacity()
        out: list[Decision] = []
        outside: list[int] = []
        for i, j in enumerate(jobs.tolist()):
            entries = tab.entries(i)
            if not entries:
                outside.append(j)
                continue
            for e in entries:
                k, g = int(tab.cls[i, e]), int(tab.g[i, e])
                n = self._node(view, cap, j, k, g)
                if n >= 0:
                    out.append(Start(j, None, take_gpus(view, cap, j, n, g)))
                    break
        return out + start_outside_model(view, cap, outside)


ANDREAS_SCENARIOS = [("fitgpp-lab", {"n_jobs": 300}), ("andreas-armida", {}),
                     ("andreas-sim", {}), ("hetero-small", {"n_jobs": 60})]


@pytest.mark.parametrize("order", ["fifo", "edf", "ps"])
@pytest.mark.parametrize("exclusive", [True, False])
@pytest.mark.parametrize("scen,kw", ANDREAS_SCENARIOS)
def test_first_principle_matches_plain_walk(order: str, exclusive: bool, scen: str, kw: dict) -> None:
    sc = hetgym.scenarios.get(scen, **kw)
    assert_same_schedule(sc, FirstPrinciple(order, exclusive), PlainFirstPrinciple(order, exclusive))
