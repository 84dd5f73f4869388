import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from hetgym.throughput import ThroughputModel
from hetgym.traces import load_philly, load_philly_derived

JOBS = "philly_cluster_job_log.json"


def test_fixture_values_and_drops(fixtures: Path, canonical):
    df, rep = load_philly(fixtures / JOBS, devices=["k80", "v100"])
    canonical(df, ["k80", "v100"])
    assert rep.rows_read == 10 and rep.rows_kept == 3
    assert rep.dropped == {"status=Killed": 1, "status=Failed": 1, "no_attempts": 1, "missing_time": 1,
                           "still_running": 1, "no_gpu": 1, "negative_duration": 1}
    rep.check()
    assert df["trace_id"].tolist() == ["application_1506638472019_14199", "application_1506638472019_14200",
                                       "application_1506638472019_14208"]
    # arrivals: 01:11:39, 01:15:00, 02:19:59 -> 0, 201, 4100 s
    assert df["arrival"].tolist() == [0.0, 201.0, 4100.0]
    # GPUs of the first attempt: 8; 2 nodes x 8 = 16; 4
    assert df["workers"].tolist() == [8, 16, 4]
    assert df["user"].tolist() == ["ce2f4c", "a1b2c3", "a1b2c3"]
    # duration on V100 = last end - first start (2 attempts: 01:12:09 -> +2 d 06:53:12)
    dur = df["work"] / (df["tput_v100"] * df["workers"])
    np.testing.assert_allclose(dur, [2 * 86400 + 5 * 3600 + 41 * 60 + 3, 3600.0, 5400.0])
    m = ThroughputModel.gavel()
    for jt, w, t in zip(df["job_type"], df["workers"], df["tput_k80"]):
        assert t == pytest.approx(m.gpu_throughput(jt, "k80", int(w)))


def test_status_filter_user_field_and_gpu_type(fixtures: Path):
    df, rep = load_philly(fixtures / JOBS, statuses=None, user_field="vc", gpu_type="p100")
    assert rep.rows_kept == 5 and "status=Killed" not in rep.dropped
    assert set(df["user"]) == {"ee9e8c", "6214e9", "11cb48"}
    killed = df.loc[df["trace_id"] == "application_1506638472019_14201"].iloc[0]
    assert killed["work"] / (killed["tput_p100"] * killed["workers"]) == pytest.approx(600.0)
    df2, rep2 = load_philly(fixtures / JOBS, statuses=("Pass", "Killed"))
    assert rep2.rows_kept == 4 and rep2.dropped["status=Failed"] == 1


def test_job_types_are_seeded(fixtures: Path):
    a, _ = load_philly(fixtures / JOBS, seed=1)
    b, _ = load_philly(fixtures / JOBS, seed=1)
    pd.testing.assert_frame_equal(a, b)
    types = {tuple(load_philly(fixtures / JOBS, seed=s)[0]["job_type"]) for s in range(6)}
    assert len(types) > 1
    one, _ = load_philly(fixtures / JOBS, job_types=["A3C"])
    assert set(one["job_type"]) == {"A3C"}


def _write(tmp_path: Path, jobs: list) -> Path:
    p = tmp_path / "cluster_job_log"
    p.write_text(json.dumps(jobs))
    return p


def test_errors_name_file_job_and_key(fixtures: Path, tmp_path: Path):
    jobs = json.loads((fixtures / JOBS).read_text())
    broken = [dict(j) for j in jobs]
    del broken[3]["submitted_time"]
    with pytest.raises(ValueError, match=r"cluster_job_log: job 3 .*missing key\(s\) \['submitted_time'\]"):
        load_philly(_write(tmp_path, broken))
    bad = [dict(j) for j in jobs]
    bad[1]["submitted_time"] = "07/10/2017 01:15"
    with pytest.raises(ValueError, match=r"job 1 \(jobid=application_1506638472019_14200\): column 'submitted_time'"):
        load_philly(_write(tmp_path, bad))
    df, rep = load_philly(_write(tmp_path, bad), on_bad="drop")
    assert rep.dropped["unparsable_time"] == 1 and rep.rows_kept == 2
    with pytest.raises(ValueError, match="expected a JSON list"):
        load_philly(_write(tmp_path, {"jobs": jobs}))


def test_derived_csv(canonical):
    df, rep = load_philly_derived(devices=["v100"])
    canonical(df, ["v100"])
    assert len(df) == 15264 and rep.dropped == {}
    src = pd.read_csv(Path(rep.source))
    # durations on V100 are the CSV's, job by job
    got = (df["work"] / (df["tput_v100"] * df["workers"])).to_numpy()
    want = src.set_index(src["vc"] + ":" + src["job_index_in_vc"].astype(str)).loc[df["trace_id"], "duration_s"]
    np.testing.assert_allclose(got, want.to_numpy(), rtol=1e-9)
    assert df["duration" if "duration" in df else "work"].gt(0).all()
    sub, rep2 = load_philly_derived(vcs=["795a4c", "925e2b"])
    assert len(sub) == 7 and rep2.dropped == {"vc_not_selected": 15257}
