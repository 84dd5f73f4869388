"""Every YAML file in conf/ composes (Hydra compose API) and instantiates."""

from __future__ import annotations

import importlib.util
import warnings
from pathlib import Path

import pytest
from hydra import compose, initialize_config_dir
from hydra.core.global_hydra import GlobalHydra
from hydra.utils import instantiate
from omegaconf import OmegaConf

import baselines
from hetgym import scenarios

CONF = Path(__file__).resolve().parents[1] / "conf"
GROUP_FILES = sorted(p for p in CONF.rglob("*.yaml") if p.parent != CONF)
PRIMARY = ("compare", "train")


def _id(p: Path) -> str:
    return str(p.relative_to(CONF).with_suffix(""))


def _compose(primary: str, overrides: list[str], hydra_cfg: bool = False):
    GlobalHydra.instance().clear()
    with initialize_config_dir(config_dir=str(CONF), version_base="1.3"):
        return compose(primary, overrides=overrides, return_hydra_config=hydra_cfg)


def _small(cfg_scenario) -> dict:
    """Overrides that keep a scenario quick to build."""
    return {"n_jobs": 16} if "n_jobs" in cfg_scenario else {}


@pytest.fixture(scope="module")
def checkpoint(tmp_path_factory):
    """An (untrained) MaskablePPO checkpoint with its agent.json, for scheduler=agent."""
    pytest.importorskip("sb3_contrib")
    from agents.common.adapter import save_meta
    from agents.common.envtools import EnvConfig
    from agents.sb3.agent import AgentConfig, make_vec_env

    d = tmp_path_factory.mktemp("agent")
    env_cfg = EnvConfig(n_jobs=8)
    venv = make_vec_env(scenarios.get(scenarios.DEFAULT, n_jobs=32), env_cfg, n_envs=1)
    model = AgentConfig(n_steps=16, batch_size=16, net_arch=(8,)).build(venv)
    model.save(str(d / "model.zip"))
    save_meta(d, "maskable_ppo", env_cfg)
    return d / "model.zip"


def test_every_yaml_is_covered():
    assert (CONF / "compare.yaml").is_file() and (CONF / "train.yaml").is_file()
    groups = {p.relative_to(CONF).parts[0] for p in GROUP_FILES}
    assert {"scenario", "scheduler", "agent", "experiment", "hydra"} <= groups


@pytest.mark.parametrize("primary", PRIMARY)
def test_primary_configs_compose(primary):
    cfg = _compose(primary, [])
    assert cfg.seed == 0
    sc = instantiate(cfg.scenario, **_small(cfg.scenario))
    assert sc.name == cfg.scenario.name
    if primary == "train":
        for key in ("env", "train", "bc", "agent"):
            assert instantiate(cfg[key], _convert_="all") is not None


@pytest.mark.parametrize("path", [p for p in GROUP_FILES if p.parts[-2] == "scenario"], ids=_id)
def test_scenario_yaml(path):
    name = path.stem
    if name not in scenarios.names():
        pytest.skip(f"scenario {name!r} is not registered")
    cfg = _compose("compare", [f"scenario={name}"])
    assert cfg.scenario.name == name
    sc = instantiate(cfg.scenario, **_small(cfg.scenario))
    assert sc.name == name and len(sc.workload) > 0


def test_every_registered_name_has_a_yaml():
    """Scenarios and baselines registered after conf/ was written only warn (others add them)."""
    for group, names in (("scenario", scenarios.names()), ("scheduler", baselines.names())):
        missing = [n for n in names if not (CONF / group / f"{n}.yaml").is_file()]
        if missing:
            warnings.warn(f"no conf/{group}/<name>.yaml for {missing}", stacklevel=1)


@pytest.mark.parametrize("path", [p for p in GROUP_FILES if p.parts[-2] == "scheduler"], ids=_id)
def test_scheduler_yaml(path, request):
    name = path.stem
    overrides = [f"scheduler={name}"]
    if name == "agent":
        overrides.append(f"agent.checkpoint={request.getfixturevalue('checkpoint')}")
    elif name == "pretrained":
        pytest.importorskip("sb3_contrib")
        from agents import pretrained_names

        if not pretrained_names():
            pytest.skip("no pretrained model shipped")
        overrides.append(f"pretrained.name={pretrained_names()[0]}")
    elif name not in baselines.names():
        pytest.skip(f"baseline {name!r} is not registered")
    cfg = _compose("compare", overrides)
    sched = instantiate(cfg.scheduler)
    assert callable(getattr(sched, "decide", None)) and callable(getattr(sched, "reset", None))


