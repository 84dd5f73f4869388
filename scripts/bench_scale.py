"""How the baselines' cost grows with the number of jobs.

    python scripts/bench_scale.py                                  # the full table
    python scripts/bench_scale.py --sizes 1000,4000 --timeout 60   # what finishes now
    python scripts/bench_scale.py --schedulers fifo,sjf --loads 1.2 --out scale.md
    python scripts/bench_scale.py --schedulers "" --lab all --clock cpu --timeout 120  # fitgpp-lab only
    python scripts/bench_scale.py --schedulers allox:window=8 --fifo-sizes "" --lab none  # with parameters

Prints a Markdown table: for each scheduler and offered load, the wall time of
``hetgym.simulate`` (Numba compile time excluded: every scheduler first runs a tiny
scenario in the same process), events per second, and the growth exponent ``b`` of
``time ~ jobs ** b`` fitted by least squares on log-log over the sizes that ran
(at least two). Then every registered baseline on ``fitgpp-lab`` (8,192 jobs;
``--lab`` picks them, ``--schedulers ""`` skips the scaling table), each in its own child
process: time on ``--clock``, the other clock, decision points, events, whether the run
stalled, or ``does not run: <error>`` for a baseline that cannot run on that cluster.

Workload: :class:`hetgym.generators.SyntheticGenerator` as in ``scripts/bench.py``
(lognormal durations, mean 1,800 s on a V100; gangs of 1/2/4/8 workers) on the
1,024-GPU hybrid cluster of ``scripts/bench.py`` (:func:`big_cluster`), arrivals
rescaled by :func:`hetgym.traces.windows.scale_to_load` to the offered load.

**Offered load** (``resources="devices"``): ``sum_j W_j d_j / (N T)``, ``d_j`` being job
``j``'s run time on its fastest device type, ``T`` the span of arrivals and ``N`` the
cluster's worker slots (1,024 GPUs + 32 CPU nodes x 64 / 8 cores per CPU slot = 1,280).
Load 1 would keep every slot busy with every job on its fastest type; 1.2 overloads
the cluster, so the queue grows with the number of jobs.

A run longer than ``--timeout`` seconds is stopped (it runs in a child process) and
the larger sizes of that scheduler and load are skipped; such cells read ``>T s`` and
``skipped``.
"""

from __future__ import annotations

import argparse
import math
import multiprocessing as mp
import os
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench import big_cluster  # noqa: E402

SCHEDULERS = ["fifo", "sjf", "srpt", "allox+", "allox", "fitgpp"]
CPU_SLOT_CORES = 8
BUILD_LIMIT = 900.0  # seconds to build a scenario and warm up, apart from --timeout


def scale_scenario(n_jobs: int, load: float, seed: int = 0):
    """``n_jobs`` synthetic jobs on :func:`big_cluster` at offered ``load`` (module docstring)."""
    from hetgym.generators import SyntheticGenerator
    from hetgym.specs import Scenario, SimOptions
    from hetgym.traces.windows import scale_to_load
    from hetgym.workload import Workload

    cluster = big_cluster()
    gen = SyntheticGenerator(devices=cluster.device_types, rate=1 / 5.0, duration="lognormal",
                             mean_duration=1800.0, workers={1: 0.7, 2: 0.15, 4: 0.1, 8: 0.05})
    df = gen.generate(n_jobs, seed=seed)
    if n_jobs > 1:
        df = scale_to_load(df, cluster, load, resources="devices", cpu_slot_cores=CPU_SLOT_CORES)
    return Scenario(cluster=cluster, workload=Workload.from_frame(df),
                    options=SimOptions(cpu_slot_cores=CPU_SLOT_CORES))


def make_scheduler(spec: str):
    """The baseline of ``spec``: a registered name, optionally with parameters as
    ``name:key=value[:key=value...]`` (values read as int, float, bool or None when they
    parse as one, else kept as text), e.g. ``allox:window=8``."""
    import baselines

    name, *pairs = spec.split(":")
    params = {}
    for pair in pairs:
        key, sep, raw = pair.partition("=")
        if not sep or not key:
            raise ValueError(f"scheduler spec {spec!r}: expected name:key=value, got {pair!r}")
        val: object = raw
        for conv in (int, float):
            try:
                val = conv(raw)
                break
            except ValueError:
                pass
        val = {"true": True, "false": False, "none": None}.get(raw.lower(), val)
        params[key] = val
    return baselines.make(name, **params)


