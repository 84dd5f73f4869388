#!/usr/bin/env python3
"""Download public cluster traces for hetgym's loaders (``hetgym.traces``).

Nothing in hetgym needs the network: small excerpts ship with the package. This script
fetches the full traces into a folder you name, one sub-folder per source::

    python scripts/fetch_traces.py google2011 --dest ~/traces --parts 6
    python scripts/fetch_traces.py philly pai helios --dest ~/traces --extract
    python scripts/fetch_traces.py google2011 --dest /tmp/t --url file:///mirror/clusterdata-2011-2/

Sources (licences: all CC BY 4.0; cite the papers in ``hetgym.traces.sources()``):

* ``philly``: msr-fiddle/philly-traces ``trace-data.tar.gz`` (~1 GB, a Git-LFS object;
  SHA-256 checked) -> ``cluster_job_log`` for :func:`hetgym.traces.load_philly`.
* ``google2011``: the public GCS bucket ``clusterdata-2011-2`` (``schema.csv`` and the
  first ``--parts`` shards of ``job_events`` and ``task_events``; 500 shards each).
* ``pai``: Alibaba PAI GPU 2020 ``pai_job_table.tar.gz`` and ``pai_task_table.tar.gz``
  from Alibaba's OSS (SHA-256 from the trace README).
* ``helios``: SenseTime Helios ``data.zip`` (36 MB) from S-Lab-System-Group/HeliosData.

``--url BASE`` replaces a source's base URL (any scheme urllib reads, ``file://``
included); the source's relative file names are appended to it. Files are written to
``<name>.part`` and renamed when complete; existing files are kept unless ``--force``.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import shutil
import sys
import tarfile
import urllib.request
import zipfile
from pathlib import Path
from typing import Sequence

SOURCES: dict[str, dict] = {
    "philly": {
        "base": "https://media.githubusercontent.com/media/msr-fiddle/philly-traces/master/",
        "files": ["trace-data.tar.gz"],
        "sha256": {"trace-data.tar.gz": "2037ccf63a725a02be718b0e1aeee6142c90b7f62d0d849295120e9f6ba13d2c"},
        "about": "Microsoft Philly (ATC'19), 117,325 jobs, 2017-08..12; CC BY 4.0",
    },
    "google2011": {
        "base": "https://storage.googleapis.com/clusterdata-2011-2/",
        "files": ["schema.csv"],
        "sharded": ["job_events", "task_events"],
        "shards": 500,
        "sha256": {},
        "about": "Google cluster data 2011 (clusterdata-2011-2), 29 days; CC BY 4.0",
    },
    "pai": {
        "base": "https://aliopentrace.oss-cn-beijing.aliyuncs.com/v2020GPUTraces/",
        "files": ["pai_job_table.tar.gz", "pai_task_table.tar.gz"],
        "sha256": {
            "pai_job_table.tar.gz": "5aad7f7caac501136d14ed6a48e40546f825d7b0617a3a4f337e2348fe0a6cb0",
            "pai_task_table.tar.gz": "cd1d6dc3215d2a8607ccf6b6dd952b5db776df86926c73259fea7c1499ac40e5",
        },
        "about": "Alibaba PAI GPU 2020 (NSDI'22), ~6,500 GPUs, Jul-Aug 2020; CC BY 4.0",
    },
    "helios": {
        "base": "https://github.com/S-Lab-System-Group/HeliosData/raw/main/",
        "files": ["data.zip"],
        "sha256": {},
        "about": "SenseTime Helios (SC'21), 4 clusters, 3.36 M jobs, Apr-Sep 2020; CC BY 4.0",
    },
}
CHUNK = 1 << 20


class FetchError(RuntimeError):
    """A download that failed or did not verify."""


def files_of(source: str, parts: int) -> list[str]:
    """Relative file names of a source (sharded sources: the first ``parts`` shards)."""
    spec = SOURCES[source]
    files = list(spec["files"])
    for table in spec.get("sharded", []):
        n = min(parts, spec["shards"])
        files += [f"{table}/part-{i:05d}-of-{spec['shards']:05d}.csv.gz" for i in range(n)]
    return files


def sha256_of(path: Path) -> str:
    """Hex SHA-256 of a file."""
    h = hashlib.sha256()
    with path.open("rb") as fh:
        for block in iter(lambda: fh.read(CHUNK), b""):
            h.update(block)
    return h.hexdigest()


def download(url: str, dest: Path, *, expected_sha256: str | None = None, force: bool = False,
             timeout: float = 60.0) -> Path:
    """Download ``url`` to ``dest`` atomically (``dest.part`` then rename) and verify it.

    Raises:
        FetchError: network/file error, a Git-LFS pointer instead of data, or a checksum mismatch.
    """
    if dest.exists() and not force:
        print(f"exists, kept: {dest}")
        return dest
    dest.parent.mkdir(parents=True, exist_ok=True)
    tmp = dest.with_name(dest.name + ".part")
    try:
        with urllib.request.urlopen(url, timeout=timeout) as resp, tmp.open("wb") as out:
            shutil.copyfileobj(resp, out, CHUNK)
    except (OSError, ValueError) as exc:
        tmp.unlink(missing_ok=True)
        raise FetchError(f"{url}: download failed ({exc})") from None
    with tmp.open("rb") as fh:
        head = fh.read(64)
    if head.startswith(b"version https://git-lfs"):
        tmp.unlink()
        raise FetchError(f"{url}: got a Git-LFS pointer, not the data (use the media URL or git lfs pull)")
    if expected_sha256:
        got = sha256_of(tmp)
        if got != expected_sha256:
            tmp.unlink()
            raise FetchError(f"{url}: SHA-256 {got} does not match the expected {expected_sha256}")
    os.replace(tmp, dest)
    print(f"fetched: {dest} ({dest.stat().st_size:,} bytes)")
    return dest


def _inside(root: Path, name: str) -> bool:
    target = (root / name).resolve()
    return target == root.resolve() or root.resolve() in target.parents


def extract(archive: Path, into: Path) -> None:
    """Extract a ``.tar.gz``/``.tgz``/``.zip`` into ``into``, refusing paths that escape it."""
    name = archive.name
    if name.endswith((".tar.gz", ".tgz", ".tar")):
        with tarfile.open(archive) as tf:
            for m in tf.getmembers():
                if not _inside(into, m.name) or m.issym() or m.islnk():
                    raise FetchError(f"{archive}: unsafe member {m.name!r}")
            tf.extractall(into, filter="data")
    elif name.endswith(".zip"):
        with zipfile.ZipFile(archive) as zf:
            for n in zf.namelist():
                if not _inside(into, n):
                    raise FetchError(f"{archive}: unsafe member {n!r}")
            zf.extractall(into)
    print(f"extracted: {archive} -> {into}")


def fetch(source: str, dest: Path, *, url: str | None = None, parts: int = 1, force: bool = False,
          do_extract: bool = False, verify: bool = True) -> list[Path]:
    """Fetch every file of ``source`` into ``dest / source``; returns the local paths."""
    if source not in SOURCES:
        raise FetchError(f"unknown source {source!r}; known: {', '.join(SOURCES)}")
    spec = SOURCES[source]
    base = url if url is not None else spec["base"]
    if not base.endswith("/"):
        base += "/"
    root = dest / source
    got = []
    for rel in files_of(source, parts):
        sha = spec["sha256"].get(rel) if verify else None
        path = download(base + rel, root / rel, expected_sha256=sha, force=force)
        if do_extract and rel.endswith((".tar.gz", ".tgz", ".zip")):
            extract(path, root)
        got.append(path)
    return got


def build_parser() -> argparse.ArgumentParser:
    """The command-line interface."""
    p = argparse.ArgumentParser(description="Download public cluster traces for hetgym.",
                                epilog="Sources: " + "; ".join(f"{k}: {v['about']}" for k, v in SOURCES.items()))
    p.add_argument("sources", nargs="*", help=f"one or more of {', '.join(SOURCES)}")
    p.add_argument("--dest", type=Path, help="folder to download into (one sub-folder per source)")
    p.add_argument("--url", help="base URL replacing the source's (a mirror; file:// works); one source only")
    p.add_argument("--parts", type=int, default=1, help="shards of each sharded table (google2011; default 1)")
    p.add_argument("--force", action="store_true", help="download again even if the file exists")
    p.add_argument("--extract", action="store_true", help="extract .tar.gz / .zip archives after download")
    p.add_argument("--no-verify", action="store_true", help="skip SHA-256 checks")
    p.add_argument("--list", action="store_true", help="print sources and their URLs, download nothing")
    return p


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point; returns the exit status."""
    args = build_parser().parse_args(argv)
    if args.list:
        for name, spec in SOURCES.items():
            print(f"{name}: {spec['about']}")
            for rel in files_of(name, args.parts):
                print(f"  {spec['base']}{rel}")
        return 0
    if not args.sources or args.dest is None:
        build_parser().print_usage(sys.stderr)
        print("error: give at least one source and --dest (or --list)", file=sys.stderr)
        return 2
    if args.url is not None and len(args.sources) != 1:
        print("error: --url applies to a single source", file=sys.stderr)
        return 2
    if args.parts < 1:
        print("error: --parts must be >= 1", file=sys.stderr)
        return 2
    try:
        for s in args.sources:
            fetch(s, args.dest, url=args.url, parts=args.parts, force=args.force,
                  do_extract=args.extract, verify=not args.no_verify)
    except FetchError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
