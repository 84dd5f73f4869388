"""Regenerate BENCHMARKS.md: run the project's benchmarks at modest sizes, one table each.

    python scripts/benchmarks_md.py             # every table, about 10 minutes on 2 busy cores
    python scripts/benchmarks_md.py --quick     # smaller sizes, a few minutes
    python scripts/benchmarks_md.py --out /tmp/BENCHMARKS.md --only simulator,startup

Each benchmark is one of the project's benchmark scripts (``scripts/bench.py``,
``bench_decision_vec.py``, ``bench_scale.py``, ``bench_startup.py``, ``bench_andreas.py``)
run as its own process with the command printed above its table; its output is read back
into the table. The header records the machine as the machine reports itself (cores, CPU
model, memory, the load average at the start and at the end, library versions) and says
when the machine was shared. Nothing is written unless every benchmark ran; the file is
replaced atomically. Earlier figures, and the analyses that went with them, are in the
file's git history (``git log -p BENCHMARKS.md``).
"""

from __future__ import annotations

import argparse
import os
import platform
import re
import shlex
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

ROOT = Path(__file__).resolve().parents[1]


@dataclass
class Bench:
    """One table: its anchor-stable ``title``, the script arguments of the full and the
    ``--quick`` pass, what the table shows (``about``) and how the script's standard output
    becomes table lines (``table``). ``env`` entries are set for the run and shown before
    the command; ``runs`` > 1 repeats the command (the table then sees every output)."""

    key: str
    title: str
    about: str
    full: list[str]
    quick: list[str]
    table: Callable[[list["Run"]], list[str]]
    env: dict[str, str] = field(default_factory=dict)
    runs: int = 1


@dataclass
class Run:
    """One process of a benchmark: its standard output and its whole wall time."""

    stdout: str
    wall_s: float


def _num(text: str) -> float:
    return float(text.replace(",", ""))


def _find(pattern: str, text: str, what: str) -> re.Match:
    m = re.search(pattern, text, re.M)
    if m is None:
        raise ValueError(f"benchmark output: no {what} line (pattern {pattern!r}) in:\n{text}")
    return m


def _simulator_table(runs: list[Run]) -> list[str]:
    out = runs[0].stdout
    a = _find(r"FIFO, ([\d,]+) jobs.*?: ([\d,]+) events, ([\d,]+) decision points", out, "FIFO")
    b = _find(r"compile\+warm-up ([\d.]+) s.*?build scenario ([\d.]+) s; simulate ([\d.]+) s "
              r"\(event loop ([\d.]+) s\) -> ([\d,]+) events/s", out, "simulate")
    rate = _num(a[2]) / max(_num(b[3]), 1e-9)
    return ["| jobs | events | decision points | compile + warm-up s | build s | simulate s | "
            "events/s | event loop s (wall) |", "|---:|---:|---:|---:|---:|---:|---:|---:|",
            f"| {a[1]} | {a[2]} | {a[3]} | {b[1]} | {b[2]} | {b[3]} | {rate:,.0f} | {b[4]} |"]


def _env_table(runs: list[Run]) -> list[str]:
    m = _find(r"random masked policy: ([\d,]+) steps, (\d+) episodes, ([\d.]+) s -> ([\d,]+) "
              r"steps/s", runs[0].stdout, "env")
    return ["| steps | episodes | s | steps/s |", "|---:|---:|---:|---:|",
            f"| {m[1]} | {m[2]} | {m[3]} | {m[4]} |"]


def _batched_table(runs: list[Run]) -> list[str]:
    rows = re.findall(r"N=\s*(\d+) \(\s*(\w+)(?: \[\w+\])?\): ([\d,]+) steps in ([\d.]+) s -> "
                      r"([\d,]+) steps/s", runs[0].stdout)
    if not rows:
        raise ValueError(f"benchmark output: no batched line in:\n{runs[0].stdout}")
    return ["| N envs | batch kernel | steps | s | steps/s (all envs) |", "|---:|---|---:|---:|---:|",
            *(f"| {n} | {mode} | {steps} | {s} | {rate} |" for n, mode, steps, s, rate in rows)]


def _printed_table(runs: list[Run]) -> list[str]:
    """The Markdown table lines a script printed itself (its headings and notes dropped)."""
    lines = [ln for ln in runs[0].stdout.splitlines() if ln.startswith("|")]
    if not lines:
        raise ValueError(f"benchmark output: no table in:\n{runs[0].stdout}")
    return lines


