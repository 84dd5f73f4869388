"""Compile every Numba kernel ahead: ``python -m hetgym.precompile``.

A fresh install compiles its kernels on first use (announced on the ``hetgym.compile``
logger, :mod:`hetgym.compile_log`). For CI images, cluster nodes and notebooks, run this
once after installing: it runs every installed scheduler on a small scenario of its
family, and resets and steps every registered env (one and two copies, the latter
through ``gym.make_vec``), so that Numba writes every kernel to its cache; later
processes load them from there. Prints one line per step with its wall time; exits 0.

Numba's cache sits beside the sources (``__pycache__``) or under ``NUMBA_CACHE_DIR``:
the image or node must keep that folder. ``--only schedulers`` or ``--only envs`` does
one half.
"""

from __future__ import annotations

import argparse
import sys
import time
import warnings
from typing import Any, Sequence

from hetgym.cli import plain_doc

__all__ = ["FAMILY_SCENARIOS", "tasks", "main"]

#: The small scenario each scheduler family compiles on (name prefix -> scenario and its
#: overrides); schedulers without an entry use the default scenario with 24 jobs.
FAMILY_SCENARIOS: dict[str, tuple[str, dict[str, Any]]] = {
    "topo": ("topo-sim", {"n_jobs": 24, "n_machines": 2}),
    "andreas": ("andreas-sim", {"n_jobs": 24}),
    "hadar": ("hadar-testbed", {}),
    "gavel": ("hadar-testbed", {}),
    "tiresias": ("hadar-testbed", {}),
    "yarn": ("hadar-testbed", {}),
    "fitgpp": ("fitgpp-lab", {"n_jobs": 24}),
    "lrtp": ("fitgpp-lab", {"n_jobs": 24}),
    "rand": ("fitgpp-lab", {"n_jobs": 24}),
}
_DEFAULT = ("hetero-small", {"n_jobs": 24})
_ENV_STEPS = 8


def _scenario_for(scheduler: str) -> tuple[str, dict[str, Any]]:
    for prefix, pick in FAMILY_SCENARIOS.items():
        if scheduler.startswith(prefix):
            return pick
    return _DEFAULT


def _simulate(scheduler: str) -> None:
    import hetgym
    from hetgym import scenarios
    from hetgym.schedulers import make

    name, kw = _scenario_for(scheduler)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # a stalled toy run is fine here: kernels compiled
        hetgym.simulate(scenarios.get(name, **kw), make(scheduler), seed=0)


def _env(env_id: str, copies: int) -> None:
    import gymnasium as gym
    import numpy as np

    import hetgym  # noqa: F401  (registers the envs)

    env = gym.make(env_id) if copies == 1 else gym.make_vec(env_id, num_envs=copies)
    try:
        env.reset(seed=0)
        for _ in range(_ENV_STEPS):
            if copies == 1:
                mask = np.asarray(env.unwrapped.action_masks(), dtype=bool).ravel()
                ok = np.flatnonzero(mask)
                action: Any = int(ok[0]) if len(ok) else 0
                if hasattr(env.action_space, "n") and mask.size != env.action_space.n:
                    action = env.action_space.sample()
            else:
                action = env.action_space.sample()
            out = env.step(action)
            if copies == 1 and (out[2] or out[3]):
                env.reset(seed=1)
    finally:
        env.close()


def tasks(only: str | None = None) -> list[tuple[str, Any]]:
    """The steps, as ``(label, zero-argument callable)``: every installed scheduler
    (``only="schedulers"``), every registered env alone and in two copies (``only="envs"``)."""
    from hetgym import schedulers

    out: list[tuple[str, Any]] = []
    if only in (None, "schedulers"):
        for s in schedulers.names():
            scen = _scenario_for(s)[0]
            out.append((f"simulate {s} on {scen}", lambda s=s: _simulate(s)))
    if only in (None, "envs"):
        import gymnasium as gym

        import hetgym  # noqa: F401  (registers the envs)

        for env_id in [k for k in gym.registry if k.startswith("HetCluster")]:
            out.append((f"gym.make {env_id}", lambda e=env_id: _env(e, 1)))
            out.append((f"gym.make_vec {env_id} x2", lambda e=env_id: _env(e, 2)))
    return out


def main(argv: Sequence[str] | None = None) -> int:
    """Command line (module docstring)."""
    import logging

    p = argparse.ArgumentParser(prog="python -m hetgym.precompile", description=plain_doc(__doc__),
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--only", choices=("schedulers", "envs"), default=None,
                   help="compile for the schedulers or the envs only (default: both)")
    a = p.parse_args(argv)
    logging.getLogger("hetgym.compile").setLevel(logging.ERROR)  # this command says it all
    steps = tasks(a.only)
    t0 = time.perf_counter()
    for i, (label, fn) in enumerate(steps, 1):
        print(f"[{i}/{len(steps)}] {label} ...", end=" ", file=sys.stderr, flush=True)
        t = time.perf_counter()
        fn()
        print(f"{time.perf_counter() - t:.1f} s", file=sys.stderr, flush=True)
    print(f"compiled (or loaded) every kernel in {time.perf_counter() - t0:.0f} s", file=sys.stderr)
    return 0


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
