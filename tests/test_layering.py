"""Layering: ``baselines`` and ``agents`` use ``hetgym``, never the reverse.

Scenario presets are data in ``hetgym``; schedulers reach ``hetgym.compare`` through
the entry-point group ``hetgym.schedulers`` (:mod:`hetgym.schedulers`).
"""

from __future__ import annotations

import importlib.metadata
import json
import os
import re
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

import hetgym
from hetgym import scenarios, schedulers
from tests.source_scan import code_hits

ROOT = Path(__file__).resolve().parent.parent

_NO_BASELINES = """
import json, sys
import gymnasium as gym
import hetgym, hetgym.compare, hetgym.schedulers
from hetgym import scenarios
built = []
for name in scenarios.names():
    scenarios.get(name)
    built.append(name)
gym.make("HetCluster-v0", scenario="toy-3jobs")
print(json.dumps({"built": built,
                  "leaked": sorted(m for m in sys.modules if m.split(".")[0] in ("baselines", "agents"))}))
"""


def test_hetgym_never_imports_baselines_or_agents():
    """Importing hetgym, its comparison and every scenario leaves baselines/agents unloaded."""
    out = subprocess.run([sys.executable, "-c", _NO_BASELINES], cwd=ROOT, capture_output=True,
                         text=True, check=True, env={**os.environ, "PYTHONPATH": str(ROOT)})
    res = json.loads(out.stdout.strip().splitlines()[-1])
    assert {"allox-hybrid", "fitgpp-lab", "toy-3jobs", "hetero-small"} <= set(res["built"])
    assert res["leaked"] == []


def test_no_hetgym_module_names_baselines():
    """No ``import baselines``/``from baselines`` (or a module string naming it) in hetgym."""
    for f in (ROOT / "hetgym").rglob("*.py"):
        text = f.read_text()
        for bad in ("import baselines", "from baselines", '"baselines.', "'baselines."):
            assert bad not in text, f"{f.relative_to(ROOT)} names {bad!r}"


def test_paper_presets_live_in_hetgym():
    from hetgym.presets.allox import allox_hybrid
    from hetgym.presets.fitgpp import fitgpp_lab
    from hetgym.presets import traces as presets

    scenarios.names()
    assert scenarios._FACTORIES["allox-hybrid"] is allox_hybrid  # noqa: SLF001
    assert scenarios._FACTORIES["fitgpp-lab"] is fitgpp_lab  # noqa: SLF001
    # one fitgpp-lab factory: no fallback copy among the trace presets
    assert "fitgpp-lab" not in presets.REGISTERED
    assert not hasattr(presets, "_fitgpp_lab")
    assert not (ROOT / "baselines" / "allox_scenarios.py").exists()
    assert not (ROOT / "baselines" / "fitgpp_scenarios.py").exists()


def test_pyproject_declares_the_baselines_plugin():
    tomllib = pytest.importorskip("tomllib")
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert project["entry-points"]["hetgym.schedulers"] == {"baselines": "baselines"}


class _FakeProvider:
    def __init__(self, names: list[str]) -> None:
        self._names = names
        self.made: list[tuple[str, dict]] = []

    def names(self) -> list[str]:
        return list(self._names)

    def make(self, name: str, **params):
        self.made.append((name, params))
        return SimpleNamespace(name=name, params=params)


@pytest.fixture
def fresh_registry(monkeypatch):
    """An empty plug-in registry that discovers only the entry points a test fakes."""
    monkeypatch.setattr(schedulers, "_PROVIDERS", {})
    monkeypatch.setattr(schedulers, "_discovered", False)
    monkeypatch.setattr(schedulers, "_declared_in_checkout", lambda: [])

    real = importlib.metadata.entry_points

    def fake(group: str, points: list[tuple[str, str]]):
        eps = [importlib.metadata.EntryPoint(name=n, value=v, group=group) for n, v in points]

        def entry_points(**kw):
            if kw.get("group") in (group, schedulers.GROUP):
                return importlib.metadata.EntryPoints(e for e in eps if e.group == kw["group"])
            return real(**kw)  # other users of entry points (numba) see the real ones

        monkeypatch.setattr(importlib.metadata, "entry_points", entry_points)

    return fake


