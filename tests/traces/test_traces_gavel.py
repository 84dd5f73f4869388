from pathlib import Path

import numpy as np
import pytest

from hetgym.throughput import ThroughputModel
from hetgym.traces import load_gavel_trace, load_gavel_traces
from hetgym.traces.gavel import packaged_gavel_dir

LINES = {"0e4a51": 1181, "103959": 986, "11cb48": 2000, "23dbec": 9, "2869ce": 533, "51b7ef": 18,
         "6214e9": 2000, "6c71a0": 2000, "795a4c": 3, "7f04ca": 972, "925e2b": 4, "b436b2": 2000,
         "e13805": 607, "ed69ec": 951, "ee9e8c": 2000}


def test_all_shipped_traces_give_15264_jobs(canonical):
    df, rep = load_gavel_traces()
    assert len(df) == 15264 == rep.rows_read == rep.rows_kept
    assert rep.dropped == {}
    assert df["user"].value_counts().to_dict() == LINES
    canonical(df, ["k80", "p100", "v100"])
    assert sorted(df["workers"].unique().tolist()) == [1, 2, 4, 7, 8, 12, 16, 20, 24, 32, 64]
    assert (df["workers"] == 1).sum() == 10480


def test_first_line_mapping():
    path = packaged_gavel_dir() / "0e4a51.trace"
    df, _ = load_gavel_trace(path, devices=["v100", "cpu"])
    row = df.loc[df["trace_id"] == "0e4a51:1"].iloc[0]
    # line 1: Transformer (batch size 128) ... -step 1 95121 0.000000 1
    assert row["job_type"] == "Transformer (batch size 128)"
    assert row["work"] == 95121 and row["workers"] == 1 and row["arrival"] == 0.0
    m = ThroughputModel.gavel()
    assert row["tput_v100"] == pytest.approx(m.gpu_throughput("Transformer (batch size 128)", "v100", 1))
    assert row["tput_cpu"] > 0 and row["user"] == "0e4a51"


def test_nine_and_ten_column_layouts(fixtures: Path):
    df, rep = load_gavel_trace(fixtures / "gavel_9col.trace", devices=["v100"])
    assert rep.rows_kept == 3
    lm = df.loc[df["job_type"] == "LM (batch size 20)"].iloc[0]
    assert (lm["arrival"], lm["work"], lm["workers"], lm["weight"]) == (0.0, 5000, 4, 2.0)
    # SLO 1.5 -> deadline = arrival + 1.5 x duration on a V100
    dur = 5000 / (4 * ThroughputModel.gavel().gpu_throughput("LM (batch size 20)", "v100", 4))
    assert lm["deadline"] == pytest.approx(1.5 * dur)
    assert np.isinf(df.loc[df["job_type"] != "LM (batch size 20)", "deadline"]).all()
    assert df["arrival"].tolist() == [0.0, 20.5, 50.0]
    df10, rep10 = load_gavel_trace(fixtures / "gavel_10col.trace", devices=["v100"])
    assert len(df10) == 1 and rep10.dropped == {"unknown_job_type": 1}
    assert df10["work"].iloc[0] == 1000 and df10["workers"].iloc[0] == 2


def test_bad_files_raise_with_file_line_column(fixtures: Path):
    with pytest.raises(ValueError, match=r"gavel_bad_number.trace: line 2: column 'total_steps' has 'lots'"):
        load_gavel_trace(fixtures / "gavel_bad_number.trace")
    with pytest.raises(ValueError, match=r"gavel_bad_fields.trace: line 2: 6 tab-separated fields; expected 7, 9 or 10"):
        load_gavel_trace(fixtures / "gavel_bad_fields.trace")
    df, rep = load_gavel_trace(fixtures / "gavel_bad_number.trace", on_bad="drop")
    assert len(df) == 1 and rep.dropped == {"unparsable_total_steps": 1}


def test_gavel_model_is_read_once_and_each_model_owns_its_tables():
    """``ThroughputModel.gavel()`` parses the packaged file once per process; a model's
    tables are its own (a change to one model is not seen by the next)."""
    import json
    from importlib import resources

    from hetgym.throughput import MEASURED

    a, b = ThroughputModel.gavel(), ThroughputModel.gavel()
    assert a.measured == b.measured and a.measured["v100"] is not b.measured["v100"]
    a.measured["v100"][("made up", 1)] = 1.0
    assert ("made up", 1) not in ThroughputModel.gavel().measured["v100"]
    raw = json.loads(resources.files("hetgym").joinpath(
        "data/gavel/simulation_throughputs.json").read_text())
    for dev in MEASURED:  # the same numbers as the file's single-job ("null") entries
        assert len(b.measured[dev]) == len(raw[dev])
        assert b.measured[dev][("ResNet-18 (batch size 16)", 1)] == raw[dev][
            "('ResNet-18 (batch size 16)', 1)"]["null"]
