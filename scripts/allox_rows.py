"""AlloX's rows of the reproduction table (``scripts/reproduce.py``): the paper's worked
examples (sec. 1, 2.2, 3.1) and its simulation headline (sec. 5.2.2, Fig. 13; sec. 5.2.3,
Fig. 16), built from what ``scripts/allox_study.py`` offers.

HOOK (issue 13 part 3): the headline rows below run ``allox-hybrid`` at its default load,
which is *not* the paper's regime (the baselines' queues do not explode there; see
docs/allox.md). When ``allox_study.py`` exposes the paper-regime setting, replace the body
of :func:`headline_rows` by a call to it (or pass its scenario keywords as
``REGIME_KW``); keep the paper values (:data:`PAPER_REDUCTION`, :data:`PAPER_SRPT_GAP`).
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

#: Sec. 5.2.2 (Fig. 13): AlloX (alpha = 0.1) reduces the average JCT by this much [%].
PAPER_REDUCTION = {"drff": 95.0, "drfs": 84.0, "es": 88.0, "drfa": 53.0}
#: Sec. 5.2.2: AlloX is "not far (30%)" from SRPT; sec. 5.2.3 (Fig. 16): 9 % at alpha = 1.
PAPER_SRPT_GAP = {"allox": 30.0, "allox[alpha=1]": 9.0}
#: Scenario keywords of the paper's regime on ``allox-hybrid`` (HOOK: empty = the default).
REGIME_KW: dict[str, Any] = {}
LINK = "allox.md#reading-the-numbers-against-the-paper"


def _study() -> Any:
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    try:
        import allox_study
    finally:
        sys.path.pop(0)
    return allox_study


def headline_rows(quick: bool) -> list:
    """AlloX's average-JCT reductions against DRFF, DRFS, ES, DRFA and its gap to SRPT on
    ``allox-hybrid`` (``quick``: seed 0; else seeds 0-2), beside the paper's."""
    from hetgym.reproduction import Row, seed_label

    study = _study()
    seeds = [0] if quick else [0, 1, 2]
    names = ["allox", "allox[alpha=1]", *PAPER_REDUCTION, "srpt[fastest-only]"]
    load = float(REGIME_KW.get("load", 1.0))
    base, _ = study.study(seeds, load, REGIME_KW.get("n_jobs"), names, [])
    jct = base.groupby("scheduler")["avg_jct"].mean()
    setting = f"allox-hybrid, load {load:g}, {seed_label(seeds)} (not the paper's regime yet)"
    note = "at load 1.0 the GPUs alone nearly keep up; the paper's baselines' queues explode"
    rows = [Row("AlloX", f"avg JCT reduction, AlloX (alpha 0.1) vs {name.upper()} [%]", "sec. 5.2.2, Fig. 13",
                paper, 100.0 * (1.0 - jct["allox"] / jct[name]), neutral=0.0, setting=setting, link=LINK,
                note=note if name != "drfs" else "alpha 0.1 plans one user's jobs onto busy GPUs; DRFS starts the shortest")
            for name, paper in PAPER_REDUCTION.items()]
    src = {"allox": "sec. 5.2.2, Fig. 13", "allox[alpha=1]": "sec. 5.2.3, Fig. 16"}
    rows += [Row("AlloX", f"avg JCT above SRPT, {name} [%]", src[name], gap,
                 100.0 * (jct[name] / jct["srpt[fastest-only]"] - 1.0), neutral=0.0, setting=setting,
                 link=LINK, note="SRPT = srpt[fastest-only] (preemptive, waits for the fastest type)")
             for name, gap in PAPER_SRPT_GAP.items()]
    return rows


def worked_example_rows() -> list:
    """The paper's small examples (Table 1 / Fig. 1, Figs. 4-5, the 3-job matching of
    sec. 3.1) through the simulator; average JCT in the paper's minutes (read as seconds)."""
    import baselines
    import hetgym
    from baselines.allox import AlloX
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
