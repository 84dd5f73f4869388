"""Start-up of a short simulation, this checkout against an older commit, on one machine.

    python scripts/startup_compare.py                  # against 85dc500, 3 rounds
    python scripts/startup_compare.py --rev HEAD~5 --rounds 5

The start-up figures of commit 85dc500 (``import hetgym, baselines`` 0.84 s; a whole process
that simulates the first 300 Gavel-traceable jobs of ``6c71a0.trace`` with FIFO 1.4 s with
a warm Numba cache, about 10 s right after install) were measured on one machine;
other machines run the same code 1x-2.6x faster or slower. This script measures both trees on the machine it runs on, so that the
ratio, not the absolute time, answers "how much faster than at 85dc500".

The workload is that of ``scripts/bench_startup.py`` (``gavel_check.startup_scenario``:
300 jobs, FIFO, 3 x 9 x 4-GPU cluster), built once by this checkout: its jobs go to a
temporary pickle, its nodes and options to the child as JSON; each tree reads them
through the public interface of ``docs/semantics.md`` (``Workload.from_frame``,
``ClusterSpec``, ``NodeSpec``, ``SimOptions``, ``Scenario``, ``hetgym.simulate``,
``baselines.make``), which both trees have, so both simulate the same jobs (the script
checks that they give the same average JCT). The older tree is checked out with ``git
worktree add --detach`` into a temporary folder (removed at the end), its bytecode
compiled (as ``pip install`` does), and put first on ``PYTHONPATH``; both run with the
same interpreter and packages.

Each round runs, for each tree in turn: one process with an empty ``NUMBA_CACHE_DIR``
("cold": right after install, every kernel compiled), then two processes on that cache
("warm"; the second is reported). Times are whole processes, interpreter start
included (``time.perf_counter`` around ``subprocess.run``), with the child's own import
and first-simulate times beside them. Rounds alternate the trees' order.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

CHILD = r"""
import json, sys, time
t0 = time.perf_counter()
import hetgym, baselines
t1 = time.perf_counter()
import pandas as pd
from hetgym import ClusterSpec, NodeSpec, Scenario, SimOptions, Workload
spec = json.loads(sys.argv[2])
df = pd.read_pickle(sys.argv[1])
try:
    wl = Workload.from_frame(df)
except Exception:  # an older tree that refuses the newer optional columns
    wl = Workload.from_frame(df[spec["columns"]])
sc = Scenario(cluster=ClusterSpec([NodeSpec(**n) for n in spec["nodes"]]), workload=wl,
              options=SimOptions(**spec["options"]), name="startup-300")
t2 = time.perf_counter()
res = hetgym.simulate(sc, baselines.make("fifo"), seed=0)
t3 = time.perf_counter()
print(json.dumps({"import": t1 - t0, "simulate": t3 - t2, "file": hetgym.__file__,
                  "avg_jct": float(res.summary()["avg_jct"]), "jobs": len(df)}))
