"""Start-up cost of a short simulation from the shell.

    python scripts/bench_startup.py            # one process: load, simulate, print times
    NUMBA_CACHE_DIR=$(mktemp -d) python scripts/bench_startup.py   # right after install
    NUMBA_CACHE_DIR=$(mktemp -d) python scripts/bench_startup.py --env   # the env instead

Loads the first 300 Gavel-traceable jobs of the packaged ``6c71a0.trace`` (jobs of at
most 4 GPUs that Gavel measured on every type), simulates them with FIFO on a
3 x 9 x 4-GPU cluster (V100, P100, K80) and prints the process's times. Wrap it in
``/usr/bin/time`` for the whole process, interpreter start included. With ``--env`` it
does ``gym.make("HetCluster-v0")``, a reset and one step (the first feasible action)
instead. With ``--compiles`` it also prints each Numba compilation of the first simulate,
longest first, with its own time (the time of the functions it compiled on the way taken
out): where the time right after install goes.
"""

import sys
import time
from contextlib import nullcontext
from pathlib import Path

T0 = time.perf_counter()
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

if "--env" in sys.argv[1:]:
    import gymnasium as gym

    import hetgym  # registers the env ids

    T1 = time.perf_counter()
    env = gym.make("HetCluster-v0")
    _, info = env.reset(seed=0)
    T2 = time.perf_counter()
    env.step(int(info["action_mask"].argmax()))
    T3 = time.perf_counter()
    print(f"import {T1 - T0:.2f} s, make + reset {T2 - T1:.2f} s, first step {T3 - T2:.2f} s")
    sys.exit(0)

from gavel_check import startup_scenario

import baselines
import hetgym


def compile_recorder():
    """A ``numba:compile`` listener (:func:`hetgym.compile_log.compile_listener`) whose
    ``rows`` start with (own seconds, inclusive seconds, function) per compilation, and a
    context manager that installs it."""
    from numba.core import event

    from hetgym.compile_log import compile_listener

    rec = compile_listener()
    return rec, event.install_listener("numba:compile", rec)


T1 = time.perf_counter()
sc = startup_scenario()
T2 = time.perf_counter()
rec, listening = compile_recorder() if "--compiles" in sys.argv[1:] else (None, nullcontext())
with listening:
    res = hetgym.simulate(sc, baselines.make("fifo"))
T3 = time.perf_counter()
res2 = hetgym.simulate(sc, baselines.make("fifo"))
T4 = time.perf_counter()
print(f"import {T1 - T0:.2f} s, load {T2 - T1:.2f} s, first simulate (incl. compile/cache load) "
      f"{T3 - T2:.2f} s, second simulate {T4 - T3:.3f} s, {len(sc.workload.frame)} jobs")
if rec is not None:
    print(f"{len(rec.rows)} compilations, {sum(r[0] for r in rec.rows):.2f} s (own time, longest first):")
    for own, total, name, *_ in sorted(rec.rows, reverse=True):
        print(f"  {own:6.2f} s own, {total:6.2f} s with callees  {name}")
