"""The default comparison: bounded CPU runs and a ranking that holds across seeds."""

from __future__ import annotations

import pytest

import hetgym
from hetgym import scenarios
from hetgym.compare import DEFAULT_SCHEDULERS, run_grid, seed_stability
from hetgym.schedulers import make
from hetgym.throughput import CPU_MAX_HOURS


def _check(runs, min_same: int) -> dict:
    st = seed_stability(runs)
    assert st["seeds"] == 5
    bad = {k: round(v, 2) for k, v in st["cv"].items() if not v < 0.5}
    assert not bad, f"std/mean of avg JCT / mean best >= 0.5 for {bad}"
    assert st["same_order"] >= min_same, st["orders"]
    return st


def test_no_job_runs_for_days_on_a_cpu() -> None:
    """The old default started multi-day GPU jobs on CPU slots (one ran 5,341 days there)."""
    sc = scenarios.get("hetero-small", n_jobs=256, seed=1)
    for name in ("fifo", "sjf"):
        jobs = hetgym.simulate(sc, make(name), seed=1).jobs
        on_cpu = jobs[jobs["device"] == "cpu"]
        assert len(on_cpu) > 0, name                    # the CPU/GPU choice is real ...
        assert on_cpu["exec_time"].max() <= CPU_MAX_HOURS * 3600.0 + 1e-6, name   # ... and bounded


def test_seed_stability_small() -> None:
    """Fast variant: 256 jobs, three policies of distinct kinds (FIFO, preemptive SRPT, DRF on
    the fastest type only)."""
    runs = run_grid("hetero-small", ["fifo", "srpt", "drff"], range(5), {"n_jobs": 256},
                    progress=False)
    st = _check(runs, min_same=4)
    assert st["order"] == ["srpt", "fifo", "drff"]


@pytest.mark.slow
def test_seed_stability_default_comparison() -> None:
    """The main job's comparison itself (DEFAULT_SCHEDULERS, 512 jobs, seeds 0-4; ~20 s)."""
    runs = run_grid("hetero-small", DEFAULT_SCHEDULERS, range(5), progress=False)
    _check(runs, min_same=4)


@pytest.mark.slow
def test_readme_shows_the_main_jobs_output(capsys) -> None:
    """The README's expected output is what ``python -m hetgym.compare`` prints (all but the
    wall-clock ``decide p99`` column)."""
    from pathlib import Path

    from hetgym.compare import main

    text = (Path(__file__).resolve().parents[2] / "README.md").read_text()
    block = text.split("## The main job", 1)[1].split("```text\n", 1)[1].split("\n```", 1)[0]
    assert main(["--no-progress"]) == 0
    out = capsys.readouterr().out.strip()

    def strip_decide(lines: list[str]) -> list[str]:
        head = lines[1].split(" | ")
        col = next(i for i, c in enumerate(head) if c.startswith("decide p99"))
        return [" | ".join(c for i, c in enumerate(line.split(" | ")) if i != col)
                if line.startswith("|") else line for line in lines]

    assert strip_decide(out.splitlines()) == strip_decide(block.splitlines())