_CACHES = ("empty (right after install)", "warm (the run before filled it)")


def _startup(columns: list[str], pattern: str) -> Callable[[list[Run]], list[str]]:
    """A start-up table: one row per run (empty cache, then warm), the script's times read
    by ``pattern`` (one group per column) and the whole process's wall time."""
    def table(runs: list[Run]) -> list[str]:
        rows = ["| cache | " + " | ".join(columns) + " | whole process s |",
                "|---|" + "---:|" * (len(columns) + 1)]
        for label, r in zip(_CACHES, runs):
            m = _find(pattern, r.stdout, "start-up")
            rows.append(f"| {label} | " + " | ".join(m.groups()) + f" | {r.wall_s:.2f} |")
        return rows
    return table


_startup_table = _startup(["import s", "load 300 jobs s", "first simulate s", "second simulate s"],
                          r"import ([\d.]+) s, load ([\d.]+) s, first simulate .*? ([\d.]+) s, "
                          r"second simulate ([\d.]+) s")
_startup_env_table = _startup(["import s", "make + reset s", "first step s"],
                              r"import ([\d.]+) s, make \+ reset ([\d.]+) s, first step ([\d.]+) s")


def _andreas_table(runs: list[Run]) -> list[str]:
    m = _find(r"(\d+) calls, ([\d.]+) jobs per call on average: ([\d.]+) ms CPU, ([\d.]+) ms wall",
              runs[0].stdout, "ANDREAS")
    return ["| recorded calls | jobs per call (mean) | ms CPU per call | ms wall per call |",
            "|---:|---:|---:|---:|", f"| {m[1]} | {m[2]} | {m[3]} | {m[4]} |"]


