"""What ``import hetgym, baselines`` loads at start-up, in fresh interpreters.

The import leaves Numba, the kernels and Gymnasium out (they load with the first run or
the first ``import gymnasium``), and the environments are still registered with
Gymnasium whichever of the two is imported first (hetgym/_internals/gym_registration.py).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
IDS = ["HetCluster-v0", "HetClusterPlacement-v0", "HetClusterElastic-v0", "HetClusterRounds-v0"]


def _run(code: str) -> dict:
    out = subprocess.run([sys.executable, "-W", "error", "-c", code], cwd=ROOT,
                         capture_output=True, text=True, check=True,
                         env={**os.environ, "PYTHONPATH": str(ROOT)})
    return json.loads(out.stdout.strip().splitlines()[-1])


_LIGHT = """
import json, sys
import hetgym, baselines
loaded = sorted(sys.modules)
ours = lambda: sum(type(f).__module__ == "hetgym._internals.gym_registration" for f in sys.meta_path)
hooks = ours()
import gymnasium as gym
env = gym.make("HetCluster-v0")
ids = [k for k in gym.registry if k.startswith("HetCluster")]
print(json.dumps({"loaded": loaded, "ids": ids, "hooks": [hooks, ours()],
                  "spec": gym.spec("HetClusterRounds-v0").vector_entry_point,
                  "n": int(env.action_space.n)}))
"""


def test_import_loads_neither_numba_nor_gymnasium_and_registers_on_gymnasium_import():
    res = _run(_LIGHT)
    heavy = {"numba", "gymnasium", "pandas", "hetgym.sim.engine", "hetgym.sim.events",
             "baselines.common.kernels", "scipy"}
    assert not heavy & set(res["loaded"]), sorted(heavy & set(res["loaded"]))
    assert res["ids"] == IDS
    assert res["hooks"] == [1, 0]  # the one-shot hook was there, and removed itself
    # (hetgym's own finders are counted: other packages add theirs, e.g. six's importer)
    assert res["spec"] == "hetgym.envs.decision_vec:RoundsVecEnv"
    assert res["n"] > 0


_GYM_FIRST = """
import json, sys
import gymnasium as gym
ours = lambda: sum(type(f).__module__ == "hetgym._internals.gym_registration" for f in sys.meta_path)
import hetgym
from gymnasium.envs.registration import registry
print(json.dumps({"ids": [k for k in registry if k.startswith("HetCluster")], "hooks": ours()}))
"""


def test_gymnasium_imported_first_registers_at_once_without_a_hook():
    res = _run(_GYM_FIRST)
    assert res["ids"] == IDS
    assert res["hooks"] == 0  # registered at once: no hook left behind


def test_a_simulation_after_the_light_import_loads_its_parts():
    res = _run("""
import json, sys
import hetgym, baselines
r = hetgym.simulate(hetgym.scenarios.get("fitgpp-lab", n_jobs=30), baselines.make("fifo"))
from hetgym.sim import Simulator, View
print(json.dumps({"done": int(r.summary()["jobs"]), "numba": "numba" in sys.modules,
                  "view": View.__module__, "sim": Simulator.__module__}))
""")
    assert res == {"done": 30, "numba": True, "view": "hetgym.sim.view", "sim": "hetgym.sim.engine"}
