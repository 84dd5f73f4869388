"""Google cluster data: 2011 (``clusterdata-2011-2``) and 2019 (v3) traces, CC BY 4.0.

Google's jobs are not DL jobs and use no GPUs; following AlloX (which took arrival
times from the Google trace for TensorFlow jobs), a job keeps the trace's **arrival**
(its first SUBMIT event), **user**, CPU/memory **requests** and optionally its **run
time**, and gets a job type drawn (seeded) from the throughput model, so that
throughputs on every device (CPU speedups from a distribution) come from the model.

* arrival = time of the job's first SUBMIT event (microseconds -> s). A SUBMIT at time
  0 means "before the trace started": the true arrival is unknown, so the job is
  dropped (``submitted_before_trace``); a time of 2^63-1 (2019: after the trace) too.
* duration (``duration="trace"``) = last terminal event (FAIL/FINISH/KILL/LOST) - first
  SCHEDULE, taken as the run time on ``duration_device`` (default ``cpu``: Google's
  machines are CPU servers); or ``duration`` is a sampler ``(rng, n) -> seconds``.
* cpus / mem_gb per worker = the job's largest task request (normalised by the largest
  machine in the trace) x the ``node`` capacity given; jobs without task events get
  ``cpus`` / ``mem_gb``. workers = 1, or the number of tasks (``workers="tasks"``).

2011 files: gzip CSV shards without header, columns per the official ``schema.csv``
(job_events 8 columns, task_events 13). Event codes 0 SUBMIT, 1 SCHEDULE, 2 EVICT,
3 FAIL, 4 FINISH, 5 KILL, 6 LOST, 7 UPDATE_PENDING, 8 UPDATE_RUNNING.
2019 files: ``collection_events`` / ``instance_events`` exported from BigQuery as JSON
lines (nested ``resource_request``) or CSV with the v3 field names
(``clusterdata_trace_format_v3.proto``; ``resource_request.cpus`` or
``resource_request_cpus``); ``type`` as a code (0 SUBMIT, 1 QUEUE, 2 ENABLE, 3 SCHEDULE,
4 EVICT, 5 FAIL, 6 FINISH, 7 KILL, 8 LOST, 9/10 UPDATE) or name; only
``collection_type`` JOB (0) is kept (ALLOC_SET dropped as ``alloc_set``).
"""

from __future__ import annotations

import gzip
import json
from importlib import resources
from pathlib import Path
from typing import Callable, Sequence

import numpy as np
import pandas as pd

from hetgym.specs import NodeSpec
from hetgym.throughput import ThroughputModel
from hetgym.traces._common import (named_decode_errors,
    DEFAULT_CPUS, DEFAULT_MEM_GB, JobTypes, SpeedupSampler, check_on_bad, device_keys,
    draw_job_types, drop_rows, finish, make_rng, model_or_default, parse_numbers,
)
from hetgym.traces.report import LoadReport

__all__ = ["load_google2011", "load_google2019", "packaged_google2011_dir"]

JOB_EVENTS_2011 = ("time", "missing_info", "job_id", "event_type", "user", "scheduling_class",
                   "job_name", "logical_job_name")
TASK_EVENTS_2011 = ("time", "missing_info", "job_id", "task_index", "machine_id", "event_type", "user",
                    "scheduling_class", "priority", "cpu_request", "memory_request", "disk_request",
                    "different_machines")
EVENTS_2011 = ("SUBMIT", "SCHEDULE", "EVICT", "FAIL", "FINISH", "KILL", "LOST", "UPDATE_PENDING",
               "UPDATE_RUNNING")
EVENTS_2019 = ("SUBMIT", "QUEUE", "ENABLE", "SCHEDULE", "EVICT", "FAIL", "FINISH", "KILL", "LOST",
               "UPDATE_PENDING", "UPDATE_RUNNING")
