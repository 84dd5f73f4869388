import gzip
import os
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from hetgym.traces import load_google2011, load_google2019
from hetgym.traces.google import JOB_EVENTS_2011, packaged_google2011_dir

#: a full copy of the Google 2011 trace (job_events/ and task_events/ shards), if the
#: environment names one: HETGYM_GOOGLE2011_DIR=<clusterdata-2011-2 folder>
_FULL = os.environ.get("HETGYM_GOOGLE2011_DIR")
FULL_2011 = Path(_FULL) if _FULL else None


def test_tiny_2011_shard(fixtures: Path, canonical):
    df, rep = load_google2011(fixtures / "google2011_tiny", devices=["cpu", "v100"], workers="tasks")
    canonical(df, ["cpu", "v100"])
    assert rep.rows_read == 7 and rep.rows_kept == 2
    assert rep.dropped == {"no_submit_event": 1, "submitted_before_trace": 1, "no_end_event": 1,
                           "status=KILL": 1, "never_scheduled": 1}
    assert df["trace_id"].tolist() == ["2", "6"]
    assert df["arrival"].tolist() == [0.0, 300.0]  # SUBMIT at 600 s and 900 s
    assert df["user"].tolist() == ["userB", "userA"]
    assert df["workers"].tolist() == [2, 1]  # distinct task indices
    # largest task request x node (32 cores, 256 GB)
    np.testing.assert_allclose(df["cpus"], [0.125 * 32, 0.25 * 32])
    np.testing.assert_allclose(df["mem_gb"], [0.0625 * 256, 0.5 * 256])
    # run time first SCHEDULE -> FINISH, on a CPU slot: 300 s and 1505 - 905 = 600 s
    np.testing.assert_allclose(df["work"] / (df["tput_cpu"] * df["workers"]), [300.0, 600.0])


def test_tiny_2011_options(fixtures: Path):
    df, rep = load_google2011(fixtures / "google2011_tiny", statuses=None, duration_device="v100",
                              task_events=False, cpus=3.0, mem_gb=5.0)
    assert rep.rows_kept == 3 and "status=KILL" not in rep.dropped
    assert (df["cpus"] == 3.0).all() and (df["mem_gb"] == 5.0).all() and (df["workers"] == 1).all()
    killed = df.loc[df["trace_id"] == "3"].iloc[0]
    assert killed["work"] / killed["tput_v100"] == pytest.approx(40.0)
    drawn, rep2 = load_google2011(fixtures / "google2011_tiny", statuses=None, task_events=False,
                                  duration=lambda rng, n: np.full(n, 123.0), devices=["v100"],
                                  duration_device="v100")
    # sampled durations: jobs without an end or a SCHEDULE are kept
    assert rep2.rows_kept == 5
    np.testing.assert_allclose(drawn["work"] / drawn["tput_v100"], 123.0)


def test_packaged_shard_matches_independent_count(canonical):
    df, rep = load_google2011(devices=["cpu", "k80", "v100"])
    canonical(df, ["cpu", "k80", "v100"])
    ev = pd.read_csv(packaged_google2011_dir() / "job_events" / "part-00000-of-00500.csv.gz",
                     header=None, names=list(JOB_EVENTS_2011))
    assert rep.rows_read == ev["job_id"].nunique() == 4900
    g = ev.sort_values("time", kind="stable").groupby("job_id")
    sub = ev[ev.event_type == 0].groupby("job_id")["time"].min()
    sched = ev[ev.event_type == 1].groupby("job_id")["time"].min()
    last = ev[ev.event_type.isin([3, 4, 5, 6])].sort_values("time", kind="stable").groupby("job_id").tail(1)
    last = last.set_index("job_id")
    ok = [j for j in g.groups if j in sub and sub[j] > 0 and j in last.index and last.loc[j, "event_type"] == 4
          and j in sched]
    assert rep.rows_kept == len(ok) == 589
    assert set(df["trace_id"].astype(int)) == set(ok)
    j = ok[0]
    row = df.loc[df["trace_id"] == str(j)].iloc[0]
    assert row["arrival"] == pytest.approx((sub[j] - min(sub[k] for k in ok)) / 1e6)
    assert row["work"] / row["tput_cpu"] == pytest.approx((last.loc[j, "time"] - sched[j]) / 1e6)
    assert rep.dropped["submitted_before_trace"] == 3986


@pytest.mark.skipif(FULL_2011 is None or not (FULL_2011 / "task_events").is_dir(),
                    reason="HETGYM_GOOGLE2011_DIR does not name a Google 2011 copy with task_events/")
def test_shared_shard_with_task_events():
    df, rep = load_google2011(FULL_2011, max_parts=1, node=(20.0, 64.0), workers="tasks", max_workers=1000)
    te = pd.read_csv(FULL_2011 / "task_events" / "part-00000-of-00500.csv.gz", header=None,
                     usecols=[2, 3, 9, 10], names=["job_id", "task_index", "cpu", "mem"])
    j = int(df["trace_id"].iloc[0])
    sel = te[te.job_id == j]
    row = df.iloc[0]
    assert row["workers"] == sel["task_index"].nunique()
    assert row["cpus"] == pytest.approx(sel["cpu"].max() * 20.0)
    assert row["mem_gb"] == pytest.approx(sel["mem"].max() * 64.0)
    assert rep.rows_kept + rep.rows_dropped == rep.rows_read == 4900


def test_2011_bad_shards(tmp_path: Path):
    d = tmp_path / "job_events"
    d.mkdir()
    with gzip.open(d / "part-00000-of-00001.csv.gz", "wt") as fh:
        fh.write("600000000,,1,0,u,1\n")
    with pytest.raises(ValueError, match=r"part-00000-of-00001.csv.gz: line 1 has 6 fields; expected 8"):
        load_google2011(tmp_path)
    with gzip.open(d / "part-00000-of-00001.csv.gz", "wt") as fh:
        fh.write("600000000,,1,0,u,1,n,l\nsoon,,2,0,u,1,n,l\n")
    with pytest.raises(ValueError, match=r"line 2: column 'time' has 'soon'"):
        load_google2011(tmp_path)


@pytest.mark.parametrize("ext", ["json", "csv"])
def test_2019_exports(fixtures: Path, ext: str, canonical):
    df, rep = load_google2019(fixtures / f"google2019_collection_events.{ext}",
                              fixtures / f"google2019_instance_events.{ext}", devices=["cpu", "v100"])
    canonical(df, ["cpu", "v100"])
    assert rep.rows_read == 5 and rep.rows_kept == 2
    assert rep.dropped == {"submitted_before_trace": 1, "status=KILL": 1, "alloc_set": 1}
    assert df["trace_id"].tolist() == ["10", "14"]
    assert df["arrival"].tolist() == [0.0, 150.0]
    assert df["user"].tolist() == ["u_alpha", "u_gamma"]
    np.testing.assert_allclose(df["cpus"], [0.05 * 32, 0.5 * 32])
    np.testing.assert_allclose(df["work"] / (df["tput_cpu"] * df["workers"]), [300.0, 1000.0])


def test_2019_missing_field(tmp_path: Path):
    p = tmp_path / "ce.csv"
    p.write_text("time,collection_id,user\n100,1,u\n")
    with pytest.raises(ValueError, match=r"ce.csv: missing field\(s\) \['type'\]"):
        load_google2019(p)