def benches(cache_dir: str) -> list[Bench]:
    """The tables of BENCHMARKS.md, in order (``cache_dir``: the empty Numba cache of the
    start-up rows)."""
    scale_common = ["--loads", "1.2", "--lab", "none", "--clock", "cpu"]
    lab_names = "fifo,srpt,allox,fitgpp,andreas-rg,gavel-las,tiresias,topo-aware,hadar"
    return [
        Bench("simulator", "Simulator: FIFO on the 1,024-GPU hybrid cluster",
              "FIFO over synthetic jobs (lognormal durations, gangs of 1-8) on 1,024 GPUs and 32 "
              "CPU nodes; compile time measured apart by a warm-up run in the same process. "
              "Times are the process's CPU time (events/s too) but for the event loop's own "
              "wall-clock timer.",
              ["scripts/bench.py", "--jobs", "50000", "--skip-env", "--batched", "", "--clock", "cpu"],
              ["scripts/bench.py", "--jobs", "5000", "--skip-env", "--batched", "", "--clock", "cpu"],
              _simulator_table),
        Bench("env", "Environment: `HetCluster-v0` under a random masked policy",
              "The unwrapped env on the default scenario, resets included, after 200 warm-up "
              "steps; CPU time.",
              ["scripts/bench.py", "--skip-sim", "--env-steps", "20000", "--batched", "", "--clock", "cpu"],
              ["scripts/bench.py", "--skip-sim", "--env-steps", "3000", "--batched", "", "--clock", "cpu"],
              _env_table),
        Bench("batched", "Batched environment: `gym.make_vec(\"HetCluster-v0\", num_envs=N)`",
              "Aggregate steps/s of N envs of the default scenario in one compiled batch step, "
              "random masked policy, autoreset included; CPU time of the process (the threaded "
              "kernel's figures count every thread).",
              ["scripts/bench.py", "--skip-sim", "--skip-env", "--batched", "1,8,64,256",
               "--seconds", "2", "--clock", "cpu"],
              ["scripts/bench.py", "--skip-sim", "--skip-env", "--batched", "1,64",
               "--seconds", "1", "--clock", "cpu"],
              _batched_table),
        Bench("decision-vec", "Decision envs: `gym.make_vec` forms",
              "Aggregate steps/s (wall clock) of each decision env's `vector_entry_point` "
              "against Gymnasium's `SyncVectorEnv`, 32-job scenarios, random masked policy.",
              ["scripts/bench_decision_vec.py", "--num-envs", "8", "--seconds", "2"],
              ["scripts/bench_decision_vec.py", "--num-envs", "4", "--seconds", "1"],
              _printed_table),
        Bench("scaling", "How the baselines' cost grows with the number of jobs",
              "CPU time of `hetgym.simulate` (compile excluded) and events/s per scheduler at "
              "offered load 1.2 (the queue grows with the jobs), with the growth exponent b of "
              "time ~ jobs^b; each cell in its own process.",
              ["scripts/bench_scale.py", "--schedulers", "fifo,sjf,srpt,allox+,allox,fitgpp",
               "--sizes", "1000,4000", "--fifo-sizes", "16000", "--timeout", "60", *scale_common],
              ["scripts/bench_scale.py", "--schedulers", "fifo,sjf,srpt,allox+,fitgpp",
               "--sizes", "500,2000", "--fifo-sizes", "", "--timeout", "30", *scale_common],
              _printed_table),
        Bench("fitgpp-lab", "Baselines on `fitgpp-lab`",
              "One baseline of most families (and two classic ones) on the `fitgpp-lab` preset "
              "(84 nodes x 8 V100), each in its own process after a warm-up run; CPU and wall "
              "seconds of the timed run.",
              ["scripts/bench_scale.py", "--schedulers", "", "--lab", lab_names, "--lab-jobs", "1024",
               "--timeout", "60", "--clock", "cpu"],
              ["scripts/bench_scale.py", "--schedulers", "", "--lab", "fifo,srpt,fitgpp,hadar",
               "--lab-jobs", "512", "--timeout", "30", "--clock", "cpu"],
              _printed_table),
        Bench("startup", "Start-up: a 300-job simulation from the shell",
              "The first 300 Gavel-traceable jobs of the packaged `6c71a0.trace` under FIFO on a "
              "3 x 9 x 4-GPU cluster, in a fresh process: the script's own times and the whole "
              "process's wall time (interpreter start included). Run twice on one Numba cache "
              "that starts empty.",
              ["scripts/bench_startup.py"], ["scripts/bench_startup.py"], _startup_table,
              env={"NUMBA_CACHE_DIR": cache_dir}, runs=2),
        Bench("startup-env", "Start-up: `gym.make(\"HetCluster-v0\")`, a reset and one step",
              "As above, for the env: wall times of a fresh process, run twice on one Numba cache "
              "that starts empty.",
              ["scripts/bench_startup.py", "--env"], ["scripts/bench_startup.py", "--env"],
              _startup_env_table, env={"NUMBA_CACHE_DIR": cache_dir + "-env"}, runs=2),
        Bench("andreas", "ANDREAS Randomized Greedy: search kernel per call",
              "The arguments of `rg_search_nb` recorded at every `--every`-th decision point of an "
              "`andreas-rg` run on `fitgpp-lab`, then timed (the best of `--repeat` passes).",
              ["scripts/bench_andreas.py", "--jobs", "512", "--every", "25", "--repeat", "3"],
              ["scripts/bench_andreas.py", "--jobs", "256", "--every", "50", "--repeat", "2"],
              _andreas_table),
    ]


def machine() -> dict[str, str]:
    """What the machine says about itself: cores, CPU model, memory, OS and versions."""
    model = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    try:
        mem = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30
        mem_text = f"{mem:.0f} GiB"
    except (ValueError, OSError, AttributeError):
        mem_text = "memory unknown"
    versions = []
    for mod in ("numpy", "numba", "gymnasium", "torch"):
        try:
            versions.append(f"{mod} {__import__(mod).__version__}")
        except ImportError:
            pass
    return {"cores": str(os.cpu_count()), "cpu": model, "memory": mem_text,
            "os": f"{platform.system()} {platform.release()}",
            "versions": f"Python {platform.python_version()}, " + ", ".join(versions)}


def _load() -> tuple[float, float, float]:
    try:
        return os.getloadavg()
    except OSError:
        return (float("nan"),) * 3


def command_text(b: Bench, argv: list[str]) -> str:
    """The shell command a reader types to rerun ``b`` (``python`` for this interpreter)."""
    env = " ".join(f"{k}=$(mktemp -d)" for k in b.env)
    cmd = "python " + " ".join(shlex.quote(a) for a in argv)
    return (env + " " if env else "") + cmd + (f"  # {b.runs} times" if b.runs > 1 else "")


