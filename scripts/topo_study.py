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
    """Starts the jobs of ``pins`` on the given GPU (or GPUs) of node 0 as they arrive; the
    rest is the inner scheduler's (a counterfactual of the paper's placement)."""

    def __init__(self, inner: Any, pins: dict[int, int | tuple[int, ...]]) -> None:
        self.inner = inner
        self.pins = {j: (g,) if isinstance(g, int) else tuple(g) for j, g in pins.items()}

    def reset(self, view: Any) -> None:
        self.inner.reset(view)

    def decide(self, view: Any) -> list:
        q = [j for j in view.queue.tolist() if j in self.pins]
        if q:
            return [Start(j, int(view.node_device[0]),
                          Placement.of([0] * len(self.pins[j]), list(self.pins[j]))) for j in q]
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


#: Paper sec. 5.2.2: Job 3's completion time, TOPO-AWARE-P (~120 s) and the others (~240 s).
PAPER_JOB3 = {"topo-aware-p": 120.0, "others": 240.0}


def headline_rows(quick: bool) -> list:
    """TOPO-AWARE's headline numbers (sec. 5.2.2, 5.5.1) beside ours (seconds; ``quick``
    only sets how many generator draws scenario 1 averages: 1, else 3)."""
    from hetgym.reproduction import Row, seed_label

    sc = hetgym.scenarios.get("topo-prototype", jobs="authors")
    res = {a: run(sc, a)[0] for a in ALGOS}
    span = {a: float(r.metrics["makespan"]) for a, r in res.items()}
    proto = "topo-prototype (authors' workloads-5.json), 1 Minsky"
    link = "topo.md#reading-the-results-beside-the-paper"
    why = "1-GPU jobs have no interference sensitivity here (assumption *interference cost*): ties put jobs 1, 2 on socket 0"
    rows = [Row("TOPO-AWARE", f"prototype cumulative time, {LABEL[a]} / TOPO-AWARE-P", "sec. 5.2.2, Fig. 8",
                PAPER_PROTO[a] / PAPER_PROTO["topo-aware-p"], span[a] / span["topo-aware-p"], neutral=1.0,
                setting=proto, link=link, note=why) for a in ALGOS if a != "topo-aware-p"]
    rows += [Row("TOPO-AWARE", f"prototype cumulative time, {LABEL[a]} [s]", "sec. 5.2.2", PAPER_PROTO[a],
                 span[a], "level", setting=proto, link=link) for a in ALGOS]

    def completion(a: str, j: int = 3) -> float:
        """Job ``j``'s completion time as the paper uses the term (sec. 5.2.2): end - arrival."""
        jobs = res[a].jobs
        return float(jobs["end"].iloc[j] - jobs["arrival"].iloc[j])

    rows.append(Row("TOPO-AWARE", "prototype Job 3 completion time, TOPO-AWARE-P / FCFS", "sec. 5.2.2, Fig. 8",
                    PAPER_JOB3["topo-aware-p"] / PAPER_JOB3["others"], completion("topo-aware-p") / completion("topo-fcfs"),
                    neutral=1.0, setting=proto, link=link,
                    note="only TOPO-AWARE-P gives job 3 an NVLink pair, as in the paper"))
    seeds = [0] if quick else [0, 1, 2]
    m = {a: [run(hetgym.scenarios.get("topo-sim", n_jobs=100, n_machines=5, seed=s), a)[0].metrics
             for s in seeds] for a in ALGOS}
    mean = {a: {k: float(np.mean([x[k] for x in v])) for k in ("slo_violations", "avg_wait")} for a, v in m.items()}
    s1 = f"topo-sim, 100 jobs, 5 Minsky servers, generator {seed_label(seeds)}"
    rows += [Row("TOPO-AWARE", "scenario 1: TOPO-AWARE-P's SLO violations", "sec. 5.5.1, Fig. 10a", 0.0,
                 mean["topo-aware-p"]["slo_violations"], "exact", setting=s1, link=link)]
    rows += [Row("TOPO-AWARE", f"scenario 1: mean wait, {LABEL[a]} / TOPO-AWARE-P", "sec. 5.5.1, Fig. 10b (\"clearly outperform\")",
                 None, mean[a]["avg_wait"] / mean["topo-aware-p"]["avg_wait"], neutral=1.0, sense=">",
                 setting=s1, link=link) for a in ("topo-fcfs", "topo-bf")]
    return rows


