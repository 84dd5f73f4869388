from pathlib import Path

import numpy as np
import pytest

from hetgym.traces import load_helios, load_pai


def test_pai_fixture(fixtures: Path, canonical):
    df, rep = load_pai(fixtures / "pai_job_table.csv", fixtures / "pai_task_table.csv")
    canonical(df, ["k80", "p100", "v100", "t4"])
    assert rep.rows_read == 10 and rep.rows_kept == 4
    assert rep.dropped == {"status=Failed": 1, "status=Running": 1, "missing_time": 1, "no_tasks": 1,
                           "no_gpu": 1, "unknown_gpu_type": 1}
    by = df.set_index("trace_id")
    # 4 instances x ceil(200/100) GPUs on T4; 16 cores and 64 GB over 8 workers; 800 s on a T4
    j = by.loc["a9449d475665e3bf0512520b"]
    assert (j["workers"], j["cpus"], j["mem_gb"]) == (8, 2.0, 8.0)
    assert j["work"] / (j["tput_t4"] * 8) == pytest.approx(800.0)
    # 2 x 50 % V100 worker instances + a CPU parameter server: cores (2 x 6 + 4) / 2
    j = by.loc["4b3f04b66a525d2df903eb16"]
    assert (j["workers"], j["cpus"]) == (2, 8.0)
    assert j["mem_gb"] == pytest.approx((2 * 29.296875 + 10.0) / 2)
    assert j["work"] / (j["tput_v100"] * 2) == pytest.approx(4551410.0 - 4550900.0)
    # mixed GPU tasks: the type of the task with most GPUs (3 x P100) wins
    j = by.loc["c0ffee0000000000000000cc"]
    assert j["workers"] == 4 and j["work"] / (j["tput_p100"] * 4) == pytest.approx(90.0)
    # MISC -> K80 by default
    j = by.loc["4f057009a5d481acec67b088"]
    assert j["work"] / j["tput_k80"] == pytest.approx(38.0)
    assert by.loc["4f057009a5d481acec67b088", "arrival"] == 0.0


def test_pai_options_and_errors(fixtures: Path, tmp_path: Path):
    df, rep = load_pai(fixtures / "pai_job_table.csv", fixtures / "pai_task_table.csv",
                       misc_as=None, statuses=None)
    assert rep.dropped["gpu_type=MISC"] == 1 and "af724763f4f5d0beef445849" in set(df["trace_id"])
    bad = tmp_path / "jobs.csv"
    bad.write_text("a,b,c\n")
    with pytest.raises(ValueError, match=r"jobs.csv: 3 columns; expected 6"):
        load_pai(bad, fixtures / "pai_task_table.csv")
    tasks = tmp_path / "tasks.csv"
    tasks.write_text((fixtures / "pai_task_table.csv").read_text().replace(",2.0,Terminated", ",two,Terminated", 1))
    with pytest.raises(ValueError, match=r"tasks.csv: line 1: column 'inst_num' has 'two'"):
        load_pai(fixtures / "pai_job_table.csv", tasks)


def test_helios_fixture(fixtures: Path, canonical):
    df, rep = load_helios(fixtures / "helios_cluster_log.csv")
    canonical(df, ["k80", "p100", "v100"])
    assert rep.rows_read == 8 and rep.rows_kept == 3
    assert rep.dropped == {"state=CANCELLED": 1, "state=FAILED": 1, "state=TIMEOUT": 1, "no_gpu": 1,
                           "zero_duration": 1}
    assert df["trace_id"].tolist() == ["1425511", "1425515", "1425517"]
    assert df["arrival"].tolist() == [0.0, 129.0, 269.0]
    assert df["workers"].tolist() == [1, 16, 2]
    assert df["cpus"].tolist() == [1.0, 4.0, 4.0]  # cpu_num / gpu_num; blank -> default 4
    np.testing.assert_allclose(df["work"] / (df["tput_v100"] * df["workers"]), [36848, 7200, 3600])
    vc, _ = load_helios(fixtures / "helios_cluster_log.csv", user_field="vc", states=None)
    assert set(vc["user"]) == {"vcJkd", "vchbv", "vcpDC"}


def test_helios_errors(fixtures: Path, tmp_path: Path):
    text = (fixtures / "helios_cluster_log.csv").read_text()
    p = tmp_path / "cluster_log.csv"
    p.write_text(text.replace("state,", "status,"))
    with pytest.raises(ValueError, match=r"cluster_log.csv: missing column\(s\) \['state'\]"):
        load_helios(p)
    p.write_text(text.replace("2020-06-09 18:43:10", "June 9th"))
    with pytest.raises(ValueError, match=r"line 6: column 'submit_time' has 'June 9th'"):
        load_helios(p)
    df, rep = load_helios(p, on_bad="drop")
    assert rep.dropped["unparsable_submit_time"] == 1 and len(df) == 2