def test_plugin_discovered_from_entry_point(fresh_registry, monkeypatch):
    prov = _FakeProvider(["alpha", "beta"])
    mod = SimpleNamespace(PROVIDER=prov)
    monkeypatch.setitem(sys.modules, "fake_sched_pkg", mod)
    fresh_registry("hetgym.schedulers", [("fake", "fake_sched_pkg:PROVIDER")])
    assert schedulers.names() == ["alpha", "beta"]
    s = schedulers.make("beta", k=3)
    assert (s.name, s.params) == ("beta", {"k": 3})
    assert prov.made == [("beta", {"k": 3})]
    with pytest.raises(KeyError, match="unknown scheduler 'gamma'; known: alpha, beta"):
        schedulers.make("gamma")


def test_plugin_entry_point_of_another_group_is_ignored(fresh_registry):
    fresh_registry("not.hetgym", [("x", "no_such_module_anywhere")])
    assert schedulers.names() == []
    with pytest.raises(KeyError, match="no scheduler provider is installed"):
        schedulers.make("fifo")


def test_broken_plugin_warns_and_is_skipped(fresh_registry, monkeypatch):
    monkeypatch.setitem(sys.modules, "fake_sched_pkg", SimpleNamespace(P=_FakeProvider(["ok"])))
    fresh_registry("hetgym.schedulers", [("broken", "no_such_module_anywhere"),
                                         ("fine", "fake_sched_pkg:P")])
    with pytest.warns(RuntimeWarning, match="scheduler plug-in 'broken'.*no_such_module_anywhere"):
        assert schedulers.names() == ["ok"]


def test_plugin_registered_at_run_time_and_checked(fresh_registry):
    fresh_registry("hetgym.schedulers", [])
    schedulers.register_provider("mine", _FakeProvider(["solo"]))
    assert schedulers.names() == ["solo"]
    with pytest.raises(TypeError, match="no callable make"):
        schedulers.register_provider("bad", SimpleNamespace(names=lambda: []))


def test_stale_metadata_falls_back_to_the_checkout_pyproject(monkeypatch):
    """With installed metadata lacking the group, the checkout's pyproject is read."""
    real = importlib.metadata.entry_points
    monkeypatch.setattr(importlib.metadata, "entry_points",
                        lambda **kw: importlib.metadata.EntryPoints([]) if kw.get("group") ==
                        schedulers.GROUP else real(**kw))
    assert schedulers._declared() == [("baselines", "baselines")]  # noqa: SLF001


def test_compare_uses_the_plugin_registry(fresh_registry):
    """``hetgym.compare`` runs whatever the registry makes; fifo here, through a fake plug-in."""
    import baselines
    from hetgym.compare import run_grid

    fresh_registry("hetgym.schedulers", [("baselines", "baselines")])
    runs = run_grid("toy-3jobs", ["fifo"], [0], progress=False)
    ref = hetgym.simulate(scenarios.get("toy-3jobs"), baselines.make("fifo"), seed=0)
    assert runs["avg_jct"].tolist() == [ref.summary()["avg_jct"]]


#: What only the simulator itself may touch: its kernel binding, the kernels' private
#: argument buffers, and its state attributes (swapped through ``Simulator.replace_state``).
_PRIVATE_SIM = re.compile(r"(?<!self)\._bind\(|\._step_args\b|\._out_node\b"
                          r"|\bsim\.(state|js|ns|params|jobs|nodes)\s*=(?!=)")


def _reach_through(root: Path) -> list[str]:
    return code_hits(root, ("agents", "baselines", "hetgym/envs", "hetgym/traces", "scripts"),
                     lambda code: bool(_PRIVATE_SIM.search(code)))


def test_no_reach_through_into_the_simulator():
    """No reach-through into private attributes between env, agents and engine."""
    assert _reach_through(ROOT) == []


