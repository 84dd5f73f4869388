"""The Ray launchers of the Hydra sweeps, run for real (conf/hydra/launcher/ray*.yaml).

A small sweep of ``scripts/compare.py`` (2 schedulers x 2 seeds on a 24-job
``hetero-small``) runs once with Hydra's basic launcher and then

* with ``hydra/launcher=ray``: a local Ray instance (2 CPUs, no dashboard, 75 MiB
  object store) that the sweep starts and stops itself;
* with ``hydra/launcher=ray_cluster``: a separate ``ray start --head --block`` process
  (a one-node "cluster") that the sweep joins by address; the test stops it after.

Each Ray sweep must produce every run's files, complete, with the same metrics, job
tables and runs of jobs as the basic launcher's, and its log must show the runs
executing as Ray tasks. Skipped only where ``hydra-ray-launcher`` (the ``ray`` extra)
is not installed; CI installs it (``.ci/run``).
"""

from __future__ import annotations

import json
import os
import re
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pandas as pd
import pytest

# Slow (starts local Ray clusters): run with -m slow.
pytestmark = pytest.mark.slow

pytest.importorskip("ray", reason="Ray is not installed (pip install -e '.[ray]')")
try:  # where `ray start` records the node's cluster (private, so with a fallback)
    from ray._private.utils import get_ray_address_file as ray_address_file
except ImportError:  # pragma: no cover
    def ray_address_file(temp_dir: None) -> str:
        return str(Path(tempfile.gettempdir()) / "ray" / "ray_current_cluster")
pytest.importorskip("hydra_plugins.hydra_ray_launcher.ray_launcher",
                    reason="hydra-ray-launcher is not installed (pip install -e '.[ray]')")

ROOT = Path(__file__).resolve().parents[1]
SCHEDULERS = ("fifo", "srpt")
SEEDS = (0, 1)
SWEEP = ["scenario=hetero-small", "scenario.n_jobs=24",
         f"scheduler={','.join(SCHEDULERS)}", f"seed={','.join(map(str, SEEDS))}"]
FILES = ("metrics.json", "jobs.parquet", "segments.parquet")
# what a run's result is; wall clock (wall_s, the metrics' decision_time_*) and the command
# line (out_root) legitimately differ between two sweeps
WALL_CLOCK_METRICS = ("decision_time_p50", "decision_time_p99")
RESULT_KEYS = ("scheduler", "scenario", "seed", "metrics", "stalled", "devices", "slots",
               "n_nodes", "run_config")
TIMEOUT_S = 300
# under pytest-xdist (--dist loadfile, pyproject.toml) both sweeps and their shared `basic`
# sweep run in one worker, one after the other: a local `ray.init()` while the other test's
# `ray start --head` is up could join that cluster instead of starting its own


def _env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("RAY_")}
    env.update(MPLBACKEND="Agg", RAY_USAGE_STATS_ENABLED="0", PYTHONPATH=str(ROOT), **extra)
    return env


def _sweep(out_root: Path, *overrides: str, env: dict[str, str] | None = None) -> str:
    """Run the sweep with ``overrides`` (launcher choice); return its log."""
    cmd = [sys.executable, str(ROOT / "scripts" / "compare.py"), "-m", *SWEEP,
           f"out_root={out_root}", *overrides]
    proc = subprocess.run(cmd, check=False, cwd=ROOT, env=env or _env(), capture_output=True,
                          text=True, timeout=TIMEOUT_S)
    log = proc.stdout + proc.stderr
    assert proc.returncode == 0, log[-4000:]
    return log


def _runs(out_root: Path) -> dict[tuple[str, int], Path]:
    """The sweep's run folders, checked complete: every (scheduler, seed), every file."""
    base = out_root / "sweeps" / "default" / "hetero-small"
    runs = {(s, seed): base / s / f"seed={seed}" for s in SCHEDULERS for seed in SEEDS}
    found = {p.parent for p in base.rglob("metrics.json")}
    assert found == set(runs.values()), f"unexpected run folders: {sorted(found)}"
    for (sched, seed), d in runs.items():
        for f in FILES:
            assert (d / f).is_file() and (d / f).stat().st_size > 0, f"{d / f} missing or empty"
        rec = json.loads((d / "metrics.json").read_text())
        assert (rec["scheduler"], rec["seed"]) == (sched, seed)
        assert rec["metrics"]["unfinished_jobs"] == 0
        jobs = pd.read_parquet(d / "jobs.parquet")
        assert len(jobs) == 24 and jobs["end"].notna().all(), f"{d}: incomplete job table"
    return runs


