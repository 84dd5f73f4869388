#!/usr/bin/env python
"""Gavel's policies in hetgym beside Gavel's own simulator, on the same small trace.

Runs every ``gavel-*`` baseline on the first ``--jobs`` jobs of a Gavel ``.trace`` file
(jobs larger than a type's GPUs are dropped) on a cluster given per type
(``--cluster v100:p100:k80`` GPUs, ``--per-server`` GPUs per server), with Gavel's
semantics (``round_length=360``, ``restart_delay=0``, no topology slowdown), and prints
average JCT and makespan. With ``--gavel-dir`` (the ``scheduler`` folder of a Gavel
checkout whose RPC stubs are built, run by ``--gavel-python``, an interpreter with
cvxpy, ecos, grpcio and scikit-learn), the same jobs go through Gavel's
``Scheduler.simulate`` and the table shows both with the relative difference.

    python scripts/gavel_check.py --jobs 40 --cluster 4:4:4 --per-server 4:4:4 \\
        --gavel-dir /path/to/gavel/scheduler --gavel-python /path/to/venv/bin/python

See docs/gavel.md for the numbers and the departures that explain them.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import hetgym
from hetgym import ClusterSpec, NodeSpec, Scenario, SimOptions, Workload
from hetgym.throughput import ThroughputModel
from hetgym.traces.gavel import (
    LAYOUTS,
    load_gavel_trace,
    packaged_gavel_dir,
    read_gavel_trace,
)

#: hetgym policy -> Gavel's ``utils.get_policy`` name
GAVEL_NAMES = {
    "las": "max_min_fairness", "las-perf": "max_min_fairness_perf",
    "fifo": "fifo", "fifo-perf": "fifo_perf",
    "ftf": "finish_time_fairness", "ftf-perf": "finish_time_fairness_perf",
    "makespan": "min_total_duration_perf", "maxtput": "max_sum_throughput_perf",
}
TYPES = ("v100", "p100", "k80")

# Run inside Gavel's scheduler folder with Gavel's interpreter: simulate one policy and
# print the per-job completion times and the final time as JSON on the last line.
_DRIVER = r"""
import json, sys
sys.path.insert(0, '.')
import scheduler, utils
trace, policy, seed, spec, per_server = sys.argv[1], sys.argv[2], int(sys.argv[3]), \
    json.loads(sys.argv[4]), json.loads(sys.argv[5])
jobs, arrivals = utils.parse_trace(trace)
s = scheduler.Scheduler(utils.get_policy(policy, solver='ECOS', seed=seed),
                        throughputs_file='simulation_throughputs.json', simulate=True,
                        seed=seed, time_per_iteration=360)
s.simulate(spec, arrivals, jobs, num_gpus_per_server=per_server)
jct = {int(k[0]): v for k, v in s._job_completion_times.items()}
print(json.dumps({'jct': jct, 'makespan': s._current_timestamp}))
"""


def select_jobs(trace: Path, n_jobs: int, max_w: int):
    """Row numbers (trace order) of the first ``n_jobs`` jobs with at most ``max_w`` GPUs
    whose (job type, GPU count) Gavel measured on every type (Gavel's simulator has no
    throughput for the others; hetgym would extrapolate linearly)."""
    raw = read_gavel_trace(trace)
    w = raw["scale_factor"].astype(int).to_numpy()
    measured = ThroughputModel.gavel().measured
    known = np.array([all((jt, int(sf)) in measured[t] for t in TYPES)
                      for jt, sf in zip(raw["job_type"], w)])
    return np.flatnonzero((w <= max_w) & known)[:n_jobs]


def steps(total: np.ndarray, scale: float) -> np.ndarray:
    """Each job's steps divided by ``scale`` (whole steps, at least 1), on both sides
    (arrival times are divided by it too: the same load in less simulated time)."""
    return np.maximum(1, np.floor(np.asarray(total, dtype=np.float64) / scale)).astype(np.int64)


def hetgym_scenario(trace: Path, rows: np.ndarray, gpus: dict, per_server: dict,
                    scale: float = 1.0) -> Scenario:
    """The selected jobs with Gavel's throughputs on the given cluster."""
    df, _ = load_gavel_trace(trace, devices=list(TYPES))
    df = df.iloc[rows].reset_index(drop=True)
    df["work"] = steps(df["work"], scale).astype(np.float64)
    df["arrival"] = df["arrival"] / scale
    df["job_id"] = np.arange(len(df))
    nodes = [NodeSpec(t, count=gpus[t] // per_server[t], gpu_type=t.upper(), gpus=per_server[t],
                      cpus=64 * per_server[t], mem_gb=1024.0 * per_server[t])
             for t in TYPES if gpus[t] > 0]
    return Scenario(cluster=ClusterSpec(nodes), workload=Workload.from_frame(df),
                    options=SimOptions(restart_delay=0.0, round_length=360.0, topology_coeff=0.0),
                    name=f"gavel-check:{trace.stem}")