TERMINAL = ("FAIL", "FINISH", "KILL", "LOST")
AFTER_TRACE = 2**63 - 1
Duration = str | Callable[[np.random.Generator, int], np.ndarray]


def packaged_google2011_dir() -> Path:
    """Root of the 2011 excerpt shipped with hetgym (``job_events`` part 0, ``schema.csv``)."""
    return Path(str(resources.files("hetgym").joinpath("data/traces/google2011")))


def _open(path: Path):
    return gzip.open(path, "rt", encoding="utf-8-sig") if path.suffix == ".gz" else path.open("r", encoding="utf-8-sig")


def _parts(path: Path | Sequence[str | Path], sub: str, max_parts: int | None) -> list[Path]:
    if isinstance(path, (list, tuple)):
        files = [Path(p) for p in path]
    else:
        path = Path(path)
        if path.is_file():
            files = [path]
        elif (path / sub).is_dir():
            files = sorted((path / sub).glob("part-*.csv*"))
        elif path.is_dir():
            files = sorted(path.glob("part-*.csv*"))
        else:
            raise ValueError(f"{path}: no such file or folder")
    if not files:
        raise ValueError(f"{path}: no {sub} part files (part-*.csv.gz)")
    return files[:max_parts] if max_parts else files


@named_decode_errors
def _read_csv_part(path: Path, names: Sequence[str], use: Sequence[str], required: Sequence[str],
                   on_bad: str, report: LoadReport | None) -> pd.DataFrame:
    """Read one headerless shard; numbers parsed with file/line/column in any error."""
    with _open(path) as fh:
        n_first = len(fh.readline().rstrip("\r\n").split(","))
    if n_first not in (1, len(names)):
        raise ValueError(f"{path}: line 1 has {n_first} fields; expected {len(names)} "
                         f"({list(names)}, per schema.csv)")
    idx = [names.index(c) for c in use]
    num = [c for c in use if c != "user"]
    try:  # fast path: the C parser; on failure re-read as text to name the bad cell
        raw = pd.read_csv(path, encoding="utf-8-sig", header=None, names=list(names), usecols=idx,
                          dtype={c: ("float64" if c in num else str) for c in use}, na_filter=True,
                          keep_default_na=False, na_values=[""])
        if "user" in use:
            raw["user"] = raw["user"].fillna("")
        bad_any = raw[[c for c in required]].isna().any(axis=1).to_numpy()
        if not bad_any.any():
            return raw[list(use)]
    except ValueError:
        pass
    raw = pd.read_csv(path, encoding="utf-8-sig", header=None, names=list(names), usecols=idx, dtype=str, keep_default_na=False)
    rows = [f"line {i + 1}" for i in range(len(raw))]
    out = pd.DataFrame({"user": raw["user"]} if "user" in use else {})
    bad_any = np.zeros(len(raw), dtype=bool)
    for c in num:
        vals, blank, bad = parse_numbers(raw[c], path=path, column=c, rows=rows, on_bad=on_bad)
        if c in required:
            if blank.any() and on_bad == "raise":
                i = int(np.flatnonzero(blank)[0])
                raise ValueError(f"{path}: line {i + 1}: column {c!r} is empty; it is mandatory")
            bad |= blank
        bad_any |= bad
        out[c] = vals
    if bad_any.any() and report is not None:
        report.notes.append(f"{path.name}: {int(bad_any.sum())} unparsable event lines skipped")
    return out.loc[~bad_any]


