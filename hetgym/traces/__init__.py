"""Trace loaders: public cluster traces and lab workloads -> canonical job tables.

Every loader returns ``(frame, LoadReport)``: the frame follows the canonical schema of
:mod:`hetgym.workload` (it passes ``Workload.from_frame``; arrivals rebased to 0,
``job_id`` 0..n-1 in arrival order, plus a ``trace_id`` column with the trace's own id),
and the report counts every row dropped, by reason. Throughputs come from a
:class:`~hetgym.throughput.ThroughputModel` (Gavel's by default): when a trace gives a
run time on a device type, ``work = duration x per-worker throughput there x workers``;
traces without model names get job types drawn (seeded) from the model.

Small real excerpts ship in ``hetgym/data/traces`` (with their licences); full traces
are read from a path you give (``scripts/fetch_traces.py`` downloads them) and can be
cached as Parquet with :func:`cached_load`. :func:`sources` describes each source.
"""

from __future__ import annotations

from hetgym._lazy import lazy_attributes

#: Public names, loaded on first use (PEP 562): name -> module that defines it. Importing
#: one loader (e.g. ``hetgym.traces.gavel``) then loads only what that loader needs, not
#: every loader and the Parquet cache (pyarrow.parquet).
_LAZY = {name: f"hetgym.traces.{module}" for module, names in {
    "cache": ("cached_load", "clear_cache"),
    "gavel": ("load_gavel_trace", "load_gavel_traces"),
    "google": ("load_google2011", "load_google2019"),
    "helios": ("load_helios",),
    "lab": ("HADAR_MIXES", "andreas_cluster", "andreas_jobs", "fitgpp_cluster", "fitgpp_jobs",
            "hadar_mix", "hadar_testbed_cluster"),
    "pai": ("load_pai",),
    "philly": ("load_philly", "load_philly_derived"),
    "report": ("LoadReport",),
}.items() for name in names}
_SUBMODULES = {"cache", "controlled", "defaults", "gavel", "google", "helios", "lab", "pai",
               "philly", "presets", "report", "windows"}

__all__ = [
    "HADAR_MIXES",
    "LoadReport",
    "andreas_cluster",
    "andreas_jobs",
    "cached_load",
    "clear_cache",
    "fitgpp_cluster",
    "fitgpp_jobs",
    "hadar_mix",
    "hadar_testbed_cluster",
    "load_gavel_trace",
    "load_gavel_traces",
    "load_google2011",
    "load_google2019",
    "load_helios",
    "load_pai",
    "load_philly",
    "load_philly_derived",
    "sources",
    "windows",
]

_SOURCES: dict[str, str] = {
    "gavel": (
        "Gavel .trace files (stanford-futuredata/gavel, MIT): Philly-derived jobs, one per line. "
        "Shipped: 15 msr-philly-seed0 VC traces (15,264 jobs) in hetgym/data/gavel. "
        "Fields used: job_type, total_steps -> work, scale_factor -> workers, arrival_time, "
        "priority_weight -> weight, SLO -> deadline (7-, 9- and 10-column layouts). "
        "Loader: load_gavel_trace / load_gavel_traces."
    ),
    "philly": (
        "Microsoft Philly (msr-fiddle/philly-traces, CC BY 4.0; Jeon et al., ATC'19): "
        "cluster_job_log JSON in trace-data.tar.gz (1 GB, Git LFS; scripts/fetch_traces.py philly). "
        "Fields used: submitted_time -> arrival, user (or vc), status filter (Pass/Killed/Failed), "
        "GPUs of the first attempt -> workers, last end - first start -> duration (on a GPU type "
        "you choose, default V100). Shipped: a Philly-derived per-VC CSV (arrival, GPUs, duration; "
        "15,264 jobs) for load_philly_derived. Loader: load_philly."
    ),
    "google2011": (
        "Google cluster data 2011 (google/cluster-data, bucket gs://clusterdata-2011-2, CC BY 4.0): "
        "job_events and task_events gzip CSV shards, no header, microseconds. Fields used: first "
        "SUBMIT -> arrival, user hash, first SCHEDULE to last FINISH/FAIL/KILL/LOST -> duration, "
        "task CPU/memory requests (normalised) x a node's capacity -> cpus/mem_gb, task count -> "
        "workers (optional); job types drawn from the throughput model (as AlloX did). Shipped: "
        "job_events part 00000 and schema.csv. Loader: load_google2011."
    ),
    "google2019": (
        "Google cluster data 2019 (v3, BigQuery only, CC BY 4.0): collection_events and "
        "instance_events exported as JSON lines or CSV with the v3 field names (time, type, "
        "collection_id, user, collection_type, instance_index, resource_request.cpus/.memory). "
        "Same rules as 2011 (event codes of clusterdata_trace_format_v3.proto). Loader: load_google2019."
    ),
    "pai": (
        "Alibaba PAI GPU 2020 (alibaba/clusterdata cluster-trace-gpu-v2020, CC BY 4.0; Weng et al., "
        "NSDI'22): pai_job_table.csv and pai_task_table.csv (no header; OSS download, "
        "scripts/fetch_traces.py pai). Fields used: job start_time -> arrival, user, status filter "
        "(Terminated), task inst_num x ceil(plan_gpu/100) -> workers, plan_cpu/plan_mem -> cpus/mem_gb, "
        "gpu_type (V100/V100M32/P100/T4; MISC -> K80 or dropped), task launch to end -> duration. "
        "Loader: load_pai."
    ),
    "helios": (
        "SenseTime Helios (S-Lab-System-Group/HeliosData, CC BY 4.0; Hu et al., SC'21): "
        "cluster_log.csv of Venus/Earth/Saturn/Uranus in data.zip (scripts/fetch_traces.py helios). "
        "Fields used: submit_time -> arrival, user (or vc), gpu_num -> workers, cpu_num -> cpus, "
        "duration (on a GPU type you choose, default V100), state filter (COMPLETED). Shipped: the "
        "four-cluster summary (hetgym/data/traces/helios). Loader: load_helios."
    ),
    "fitgpp": (
        "FitGpp lab (Yabuuchi et al., Preferred Networks): synthetic TE/BE jobs from truncated "
        "normals (Sec. 4.2) on 84 x (32 CPU, 256 GB, 8 GPU); numbers in hetgym/data/lab/fitgpp.json "
        "with their source (std devs and demands are documented placeholders). fitgpp_jobs, fitgpp_cluster."
    ),
    "hadar": (
        "Hadar/HadarE testbed (Sultana et al.): five single-GPU nodes (Titan RTX, T4, T400, RTX 3090, "
        "RTX A2000) and the mixes M-1, M-3, M-4, M-5, M-8, M-10, M-12 (Sec. VI, Table III); "
        "hetgym/data/lab/hadar_testbed.json. hadar_mix, hadar_testbed_cluster."
    ),
    "andreas": (
        "ANDREAS validation (Filippini et al.): the 8 jobs of Table V (submission, due date, weight, "
        "epochs) on ARMIDA nodes armida-05/06/07 (Table II); hetgym/data/lab/andreas_table5.csv and "
        "andreas.json (per-epoch times are placeholders). andreas_jobs, andreas_cluster."
    ),
}


def sources() -> dict[str, str]:
    """Where each trace comes from, its licence, the fields hetgym uses, and its loader."""
    return dict(_SOURCES)


__getattr__, __dir__ = lazy_attributes(__name__, globals(), _LAZY, _SUBMODULES)