def test_the_reach_through_check_finds_one(tmp_path):
    (tmp_path / "agents").mkdir()
    (tmp_path / "agents" / "x.py").write_text(
        "sim.state = st\nsim._bind()\nself._bind()\nok = sim.state == st\n")
    assert [h.split(":")[1] for h in _reach_through(tmp_path)] == ["1", "2"]


# ---------------------------------------------------------------- the scheduler boundary
#: The modules of ``hetgym.sim`` that schedulers and agents may import: what a scheduler
#: reads (``view``), the rules and codes, the typed records (``state``) and the published
#: kernels of compiled fast paths (``fastpath``); the rest is the simulator's inside.
PUBLIC_SIM_MODULES = frozenset({"view", "codes", "rules", "state", "fastpath"})

_SIM_IMPORT = re.compile(r"\b(?:from|import)\s+hetgym\.sim\.(\w+)")
_SIM_NAMES = re.compile(r"\bfrom\s+hetgym\.sim\s+import\s+\(?([\w ,]+)")
_SIMULATOR = re.compile(r"\.simulator\b")
_EXACT_TYPE = re.compile(r"\btype\([^()]*\)\s*(?:is\b|==|!=|in\b|not\s+in\b)")
#: ``x._name`` on an object other than ``self`` (NamedTuple methods and Numba's structref
#: ``_type`` are not the objects' private members).
_PRIVATE_OF = re.compile(r"([\w.\[\]]+?)\._(?!replace\b|type\b|fields\b|asdict\b)[a-z]\w*")


def _private_of_other(code: str) -> bool:
    if code.lstrip().startswith(("from ", "import ")):  # a module path, not a member
        return False
    return any(base != "self" for base in _PRIVATE_OF.findall(code))


def _internal_import(code: str) -> bool:
    import hetgym.sim

    if any(m not in PUBLIC_SIM_MODULES for m in _SIM_IMPORT.findall(code)):
        return True
    names = [n.strip() for m in _SIM_NAMES.findall(code) for n in m.split(",")]
    return any(n and n not in hetgym.sim.__all__ for n in names)


def _boundary_hits(root: Path) -> dict[str, list[str]]:
    return {
        "simulator": code_hits(root, ("baselines", "agents"),
                               lambda code: bool(_SIMULATOR.search(code))),
        "internal import": code_hits(root, ("baselines", "agents"), _internal_import),
        "exact type": code_hits(root, ("baselines",), lambda code: bool(_EXACT_TYPE.search(code))),
        "env private": [h for h in code_hits(root, ("hetgym/envs",),
                                             _private_of_other)
                        if h.startswith(str(Path("hetgym/envs/batched.py")))],
    }


def test_the_scheduler_boundary_holds():
    """Schedulers and agents reach the simulator through the view (``view.kernel`` for
    fast paths, never ``view.simulator``) and the public modules of ``hetgym.sim`` only;
    fast paths apply by the parts' declared capabilities, not by exact types; the batched
    env drives its sub-envs through their public interface."""
    assert _boundary_hits(ROOT) == {"simulator": [], "internal import": [], "exact type": [],
                                    "env private": []}


def test_the_boundary_check_finds_each_leak(tmp_path):
    (tmp_path / "baselines").mkdir()
    (tmp_path / "baselines" / "x.py").write_text(
        "sim = view.simulator\n"
        "from hetgym.sim.engine import Simulator\n"
        "from hetgym.sim import Simulator, kernels\n"
        "from hetgym.sim.rules import covers\n"
        "fast = type(self.admission) is GreedyAdmission\n"
        "ok = isinstance(self.admission, GreedyAdmission)  # type(x) is y in a comment\n")
    (tmp_path / "hetgym" / "envs").mkdir(parents=True)
    (tmp_path / "hetgym" / "envs" / "batched.py").write_text(
        "env._stuck = False\nself._stuck[i] = env.stuck\nk = item[0]._type\n"
        "es = es._replace(obs=obs)\nself.envs[i]._carry_out(a, code)\n")
    hits = {k: [h.split(":")[1] for h in v] for k, v in _boundary_hits(tmp_path).items()}
    assert hits == {"simulator": ["1"], "internal import": ["2", "3"], "exact type": ["5"],
                    "env private": ["1", "5"]}