def _run(kind: str, name: str, n_jobs: int, load: float, conn) -> None:
    """Child process: warm up ``name`` on a small scenario, then time the real run."""
    try:
        import hetgym

        if kind == "scale":
            tiny = scale_scenario(40, load)
            sc = scale_scenario(n_jobs, load)
        else:
            # up to 512 jobs: enough for every decision kind to occur (Gavel makes its first
            # moves between 256 and 512 jobs), so that no kernel compiles in the timed run
            tiny = hetgym.scenarios.get("fitgpp-lab", n_jobs=min(512, n_jobs))
            sc = hetgym.scenarios.get("fitgpp-lab", n_jobs=n_jobs)
        hetgym.simulate(tiny, make_scheduler(name))
        conn.send({"ready": True})  # the timeout starts now
        t, c = time.perf_counter(), time.process_time()
        res = hetgym.simulate(sc, make_scheduler(name))
        wall, cpu = time.perf_counter() - t, time.process_time() - c
        m = res.summary()
        conn.send({"wall": wall, "cpu": cpu, "events": float(m["events"]),
                   "decision_points": float(m["decision_points"]), "stalled": bool(res.stalled),
                   "avg_jct": float(m.get("avg_jct", math.nan))})
    except Exception as exc:  # pragma: no cover - reported in the table
        conn.send({"error": f"{type(exc).__name__}: {exc}"})
    finally:
        conn.close()


def measure(kind: str, name: str, n_jobs: int, load: float, timeout: float) -> dict:
    """Run one cell in a child process; ``{"timeout": True}`` past ``timeout`` seconds."""
    ctx = mp.get_context("fork")
    parent, child = ctx.Pipe(duplex=False)
    p = ctx.Process(target=_run, args=(kind, name, n_jobs, load, child))
    p.start()
    child.close()
    # the timeout covers the timed run only, not building the scenario and the warm-up
    out: dict = {"timeout": True}
    if parent.poll(BUILD_LIMIT):
        first = parent.recv()
        if "ready" not in first:
            out = first
        elif parent.poll(timeout):
            out = parent.recv()
    if p.is_alive() and "wall" not in out and "error" not in out:
        p.kill()
    p.join()
    return out


def growth_exponent(sizes: list[int], times: list[float]) -> float:
    """Least-squares slope of log(time) on log(jobs) (nan with fewer than two points)."""
    if len(sizes) < 2:
        return math.nan
    b, _ = np.polyfit(np.log(np.asarray(sizes, float)), np.log(np.asarray(times, float)), 1)
    return float(b)


def _cell(r: dict | None, timeout: float, clock: str = "wall") -> str:
    if r is None:
        return "skipped"
    if r.get("timeout"):
        return f">{timeout:g} s"
    if "error" in r:
        return "error"
    return f"{r[clock]:.2f} s ({r['events'] / max(r[clock], 1e-9):,.0f} ev/s)"


def scale_table(schedulers: list[str], sizes: list[int], loads: list[float], timeout: float,
                fifo_extra: list[int], log=print, clock: str = "wall") -> str:
    """The Markdown table of time (``clock``: ``"wall"`` or the process's ``"cpu"`` time)
    and events/s per scheduler, load and size."""
    all_sizes = sorted(set(sizes) | set(fifo_extra if "fifo" in schedulers else []))
    head = "| scheduler | load | " + " | ".join(f"{n:,} jobs" for n in all_sizes) + " | exponent |"
    lines = [head, "|" + "---|" * (len(all_sizes) + 3)]
    errors: list[str] = []
    for name in schedulers:
        own = sorted(set(sizes) | (set(fifo_extra) if name == "fifo" else set()))
        for load in loads:
            row: dict[int, dict | None] = {}
            stop = False
            for n in own:
                if stop:
                    row[n] = None
                    continue
                r = measure("scale", name, n, load, timeout)
                row[n] = r
                log(f"  {name} load {load} {n:,} jobs: {_cell(r, timeout, clock)}")
                if "error" in r:
                    errors.append(f"{name}, load {load}, {n:,} jobs: {r['error']}")
                if r.get("timeout") or "error" in r:
                    stop = True
            ok = [(n, r[clock]) for n, r in row.items()
                  if r is not None and "wall" in r and not r.get("timeout")]
            b = growth_exponent([n for n, _ in ok], [t for _, t in ok])
            cells = [_cell(row[n], timeout, clock) if n in row else "" for n in all_sizes]
            lines.append(f"| {name} | {load:g} | " + " | ".join(cells)
                         + f" | {'' if math.isnan(b) else f'{b:.2f}'} |")
    out = "\n".join(lines)
    if errors:
        out += "\n\nErrors:\n" + "\n".join(f"- {e}" for e in errors)
    return out