def _assemble(events: pd.DataFrame, tasks: pd.DataFrame | None, *, source: str, report: LoadReport,
              statuses: Sequence[str] | None, duration: Duration, duration_device: str,
              workers: str, max_workers: int, node: NodeSpec | tuple[float, float], cpus: float,
              mem_gb: float, job_class: str, devices: list[str], model: ThroughputModel,
              job_types: JobTypes, gen: np.random.Generator, cpu_speedup: SpeedupSampler | None) -> pd.DataFrame:
    """Per-job arrival/start/end/user from events (job_id, time_us, kind, user) -> job table."""
    ev = events.sort_values(["job_id", "time"], kind="stable")
    jobs = pd.DataFrame(index=pd.Index(pd.unique(ev["job_id"]), name="job_id"))
    report.rows_read = len(jobs)
    t = ev["time"].where(ev["time"] < AFTER_TRACE)
    sub = ev.loc[ev["kind"] == "SUBMIT"].groupby("job_id")["time"].min()
    sched = ev.loc[ev["kind"] == "SCHEDULE"].assign(t=t).groupby("job_id")["t"].min()
    term = ev.loc[ev["kind"].isin(TERMINAL)].assign(t=t).dropna(subset=["t"])
    last = term.groupby("job_id").tail(1).set_index("job_id")
    users = ev.loc[ev["user"].astype(str).str.len() > 0].groupby("job_id")["user"].first()
    jobs["submit"] = sub
    jobs["start"] = sched
    jobs["end"] = last["t"]
    jobs["status"] = last["kind"]
    jobs["user"] = users
    df = jobs.reset_index()
    df = drop_rows(df, df["submit"].isna().to_numpy(), "no_submit_event", report)
    df = drop_rows(df, (df["submit"] == 0).to_numpy(), "submitted_before_trace", report)
    df = drop_rows(df, (df["submit"] >= AFTER_TRACE).to_numpy(), "submitted_after_trace", report)
    from_trace = isinstance(duration, str)
    if from_trace and duration != "trace":
        raise ValueError(f"duration must be 'trace' or a sampler (rng, n) -> seconds, got {duration!r}")
    if statuses is not None or from_trace:
        df = drop_rows(df, df["status"].isna().to_numpy(), "no_end_event", report)
    if statuses is not None:
        for st in sorted(set(df["status"].dropna()) - set(statuses)):
            df = drop_rows(df, (df["status"] == st).to_numpy(), f"status={st}", report)
    if from_trace:
        df = drop_rows(df, df["start"].isna().to_numpy(), "never_scheduled", report)
        dur = (df["end"] - df["start"]).to_numpy() / 1e6
        df = df.assign(duration=dur)
        df = drop_rows(df, (df["duration"] < 0).to_numpy(), "negative_duration", report)
        df = drop_rows(df, (df["duration"] == 0).to_numpy(), "zero_duration", report)
    node_cpus, node_mem = (node.cpus, node.mem_gb) if isinstance(node, NodeSpec) else node
    n_tasks, c, m = (pd.Series(np.nan, index=df.index) for _ in range(3))
    if tasks is not None and len(tasks):
        g = tasks.groupby("job_id")
        n_tasks = df["job_id"].map(g["task_index"].nunique())
        c = df["job_id"].map(g["cpu_request"].max())
        m = df["job_id"].map(g["memory_request"].max())
        report.notes.append(f"{int(n_tasks.isna().sum())} kept jobs without task events: "
                            f"cpus={cpus}, mem_gb={mem_gb} per worker")
    if workers == "tasks":
        df = drop_rows(df, n_tasks.isna().to_numpy(), "no_task_events", report)
        n_tasks = n_tasks.loc[df.index]
        df = drop_rows(df, (n_tasks > max_workers).to_numpy(), "too_many_tasks", report)
        w = n_tasks.loc[df.index].to_numpy().astype(np.int64)
    elif workers == "one":
        w = np.ones(len(df), dtype=np.int64)
    else:
        raise ValueError(f"workers must be 'one' or 'tasks', got {workers!r}")
    c, m = c.loc[df.index].to_numpy(), m.loc[df.index].to_numpy()
    out = pd.DataFrame({
        "arrival": df["submit"].to_numpy() / 1e6,
        "user": df["user"].fillna("").astype(str).to_numpy(),
        "workers": w,
        "cpus": np.where(np.isnan(c), cpus, c * node_cpus),
        "mem_gb": np.where(np.isnan(m), mem_gb, m * node_mem),
        "job_class": job_class,
        "trace_id": df["job_id"].astype(np.int64).astype(str).to_numpy(),
    })
    out["job_type"] = draw_job_types(gen, len(out), model, job_types)
    if from_trace:
        out["duration"] = df["duration"].to_numpy()
    else:
        out["duration"] = np.asarray(duration(gen, len(out)), dtype=np.float64)  # type: ignore[operator]
    return finish(out, source=source, report=report, devices=devices, throughput=model, rng=gen,
                  cpu_speedup=cpu_speedup, duration_device=duration_device)