def worked_example_rows() -> list:
    """The worked examples of docs/topo.md through the simulator (seconds)."""
    import pandas as pd

    from baselines.topo.schedulers import TopoAware, TopoBF, TopoFCFS
    from baselines.topo.parts import MIN_COST, UtilityModel
    from hetgym import ClusterSpec, NodeSpec, Scenario, SimOptions, Workload
    from hetgym.reproduction import Row
    from hetgym.specs import minsky_topology

    node = NodeSpec(name="minsky", gpu_type="P100", gpus=4, cpus=16, mem_gb=512, sockets=2,
                    topology=minsky_topology())

    def sc(jobs: list[tuple]) -> Scenario:  # (arrival, workers, ideal time, comm, min utility)
        rows = [{"job_id": i, "user": "u", "job_class": "BE", "cpus": 0.0, "mem_gb": 0.0, "arrival": t,
                 "workers": w, "work": x, "tput_p100": 1.0 / w, "comm": c, "min_utility": u}
                for i, (t, w, x, c, u) in enumerate(jobs)]
        return Scenario(cluster=ClusterSpec(nodes=[node]), workload=Workload.from_frame(pd.DataFrame(rows)),
                        options=SimOptions(restart_delay=0.0, topology_coeff=0.125, interference_coeff=0.3))

    def ends(s: Scenario, sched: Any, pins: dict) -> list[float]:
        return hetgym.simulate(s, Pinned(sched, pins)).jobs["end"].tolist()

    def ex(claim: str, src: str, want: float, got: float, setting: str = "1 Minsky", tol: float = 1e-6) -> Row:
        return Row("TOPO-AWARE", claim, src, want, got, "exact", tol=tol, setting=setting,
                   link="topo.md#worked-examples", example=True)

    t2 = sc([(0.0, 1, 1000.0, 0.0, 0.0), (1.0, 1, 1000.0, 0.0, 0.0), (2.0, 2, 100.0, 1.0, 0.0)])
    t3 = sc([(0.0, 2, 100.0, 1.0, 0.0), (50.0, 2, 100.0, 1.0, 0.0)])
    t4 = sc([(0.0, 1, 50.0, 0.0, 0.0), (0.0, 1, 50.0, 0.0, 0.0), (1.0, 2, 100.0, 1.0, 0.5)])
    t3_ends = ends(t3, TopoFCFS(), {0: (0, 2), 1: (1, 3)})
    um = UtilityModel()
    return [
        ex("FCFS vs BF: FCFS spreads J2, its run time [s]", "hand-computed; authors' fcfs.py", 125.0,
           ends(t2, TopoFCFS(), {0: 2})[2] - 2.0),
        ex("FCFS vs BF: BF packs J2, its run time [s]", "hand-computed; authors' bf.py", 100.0, ends(t2, TopoBF(), {0: 2})[2] - 2.0),
        ex("interference dynamics: spread pairs with interference, J1 ends [s]", "hand-computed; sec. 5.1 model", 147.5, t3_ends[0]),
        ex("interference dynamics: spread pairs with interference, J2 ends [s]", "hand-computed", 197.5, t3_ends[1]),
        ex("postponement: job utility of a spread pair", "hand-computed; eq. 2, authors' normalisation", 0.181818,
           um.job_utility(1.0, MIN_COST), "formula"),
        ex("postponement: TOPO-AWARE-P postpones it; it ends [s]", "hand-computed; Alg. 1 line 6", 150.0,
           ends(t4, TopoAware(postpone=True), {0: 0, 1: 2})[2]),
        ex("postponement: TOPO-AWARE places it spread; it ends [s]", "hand-computed", 126.0,
           ends(t4, TopoAware(postpone=False), {0: 0, 1: 2})[2]),
        ex("utility tie: system utility of any GPU of an empty Minsky", "hand-computed", 0.48254,
           um.system_utility(MIN_COST, MIN_COST, 0.75), "formula", tol=2e-5),
    ]


def main(argv: list[str] | None = None) -> int:
    from hetgym.cli import plain_doc
    ap = argparse.ArgumentParser(description=plain_doc(__doc__),
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
