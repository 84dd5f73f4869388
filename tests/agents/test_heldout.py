"""Family splits (agents.evaluation.heldout) share no job between train, validation and test."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from agents.evaluation.windows import Score
from agents.evaluation.heldout import part_windows, split
from hetgym import scenarios


def _ids(sc):
    return set(sc.workload.frame["job_id"].tolist())


def test_google_split_is_disjoint():
    s = split("google-hybrid", window_jobs=32, n_val=4, n_test=32)
    _, a, b, n = s.bounds
    assert n == len(s.base.workload.frame) and 0 < a < b < n
    train = _ids(s.train)
    val = set().union(*map(_ids, s.val))
    test = set().union(*map(_ids, s.test))
    assert len(train) == a and not train & val and not train & test and not val & test
    assert len(s.test) == 32 and all(len(w.workload.frame) == 32 for w in s.test)
    assert s.test_overlap  # 177 test jobs cannot hold 32 disjoint 32-job windows
    # the windows are the base workload's rows (same jobs, arrivals shifted)
    fr = s.base.workload.frame
    w = s.test[0].workload.frame
    np.testing.assert_allclose(np.diff(w["arrival"]), np.diff(fr["arrival"].iloc[b:b + 32]))


def test_part_windows_back_to_back_when_they_fit():
    sc = scenarios.get("hetero-small", n_jobs=64)
    ws = part_windows(sc, 8, 64, 8, 7)
    ids = [_ids(w) for w in ws]
    assert all(len(i) == 8 for i in ids) and len(set().union(*ids)) == 56
    with pytest.raises(ValueError, match="fewer than a window"):
        part_windows(sc, 0, 4, 8, 1)


def test_score_metric_and_constraint():
    runs = pd.DataFrame({"scheduler": ["a", "a", "b", "b"], "avg_jct": [1.0, 3.0, 1.0, 1.0],
                         "te_p95_slowdown": [2.0, 4.0, 1.0, 1.0],
                         "be_p50_slowdown": [1.0, 1.0, 2.0, 2.0], "unfinished_jobs": [0, 0, 0, 1]})
    assert Score()(runs, "a") == 2.0
    assert Score()(runs, "b") == float("inf")  # a job left unfinished
    assert Score("te_p95_slowdown", "be_p50_slowdown", 1.5)(runs, "a") == 3.0
    assert Score("te_p95_slowdown", "be_p50_slowdown", 0.5)(runs, "a") == float("inf")