def load_google2011(
    path: str | Path | Sequence[str | Path] | None = None,
    *,
    task_events: str | Path | Sequence[str | Path] | bool | None = None,
    max_parts: int | None = None,
    statuses: Sequence[str] | None = ("FINISH",),
    duration: Duration = "trace",
    duration_device: str = "cpu",
    workers: str = "one",
    max_workers: int = 64,
    node: NodeSpec | tuple[float, float] = (32.0, 256.0),
    devices: Sequence[str] | None = None,
    throughput: ThroughputModel | None = None,
    job_types: JobTypes = None,
    cpus: float = DEFAULT_CPUS,
    mem_gb: float = DEFAULT_MEM_GB,
    job_class: str = "BE",
    rng: np.random.Generator | None = None,
    seed: int | None = 0,
    cpu_speedup: SpeedupSampler | None = None,
    on_bad: str = "raise",
) -> tuple[pd.DataFrame, LoadReport]:
    """Load Google 2011 ``job_events`` (and ``task_events``) shards as a job table.

    Args:
        path: Trace root (with ``job_events/``), a folder of job_events parts, one part
            file, or a list of part files. Default: the excerpt shipped with hetgym.
        task_events: Task-event parts (same forms); ``None`` = the root's
            ``task_events/`` parts with the same names as the job parts read, if any;
            ``False`` = none.
        max_parts: Read only the first parts.
        statuses: Terminal event kinds kept (``FINISH``, ``FAIL``, ``KILL``, ``LOST``);
            ``None`` keeps all, including jobs that have not ended.
        duration: ``"trace"`` or a sampler ``(rng, n) -> seconds``.
        duration_device: Device the durations are run times on.
        workers: ``"one"`` worker per job, or ``"tasks"`` (its number of tasks).
        max_workers: With ``workers="tasks"``, larger jobs are dropped (``too_many_tasks``).
        node: Node capacity ``NodeSpec`` or ``(cpus, mem_gb)`` the normalised requests scale to.
        Others: as :func:`hetgym.traces.load_philly`.

    Returns:
        ``(job table, report)``; rows are the job ids seen in the job events. Drop reasons:
        ``no_submit_event``, ``submitted_before_trace``, ``no_end_event``, ``status=<kind>``,
        ``never_scheduled``, ``negative_duration``, ``zero_duration``, ``no_task_events`` and
        ``too_many_tasks`` (``workers="tasks"``).

    Raises:
        ValueError: a shard with the wrong number of columns, or (``on_bad="raise"``) an
            unparsable mandatory value; naming the file, line and column.
    """
    check_on_bad(on_bad)
    root = packaged_google2011_dir() if path is None else path
    files = _parts(root, "job_events", max_parts)
    model = model_or_default(throughput)
    devs = device_keys(devices)
    report = LoadReport(source=str(root))
    frames = [_read_csv_part(f, JOB_EVENTS_2011, ("time", "job_id", "event_type", "user"),
                             ("time", "job_id", "event_type"), on_bad, report) for f in files]
    ev = pd.concat(frames, ignore_index=True)
    code = ev["event_type"].to_numpy()
    if ((code < 0) | (code >= len(EVENTS_2011)) | (code != np.round(code))).any():
        bad = ev.loc[(code < 0) | (code >= len(EVENTS_2011))].iloc[0]
        raise ValueError(f"{root}: job {int(bad['job_id'])}: event type {bad['event_type']!r}; expected 0..8")
    ev["kind"] = np.asarray(EVENTS_2011, dtype=object)[code.astype(int)]
    tfiles: list[Path] = []
    if task_events is None and not isinstance(root, (list, tuple)) and (Path(root) / "task_events").is_dir():
        tfiles = [Path(root) / "task_events" / f.name for f in files if (Path(root) / "task_events" / f.name).exists()]
    elif task_events not in (None, False, True):
        tfiles = _parts(task_events, "task_events", max_parts)  # type: ignore[arg-type]
    tasks = None
    if tfiles:
        tasks = pd.concat([_read_csv_part(f, TASK_EVENTS_2011, ("job_id", "task_index", "event_type",
                                                                 "cpu_request", "memory_request"),
                                          ("job_id", "task_index", "event_type"), on_bad, report)
                           for f in tfiles], ignore_index=True)
        report.notes.append(f"task events: {', '.join(f.name for f in tfiles)}")
    out = _assemble(ev, tasks, source=str(root), report=report, statuses=statuses, duration=duration,
                    duration_device=duration_device, workers=workers, max_workers=max_workers, node=node,
                    cpus=cpus, mem_gb=mem_gb, job_class=job_class, devices=devs, model=model,
                    job_types=job_types, gen=make_rng(rng, seed), cpu_speedup=cpu_speedup)
    return out, report


