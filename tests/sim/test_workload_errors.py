"""Bad job tables and scenarios fail early, with a message naming the column / job."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import hetgym
from hetgym import ClusterSpec, NodeSpec, Scenario, SimOptions, Workload, WorkloadError

CLUSTER = ClusterSpec(nodes=[NodeSpec(name="v", count=2, gpu_type="V100", gpus=2, cpus=8, mem_gb=32),
                             NodeSpec(name="c", count=1, gpu_type=None, gpus=0, cpus=16, mem_gb=64)])


def table(n: int = 4, **cols) -> pd.DataFrame:
    df = pd.DataFrame({
        "job_id": np.arange(10, 10 + n),
        "arrival": np.arange(n, dtype=float) * 5.0,
        "user": ["a", "b"] * (n // 2) + ["a"] * (n % 2),
        "job_class": "BE",
        "workers": 1,
        "work": 100.0,
        "tput_v100": 2.0,
        "tput_cpu": 0.5,
        "cpus": 2.0,
        "mem_gb": 4.0,
    })
    for k, v in cols.items():
        df[k] = v
    return df


def test_good_table_passes() -> None:
    wl = Workload.from_frame(table())
    sc = Scenario(cluster=CLUSTER, workload=wl)
    assert len(wl) == 4 and sc.device_types == ["cpu", "v100"]


@pytest.mark.parametrize("col", ["job_id", "arrival", "user", "job_class", "workers", "work",
                                 "cpus", "mem_gb"])
def test_missing_column(col: str) -> None:
    with pytest.raises(WorkloadError, match=f"missing column.*'{col}'"):
        Workload.from_frame(table().drop(columns=[col]))


def test_no_tput_column() -> None:
    with pytest.raises(WorkloadError, match="tput_"):
        Workload.from_frame(table().drop(columns=["tput_v100", "tput_cpu"]))


def test_nan_arrival_names_column_and_job() -> None:
    df = table()
    df.loc[2, "arrival"] = np.nan
    with pytest.raises(WorkloadError, match=r"'arrival'.*job_id=12"):
        Workload.from_frame(df)


def test_negative_arrival() -> None:
    df = table()
    df.loc[1, "arrival"] = -1.0
    with pytest.raises(WorkloadError, match=r"'arrival'.*job_id=11"):
        Workload.from_frame(df)


@pytest.mark.parametrize("bad", [-5.0, 0.0, np.nan, np.inf])
def test_bad_work_names_column_and_job(bad: float) -> None:
    df = table()
    df.loc[3, "work"] = bad
    with pytest.raises(WorkloadError, match=r"'work'.*job_id=13"):
        Workload.from_frame(df)


def test_unknown_device_column() -> None:
    with pytest.raises(WorkloadError, match=r"tput_foo.*'foo'"):
        Workload.from_frame(table(tput_foo=1.0))


@pytest.mark.parametrize("col, bad", [
    ("workers", 0), ("workers", 1.5), ("cpus", -1.0), ("mem_gb", np.nan), ("tput_v100", -2.0),
    ("job_class", "XX"), ("comm", 1.5), ("grace_period", -1.0),
])
def test_bad_values_name_column_and_job(col: str, bad) -> None:
    df = table()
    df[col] = df[col].astype(object) if col in df.columns else None
    df.loc[1, col] = bad
    if col in ("comm", "grace_period"):
        df[col] = df[col].fillna(0.0)
        df.loc[1, col] = bad
    with pytest.raises(WorkloadError, match=rf"'{col}'.*job_id=11"):
        Workload.from_frame(df)


def test_duplicate_job_id() -> None:
    df = table()
    df.loc[3, "job_id"] = 10
    with pytest.raises(WorkloadError, match="'job_id'.*unique"):
        Workload.from_frame(df)


def test_non_numeric_column() -> None:
    df = table()
    df["work"] = df["work"].astype(object)
    df.loc[0, "work"] = "lots"
    with pytest.raises(WorkloadError, match="'work'.*numeric"):
        Workload.from_frame(df)


def test_job_with_no_positive_tput() -> None:
    df = table()
    df.loc[2, ["tput_v100", "tput_cpu"]] = 0.0
    with pytest.raises(WorkloadError, match="job_id=12"):
        Workload.from_frame(df)


def test_empty_and_not_a_frame() -> None:
    with pytest.raises(WorkloadError, match="empty"):
        Workload.from_frame(table().iloc[:0])
    with pytest.raises(WorkloadError, match="DataFrame"):
        Workload.from_frame({"job_id": [1]})  # type: ignore[arg-type]


# ------------------------------------------------------------ scenario checks
def test_job_that_fits_no_node_names_job() -> None:
    # 5 workers: only 4 V100 GPUs in the cluster, and the job cannot run on cpu
    df = table(tput_cpu=0.0)
    df.loc[2, "workers"] = 5
    wl = Workload.from_frame(df)
    with pytest.raises(WorkloadError, match=r"job_id=12.*fits no node"):
        Scenario(cluster=CLUSTER, workload=wl)


def test_job_too_big_in_memory_names_job() -> None:
    df = table()
    df.loc[0, "mem_gb"] = 100.0  # no node has 100 GB
    with pytest.raises(WorkloadError, match=r"job_id=10.*fits no node"):
        Scenario(cluster=CLUSTER, workload=Workload.from_frame(df))


def test_job_fits_cpu_only_with_slot_cores() -> None:
    # 16-core CPU node; 3 workers of 8 cores do not fit, with cpu_slot_cores = 4 they do
    df = table(tput_v100=0.0, cpus=8.0, workers=3)
    with pytest.raises(WorkloadError, match="fits no node"):
        Scenario(cluster=CLUSTER, workload=Workload.from_frame(df))
    Scenario(cluster=CLUSTER, workload=Workload.from_frame(df), options=SimOptions(cpu_slot_cores=4))


def test_cluster_device_without_tput_column() -> None:
    wl = Workload.from_frame(table().drop(columns=["tput_cpu"]))
    with pytest.raises(WorkloadError, match="tput_cpu"):
        Scenario(cluster=CLUSTER, workload=wl)


def test_bad_options_and_nodes() -> None:
    with pytest.raises(ValueError, match="placement"):
        SimOptions(placement="random")
    with pytest.raises(ValueError, match="scaling_exponent"):
        SimOptions(scaling_exponent=1.5)
    with pytest.raises(ValueError, match="topology"):
        NodeSpec(name="x", gpu_type="V100", gpus=2, topology=[[0, 1, 2]])
    with pytest.raises(KeyError, match="unknown device type"):
        NodeSpec(name="x", gpu_type="V9000", gpus=1)


def test_fit_check_uses_the_same_rounding_as_placement() -> None:
    """Regression (was a bug in ``Workload.check_cluster``): 2.4 GB / 0.8 GB is
    2.9999999999999996 in floating point, so ``np.floor`` without the tolerance that
    the placement kernel uses (``slots_on_node_nb``: ``floor(x + 1e-9)``) counted 2
    workers where 3 fit, and a job that the simulator places was rejected."""
    node = NodeSpec(name="v", gpu_type="V100", gpus=4, cpus=8, mem_gb=2.4)
    df = table(n=1, workers=3, mem_gb=0.8, tput_cpu=0.0).drop(columns=["tput_cpu"])
    sc = Scenario(cluster=ClusterSpec(nodes=[node]), workload=Workload.from_frame(df))
    res = hetgym.simulate(sc, __import__("baselines").make("fifo"))
    assert res.jobs["finished"].all()