@pytest.mark.parametrize("path", [p for p in GROUP_FILES if p.parts[-2] == "agent"], ids=_id)
def test_agent_yaml(path):
    from agents.sb3.agent import AgentConfig

    cfg = _compose("train", [f"agent={path.stem}"])
    agent = instantiate(cfg.agent, _convert_="all")
    assert isinstance(agent, AgentConfig) and agent.algo == cfg.agent.algo


@pytest.mark.parametrize("path", [p for p in GROUP_FILES if p.parts[-2] == "experiment"
                                  and not p.stem.startswith(("dagger_", "residual_"))], ids=_id)
def test_experiment_yaml(path):
    primary = path.stem.split("_")[0]
    assert primary in PRIMARY, (f"experiment files are named compare_*, train_*, dagger_* (scripts/dagger.py) "
                                f"or residual_* (scripts/residual.py): {path.name}")
    cfg = _compose(primary, [f"experiment={path.stem}"], hydra_cfg=True)
    OmegaConf.resolve(cfg.hydra.sweeper)
    if primary == "train":
        for key in ("env", "train", "bc", "agent"):
            assert instantiate(cfg[key], _convert_="all") is not None
    else:
        assert cfg.scheduler.name in baselines.names() or cfg.scheduler.name is None


@pytest.mark.parametrize("path", sorted((CONF / "experiment").glob("dagger_*.yaml")), ids=_id)
def test_dagger_yaml(path):
    """``dagger_*`` experiment files are read by scripts/dagger.py (not a Hydra primary):
    its family has a split and a metric, its start model is a shipped MaskablePPO model or a
    ``.zip``, its settings build a DaggerConfig."""
    from agents.imitation.dagger import DaggerConfig
    from agents.evaluation.heldout import FAMILY_METRIC
    from agents.pretrained.registry import card, pretrained_names

    cfg = OmegaConf.load(path)
    assert str(cfg.family) in FAMILY_METRIC, path.name
    init = str(cfg.init)
    assert init.endswith(".zip") or (init in pretrained_names() and card(init)["algo"] == "maskable_ppo"), path.name
    assert isinstance(DaggerConfig(**OmegaConf.to_container(cfg.dagger, resolve=True)), DaggerConfig)


@pytest.mark.parametrize("launcher", ["basic", "joblib", "ray"])
def test_launchers_compose(launcher):
    cfg = _compose("compare", [f"hydra/launcher={launcher}"], hydra_cfg=True)
    lcfg = cfg.hydra.launcher
    assert lcfg._target_.endswith("Launcher")
    if launcher == "ray":
        plain = OmegaConf.load(CONF / "hydra" / "launcher" / "ray.yaml")
        assert plain._target_ == "hydra_plugins.hydra_ray_launcher.ray_launcher.RayLauncher"
        assert "address" in plain.ray.init and "num_cpus" in plain.ray.remote
        if importlib.util.find_spec("hydra_plugins.hydra_ray_launcher") is None:
            pytest.skip("hydra-ray-launcher not installed: composed, not instantiated")
    # Hydra's instantiate refuses its own launcher classes by policy; build it as Hydra does.
    from importlib import import_module

    module, _, cls = lcfg._target_.rpartition(".")
    kwargs = {k: v for k, v in lcfg.items() if k != "_target_"}
    assert getattr(import_module(module), cls)(**kwargs) is not None