@named_decode_errors
def _read_2019(path: Path, fields: Sequence[str], on_bad: str) -> pd.DataFrame:
    """Read a v3 export (JSON lines or CSV) into a frame of ``fields`` (flattened)."""
    name = path.name.lower()
    if any(name.endswith(s) for s in (".json", ".jsonl", ".ndjson", ".json.gz", ".jsonl.gz")):
        recs = []
        with _open(path) as fh:
            for lineno, line in enumerate(fh, start=1):
                if not line.strip():
                    continue
                try:
                    obj = json.loads(line)
                except json.JSONDecodeError as exc:
                    raise ValueError(f"{path}: line {lineno}: not a JSON object ({exc})") from None
                rr = obj.get("resource_request") or {}
                obj["resource_request.cpus"] = rr.get("cpus") if isinstance(rr, dict) else None
                obj["resource_request.memory"] = rr.get("memory") if isinstance(rr, dict) else None
                recs.append({f: obj.get(f) for f in fields} | {"_line": lineno})
        raw = pd.DataFrame.from_records(recs, columns=list(fields) + ["_line"])
    else:
        raw = pd.read_csv(path, encoding="utf-8-sig", dtype=str, keep_default_na=False)
        raw = raw.rename(columns={"resource_request_cpus": "resource_request.cpus",
                                  "resource_request_memory": "resource_request.memory"})
        for f in fields:
            if f.startswith("resource_request") and f not in raw.columns:
                raw[f] = ""
        if "collection_type" in fields and "collection_type" not in raw.columns:
            raw["collection_type"] = "0"
        raw["_line"] = np.arange(len(raw)) + 2
    missing = [f for f in fields if f not in raw.columns]
    if missing:
        raise ValueError(f"{path}: missing field(s) {missing}; expected v3 names {list(fields)}")
    raw = raw.astype({f: "object" for f in fields})
    names = {n: i for i, n in enumerate(EVENTS_2019)}
    raw["type"] = raw["type"].map(lambda v: names.get(v, v) if isinstance(v, str) and not v.strip().isdigit() else v)
    if "collection_type" in fields:
        raw["collection_type"] = raw["collection_type"].map(
            lambda v: {"JOB": 0, "ALLOC_SET": 1}.get(v, v) if isinstance(v, str) else v)
    rows = [f"line {n}" for n in raw["_line"]]
    for f in fields:
        if f == "user":
            continue
        vals, blank, bad = parse_numbers(raw[f], path=path, column=f, rows=rows, on_bad=on_bad)
        if f in ("time", "type", "collection_id") and on_bad == "raise" and blank.any():
            i = int(np.flatnonzero(blank)[0])
            raise ValueError(f"{path}: {rows[i]}: field {f!r} is empty; it is required")
        raw[f] = vals
    return raw.dropna(subset=["time", "type", "collection_id"])


