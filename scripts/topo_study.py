"""TOPO-AWARE study: ``topo-prototype`` and ``topo-sim`` under topo-fcfs, topo-bf,
topo-aware and topo-aware-p, beside the paper's numbers (Amaral et al., SC'17, sec. 5).

Tables (Markdown on stdout; ``--update-docs`` rewrites the generated block of
docs/topo.md between its ``topo_study`` markers):

1. prototype (one Minsky, six jobs; the authors' ``workloads-5.json`` and the paper's
   Table 1): cumulative execution time (makespan), TOPO-AWARE-P's speed-up over each,
   the per-job placement slowdown and the GPU set (start time) each job got;
2. simulation scenario 1 (5 Minsky servers, 100 jobs: the authors' ``workloads-100.json``
   and ``--seeds`` fresh draws of their generator): SLO violations, mean wait, mean /
   p95 / max placement slowdown, mean jct / ideal, makespan, decision time per call;
3. with ``--large``: scenario 2 (``--large-jobs`` jobs on ``--large-machines`` servers).

Usage::

    python scripts/topo_study.py                 # about 10 s
    python scripts/topo_study.py --update-docs   # rewrite the tables in docs/topo.md
    python scripts/topo_study.py --large --large-jobs 2000 --large-machines 200
    python scripts/topo_study.py --bench         # decision time at 1,000 servers (minutes)
"""

from __future__ import annotations

import argparse
import re
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

import baselines
import hetgym
from hetgym.decisions import Placement, Start

ROOT = Path(__file__).resolve().parents[1]
ALGOS = ("topo-fcfs", "topo-bf", "topo-aware", "topo-aware-p")
LABEL = {"topo-fcfs": "FCFS", "topo-bf": "BF", "topo-aware": "TOPO-AWARE",
         "topo-aware-p": "TOPO-AWARE-P"}
#: Paper sec. 5.2.2: cumulative execution time of the prototype (s).
PAPER_PROTO = {"topo-bf": 461.7, "topo-fcfs": 456.2, "topo-aware": 454.2, "topo-aware-p": 356.9}


