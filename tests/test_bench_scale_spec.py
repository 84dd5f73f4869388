"""``scripts/bench_scale.py``'s scheduler specs (``name:key=value``)."""

import importlib.util
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _bench_scale():
    spec = importlib.util.spec_from_file_location("bench_scale_spec", ROOT / "scripts" / "bench_scale.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_spec_with_parameters_builds_that_baseline():
    make = _bench_scale().make_scheduler
    assert make("allox:window=8").window == 8
    plain = make("allox")
    assert plain.window is None
    off = make("allox:raise_alpha=false:alpha=0.25")
    assert off.raise_alpha is False and off.alpha == 0.25


def test_malformed_spec_names_itself():
    make = _bench_scale().make_scheduler
    with pytest.raises(ValueError, match="allox:window"):
        make("allox:window")
    with pytest.raises(TypeError):
        make("allox:windw=8")