def load_google2019(
    collection_events: str | Path,
    instance_events: str | Path | None = None,
    *,
    statuses: Sequence[str] | None = ("FINISH",),
    duration: Duration = "trace",
    duration_device: str = "cpu",
    workers: str = "one",
    max_workers: int = 64,
    node: NodeSpec | tuple[float, float] = (32.0, 256.0),
    devices: Sequence[str] | None = None,
    throughput: ThroughputModel | None = None,
    job_types: JobTypes = None,
    cpus: float = DEFAULT_CPUS,
    mem_gb: float = DEFAULT_MEM_GB,
    job_class: str = "BE",
    rng: np.random.Generator | None = None,
    seed: int | None = 0,
    cpu_speedup: SpeedupSampler | None = None,
    on_bad: str = "raise",
) -> tuple[pd.DataFrame, LoadReport]:
    """Load Google 2019 (v3) ``collection_events`` (+ ``instance_events``) exports.

    Args:
        collection_events: JSON-lines (``.json``/``.jsonl``, optionally ``.gz``) or CSV
            export of the ``collection_events`` table.
        instance_events: Same for ``instance_events`` (CPU/memory requests, task count).
        Others: as :func:`load_google2011`.

    Returns:
        ``(job table, report)``; ``alloc_set`` counts dropped alloc-set collections.
    """
    check_on_bad(on_bad)
    path = Path(collection_events)
    model = model_or_default(throughput)
    raw = _read_2019(path, ("time", "type", "collection_id", "user", "collection_type"), on_bad)
    report = LoadReport(source=str(path))
    code = raw["type"].to_numpy()
    badc = (code < 0) | (code >= len(EVENTS_2019)) | (code != np.round(code))
    if badc.any():
        r = raw.loc[badc].iloc[0]
        raise ValueError(f"{path}: line {r['_line']}: field 'type' = {r['type']!r}; expected 0..10 or "
                         f"an event name {list(EVENTS_2019)}")
    alloc = raw.groupby("collection_id")["collection_type"].max() == 1
    ev = pd.DataFrame({"job_id": raw["collection_id"].astype(np.int64), "time": raw["time"],
                       "kind": np.asarray(EVENTS_2019, dtype=object)[code.astype(int)],
                       "user": raw["user"].fillna("").astype(str)})
    n_alloc = int(alloc.sum())
    ev = ev.loc[~ev["job_id"].isin(set(alloc.index[alloc]))]
    tasks = None
    if instance_events is not None:
        ti = _read_2019(Path(instance_events), ("time", "type", "collection_id", "instance_index",
                                                "resource_request.cpus", "resource_request.memory"), on_bad)
        tasks = pd.DataFrame({"job_id": ti["collection_id"].astype(np.int64), "task_index": ti["instance_index"],
                              "cpu_request": ti["resource_request.cpus"],
                              "memory_request": ti["resource_request.memory"]})
    out = _assemble(ev, tasks, source=str(path), report=report, statuses=statuses, duration=duration,
                    duration_device=duration_device, workers=workers, max_workers=max_workers, node=node,
                    cpus=cpus, mem_gb=mem_gb, job_class=job_class, devices=device_keys(devices),
                    model=model, job_types=job_types, gen=make_rng(rng, seed), cpu_speedup=cpu_speedup)
    report.rows_read += n_alloc
    report.drop("alloc_set", n_alloc)
    report.check()
    return out, report