def _result(run: Path) -> str:
    """A run's result as canonical JSON text (exact floats; NaN metrics compare equal)."""
    rec = json.loads((run / "metrics.json").read_text())
    for k in WALL_CLOCK_METRICS:
        assert rec["metrics"].pop(k) >= 0.0
    return json.dumps({k: rec[k] for k in RESULT_KEYS}, sort_keys=True)


def _assert_same_results(got: Path, want: Path) -> None:
    g, w = _runs(got), _runs(want)
    for key in w:
        assert _result(g[key]) == _result(w[key]), key
        for f in ("jobs.parquet", "segments.parquet"):
            pd.testing.assert_frame_equal(pd.read_parquet(g[key] / f), pd.read_parquet(w[key] / f))
    # the runs differ from each other, so equality above is not vacuous
    jcts = {json.loads((w[k] / "metrics.json").read_text())["metrics"]["avg_jct"] for k in w}
    assert len(jcts) == len(w)


def _ray_tasks(log: str) -> set[str]:
    """PIDs of the Ray worker processes that logged a finished run."""
    return set(re.findall(r"\(_run_job pid=(\d+)(?:, ip=[^)]*)?\).*\[compare\]", log))


@pytest.fixture(scope="module")
def basic(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("basic")
    _sweep(out)  # hydra/launcher=basic, the default
    _runs(out)
    return out


def test_local_ray_sweep_matches_basic_launcher(basic, tmp_path):
    log = _sweep(tmp_path, "hydra/launcher=ray")
    assert "Ray Launcher is launching 4 jobs" in log
    assert "Started a local Ray instance" in log
    assert _ray_tasks(log), "no run logged from a Ray worker:\n" + log[-3000:]
    multirun = (tmp_path / "sweeps" / "default" / "multirun.yaml").read_text()
    assert "hydra_ray_launcher.ray_launcher.RayLauncher" in multirun
    _assert_same_results(tmp_path, basic)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def ray_head(tmp_path):
    """A one-node Ray cluster (``ray start --head --block``); yields its GCS address."""
    ray_bin = Path(sys.executable).with_name("ray")
    if not ray_bin.is_file():
        pytest.skip(f"no ray command beside {sys.executable}")
    # ports outside Ray's worker port range (10002-19999)
    port, client_port = _free_port(), _free_port()
    env = _env(RAY_AUTH_MODE="disabled")
    log_path = tmp_path / "head.log"
    with log_path.open("w") as log:
        head = subprocess.Popen(
            [str(ray_bin), "start", "--head", "--block", f"--port={port}",
             f"--ray-client-server-port={client_port}", "--num-cpus=2",
             "--include-dashboard=false", "--object-store-memory=78643200",
             "--disable-usage-stats"],
            cwd=tmp_path, env=env, stdout=log, stderr=subprocess.STDOUT,
            start_new_session=True)
    m = None
    try:
        deadline = time.monotonic() + 120
        while "Ray runtime started" not in log_path.read_text():
            assert head.poll() is None, "ray start failed:\n" + log_path.read_text()[-3000:]
            assert time.monotonic() < deadline, "ray start timed out:\n" + log_path.read_text()
            time.sleep(0.5)
        m = re.search(r"ray start --address='([^']+)'", log_path.read_text())
        assert m, log_path.read_text()
        address = m.group(1)
        yield address, env
    finally:
        head.send_signal(signal.SIGTERM)  # --block: stops the node's processes and exits
        try:
            head.wait(timeout=60)
        except subprocess.TimeoutExpired:
            os.killpg(head.pid, signal.SIGKILL)
            head.wait()
        # `ray start` leaves this pointer to its (now dead) cluster behind; `ray stop` would
        # remove it but stops every Ray on the machine. Remove it only if it is ours.
        current = Path(ray_address_file(None))
        if m and current.is_file() and current.read_text().strip() == m.group(1):
            current.unlink()


def test_ray_cluster_sweep_matches_basic_launcher(basic, ray_head, tmp_path):
    address, env = ray_head
    out = tmp_path / "out"
    log = _sweep(out, "hydra/launcher=ray_cluster", f"hydra.launcher.ray.init.address={address}",
                 env=env)
    assert "Ray Launcher is launching 4 jobs" in log
    assert "Connected to Ray cluster" in log and "Started a local Ray instance" not in log
    assert _ray_tasks(log), "no run logged from a Ray worker:\n" + log[-3000:]
    _assert_same_results(out, basic)
