import hetgym.traces as traces


def test_exports_and_sources():
    for name in ("load_gavel_trace", "load_gavel_traces", "load_philly", "load_google2011", "load_google2019",
                 "load_pai", "load_helios", "LoadReport", "cached_load", "fitgpp_jobs", "hadar_mix",
                 "andreas_jobs", "fitgpp_cluster", "hadar_testbed_cluster", "andreas_cluster"):
        assert name in traces.__all__ and callable(getattr(traces, name))
    s = traces.sources()
    assert set(s) == {"gavel", "philly", "google2011", "google2019", "pai", "helios", "fitgpp", "hadar", "andreas"}
    assert "CC BY 4.0" in s["philly"] and "load_philly" in s["philly"]
    assert all(isinstance(v, str) and len(v) > 80 for v in s.values())
    s["philly"] = "x"
    assert traces.sources()["philly"] != "x"  # a copy
