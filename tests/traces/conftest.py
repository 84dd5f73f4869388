"""Shared helpers for the trace-loader tests."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from hetgym.workload import REQUIRED_COLUMNS, Workload

FIXTURES = Path(__file__).parent / "fixtures"


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "slow: a test that takes more than a few seconds")


def assert_canonical(df: pd.DataFrame, devices: list[str]) -> None:
    """The frame is a canonical job table: columns, ids 0..n-1, arrivals from 0, sorted."""
    for c in REQUIRED_COLUMNS:
        assert c in df.columns, c
    for d in devices:
        assert f"tput_{d}" in df.columns, d
    assert not [c for c in df.columns if c.startswith("tput_") and c[5:] not in devices]
    assert df["job_id"].tolist() == list(range(len(df)))
    assert df["arrival"].iloc[0] == 0.0
    assert (np.diff(df["arrival"].to_numpy()) >= 0).all()
    assert set(df["job_class"]) <= {"BE", "TE"}
    Workload.from_frame(df)


@pytest.fixture
def fixtures() -> Path:
    return FIXTURES


@pytest.fixture
def canonical():
    """``canonical(df, devices)`` asserts the frame is a canonical job table."""
    return assert_canonical
