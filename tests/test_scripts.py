"""scripts/compare.py runs a tiny Hydra sweep (resumable) and scripts/report.py aggregates it."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

ROOT = Path(__file__).resolve().parents[1]


def _run(args: list[str], cwd: Path) -> subprocess.CompletedProcess:
    p = subprocess.run([sys.executable, *args], check=False, cwd=cwd, capture_output=True, text=True,
                       timeout=300)
    assert p.returncode == 0, p.stdout[-3000:] + p.stderr[-3000:]
    return p


@pytest.fixture(scope="module")
def sweep(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("out")
    cmd = [str(ROOT / "scripts" / "compare.py"), "-m", "experiment=compare_smoke",
           f"out_root={out}", "sweep_name=tiny"]
    _run(cmd, cwd=out)
    sweep = out / "sweeps" / "tiny"
    stamps = {p: p.stat().st_mtime_ns for p in sweep.rglob("metrics.json")}
    # a second call finds every result and skips it (a sweep resumes)
    p = _run(cmd, cwd=out)
    assert p.stdout.count("skip") + p.stderr.count("skip") == 4
    assert {p: p.stat().st_mtime_ns for p in sweep.rglob("metrics.json")} == stamps
    return sweep


def test_sweep_writes_each_run(sweep):
    files = sorted(sweep.rglob("metrics.json"))
    assert len(files) == 4
    for f in files:
        rec = json.loads(f.read_text())
        assert rec["scheduler"] in ("fifo", "sjf") and rec["seed"] in (0, 1)
        assert rec["metrics"]["unfinished_jobs"] == 0
        jobs = pd.read_parquet(f.parent / "jobs.parquet")
        assert len(jobs) == 24 == rec["metrics"]["jobs"]
        assert (f.parent / "segments.parquet").is_file()


def test_report(sweep):
    out = sweep / "rep"
    p = _run([str(ROOT / "scripts" / "report.py"), str(sweep), "--out", str(out)], cwd=sweep)
    assert "| fifo | 2 |" in p.stdout and "| sjf | 2 |" in p.stdout
    for f in ("report.md", "summary.csv", "runs.csv", "jct_cdf.png", "utilisation.png", "gantt.png"):
        assert (out / f).is_file() and (out / f).stat().st_size > 0, f
    summary = pd.read_csv(out / "summary.csv")
    assert sorted(summary["scheduler"]) == ["fifo", "sjf"]
    assert {"scenario", "runs", "avg_jct_mean", "avg_jct_std", "makespan_mean"} <= set(summary.columns)
    assert (summary["runs"] == 2).all()
    runs = pd.read_csv(out / "runs.csv")
    assert len(runs) == 4 and set(runs["seed"]) == {0, 1}
    md = (out / "report.md").read_text()
    assert md.count("\n| ") >= 3  # header + 2 schedulers


def test_report_labels_units(sweep):
    """report.md names the unit of every time column (a readable one, not raw seconds)."""
    out = sweep / "rep_units"
    _run([str(ROOT / "scripts" / "report.py"), str(sweep), "--out", str(out), "--no-plots"], cwd=sweep)
    md = (out / "report.md").read_text()
    head = next(line for line in md.splitlines() if line.startswith("| scheduler"))
    assert "avg JCT (" in head and "makespan (" in head and "energy (kWh)" in head
    assert "avg_jct" not in head


def test_plots_label_time_units_and_legends_are_readable(sweep):
    """The plots' time axes name a readable unit; legends use 9-pt text."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("report_script", ROOT / "scripts" / "report.py")
    rep = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(rep)
    runs = rep.load_runs(sweep)
    order = ["fifo", "sjf"]
    fig = rep.jct_cdf_figure(runs, order)
    ax = fig.axes[0]
    assert ax.get_xlabel().split("(")[1].split(",")[0] in ("s", "min", "h", "days")
    assert all(t.get_fontsize() >= 9 for t in ax.get_legend().get_texts())
    fig = rep.utilisation_figure(runs, order)
    assert fig.axes[-1].get_xlabel() in ("time (s)", "time (min)", "time (h)", "time (days)")
    assert all(t.get_fontsize() >= 9 for t in fig.axes[0].get_legend().get_texts())


@pytest.mark.slow
def test_hadar_study_tables():
    """scripts/hadar_study.py: one mix per cluster and a small benchmark, tables well formed."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("hadar_study", ROOT / "scripts" / "hadar_study.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    rows = [mod.run_one((sc, {"mix": "M-3"}, a)) for sc in ("hadar-testbed", "hadar-aws")
            for a in mod.MIX_ALGOS]
    text = mod.mix_tables(pd.DataFrame(rows))
    assert "| M-3 |" in text and "HadarE vs Hadar TTD" in text
    assert "| 40 |" in mod.bench([40], reps=1)


def test_a_bad_seed_is_refused_by_name(tmp_path):
    """``seed=a`` used to fail inside the scenario's constructor ("invalid literal for int()"
    under ``full_key: scenario``); it is now refused first, naming the seed."""
    p = subprocess.run([sys.executable, str(ROOT / "scripts" / "compare.py"), "seed=a",
                        f"out_root={tmp_path}"], check=False, cwd=tmp_path, capture_output=True, text=True,
                       timeout=300)
    assert p.returncode != 0
    assert "seed must be an integer >= 0 (e.g. seed=0), got 'a'" in p.stderr
    assert not list(tmp_path.rglob("metrics.json"))


def test_trajectory_digest_sees_a_changed_trajectory(tmp_path, capsys):
    """scripts/trajectory_digest.py: the same run gives the same digest, a saved digest that
    differs is reported (exit 1), and a different step count changes the digest."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("trajectory_digest", ROOT / "scripts" / "trajectory_digest.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    assert mod.main(["--steps", "40", "--only", "default"]) == 0
    first = capsys.readouterr().out.strip()
    saved = tmp_path / "before.txt"
    saved.write_text(first + "\n")
    assert mod.main(["--steps", "40", "--only", "default", "--against", str(saved)]) == 0
    assert capsys.readouterr().out.strip() == first
    assert mod.main(["--steps", "41", "--only", "default", "--against", str(saved)]) == 1
    assert "DIFFERS: default" in capsys.readouterr().out
    with pytest.raises(SystemExit):
        mod.main(["--only", "no-such-config"])