def _lab_cell(r: dict, timeout: float, clock: str) -> str:
    """A ``fitgpp-lab`` cell: the time, or why there is none (the error's message)."""
    if r.get("timeout"):
        return f">{timeout:g} s"
    if "error" in r:
        return "does not run: " + r["error"].replace("|", "/")[:160]
    return f"{r[clock]:.2f} s"


def lab_table(names: list[str], n_jobs: int, timeout: float, log=print, clock: str = "wall") -> str:
    """Every baseline in ``names`` on ``fitgpp-lab``, one child process each: the time on
    ``clock``, the other clock, decision points, events, and the error of one that does not
    run on that cluster (e.g. a baseline that needs a topology the preset lacks)."""
    other = "cpu" if clock == "wall" else "wall"
    lines = [f"| baseline | {clock} s | {other} s | decision points | events | stalled |",
             "|---|---:|---:|---:|---:|---|"]
    for name in names:
        r = measure("lab", name, n_jobs, 2.0, timeout)
        log(f"  fitgpp-lab {name}: {_lab_cell(r, timeout, clock)}")
        if "wall" in r:
            lines.append(f"| {name} | {r[clock]:.2f} | {r[other]:.2f} | "
                         f"{r['decision_points']:,.0f} | {r['events']:,.0f} | "
                         f"{'yes' if r['stalled'] else 'no'} |")
        else:
            lines.append(f"| {name} | {_lab_cell(r, timeout, clock)} | | | | |")
    return "\n".join(lines)


def _ints(s: str) -> list[int]:
    return [int(float(x)) for x in s.split(",") if x.strip()]


def main(argv: list[str] | None = None) -> None:
    """Parse the options, run the cells, print (and write) the tables."""
    from hetgym.cli import plain_doc
    p = argparse.ArgumentParser(description=plain_doc(__doc__), formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--sizes", default="1000,10000,100000", help="jobs per run, comma separated")
    p.add_argument("--fifo-sizes", default="1000000", help="extra sizes for FIFO only")
    p.add_argument("--schedulers", default=",".join(SCHEDULERS))
    p.add_argument("--loads", default="0.9,1.2")
    p.add_argument("--timeout", type=float, default=600.0, help="seconds per run")
    p.add_argument("--lab-jobs", type=int, default=2**13, help="jobs of the fitgpp-lab runs")
    p.add_argument("--lab", default="all", help="baselines on fitgpp-lab: 'all', 'none' or a list")
    p.add_argument("--out", default=None, help="also write the tables to this file (atomically)")
    p.add_argument("--clock", choices=["wall", "cpu"], default="wall",
                   help="time shown: wall clock, or the process's CPU time (on a shared machine; "
                        "--timeout is wall clock either way)")
    a = p.parse_args(argv)

    import baselines

    schedulers = [s.strip() for s in a.schedulers.split(",") if s.strip()]
    loads = [float(x) for x in a.loads.split(",") if x.strip()]
    log = lambda s: print(s, file=sys.stderr, flush=True)  # noqa: E731
    t0 = time.perf_counter()
    what = "wall time" if a.clock == "wall" else "CPU time of the process"
    text: list[str] = []
    if schedulers:
        text += [f"## Scaling on the 1,024-GPU cluster ({what} of hetgym.simulate, events/s)", "",
                 scale_table(schedulers, _ints(a.sizes), loads, a.timeout, _ints(a.fifo_sizes),
                             log, a.clock), ""]
    if a.lab != "none":
        names = baselines.names() if a.lab == "all" else [s.strip() for s in a.lab.split(",")]
        text += [f"## Every baseline on fitgpp-lab ({a.lab_jobs:,} jobs)", "",
                 lab_table(names, a.lab_jobs, a.timeout, log, a.clock)]
    load_avg = ", ".join(f"{x:.2f}" for x in os.getloadavg())
    text += ["", (f"_{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, "
                 f"{os.cpu_count()} CPUs, load average at the end {load_avg}, "
                 f"total {time.perf_counter() - t0:.0f} s; "
                 f"load = offered load over worker slots (see the script's docstring)._")]
    out = "\n".join(text) + "\n"
    print(out, end="")
    if a.out:
        from hetgym.io import write_atomic_bytes

        write_atomic_bytes(out.encode(), a.out)


if __name__ == "__main__":
    main()
