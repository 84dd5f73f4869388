"""Digests of HetCluster-v0 trajectories: a check that a speed change kept them the same.

    python scripts/trajectory_digest.py                      # every configuration, 3,000 steps
    python scripts/trajectory_digest.py --steps 500 --only default,preempt
    python scripts/trajectory_digest.py --batched 16         # the batched env (16 sub-envs)
    python scripts/trajectory_digest.py > before.txt; ...; python scripts/trajectory_digest.py --against before.txt

Each configuration's env is reset with seed 3 and driven by a seeded random policy that
takes a masked action 95 % of the time and any action otherwise (so the invalid-action
path is exercised too); everything the agent sees goes into a SHA-256 digest: every
observation, action mask, reward, reward term, termination and truncation flag, and the
observation after each reset. One line per configuration, ``name digest``. Run it on two
trees (e.g. ``git archive main`` in a temporary folder with its own ``NUMBA_CACHE_DIR``,
and the branch): the same digests mean the same trajectories, bit for bit, on this
machine (floating-point results may differ between CPUs, so compare runs on one machine).
``--against FILE`` compares with a saved output and exits 1 on any difference.
"""

from __future__ import annotations

import argparse
import hashlib
import sys
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

#: (name, env keyword arguments); ``scenario_options`` become a modified hetero-small scenario.
CONFIGS: list[tuple[str, dict]] = [
    ("default", {}),
    ("preempt", {"preemption": True, "run_window": 4}),
    ("allox-hybrid", {"scenario": "allox-hybrid", "window": 8}),
    ("google-hybrid", {"scenario": "google-hybrid", "window": 8, "n_jobs": 32}),
    ("topo-sim", {"scenario": "topo-sim", "window": 4, "n_jobs": 32}),
    ("fitgpp-lab", {"scenario": "fitgpp-lab", "preemption": True, "window": 8, "n_jobs": 64}),
    ("synthetic", {"scenario": "synthetic-hybrid", "window": 8, "n_jobs": 48}),
    ("exp0.8", {"scenario_options": {"scaling_exponent": 0.8}}),
]


def _env_kwargs(kw: dict) -> dict:
    kw = dict(kw)
    opts = kw.pop("scenario_options", None)
    if opts is not None:
        from hetgym import scenarios

        kw["scenario"] = scenarios.get("hetero-small").replace(options=opts)
    return kw


def _update(h: Any, *arrays: Any) -> None:
    for a in arrays:
        h.update(np.ascontiguousarray(a).tobytes())


def single_digest(kw: dict, steps: int) -> str:
    """The digest of ``steps`` steps of one HetCluster-v0 env made with ``kw``."""
    import gymnasium as gym

    import hetgym  # noqa: F401  (registers the ids)

    env = gym.make("HetCluster-v0", **_env_kwargs(kw)).unwrapped
    h, rng = hashlib.sha256(), np.random.default_rng(1)
    obs, _ = env.reset(seed=3)
    _update(h, obs, env.action_masks())
    for _ in range(steps):
        mask = env.action_masks()
        a = int(rng.choice(np.flatnonzero(mask))) if rng.random() > 0.05 else int(rng.integers(len(mask)))
        obs, r, term, trunc, info = env.step(a)
        _update(h, obs, env.action_masks(), np.array([r, term, trunc], dtype=np.float64),
                np.array(list(info["reward_terms"].values()), dtype=np.float64))
        if term or trunc:
            obs, _ = env.reset()
            _update(h, obs)
    env.close()
    return h.hexdigest()[:16]


def batched_digest(kw: dict, steps: int, n: int) -> str:
    """The digest of ``steps`` batch steps of the batched env (``n`` sub-envs) made with ``kw``
    (autoreset: the sub-envs reset themselves; the rewards, flags and masks go in)."""
    import gymnasium as gym

    import hetgym  # noqa: F401

    vec = gym.make_vec("HetCluster-v0", num_envs=n, vectorization_mode="vector_entry_point",
                       **_env_kwargs(kw))
    h, rng = hashlib.sha256(), np.random.default_rng(1)
    obs, _ = vec.reset(seed=3)
    _update(h, obs, vec.action_masks())
    for _ in range(steps):
        masks = vec.action_masks()
        act = np.array([int(rng.choice(np.flatnonzero(m))) if rng.random() > 0.05
                        else int(rng.integers(len(m))) for m in masks], dtype=np.int64)
        obs, r, term, trunc, _ = vec.step(act)
        _update(h, obs, vec.action_masks(), np.asarray(r, dtype=np.float64), term, trunc)
    vec.close()
    return h.hexdigest()[:16]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--steps", type=int, default=3000, help="steps per configuration (batch steps with --batched)")
    ap.add_argument("--only", default="", help="comma-separated configuration names")
    ap.add_argument("--batched", type=int, default=0, help="the batched env with this many sub-envs")
    ap.add_argument("--against", type=Path, help="a saved output to compare with (exit 1 on a difference)")
    args = ap.parse_args(argv)
    names = [c[0] for c in CONFIGS]
    only = [s for s in args.only.split(",") if s]
    for s in only:
        if s not in names:
            ap.error(f"--only: unknown configuration {s!r}; known: {', '.join(names)}")
    lines = []
    for name, kw in CONFIGS:
        if only and name not in only:
            continue
        d = batched_digest(kw, args.steps, args.batched) if args.batched else single_digest(kw, args.steps)
        lines.append(f"{name} {d}")
        print(lines[-1], flush=True)
    if args.against is None:
        return 0
    saved = dict(ln.split() for ln in args.against.read_text().splitlines() if ln.strip())
    diff = [ln for ln in lines if saved.get(ln.split()[0]) != ln.split()[1]]
    for ln in diff:
        name = ln.split()[0]
        print(f"DIFFERS: {name}: {saved.get(name, '(not in ' + str(args.against) + ')')} -> {ln.split()[1]}")
    return 1 if diff else 0


if __name__ == "__main__":
    sys.exit(main())
