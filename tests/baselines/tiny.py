"""Tiny hand-built scenarios for the worked examples of the round-based baselines."""

from __future__ import annotations

from hetgym import Scenario
from hetgym.presets.tiny import tiny_scenario


def scenario(rows, nodes, restart_delay: float = 0.0) -> Scenario:
    """rows: (arrival, workers, {device: per-worker tput}, work); nodes: (gpu_type, count,
    gpus per node). Comm 0, no topology slowdown, 360 s rounds (``hetgym.presets.tiny``)."""
    return tiny_scenario(rows, nodes, restart_delay=restart_delay)


def ends(res) -> list[float]:
    """Completion time of every job, in job order."""
    return [float(x) for x in res.jobs.sort_values("job_id")["end"]]
