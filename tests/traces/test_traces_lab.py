import numpy as np
import pandas as pd
import pytest

from hetgym.specs import SimOptions
from hetgym.traces import (
    HADAR_MIXES, andreas_cluster, andreas_jobs, fitgpp_cluster, fitgpp_jobs, hadar_mix,
    hadar_testbed_cluster,
)
from hetgym.traces.lab import lab_data
from hetgym.traces.windows import offered_load
from hetgym.workload import Workload


def test_fitgpp_cluster_matches_paper():
    c = fitgpp_cluster()
    (n,) = c.nodes
    assert (n.count, n.cpus, n.mem_gb, n.gpus) == (84, 32, 256.0, 8)
    assert c.capacity("v100") == 672


def test_fitgpp_jobs_distributions(canonical):
    df = fitgpp_jobs(3000, seed=3)
    canonical(df, ["v100"])
    assert (df["job_class"] == "TE").sum() == 900  # 30 %
    dur = df["work"] / (df["tput_v100"] * df["workers"])
    te, be = dur[df["job_class"] == "TE"], dur[df["job_class"] == "BE"]
    assert te.min() >= 180 and te.max() <= 1800 and be.min() >= 180 and be.max() <= 86400
    assert te.median() < be.median()
    assert df["grace_period"].between(0, 1200).all()
    assert df["workers"].between(1, 8).all()
    assert (df["cpus"] * df["workers"]).between(1, 32 + 1e-9).all()
    assert offered_load(df, fitgpp_cluster(), resources="dominant") == pytest.approx(2.0)
    Workload.from_frame(df).check_cluster(fitgpp_cluster(), SimOptions())
    again = fitgpp_jobs(3000, seed=3)
    pd.testing.assert_frame_equal(df, again)
    other = fitgpp_jobs(3000, seed=4)
    assert not np.allclose(other["work"].to_numpy(), df["work"].to_numpy())


def test_fitgpp_overrides():
    df = fitgpp_jobs(500, te_fraction=0.5, load=1.0, seed=0,
                     params={"duration_s": {"TE": {"high": 600}}, "grace_period_s": {"high": 60}})
    assert (df["job_class"] == "TE").sum() == 250
    te = df[df["job_class"] == "TE"]
    assert (te["work"] / (te["tput_v100"] * te["workers"])).max() <= 600 + 1e-6
    assert df["grace_period"].max() <= 60
    assert offered_load(df, fitgpp_cluster(), resources="dominant") == pytest.approx(1.0)


def test_hadar_mixes(canonical):
    h = lab_data("hadar_testbed.json")
    devs = ["titanrtx", "t4", "t400", "rtx3090", "a2000"]
    sizes = {m: len(hadar_mix(m)) for m in HADAR_MIXES}
    assert sizes == {"M-1": 1, "M-3": 3, "M-4": 4, "M-5": 5, "M-8": 8, "M-10": 10, "M-12": 12}
    m3 = hadar_mix("M-3")
    canonical(m3, devs)
    assert m3["trace_id"].str.split(":").str[2].tolist() == ["LT", "MM", "MM"]
    m5 = hadar_mix("M-5", devices=devs + ["v100"])
    assert (m5["arrival"] == 0).all() and m5["forkable"].all() and (m5["workers"] == 1).all()
    want = [h["models"][k]["duration_s"] for k in ("IC", "LM", "LT", "RS", "MM")]
    np.testing.assert_allclose(m5["work"] / m5["tput_v100"], want)
    # faster GPUs finish sooner: RTX 3090 > Titan RTX > T4 for every job
    assert ((m5["tput_rtx3090"] > m5["tput_titanrtx"]) & (m5["tput_titanrtx"] > m5["tput_t4"])).all()
    Workload.from_frame(m5).check_cluster(hadar_testbed_cluster(), SimOptions())
    with pytest.raises(ValueError, match="unknown Hadar mix 'M-2'"):
        hadar_mix("M-2")


def test_hadar_testbed_cluster():
    c = hadar_testbed_cluster()
    assert [n.gpu_type for n in c.nodes] == ["TitanRTX", "T4", "T400", "RTX3090", "A2000"]
    assert all(n.gpus == 1 and n.count == 1 for n in c.nodes)


def test_andreas_table_v(canonical):
    df = andreas_jobs()
    canonical(df, ["v100", "t4"])
    assert df["trace_id"].tolist() == ["J6", "J9", "J10", "J7", "J8", "J1", "J2", "J3"]
    assert df["arrival"].tolist() == [0, 1200, 2400, 3600, 4800, 6000, 7200, 8400]
    assert df["deadline"].tolist() == [3600, 3800, 10000, 21200, 12400, 11600, 19800, 20000]
    assert df["weight"].tolist() == [4, 2, 3, 3, 3, 5, 2, 1]
    assert df["work"].tolist() == [80, 160, 80, 160, 160, 60, 60, 60]
    # every job alone on one V100 meets its due date (as in the paper's validation)
    assert (df["arrival"] + df["work"] / df["tput_v100"] <= df["deadline"]).all()
    assert (df["tput_t4"] < df["tput_v100"]).all()
    c = andreas_cluster()
    assert [(n.name, n.gpu_type, n.gpus) for n in c.nodes] == [
        ("armida-05", "V100", 1), ("armida-06", "V100", 2), ("armida-07", "T4", 1)]
    assert all(n.cpus == 128 and n.mem_gb == 512 for n in c.nodes)
    Workload.from_frame(df).check_cluster(c, SimOptions())
    slow = andreas_jobs(epoch_seconds={"ConvNet": 50.0})
    assert slow.loc[slow["job_type"] == "ConvNet", "tput_v100"].eq(0.02).all()
