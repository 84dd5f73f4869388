import json
import os
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from hetgym.throughput import uniform_speedup
from hetgym.traces import cached_load, clear_cache, load_philly
from hetgym.traces.cache import cache_key, cache_path


def _philly_json(path: Path, n: int, seed: int = 0) -> Path:
    """A synthetic cluster_job_log in Philly's exact format (one attempt per job)."""
    rng = np.random.default_rng(seed)
    t0 = pd.Timestamp("2017-10-03 00:00:00")
    sub = t0 + pd.to_timedelta(np.sort(rng.integers(0, 30 * 86400, n)), unit="s")
    start = sub + pd.to_timedelta(rng.integers(0, 600, n), unit="s")
    end = start + pd.to_timedelta(rng.integers(60, 86400, n), unit="s")
    fmt = "%Y-%m-%d %H:%M:%S"
    sub_s, start_s, end_s = sub.strftime(fmt), start.strftime(fmt), end.strftime(fmt)
    gpus = rng.choice([1, 2, 4, 8], size=n)
    jobs = [{
        "status": ("Pass", "Killed", "Failed")[i % 3], "vc": f"vc{i % 7}", "jobid": f"application_{i}",
        "submitted_time": sub_s[i], "user": f"u{i % 50}",
        "attempts": [{"start_time": start_s[i], "end_time": end_s[i],
                      "detail": [{"ip": f"m{i % 100}", "gpus": [f"gpu{k}" for k in range(gpus[i])]}]}],
    } for i in range(n)]
    path.write_text(json.dumps(jobs))
    return path


@pytest.fixture(scope="module")
def big_philly(tmp_path_factory) -> Path:
    return _philly_json(tmp_path_factory.mktemp("philly") / "cluster_job_log", 20000)


def test_second_load_is_10x_faster_and_equal(big_philly: Path, tmp_path: Path, fixtures: Path):
    cache = tmp_path / "cache"
    # warm pyarrow's read path on another file so the timing compares steady states
    cached_load(load_philly, fixtures / "philly_cluster_job_log.json", cache_dir=cache)
    cached_load(load_philly, fixtures / "philly_cluster_job_log.json", cache_dir=cache)
    t = time.perf_counter()
    a, ra = cached_load(load_philly, big_philly, cache_dir=cache, statuses=None)
    first = time.perf_counter() - t
    second = []
    for _ in range(3):
        t = time.perf_counter()
        b, rb = cached_load(load_philly, big_philly, cache_dir=cache, statuses=None)
        second.append(time.perf_counter() - t)
    assert len(a) == 20000 and ra.rows_kept == 20000
    pd.testing.assert_frame_equal(a, b)
    assert (rb.rows_read, rb.rows_kept, rb.dropped) == (ra.rows_read, ra.rows_kept, ra.dropped)
    assert any("read from cache" in n for n in rb.notes)
    print(f"first load {first:.3f} s, cached {min(second):.4f} s")
    assert first >= 10 * min(second), (first, second)


def test_key_tracks_params_and_file(fixtures: Path, tmp_path: Path):
    src = tmp_path / "log.json"
    src.write_text((fixtures / "philly_cluster_job_log.json").read_text())
    k1 = cache_key(load_philly, [src], {"statuses": ("Pass",)})
    assert k1 == cache_key(load_philly, [src], {"statuses": ("Pass",)})
    assert k1 != cache_key(load_philly, [src], {"statuses": ("Pass", "Killed")})
    assert k1 != cache_key(load_philly, [src], {"statuses": ("Pass",), "seed": 1})
    assert cache_key(load_philly, [src], {"cpu_speedup": uniform_speedup(2, 5)}) != \
        cache_key(load_philly, [src], {"cpu_speedup": uniform_speedup(2, 6)})
    assert cache_key(load_philly, [src], {"cpu_speedup": uniform_speedup(2, 5)}) == \
        cache_key(load_philly, [src], {"cpu_speedup": uniform_speedup(2, 5)})
    st = src.stat()
    os.utime(src, ns=(st.st_atime_ns, st.st_mtime_ns + 10**9))
    assert cache_key(load_philly, [src], {"statuses": ("Pass",)}) != k1
    with pytest.raises(TypeError, match="cannot fingerprint"):
        cache_key(load_philly, [src], {"x": object()})


def test_cache_files_written_atomically_next_to_source(fixtures: Path, tmp_path: Path):
    src = tmp_path / "log.json"
    src.write_text((fixtures / "philly_cluster_job_log.json").read_text())
    df, rep = cached_load(load_philly, src, seed=3)
    target = cache_path(load_philly, [src], {"seed": 3})
    assert target.parent == tmp_path / ".hetgym-cache" and target.exists()
    assert [p.name for p in target.parent.iterdir()] == [target.name]  # no temp file left
    df2, rep2 = cached_load(load_philly, src, seed=3)
    pd.testing.assert_frame_equal(df, df2)
    src.write_text(src.read_text().replace('"Killed"', '"Pass"'))  # new content -> new entry
    df3, rep3 = cached_load(load_philly, src, seed=3)
    assert rep3.rows_kept == rep.rows_kept + 1 and not any("cache" in n for n in rep3.notes)
    assert clear_cache(tmp_path) == 2 and not list(target.parent.glob("*.parquet"))
