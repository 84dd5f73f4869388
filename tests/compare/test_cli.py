"""``python -m hetgym.compare`` checks its arguments before it simulates anything."""

from __future__ import annotations

import pytest

from hetgym import compare


@pytest.fixture
def no_runs(monkeypatch):
    """Fail the test if a simulation starts."""

    def boom(*a, **k):  # pragma: no cover - only reached on a regression
        raise AssertionError("run_grid was called before the arguments were checked")

    monkeypatch.setattr(compare, "run_grid", boom)


def _error(argv, capsys) -> str:
    with pytest.raises(SystemExit) as exc:
        compare.main(argv)
    assert exc.value.code == 2
    return capsys.readouterr().err


def test_unknown_scheduler_fails_before_running(no_runs, capsys) -> None:
    err = _error(["--schedulers", "fifo,nope"], capsys)
    assert "unknown scheduler(s) 'nope'" in err
    assert "valid: fifo, sjf, srpt" in err and "allox" in err
    assert "--schedulers: no scheduler named; valid: fifo" in _error(["--schedulers", " , "], capsys)


@pytest.mark.parametrize("seeds,expect", [("a", "'a' is not an integer"), ("0,1.5", "'1.5' is not an integer"),
                                          ("0,,1", "'' is not an integer"), ("0,-1", "must be >= 0")])
def test_bad_seeds_give_a_clear_message(no_runs, capsys, seeds: str, expect: str) -> None:
    err = _error(["--seeds", seeds], capsys)
    assert expect in err and "Traceback" not in err
    assert "--seeds" in err


def test_unknown_scenario_and_bad_n_jobs(no_runs, capsys) -> None:
    assert "unknown scenario 'nope'; valid: hetero-small" in _error(["--scenario", "nope"], capsys)
    assert "--n-jobs must be >= 1" in _error(["--n-jobs", "0"], capsys)
    assert "fixed job set" in _error(["--scenario", "toy-3jobs", "--n-jobs", "5"], capsys)


def test_default_and_all_scheduler_sets() -> None:
    from hetgym.schedulers import names

    a = compare.parse_args([])
    assert a.scheduler_names == [n for n in compare.DEFAULT_SCHEDULERS if n in names()]
    assert a.seed_list == [0, 1, 2, 3, 4]
    assert compare.parse_args(["--schedulers", "all"]).scheduler_names == names()
    assert compare.parse_args(["--schedulers", " sjf, fifo "]).scheduler_names == ["sjf", "fifo"]


def test_toy_table_in_seconds(capsys) -> None:
    """A run through main: the toy's JCTs are seconds and say so (no ``_h`` column of 0.0016)."""
    assert compare.main(["--scenario", "toy-3jobs", "--schedulers", "fifo,sjf", "--seeds", "0,1",
                         "--no-progress"]) == 0
    out = capsys.readouterr().out
    assert "| avg JCT (s) |" in out and "_h" not in out
    assert "| fifo | 2 | 0 | 1.42 | 5.67 |" in out
    assert "on 2 of 2 seeds" in out


def test_bad_out_path_fails_before_running(no_runs, capsys, tmp_path) -> None:
    """A directory, an empty path, or a file where the CSV's folder would go: refused up front
    (these used to fail in the atomic write, after every run)."""
    assert "expected a CSV file path, got a directory" in _error(["--out", str(tmp_path)], capsys)
    assert "expected a CSV file path, got nothing" in _error(["--out", ""], capsys)
    (tmp_path / "f").write_text("x")
    err = _error(["--out", str(tmp_path / "f" / "sub" / "runs.csv")], capsys)
    assert f"{str(tmp_path / 'f')!r} is a file, not a folder" in err
    a = compare.parse_args(["--out", str(tmp_path / "new" / "runs.csv")])  # folders it may make
    assert a.out.endswith("runs.csv")


def test_help_is_plain_text(no_runs, capsys) -> None:
    with pytest.raises(SystemExit) as exc:
        compare.main(["--help"])
    assert exc.value.code == 0
    out = capsys.readouterr().out
    assert "jct_over_best" in out and "seed_stability" in out
    assert "``" not in out and ":func:" not in out
