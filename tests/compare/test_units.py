"""Readable, labelled units in the comparison table, the sweep report and its plots."""

from __future__ import annotations

import pandas as pd
import pytest

from hetgym.compare import aggregate, format_table
from hetgym.metrics import format_duration, table_time_unit, time_unit


@pytest.mark.parametrize("seconds,unit", [(5.67, "s"), (119.0, "s"), (600.0, "min"), (5400.0, "min"),
                                          (7200.0, "h"), (60 * 3600.0, "h"), (4 * 86400.0, "days"),
                                          (float("nan"), "h")])
def test_time_unit(seconds: float, unit: str) -> None:
    assert time_unit(seconds)[0] == unit


def test_format_duration() -> None:
    assert format_duration(5400) == "90 min"
    assert format_duration(3 * 86400 + 1) == "3 days"
    assert format_duration(1.5) == "1.5 s"


def _agg(avg_jct: float, makespan: float) -> pd.DataFrame:
    runs = pd.DataFrame({"scheduler": ["a", "a", "b", "b"], "seed": [0, 1, 0, 1],
                         "avg_jct": [avg_jct, avg_jct * 1.2, avg_jct * 2, avg_jct * 2],
                         "makespan": [makespan] * 4, "energy_kwh": [1.0] * 4,
                         "decision_time_p99": [0.5] * 4, "stalled": [False] * 4})
    return aggregate(runs, ["avg_jct", "makespan", "energy_kwh", "decision_time_p99"])


def test_table_has_one_time_unit_from_its_average_jcts_and_labels_every_unit() -> None:
    t = format_table(_agg(avg_jct=5.0 * 3600, makespan=40 * 86400.0),
                     ["avg_jct", "makespan", "energy_kwh", "decision_time_p99"])
    head = t.splitlines()[0]
    assert "avg JCT (h)" in head and "makespan (h)" in head  # one unit, not days for makespan
    assert "energy (kWh)" in head and "decide p99 (ms)" in head
    assert "| a | 2 | 0 | 5.5 ± 0.5 | 960 |" in t   # 5 h and 6 h; 40 days = 960 h
    toy = format_table(_agg(avg_jct=5.67, makespan=8.0), ["avg_jct", "makespan"])
    assert "avg JCT (s)" in toy and "| a | 2 | 0 | 6.24 ± 0.567 | 8 |" in toy
    # the toy scenario under slow round-based policies: a 6-minute makespan stays in seconds
    slow = format_table(_agg(avg_jct=5.67, makespan=360.0), ["avg_jct", "makespan"])
    assert "makespan (s)" in slow and "| 360 |" in slow


def test_table_time_unit_takes_the_median_of_finite_values() -> None:
    assert table_time_unit([5.0, 6.0, float("nan"), 4 * 86400.0])[0] == "s"
    assert table_time_unit([3600.0, 5 * 86400.0, 5 * 86400.0])[0] == "days"
    assert table_time_unit([float("nan")]) == ("h", 3600.0)


def test_raw_table_keeps_metric_names() -> None:
    t = format_table(_agg(avg_jct=7200.0, makespan=7200.0), ["avg_jct"], units=False)
    assert t.splitlines()[0] == "| scheduler | runs | stalled | avg_jct |"


def test_summary_docs_say_seconds() -> None:
    import hetgym.metrics as m

    assert "seconds" in m.Result.summary.__doc__ and "in **seconds**" in m.__doc__