class Recorder:
    """Wraps a scheduler; records each job's GPU set and start time."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.gpus: dict[int, tuple[float, int, tuple[int, ...]]] = {}

    def reset(self, view: Any) -> None:
        self.inner.reset(view)

    def decide(self, view: Any) -> list:
        out = self.inner.decide(view)
        for d in out:
            pl = d.placement
            self.gpus[int(d.job)] = (float(view.now), int(pl.nodes[0]),
                                     tuple(int(g) for g in pl.gpus))
        return out


class Pinned:
    """Starts the 1-GPU jobs of ``pins`` on the given GPU of node 0 as they arrive; the rest
    is the inner scheduler's (a counterfactual of the paper's placement)."""

    def __init__(self, inner: Any, pins: dict[int, int]) -> None:
        self.inner, self.pins = inner, pins

    def reset(self, view: Any) -> None:
        self.inner.reset(view)

    def decide(self, view: Any) -> list:
        q = [j for j in view.queue.tolist() if j in self.pins]
        if q:
            return [Start(j, int(view.node_device[0]), Placement.of([0], [self.pins[j]]))
                    for j in q]
        return self.inner.decide(view)


def run(sc: Any, algo: str, pins: dict[int, int] | None = None) -> tuple[Any, Recorder]:
    inner = baselines.make(algo)
    rec = Recorder(Pinned(inner, pins) if pins else inner)
    return hetgym.simulate(sc, rec), rec


#: Counterfactual row: jobs 1 and 2 on socket 1 (GPUs 2, 3), away from job 0, as the
#: paper's TOPO-AWARE-P places them (sec. 5.2.2, from its profile's 1-GPU interference).
PAPER_PINS = {1: 2, 2: 3}


def prototype_table(jobs: str) -> str:
    sc = hetgym.scenarios.get("topo-prototype", jobs=jobs)
    fr = sc.workload.frame
    res = {a: run(sc, a) for a in ALGOS}
    res["pinned"] = run(sc, "topo-aware-p", PAPER_PINS)
    p_span = res["topo-aware-p"][0].metrics["makespan"]
    head = " | ".join(f"J{j} {t} ({w} GPU)" for j, (t, w) in
                      enumerate(zip(fr["job_type"], fr["workers"])))
    lines = [(f"| algorithm | cumulative time (s) | paper (s) | TOPO-AWARE-P speed-up | paper | "
              f"{head} |"), "|---" * (5 + len(fr)) + "|"]
    for a in (*ALGOS, "pinned"):
        r, rec = res[a]
        span = r.metrics["makespan"]
        paper = PAPER_PROTO.get(a, PAPER_PROTO["topo-aware-p"])
        cells = []
        for j in range(len(fr)):
            t, _, g = rec.gpus[j]
            cells.append(f"{r.jobs['placement_slowdown'].iloc[j]:.2f} {set(g)} @{t:.1f}")
        label = LABEL.get(a, "TOPO-AWARE-P, jobs 1, 2 pinned to socket 1 (paper's placement)")
        lines.append(f"| {label} | {span:.1f} | {paper} | {span / p_span:.2f}x | "
                     f"{paper / PAPER_PROTO['topo-aware-p']:.2f}x | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def sim_rows(make: Any, label: str, seeds: list[int]) -> list[str]:
    keys = ("slo_violations", "avg_wait", "avg_placement_slowdown", "p95_placement_slowdown",
            "max_placement_slowdown", "jct_over_ideal", "makespan", "decision_time_p50")
    rows = []
    for a in ALGOS:
        vals = {k: [] for k in keys}
        wall = 0.0
        for s in seeds:
            sc = make(s)
            t0 = time.perf_counter()
            r, _ = run(sc, a)
            wall += time.perf_counter() - t0
            for k in keys:
                vals[k].append(r.metrics[k])
        mean = {k: float(np.mean(v)) for k, v in vals.items()}
        rows.append(f"| {label} | {LABEL[a]} | {mean['slo_violations']:.1f} | "
                    f"{mean['avg_wait']:.1f} | {mean['avg_placement_slowdown']:.3f} | "
                    f"{mean['p95_placement_slowdown']:.3f} | {mean['max_placement_slowdown']:.3f} | "
                    f"{mean['jct_over_ideal']:.2f} | {mean['makespan']:.0f} | "
                    f"{mean['decision_time_p50']:.2f} | {wall / len(seeds):.1f} |")
    return rows


SIM_HEAD = ("| workload | algorithm | SLO violations | mean wait (s) | mean placement slowdown | "
            "p95 | max | mean jct / ideal | makespan (s) | decision ms (p50) | run s |\n"
            "|---|---|---|---|---|---|---|---|---|---|---|")


def sim_table(seeds: int) -> str:
    rows = sim_rows(lambda s: hetgym.scenarios.get("topo-sim", n_jobs=100, n_machines=5,
                                                   authors=True),
                    "authors' workloads-100", [0])
    if seeds:
        rows += sim_rows(lambda s: hetgym.scenarios.get("topo-sim", n_jobs=100, n_machines=5,
                                                        seed=s),
                         f"generator, mean of seeds 0-{seeds - 1}", list(range(seeds)))
    return SIM_HEAD + "\n" + "\n".join(rows)


def large_table(n_jobs: int, n_machines: int) -> str:
    rows = sim_rows(lambda s: hetgym.scenarios.get("topo-sim", n_jobs=n_jobs,
                                                   n_machines=n_machines, seed=s),
                    f"generator, {n_jobs} jobs, {n_machines} servers", [0])
    return SIM_HEAD + "\n" + "\n".join(rows)


class Timed:
    """Wraps a scheduler; records (wall s, starts, waiting jobs) of every ``decide``."""

    def __init__(self, inner: Any) -> None:
        self.inner, self.calls = inner, []

    def reset(self, view: Any) -> None:
        self.inner.reset(view)

    def decide(self, view: Any) -> list:
        n_wait = len(view.queue)
        t0 = time.perf_counter()
        out = self.inner.decide(view)
        self.calls.append((time.perf_counter() - t0, len(out), n_wait))
        return out


def bench(n_jobs: int, n_machines: int, compress: float) -> str:
    """Decision time of each algorithm on ``topo-sim`` with arrivals ``compress`` times
    denser (a busy cluster: long queues, mixed neighbours on the servers)."""
    sc = hetgym.scenarios.get("topo-sim", n_jobs=n_jobs, n_machines=n_machines, seed=0)
    fr = sc.workload.frame
    sc = sc.replace(workload=hetgym.Workload.from_frame(fr.assign(arrival=fr["arrival"] / compress)))
    lines = [("| algorithm | decide calls | starts | mean waiting jobs per call | ms per call p50 | "
              "p99 | max | ms per start (total / starts) | avg wait (s) | SLO violations | run s |"),
             "|---|---|---|---|---|---|---|---|---|---|---|"]
    for a in ALGOS:
        tm = Timed(baselines.make(a))
        t0 = time.perf_counter()
        r = hetgym.simulate(sc, tm)
        wall = time.perf_counter() - t0
        c = np.asarray(tm.calls)
        ms = c[:, 0] * 1e3
        lines.append(f"| {LABEL[a]} | {len(c)} | {int(c[:, 1].sum())} | {c[:, 2].mean():.0f} | "
                     f"{np.percentile(ms, 50):.2f} | {np.percentile(ms, 99):.1f} | {ms.max():.1f} | "
                     f"{ms.sum() / max(1, c[:, 1].sum()):.2f} | {r.metrics['avg_wait']:.0f} | "
                     f"{r.metrics['slo_violations']:.0f} | {wall:.0f} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--seeds", type=int, default=3, help="generator draws for scenario 1")
    ap.add_argument("--large", action="store_true", help="also run scenario 2")
    ap.add_argument("--large-jobs", type=int, default=10000)
    ap.add_argument("--large-machines", type=int, default=1000)
    ap.add_argument("--bench", action="store_true",
                    help="only the decision-time benchmark (BENCHMARKS.md)")
    ap.add_argument("--compress", type=float, default=20.0,
                    help="--bench: arrivals this many times denser than the generator's")
    ap.add_argument("--update-docs", action="store_true",
                    help="rewrite the generated block of docs/topo.md")
    args = ap.parse_args(argv)
    if args.bench:
        print(bench(args.large_jobs, args.large_machines, args.compress))
        return 0
    parts = ["### Prototype: the authors' workloads-5.json (placement slowdown, GPU set, start)",
             prototype_table("authors"),
             "### Prototype: the paper's Table 1 as printed",
             prototype_table("paper"),
             "### Simulation scenario 1: 100 jobs on 5 Minsky servers", sim_table(args.seeds)]
    if args.large:
        parts += [(f"### Simulation scenario 2: {args.large_jobs} jobs on "
                   f"{args.large_machines} servers"),
                  large_table(args.large_jobs, args.large_machines)]
    text = "\n\n".join(parts) + "\n"
    print(text)
    if args.update_docs:
        path = ROOT / "docs" / "topo.md"
        doc = path.read_text()
        new = re.sub(r"(<!-- topo_study:begin -->\n).*?(<!-- topo_study:end -->)",
                     lambda m: m.group(1) + text + m.group(2), doc, flags=re.DOTALL)
        if new == doc and "<!-- topo_study:begin -->" not in doc:
            print("docs/topo.md has no topo_study markers", file=sys.stderr)
            return 1
        path.write_text(new)
    return 0


if __name__ == "__main__":
    sys.exit(main())
