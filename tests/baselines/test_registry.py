"""The baselines registry: paper families registered by name, imported on first use."""

import importlib
import json
import os
import subprocess
import sys
from pathlib import Path

import baselines

ROOT = Path(__file__).resolve().parents[2]


def test_family_lists_match_the_modules_baselines():
    """``baselines.FAMILIES`` names each module's ``BASELINES`` in its order, and
    ``names()`` is the classic three then the families in order."""
    flat = []
    for mod, family in baselines.FAMILIES.items():
        assert tuple(importlib.import_module(mod).BASELINES) == family, mod
        flat += family
    assert baselines.names() == ["fifo", "sjf", "srpt", *flat]


_IMPORT = """
import importlib, json, sys
import baselines, hetgym
before = sorted(m for m in sys.modules if m.startswith("baselines."))
s = baselines.make("topo-bf")
print(json.dumps({"before": before, "made": type(s).__module__,
                  "topo": "baselines.topo.schedulers" in sys.modules, "hadar": "baselines.hadar.schedulers" in sys.modules,
                  "attr": importlib.import_module("baselines.hadar.schedulers").BASELINES["hadar"].__module__,
                  "family": baselines.hadar.__name__}))
"""


def test_import_loads_only_the_classic_schedulers_and_make_loads_a_family():
    """``import baselines`` imports no paper family (nor SRPT's plan kernels); ``make``
    imports the family of the name it builds, and ``baselines.<family>`` imports that package."""
    out = subprocess.run([sys.executable, "-c", _IMPORT], cwd=ROOT, capture_output=True, text=True,
                         check=True, env={**os.environ, "PYTHONPATH": str(ROOT)})
    res = json.loads(out.stdout.strip().splitlines()[-1])
    families = {m for m in baselines.FAMILIES}
    assert not families & set(res["before"]), res["before"]
    assert "baselines.classic.schedulers" in res["before"]
    assert "baselines.classic.srpt_plan" not in res["before"]  # SRPT's kernels load with its first run
    assert res["made"] == "baselines.topo.schedulers" and res["topo"] and not res["hadar"]
    assert res["attr"] == "baselines.hadar.schedulers" and res["family"] == "baselines.hadar"


def test_unknown_name_and_bad_parameter():
    try:
        baselines.make("no-such-baseline")
    except KeyError as exc:
        assert "gavel-fifo" in str(exc)
    else:  # pragma: no cover
        raise AssertionError("no KeyError")
    try:
        baselines.make("gavel-fifo", no_such_param=1)
    except TypeError:
        pass
    else:  # pragma: no cover
        raise AssertionError("no TypeError")
