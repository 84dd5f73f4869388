import hashlib
import importlib.util
import zipfile
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "fetch_traces.py"


@pytest.fixture(scope="module")
def fetch():
    spec = importlib.util.spec_from_file_location("fetch_traces", SCRIPT)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _mirror(root: Path, files: dict[str, bytes]) -> str:
    for rel, data in files.items():
        p = root / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_bytes(data)
    return root.as_uri() + "/"


def test_google2011_from_file_url(fetch, tmp_path: Path):
    files = {"schema.csv": b"file pattern,field number\n"}
    for t in ("job_events", "task_events"):
        for i in range(3):
            files[f"{t}/part-{i:05d}-of-00500.csv.gz"] = f"{t}{i}".encode()
    url = _mirror(tmp_path / "mirror", files)
    dest = tmp_path / "out"
    assert fetch.main(["google2011", "--dest", str(dest), "--url", url, "--parts", "2"]) == 0
    got = sorted(p.relative_to(dest / "google2011").as_posix() for p in (dest / "google2011").rglob("*") if p.is_file())
    assert got == ["job_events/part-00000-of-00500.csv.gz", "job_events/part-00001-of-00500.csv.gz",
                   "schema.csv", "task_events/part-00000-of-00500.csv.gz", "task_events/part-00001-of-00500.csv.gz"]
    assert (dest / "google2011/task_events/part-00001-of-00500.csv.gz").read_bytes() == b"task_events1"
    # existing files are kept unless --force
    (tmp_path / "mirror/schema.csv").write_bytes(b"changed")
    assert fetch.main(["google2011", "--dest", str(dest), "--url", url]) == 0
    assert (dest / "google2011/schema.csv").read_bytes() == b"file pattern,field number\n"
    assert fetch.main(["google2011", "--dest", str(dest), "--url", url, "--force"]) == 0
    assert (dest / "google2011/schema.csv").read_bytes() == b"changed"


def test_checksum_and_lfs_pointer_are_refused(fetch, tmp_path: Path, capsys):
    url = _mirror(tmp_path / "m", {"trace-data.tar.gz": b"not the trace"})
    dest = tmp_path / "out"
    assert fetch.main(["philly", "--dest", str(dest), "--url", url]) == 1
    assert "does not match" in capsys.readouterr().err
    assert not (dest / "philly/trace-data.tar.gz").exists()
    assert not list((dest / "philly").glob("*.part"))
    _mirror(tmp_path / "m", {"trace-data.tar.gz": b"version https://git-lfs.github.com/spec/v1\noid sha256:x\n"})
    assert fetch.main(["philly", "--dest", str(dest), "--url", url, "--no-verify"]) == 1
    assert "Git-LFS pointer" in capsys.readouterr().err


def test_helios_zip_extract_and_verify(fetch, tmp_path: Path):
    zpath = tmp_path / "src" / "data.zip"
    zpath.parent.mkdir()
    with zipfile.ZipFile(zpath, "w") as zf:
        zf.writestr("data/Venus/cluster_log.csv", "job_id,user\n1,u\n")
    fetch.SOURCES["helios"]["sha256"]["data.zip"] = hashlib.sha256(zpath.read_bytes()).hexdigest()
    try:
        dest = tmp_path / "out"
        assert fetch.main(["helios", "--dest", str(dest), "--url", zpath.parent.as_uri(), "--extract"]) == 0
        assert (dest / "helios/data/Venus/cluster_log.csv").read_text() == "job_id,user\n1,u\n"
    finally:
        del fetch.SOURCES["helios"]["sha256"]["data.zip"]


def test_cli_usage(fetch, capsys):
    assert fetch.main(["--list"]) == 0
    out = capsys.readouterr().out
    assert "https://storage.googleapis.com/clusterdata-2011-2/job_events/part-00000-of-00500.csv.gz" in out
    assert "https://aliopentrace.oss-cn-beijing.aliyuncs.com/v2020GPUTraces/pai_job_table.tar.gz" in out
    assert fetch.main(["philly"]) == 2
    assert fetch.main(["philly", "pai", "--dest", "x", "--url", "file:///tmp/"]) == 2
    assert fetch.main(["nosuch", "--dest", "x"]) == 1
