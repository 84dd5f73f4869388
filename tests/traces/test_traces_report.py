from hetgym.traces import LoadReport


def test_report_counts_and_str():
    r = LoadReport("trace.json", rows_read=10)
    r.drop("status=Killed", 3)
    r.drop("no_attempts")
    r.drop("no_attempts", 0)
    r.rows_kept = 6
    r.check()
    assert r.rows_dropped == 4
    assert r.dropped == {"status=Killed": 3, "no_attempts": 1}
    s = str(r)
    assert s.startswith("trace.json: read 10 rows, kept 6, dropped 4")
    assert "status=Killed: 3" in s and "no_attempts: 1" in s


def test_report_check_fails_when_counts_do_not_add_up():
    r = LoadReport("x", rows_read=5, rows_kept=3)
    r.drop("a", 1)
    try:
        r.check()
    except AssertionError as exc:
        assert "rows_read=5" in str(exc)
    else:  # pragma: no cover
        raise AssertionError("check() should fail")


def test_report_roundtrip_and_merge():
    a = LoadReport("a", rows_read=4, rows_kept=3, dropped={"x": 1}, notes=["n"])
    b = LoadReport.from_dict(a.to_dict())
    assert b == a
    c = LoadReport("both")
    c.merge(a)
    c.merge(LoadReport("b", rows_read=2, rows_kept=0, dropped={"x": 1, "y": 1}))
    assert (c.rows_read, c.rows_kept, c.dropped) == (6, 3, {"x": 2, "y": 1})
    c.check()