"""

#: Columns every tree since 85dc500 reads (used only when a tree refuses the full frame).
BASE_COLUMNS = ["job_id", "arrival", "user", "job_class", "workers", "work", "tput_v100",
                "tput_p100", "tput_k80", "cpus", "mem_gb", "deadline", "weight",
                "grace_period", "comm", "forkable", "job_type", "trace_id"]


#: The node and option fields the child passes on (those the start-up workload sets; every
#: tree since 85dc500 has them).
NODE_FIELDS = ("name", "count", "gpu_type", "gpus", "cpus", "mem_gb")
OPTION_FIELDS = ("restart_delay", "round_length", "topology_coeff")


def build_workload(path: Path) -> tuple[int, str]:
    """Write the jobs of :func:`gavel_check.startup_scenario` to ``path``; their number and
    the JSON the child reads the cluster, the options and the fallback columns from."""
    sys.path.insert(0, str(ROOT / "scripts"))
    from gavel_check import startup_scenario

    sc = startup_scenario()
    sc.workload.frame.to_pickle(path)
    spec = {"nodes": [{f: getattr(n, f) for f in NODE_FIELDS} for n in sc.cluster.nodes],
            "options": {f: getattr(sc.options, f) for f in OPTION_FIELDS},
            "columns": [c for c in BASE_COLUMNS if c in sc.workload.frame.columns]}
    return len(sc.workload.frame), json.dumps(spec)


def run_child(tree: Path, frame: Path, spec: str, cache: Path, script: Path) -> dict:
    """One process of ``tree`` on ``cache``: its wall time and what it printed."""
    env = dict(os.environ, PYTHONPATH=str(tree), NUMBA_CACHE_DIR=str(cache))
    env.pop("PYTHONDONTWRITEBYTECODE", None)  # as a user's shell: bytecode cached too
    t = time.perf_counter()
    out = subprocess.run([sys.executable, str(script), str(frame), spec],
                         env=env, cwd=tree, capture_output=True, text=True)
    wall = time.perf_counter() - t
    if out.returncode != 0:
        raise RuntimeError(f"{tree}: child failed:\n{out.stderr[-2000:]}")
    row = json.loads(out.stdout.strip().splitlines()[-1])
    if not Path(row["file"]).resolve().is_relative_to(tree.resolve()):
        raise RuntimeError(f"{tree}: the child imported {row['file']}, not this tree's hetgym")
    row["wall"] = wall
    return row


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--rev", default="85dc500", help="the older commit (default: 85dc500)")
    p.add_argument("--rounds", type=int, default=3)
    args = p.parse_args(argv)

    with tempfile.TemporaryDirectory(prefix="startup-") as tmp:
        tmp = Path(tmp)
        frame, script, old = tmp / "jobs.pkl", tmp / "child.py", tmp / "old"
        script.write_text(CHILD)
        n, spec = build_workload(frame)
        subprocess.run(["git", "-C", str(ROOT), "worktree", "add", "--detach", "-q", str(old),
                        args.rev], check=True)
        # as pip does at install time: the older tree's bytecode compiled before any run
        subprocess.run([sys.executable, "-m", "compileall", "-q", str(old / "hetgym"),
                        str(old / "baselines")], check=True, capture_output=True)
        try:
            trees = {"this checkout": ROOT, args.rev: old}
            rows: dict[str, list[tuple[dict, dict]]] = {k: [] for k in trees}
            for r in range(args.rounds):
                order = list(trees) if r % 2 == 0 else list(trees)[::-1]
                for name in order:
                    cache = tmp / f"cache-{r}-{name.replace(' ', '_')}"
                    cache.mkdir()
                    cold = run_child(trees[name], frame, spec, cache, script)
                    run_child(trees[name], frame, spec, cache, script)
                    warm = run_child(trees[name], frame, spec, cache, script)
                    rows[name].append((cold, warm))
                    print(f"round {r + 1} {name}: cold {cold['wall']:.2f} s, warm {warm['wall']:.2f} s"
                          f" (import {warm['import']:.2f} s), avg JCT {warm['avg_jct']:.1f}",
                          file=sys.stderr, flush=True)
        finally:
            subprocess.run(["git", "-C", str(ROOT), "worktree", "remove", "--force", str(old)],
                           check=False)
    jcts = {row[1]["avg_jct"] for v in rows.values() for row in v}
    if len(jcts) != 1:
        raise SystemExit(f"the trees simulated different schedules: avg JCTs {sorted(jcts)}")
    print(f"\n{n} jobs, FIFO, {args.rounds} rounds (median, min-max); avg JCT {jcts.pop():.1f} s"
          " in every run\n")
    print(f"| | this checkout | {args.rev} | ratio (medians) |\n|---|---|---|---|")
    for label, pick in [("process, cold cache (s)", lambda c, w: c["wall"]),
                        ("first simulate, cold (s)", lambda c, w: c["simulate"]),
                        ("process, warm cache (s)", lambda c, w: w["wall"]),
                        ("first simulate, warm (s)", lambda c, w: w["simulate"]),
                        ("import hetgym, baselines (s)", lambda c, w: w["import"])]:
        cells, med = [], []
        for name in trees:
            vals = [pick(c, w) for c, w in rows[name]]
            med.append(statistics.median(vals))
            cells.append(f"{med[-1]:.2f} ({min(vals):.2f}-{max(vals):.2f})")
        print(f"| {label} | {cells[0]} | {cells[1]} | {med[0] / med[1]:.2f} |")


if __name__ == "__main__":
    main()