@pytest.mark.parametrize("path", sorted((CONF / "experiment").glob("residual_*.yaml")), ids=_id)
def test_residual_yaml(path):
    """``residual_*`` experiment files are read by scripts/residual.py: its family has a split
    and a metric, the model whose env arguments it takes is shipped, its settings build a
    ResidualConfig and a FitConfig, its taus include inf (the base itself)."""
    import math

    from agents.evaluation.heldout import FAMILY_METRIC
    from agents.pretrained.registry import pretrained_names
    from agents.residual.deviations import ResidualConfig
    from agents.residual.network import FitConfig

    cfg = OmegaConf.load(path)
    assert str(cfg.family) in FAMILY_METRIC and str(cfg.env_from) in pretrained_names(), path.name
    assert isinstance(ResidualConfig(**OmegaConf.to_container(cfg.residual, resolve=True)), ResidualConfig)
    fit = OmegaConf.to_container(cfg.fit, resolve=True)
    assert isinstance(FitConfig(**{**fit, "hidden": tuple(fit["hidden"])}), FitConfig)
    assert math.inf in [float(t) for t in cfg.taus]


#: the mark of a scheduler YAML key that repeats the Python default on purpose: the key's
#: line ends with this comment and a reason (conf/README.md)
DELIBERATE = "# deliberate:"


def _factory(name: str):
    """The callable ``baselines.make(name)`` calls (a family's ``BASELINES`` entry or a
    classic scheduler's registered factory)."""
    for module, family in baselines.FAMILIES.items():
        if name in family:
            return importlib.import_module(module).BASELINES[name]
    return baselines._REGISTRY[name]


def _python_default(name: str, key: str):
    """The value ``baselines.make(name)`` gives parameter ``key`` when it is not passed: the
    factory's default, or (for a factory that forwards ``**params``) the built object's."""
    import inspect

    par = inspect.signature(_factory(name)).parameters.get(key)
    if par is not None and par.default is not inspect.Parameter.empty:
        return par.default
    obj = baselines.make(name)
    assert hasattr(obj, key), f"conf/scheduler/{name}.yaml: {key!r} is not a parameter of {name!r}"
    return getattr(obj, key)


def _same(a, b) -> bool:
    norm = lambda v: tuple(v) if isinstance(v, (list, tuple)) else v  # noqa: E731
    return norm(a) == norm(b)


def _repeated_defaults(path: Path, name: str) -> list[str]:
    """Keys of a scheduler YAML file equal to baseline ``name``'s Python default and not
    marked deliberate."""
    lines = {ln.split(":", 1)[0].strip(): ln for ln in path.read_text().splitlines()
             if ln and not ln.startswith((" ", "#"))}
    cfg = OmegaConf.to_container(OmegaConf.load(path))
    return [key for key, value in cfg.items() if key not in ("_target_", "name")
            and _same(value, _python_default(name, key)) and DELIBERATE not in lines[key]]


@pytest.mark.parametrize("path", [p for p in GROUP_FILES if p.parts[-2] == "scheduler"], ids=_id)
def test_scheduler_yaml_carries_only_overrides(path):
    """Each parameter a conf/scheduler file sets differs from the Python default (the
    default is written once, in the constructor), unless its line is marked deliberate."""
    name = path.stem
    if name not in baselines.names():
        pytest.skip(f"{name!r} is not a registered baseline (agent, pretrained)")
    repeated = _repeated_defaults(path, name)
    assert repeated == [], (f"{path.name} repeats the Python defaults of {repeated}: drop them or "
                            f"mark the line '{DELIBERATE} <reason>'")


def test_default_check_catches_a_repeated_default(tmp_path):
    """AlloX's alpha written again is caught, a marked line and a real override are not;
    Gavel's default round length is the scenario's, so a pinned 360 is an override."""
    f = tmp_path / "allox.yaml"
    f.write_text('_target_: baselines.make\nname: "allox"\nalpha: 0.1\nraise_alpha: false\n'
                 "window: null  # deliberate: pinned for a test\n")
    assert _repeated_defaults(f, "allox") == ["alpha"]
    assert _python_default("gavel-las", "round_length") is True
    assert _same(_python_default("tiresias", "thresholds"), [3600.0])


def test_a_parameter_is_set_from_the_command_line():
    """conf/README.md's ``+scheduler.<key>=<value>`` reaches the baseline."""
    cfg = _compose("compare", ["scheduler=allox", "+scheduler.alpha=0.5"])
    assert instantiate(cfg.scheduler).alpha == 0.5
