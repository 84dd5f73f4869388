"""Numba's first use without scipy.linalg (hetgym/_internals/numba_start.py)."""

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

_RUN = """
import json, sys
import numpy as np
import baselines, hetgym
res = hetgym.simulate(hetgym.scenarios.get("toy-3jobs"), baselines.make("fifo"))
res.summary()
after_run = "scipy.linalg" in sys.modules
import numba
from numba.np import arraymath

@numba.njit
def dot(a, b):
    return np.dot(a, b)

@numba.njit
def corr(a, b):
    return np.correlate(a, b)

a, b = np.arange(5.0), np.linspace(0.5, 2.5, 5)
print(json.dumps({"scipy_linalg_after_run": after_run, "have_blas": arraymath._HAVE_BLAS,
                  "dot": [float(dot(a, b)), float(np.dot(a, b))],
                  "corr": [corr(a, b).tolist(), np.correlate(a, b).tolist()],
                  "scipy_linalg_after_dot": "scipy.linalg" in sys.modules}))
"""


def test_a_run_does_not_import_scipy_linalg_and_blas_still_works():
    """A FIFO run leaves scipy.linalg unimported; Numba's BLAS flag is what its own probe
    gives, and np.dot / np.correlate compiled afterwards give numpy's values."""
    out = subprocess.run([sys.executable, "-c", _RUN], cwd=ROOT, capture_output=True, text=True,
                         check=True, env={**os.environ, "PYTHONPATH": str(ROOT)})
    res = json.loads(out.stdout.strip().splitlines()[-1])
    assert res["scipy_linalg_after_run"] is False
    assert res["have_blas"] is True  # SciPy (a dependency) ships cython_blas
    assert res["dot"][0] == res["dot"][1]
    assert res["corr"][0] == res["corr"][1]
    assert res["scipy_linalg_after_dot"] is True  # np.dot's BLAS call imported it when compiled
