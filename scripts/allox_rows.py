"""AlloX's rows of the reproduction table (``scripts/reproduce.py``): the paper's worked
examples (sec. 1, 2.2, 3.1) and its simulation headline (sec. 5.2, Figs. 11-16).

The headline rows run ``allox-hybrid`` in the paper's regime (``setting="paper"``,
registered as ``allox-paper``: 10 users x 1,024 jobs at speed-weighted load 0.9; see
docs/allox.md, "The paper's regime"), through
:func:`allox_paper_study.paper_regime_rows`.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

def headline_rows(quick: bool) -> list:
    """The paper regime's rows (Figs. 11-16: AlloX's average-JCT reductions against DRFF,
    DRFS, ES, DRFA, its gap to SRPT, fairness, alpha) beside the paper's; ``quick``: seed 0
    at 2,000 jobs, else seeds 0-2 at the paper's 10 x 1,024 jobs (about 1 h on 2 cores)."""
    from hetgym.reproduction import Row

    sys.path.insert(0, str(Path(__file__).resolve().parent))
    try:
        from allox_paper_study import paper_regime_rows
    finally:
        sys.path.pop(0)
    return [Row(**r) for r in paper_regime_rows(quick=quick)]


def worked_example_rows() -> list:
    """The paper's small examples (Table 1 / Fig. 1, Figs. 4-5, the 3-job matching of
    sec. 3.1) through the simulator; average JCT in the paper's minutes (read as seconds)."""
    import baselines
    import hetgym
    from baselines.allox.schedulers import AlloX
    from hetgym.presets.allox import (
        JSQ_PLUS_EXAMPLE,
        SJF_PLUS_EXAMPLE,
        TABLE1,
        THREE_JOBS,
        example_scenario,
    )
    from hetgym.reproduction import Row

    def avg(p: list, sched: Any, gpus: int = 2, cpus: int = 2, users: list | None = None) -> float:
        res = hetgym.simulate(example_scenario(p, gpus=gpus, cpus=cpus, users=users), sched, seed=0)
        return float(res.jobs["jct"].mean())

    def ex(claim: str, src: str, want: float, got: float, note: str = "") -> Row:
        return Row("AlloX", claim, src, want, got, "exact", setting="all jobs at t = 0", link="allox.md#the-papers-worked-examples",
                   note=note, example=True)

    users = [0, 1, 0, 1, 0, 1]
    opt = AlloX(alpha=1.0)
    return [
        ex("Table 1: ES (FCFS) avg JCT [min]", "sec. 1, Fig. 1a", 181 / 6,
           avg(TABLE1, baselines.make("es", order="fcfs"), users=users)),
        ex("Table 1: optimal avg JCT [min]", "sec. 1, Fig. 1b", 76 / 6, avg(TABLE1, opt, users=users),
           note="Fig. 1b's schedule totals 76; the optimum (brute force) is 75"),
        ex("Fig. 4: JSQ+ avg JCT [min]", "sec. 2.2, Fig. 4a", 100.0, avg(JSQ_PLUS_EXAMPLE, baselines.make("jsq+")),
           note="the text's rule lets jobs 3, 4 queue on the GPUs (60); 100 without queueing"),
        ex("Fig. 4: optimal avg JCT [min]", "sec. 2.2, Fig. 4b", 45.0, avg(JSQ_PLUS_EXAMPLE, opt)),
        ex("Fig. 5: SJF+ avg JCT [min]", "sec. 2.2, Fig. 5", 50.0, avg(SJF_PLUS_EXAMPLE, baselines.make("sjf+"))),
        ex("Fig. 5: optimal avg JCT [min]", "sec. 2.2", 20.0, avg(SJF_PLUS_EXAMPLE, opt)),
        ex("3 jobs: min-cost matching, total JCT", "sec. 3.1, Figs. 6-7", 17.0,
           3 * avg(THREE_JOBS, opt, gpus=1, cpus=1)),
    ]
