"""Steps/s of the decision envs' ``gym.make_vec`` forms with a random masked policy:
the ids' ``vector_entry_point`` (:mod:`hetgym.envs.decision_vec`) against Gymnasium's
``SyncVectorEnv`` (``vectorization_mode="sync"``, masks read with ``call``).

    python scripts/bench_decision_vec.py [--num-envs 8] [--seconds 4]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import gymnasium as gym
import numpy as np

import hetgym  # noqa: F401  (registers the env ids)

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench import vec_rate

CASES = [("HetClusterPlacement-v0", "topo-sim", {"window": 4}),
         ("HetClusterElastic-v0", "andreas-sim", {"window": 4, "run_window": 3}),
         ("HetClusterRounds-v0", "hadar-sim", {"window": 6})]


def rate(env_id: str, scenario: str, kw: dict, mode: str, n: int, seconds: float) -> float:
    """Aggregate steps/s of ``n`` envs over ``seconds`` (after 20 warm-up steps; the timing
    loop of bench.py)."""
    v = gym.make_vec(env_id, num_envs=n, vectorization_mode=mode, scenario=scenario, n_jobs=32, **kw)
    rng = np.random.default_rng(0)

    def act(v) -> np.ndarray:
        masks = v.action_masks() if mode == "vector_entry_point" else np.stack(v.call("action_masks"))
        return np.array([rng.choice(np.flatnonzero(m)) for m in masks])

    return vec_rate(v, seconds, act)["steps_per_s"]


def main() -> None:
    from hetgym.cli import plain_doc
    ap = argparse.ArgumentParser(description=plain_doc(__doc__), formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--num-envs", type=int, default=8)
    ap.add_argument("--seconds", type=float, default=4.0)
    a = ap.parse_args()
    print(f"| env id (N = {a.num_envs}) | vector_entry_point | sync |\n|---|---:|---:|")
    for env_id, scenario, kw in CASES:
        r = [rate(env_id, scenario, kw, m, a.num_envs, a.seconds) for m in ("vector_entry_point", "sync")]
        print(f"| {env_id} ({scenario}) | {r[0]:,.0f} | {r[1]:,.0f} |")


if __name__ == "__main__":
    main()