def run_bench(b: Bench, argv: list[str]) -> tuple[list[Run], float]:
    """Run ``b``'s command ``b.runs`` times from the repository root; raise with its output
    when it fails."""
    env = dict(os.environ, **b.env)
    env["PYTHONPATH"] = str(ROOT) + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    env.setdefault("MPLBACKEND", "Agg")
    runs, t0 = [], time.perf_counter()
    for _ in range(b.runs):
        t = time.perf_counter()
        p = subprocess.run([sys.executable, *argv], cwd=ROOT, env=env, capture_output=True, text=True)
        if p.returncode != 0:
            raise RuntimeError(f"benchmark {b.key!r} ({' '.join(argv)}) exited {p.returncode}:\n"
                               f"{p.stdout}\n{p.stderr}")
        runs.append(Run(p.stdout, time.perf_counter() - t))
    return runs, time.perf_counter() - t0


def render(sections: list[tuple[Bench, str, list[str], float]], info: dict[str, str],
           load_start: tuple, load_end: tuple, quick: bool, started: str, total_s: float) -> str:
    """The text of BENCHMARKS.md."""
    cores = int(info["cores"] or 1)
    shared = max(load_start[0], load_end[0]) > 0.5 * cores
    fmt = lambda la: ", ".join(f"{x:.2f}" for x in la)  # noqa: E731
    lines = [
        "# Benchmarks", "",
        "The current figures, one table per benchmark. This file is generated: "
        f"`python scripts/benchmarks_md.py{' --quick' if quick else ''}` ran every command below "
        "and wrote it; rerun it to refresh the figures on your machine (`--quick` for smaller "
        "sizes). Earlier figures and the analyses that went with them are in the file's git "
        "history (`git log -p BENCHMARKS.md`).", "",
        f"**Machine:** {info['cores']} cores ({info['cpu']}), {info['memory']}, {info['os']}; "
        f"{info['versions']}.  ",
        f"**Date:** {started}; {'quick pass' if quick else 'full pass'}, {total_s / 60:.1f} min in all.  ",
        f"**Load average** (1, 5, 15 min): {fmt(load_start)} at the start, {fmt(load_end)} at the end.",
        "",
    ]
    if shared:
        lines += [
            "> The machine was shared while these ran (load average above half its core count): "
            "other processes competed for the cores, so wall times are longer and noisier than "
            "on an idle machine. Most tables give the process's CPU time, which is less affected "
            "but still not an idle machine's figure.", ""]
    lines += [
        "Numba compile time is measured apart (a warm-up run in the same process; kernels are "
        "`cache=True`, so later processes load them from the cache) except in the start-up "
        "tables, which measure it.", "",
        "A speed change must keep the env's trajectories: `python scripts/trajectory_digest.py "
        "> before.txt` on the old tree (with its own `NUMBA_CACHE_DIR`), then `python "
        "scripts/trajectory_digest.py --against before.txt` on the new one (also with "
        "`--batched 16`).", ""]
    for b, cmd, table, secs in sections:
        lines += [f"## {b.title}", "", b.about, "", "```bash", cmd, "```", "", *table, "",
                  f"_{secs:.0f} s for this table._", ""]
    return "\n".join(lines).rstrip() + "\n"


def main(argv: list[str] | None = None) -> int:
    """Run the benchmarks and write the file."""
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--quick", action="store_true", help="smaller sizes, a few minutes")
    p.add_argument("--out", default=str(ROOT / "BENCHMARKS.md"), help="file to write (atomically)")
    p.add_argument("--only", default="", help="comma-separated table keys (default: all)")
    a = p.parse_args(argv)
    from hetgym.io import write_atomic_bytes

    with tempfile.TemporaryDirectory(prefix="hetgym-bench-cache-") as tmp:
        todo = benches(str(Path(tmp) / "numba"))
        known = [b.key for b in todo]
        only = [k.strip() for k in a.only.split(",") if k.strip()]
        unknown = sorted(set(only) - set(known))
        if unknown:
            p.error(f"--only: unknown table(s) {unknown}; expected some of {known}")
        todo = [b for b in todo if not only or b.key in only]
        info, load_start = machine(), _load()
        started = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
        t0, sections = time.perf_counter(), []
        for b in todo:
            argv_b = b.quick if a.quick else b.full
            print(f"[{time.perf_counter() - t0:6.0f} s] {b.key}: {command_text(b, argv_b)}",
                  file=sys.stderr, flush=True)
            runs, secs = run_bench(b, argv_b)
            sections.append((b, command_text(b, argv_b), b.table(runs), secs))
        text = render(sections, info, load_start, _load(), a.quick, started, time.perf_counter() - t0)
    write_atomic_bytes(text.encode(), a.out)
    print(f"wrote {a.out} ({len(text.splitlines())} lines, {time.perf_counter() - t0:.0f} s)",
          file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