def startup_scenario() -> Scenario:
    """The start-up workload (``scripts/bench_startup.py``,
    ``scripts/startup_compare.py``): the first 300 Gavel-traceable jobs of the packaged
    ``6c71a0.trace`` (at most 4 GPUs) on a 3 x 9 x 4-GPU cluster (V100, P100, K80)."""
    trace = packaged_gavel_dir() / "6c71a0.trace"
    return hetgym_scenario(trace, select_jobs(trace, 300, 4), {t: 36 for t in TYPES},
                           {t: 4 for t in TYPES})


def gavel_trace_file(trace: Path, rows: np.ndarray, out: Path, scale: float = 1.0) -> Path:
    """The selected jobs in Gavel's 10-field layout (what its ``parse_trace`` reads)."""
    raw = read_gavel_trace(trace).iloc[rows].copy()
    raw["total_steps"] = steps(raw["total_steps"].astype(float), scale)
    raw["arrival_time"] = raw["arrival_time"].astype(float) / scale
    cols = LAYOUTS[10]
    with out.open("w") as fh:
        for _, r in raw.iterrows():
            vals = {c: r.get(c, "") for c in cols}
            vals["working_directory"] = vals.get("working_directory") or "."
            fh.write("\t".join(str(vals[c]) for c in cols) + "\n")
    return out


def run_gavel(gavel_dir: Path, python: str, trace10: Path, policy: str, seed: int,
              gpus: dict, per_server: dict) -> dict:
    """Gavel's simulator on the trace: {'jct': {job: s}, 'makespan': s}."""
    p = subprocess.run([python, "-c", _DRIVER, str(trace10), GAVEL_NAMES[policy], str(seed),
                        json.dumps(gpus), json.dumps(per_server)], cwd=gavel_dir,
                       capture_output=True, text=True, timeout=3600, check=False)
    if p.returncode != 0:
        raise RuntimeError(f"Gavel ({policy}) failed:\n{p.stderr[-3000:]}")
    return json.loads(p.stdout.strip().splitlines()[-1])


def main(argv: list[str] | None = None) -> int:
    # imported here, not at the top: scripts/bench_startup.py imports this module for a FIFO run
    from baselines.gavel.schedulers import POLICIES, Gavel
    from hetgym.cli import plain_doc

    ap = argparse.ArgumentParser(description=plain_doc(__doc__.split("\n\n")[0]))
    ap.add_argument("--trace", type=Path, default=packaged_gavel_dir() / "6c71a0.trace")
    ap.add_argument("--jobs", type=int, default=40)
    ap.add_argument("--cluster", default="4:4:4", help="GPUs per type, v100:p100:k80")
    ap.add_argument("--per-server", default="4:4:4", help="GPUs per server, v100:p100:k80")
    ap.add_argument("--policies", default=",".join(POLICIES))
    ap.add_argument("--scale", type=float, default=1.0,
                    help="divide every job's steps and arrival time by this (both simulators): "
                         "the same load, shorter runs")
    ap.add_argument("--fifo-defects", action="store_true",
                    help="run gavel-fifo with Gavel's base-mode defects (fifo_defects=True)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--gavel-dir", type=Path, default=None)
    ap.add_argument("--gavel-python", default=sys.executable)
    args = ap.parse_args(argv)
    gpus = dict(zip(TYPES, map(int, args.cluster.split(":"))))
    per_server = dict(zip(TYPES, map(int, args.per_server.split(":"))))
    rows = select_jobs(args.trace, args.jobs, max(per_server[t] for t in TYPES if gpus[t] > 0))
    sc = hetgym_scenario(args.trace, rows, gpus, per_server, args.scale)
    w = sc.workload.frame["workers"]
    print(f"trace {args.trace.name}: {len(rows)} jobs ({int((w > 1).sum())} multi-GPU), "
          f"cluster v100:p100:k80 = {args.cluster}, {args.per_server} GPUs per server, "
          f"steps / {args.scale:g}\n")
    trace10 = None
    if args.gavel_dir is not None:
        trace10 = gavel_trace_file(args.trace, rows, Path(tempfile.mkdtemp()) / "check.trace",
                                   args.scale)
    head = "| policy | hetgym avg JCT (s) | hetgym makespan (s) |"
    if trace10:
        head += " Gavel avg JCT (s) | Gavel makespan (s) | JCT diff | makespan diff |"
    print(head)
    print("|" + "---|" * (head.count("|") - 1))
    for pol in args.policies.split(","):
        extra = {"fifo_defects": True} if pol == "fifo" and args.fifo_defects else {}
        res = hetgym.simulate(sc, Gavel(policy=pol, round_length=360, **extra), seed=args.seed)
        s = res.summary()
        line = f"| gavel-{pol} | {s['avg_jct']:.1f} | {s['makespan']:.1f} |"
        if trace10:
            g = run_gavel(args.gavel_dir, args.gavel_python, trace10, pol, args.seed, gpus, per_server)
            jct = float(np.mean(list(g["jct"].values())))
            line += (f" {jct:.1f} | {g['makespan']:.1f} | {100 * (s['avg_jct'] / jct - 1):+.2f} % |"
                     f" {100 * (s['makespan'] / g['makespan'] - 1):+.2f} % |")
        print(line, flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
