"""Per-call time of the ANDREAS Randomized Greedy search kernel (``rg_search_nb``).

Records the kernel's arguments at every ``--every``-th decision point of an ``andreas-rg``
run on ``fitgpp-lab`` (``--jobs`` jobs), then times the kernel (CPU time, the best of
``--repeat`` passes over the recorded calls) on those arguments::

    python scripts/bench_andreas.py                          # 1,024 jobs, every 25th point
    python scripts/bench_andreas.py --save /tmp/rg_calls.pkl # keep the recorded calls
    python scripts/bench_andreas.py --load /tmp/rg_calls.pkl # time another tree on them
    python scripts/bench_andreas.py --load /tmp/rg_calls.pkl --chunks 2  # the threaded search
    python scripts/bench_andreas.py --scenario andreas-sim --nodes 20 --jobs 0 --every 10

The kernel's first ``NARGS`` = 34 arguments (31 before the search took the nodes' cores and
memory, ``baselines/andreas/fit.py``) are the same across versions of one signature, so
calls recorded with one tree can be timed with another (run with that tree on
``PYTHONPATH``). ``scan=False`` and ``prune=True`` are passed, not omitted (omitted
arguments take Numba's slow dispatch).
"""

from __future__ import annotations

import argparse
import pickle
import time

import numpy as np

NARGS = 34  # the search kernel's arguments before scan and prune


def record(n_jobs: int, every: int, scenario: str = "fitgpp-lab", **kw) -> list[tuple]:
    """The kernel's arguments at every ``every``-th decision point of a run on
    ``scenario`` (``n_jobs`` jobs unless 0: the scenario's default)."""
    import baselines.andreas.schedulers as andreas_mod
    import hetgym

    calls: list[tuple] = []
    real = andreas_mod.rg_search_nb
    count = [0]

    def spy(*args):
        if count[0] % every == 0:
            calls.append(tuple(a.copy() if isinstance(a, np.ndarray) else a for a in args[:NARGS]))
        count[0] += 1
        return real(*args)

    andreas_mod.rg_search_nb = spy
    try:
        if n_jobs:
            kw["n_jobs"] = n_jobs
        hetgym.simulate(hetgym.scenarios.get(scenario, **kw), andreas_mod.AndreasRG(parallel=False))
    finally:
        andreas_mod.rg_search_nb = real
    return calls


def time_calls(calls: list[tuple], repeat: int, chunks: int = 0) -> tuple[float, float, list[float]]:
    """Best CPU and best wall seconds per pass over ``calls`` and the objectives found;
    ``chunks`` > 0: the threaded search (``rg_search_par_nb``) with that many chunks."""
    import baselines.andreas.kernel as kern

    fn, extra = kern.rg_search_nb, (False, True)  # scan, prune
    if chunks > 0:
        fn, extra = kern.rg_search_par_nb, (False, True, chunks)
    best, wall, objs = np.inf, np.inf, []
    for _ in range(repeat):
        t, w = time.process_time(), time.perf_counter()
        objs = [fn(*c[:NARGS], *extra) for c in calls]
        best = min(best, time.process_time() - t)
        wall = min(wall, time.perf_counter() - w)
    return best, wall, objs


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--scenario", default="fitgpp-lab")
    ap.add_argument("--nodes", type=int, default=None, help="andreas-sim: n_nodes")
    ap.add_argument("--jobs", type=int, default=1024, help="jobs (0: the scenario's default)")
    ap.add_argument("--every", type=int, default=25)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--save", default=None)
    ap.add_argument("--load", default=None)
    ap.add_argument("--chunks", type=int, default=0,
                    help="time rg_search_par_nb with this many chunks (0: the serial rg_search_nb)")
    a = ap.parse_args(argv)
    if a.load:
        with open(a.load, "rb") as fh:
            calls = pickle.load(fh)
    else:
        kw = {} if a.nodes is None else {"n_nodes": a.nodes}
        calls = record(a.jobs, a.every, a.scenario, **kw)
        if a.save:
            with open(a.save, "wb") as fh:
                pickle.dump(calls, fh)
    time_calls(calls[:1], 1, a.chunks)  # compile / load
    sec, wall, objs = time_calls(calls, a.repeat, a.chunks)
    jobs = np.mean([len(c[0]) for c in calls])
    print(f"{len(calls)} calls, {jobs:.1f} jobs per call on average: {1e3 * sec / len(calls):.2f} ms CPU, "
          f"{1e3 * wall / len(calls):.2f} ms wall per call (best of {a.repeat}, chunks {a.chunks}); "
          f"sum of f_OBJ {np.sum(objs):.6f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
