"""A stalled run (jobs left that no event can start) warns, and tables mark it."""

from __future__ import annotations

import warnings

import pandas as pd
import pytest

import baselines
import hetgym
from hetgym import scenarios
from hetgym.compare import aggregate, format_table, rank, run_grid
from hetgym.presets.allox import THREE_JOBS, example_scenario


class Idle:
    """Never starts anything."""

    def reset(self, view) -> None:
        pass

    def decide(self, view) -> list:
        return []


def test_stalled_run_warns_naming_scenario_jobs_and_time():
    sc = scenarios.get("toy-3jobs")
    with pytest.warns(hetgym.StalledRunWarning) as rec:
        res = hetgym.simulate(sc, Idle(), seed=0)
    assert len(rec) == 1
    msg = str(rec[0].message)
    assert "'toy-3jobs'" in msg and "3 of 3 jobs unfinished" in msg and "t=0 s" in msg
    assert res.stalled and res.summary()["stalled"] is True
    assert res.summary()["unfinished_jobs"] == 3


def test_complete_run_does_not_warn_and_says_so():
    with warnings.catch_warnings():
        warnings.simplefilter("error", hetgym.StalledRunWarning)
        res = hetgym.simulate(scenarios.get("toy-3jobs"), baselines.make("fifo"), seed=0)
    assert res.summary()["stalled"] is False


def test_es_stalls_when_users_outnumber_machines():
    """Static equal share: 3 users, 1 GPU + 1 CPU slot: user 2 owns nothing and waits forever."""
    sc = example_scenario(THREE_JOBS, gpus=1, cpus=1, users=[0, 1, 2]).replace(name="es-3users")
    with pytest.warns(hetgym.StalledRunWarning, match="'es-3users'.*1 of 3 jobs unfinished"):
        res = hetgym.simulate(sc, baselines.make("es"), seed=0)
    assert res.jobs.set_index("job_id")["finished"].to_dict() == {1: True, 2: True, 3: False}


def test_es_completes_toy_3jobs():
    """ES on toy-3jobs (devices cpu, v100; users 0, 1, 0): the CPU slot is user 0's, the
    V100 user 1's. User 0 runs J1 (4 s) then J3 (10 s) on the CPU, user 1 J2 on the V100
    (4 s): JCTs 4, 4, 14."""
    with warnings.catch_warnings():
        warnings.simplefilter("error", hetgym.StalledRunWarning)
        res = hetgym.simulate(scenarios.get("toy-3jobs"), baselines.make("es"), seed=0)
    jobs = res.jobs.set_index("job_id")
    assert jobs["device"].to_dict() == {1: "cpu", 2: "v100", 3: "cpu"}
    assert jobs["start"].to_dict() == {1: 0.0, 2: 0.0, 3: 4.0}
    assert jobs["jct"].to_dict() == {1: 4.0, 2: 4.0, 3: 14.0}
    assert not res.stalled


def _runs() -> pd.DataFrame:
    return pd.DataFrame({
        "scheduler": ["good", "good", "stuck", "stuck", "slow", "slow"],
        "seed": [0, 1, 0, 1, 0, 1],
        "avg_jct": [10.0, 12.0, 1.0, 2.0, 20.0, 20.0],
        "stalled": [False, False, True, False, False, False],
    })


def test_rank_puts_stalled_schedulers_last():
    agg = aggregate(_runs(), ["avg_jct"])
    assert agg["stalled"].to_dict() == {"good": 0, "stuck": 1, "slow": 0}
    assert rank(agg).index.tolist() == ["good", "slow", "stuck"]


def test_table_marks_stalled_rows():
    table = format_table(rank(aggregate(_runs(), ["avg_jct"])), ["avg_jct"])
    lines = table.splitlines()
    assert lines[0] == "| scheduler | runs | stalled | avg JCT (s) |"
    assert lines[2].startswith("| good | 2 | 0 | 11 ± 1 |")
    assert lines[4].startswith("| stuck * | 2 | 1 | 1.5 ± 0.5 |")
    assert "stalled" in lines[-1] and lines[-1].startswith("\\*")
    clean = format_table(aggregate(_runs().query("scheduler != 'stuck'"), ["avg_jct"]), ["avg_jct"])
    assert "*" not in clean


def test_compare_grid_records_and_marks_a_stalled_scheduler(monkeypatch):
    """Through hetgym.compare: an idle scheduler's runs stall, are counted and ranked last."""
    from hetgym import schedulers

    class Provider:
        def names(self):
            return ["idle"]

        def make(self, name, **params):
            return Idle()

    schedulers.providers()
    monkeypatch.setitem(schedulers._PROVIDERS, "test", Provider())  # noqa: SLF001
    with pytest.warns(hetgym.StalledRunWarning):
        runs = run_grid("toy-3jobs", ["idle", "fifo"], [0, 1], progress=False)
    assert runs.set_index(["scheduler", "seed"])["stalled"].to_dict() == {
        ("idle", 0): True, ("idle", 1): True, ("fifo", 0): False, ("fifo", 1): False}
    agg = rank(aggregate(runs))
    assert agg.index.tolist() == ["fifo", "idle"]
    assert "| idle * | 2 | 2 |" in format_table(agg)
