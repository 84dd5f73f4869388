"""scripts/bench_scale.py: one tiny run of the table, written atomically, and its fit."""

from __future__ import annotations

import importlib.util
import math
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def bench():
    spec = importlib.util.spec_from_file_location("bench_scale", ROOT / "scripts" / "bench_scale.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)  # type: ignore[union-attr]
    return mod


def test_growth_exponent(bench) -> None:
    assert bench.growth_exponent([10, 100, 1000], [1.0, 10.0, 100.0]) == pytest.approx(1.0)
    assert bench.growth_exponent([10, 100], [1.0, 100.0]) == pytest.approx(2.0)
    assert math.isnan(bench.growth_exponent([10], [1.0]))


def test_scenario_has_the_offered_load(bench) -> None:
    from hetgym.traces.windows import offered_load

    sc = bench.scale_scenario(300, 1.2)
    load = offered_load(sc.workload.frame, sc.cluster, resources="devices",
                        cpu_slot_cores=bench.CPU_SLOT_CORES)
    assert load == pytest.approx(1.2)


def test_tiny_table(bench, tmp_path, capsys) -> None:
    out = tmp_path / "scale.md"
    bench.main(["--sizes", "40,80", "--fifo-sizes", "120", "--schedulers", "fifo,sjf",
                "--loads", "1.2", "--timeout", "60", "--lab", "fifo", "--lab-jobs", "64",
                "--out", str(out)])
    text = out.read_text()
    assert text == capsys.readouterr().out
    assert "| fifo | 1.2 |" in text and "| sjf | 1.2 |" in text
    assert "120 jobs" in text and "| fifo | " in text.split("fitgpp-lab")[-1]
    assert "error" not in text and ">60 s" not in text
    assert not list(tmp_path.glob(".bench_scale.*"))  # no temporary file left behind


def test_cpu_clock(bench, capsys) -> None:
    bench.main(["--sizes", "40", "--fifo-sizes", "", "--schedulers", "fifo", "--loads", "1.2",
                "--timeout", "60", "--lab", "none", "--clock", "cpu"])
    text = capsys.readouterr().out
    assert "CPU time of the process" in text and "| fifo | 1.2 | " in text and "error" not in text


def test_lab_only_names_what_does_not_run(bench, capsys) -> None:
    """``--schedulers ""`` prints only the fitgpp-lab table; a baseline that does not run
    there is a row with its error, not dropped."""
    bench.main(["--schedulers", "", "--lab", "fifo,no-such-baseline", "--lab-jobs", "64",
                "--timeout", "60", "--clock", "cpu"])
    text = capsys.readouterr().out
    assert "Scaling" not in text
    rows = {r.split("|")[1].strip(): r for r in text.splitlines() if r.startswith("| ")}
    assert rows["fifo"].split("|")[4].strip() != ""  # decision points of the run
    assert "does not run: KeyError" in rows["no-such-baseline"]
    assert "load average at the end" in text
