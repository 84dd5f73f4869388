"""Rendering of a simulator state: text snapshot and a Gantt/utilisation picture."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from hetgym.sim.rules import EPS

if TYPE_CHECKING:  # pragma: no cover
    from hetgym.sim.engine import Simulator

__all__ = ["ansi", "rgb_array", "gantt_figure"]


def ansi(sim: "Simulator") -> str:
    """A text snapshot: time, queue, and per-node usage bars."""
    nd, ns = sim.nodes, sim.ns
    lines = [f"t={sim.now:10.1f}s  queued={sim.n_queue}  running={sim.n_running}  "
             f"done={sim.n_done}/{sim.n_jobs}  energy={sim.energy_kwh:.2f} kWh"]
    for n in range(len(nd.dev)):
        dev = sim.devices[nd.dev[n]]
        if nd.gpus[n]:
            owners = ns.gpu_owner[n, : nd.gpus[n]]
            bar = "".join("." if o < 0 else chr(ord("A") + int(o) % 26) for o in owners)
        else:
            used = nd.cpus[n] - ns.free_cpus[n]
            k = int(round(10 * used / nd.cpus[n])) if nd.cpus[n] else 0
            bar = "#" * k + "." * (10 - k)
        lines.append(f"  {sim.node_names[n]:>12s} [{dev:>8s}] {bar}")
    head = sim.queued()[:8].tolist()
    lines.append(f"  queue head: {head}{' ...' if sim.n_queue > 8 else ''}")
    return "\n".join(lines)


def gantt_figure(segments, devices, n_nodes: int, now: float, title: str = ""):
    """Matplotlib figure: one bar per job run on its first node, coloured by device type."""
    import matplotlib

    matplotlib.use("Agg", force=False)
    import matplotlib.pyplot as plt

    from hetgym.metrics import time_unit

    unit, size = time_unit(max(now, 1.0))
    fig, ax = plt.subplots(figsize=(6.4, 3.6), dpi=80)
    cmap = plt.get_cmap("tab10")
    for job, start, end, dev, node in segments:
        ax.barh(node, max(end - start, EPS) / size, left=start / size, height=0.8,
                color=cmap(dev % 10 if dev >= 0 else 9), edgecolor="k", linewidth=0.2)
    for i, d in enumerate(devices):
        ax.barh(-10, 0, color=cmap(i % 10), label=d)
    ax.set_ylim(-0.8, max(n_nodes, 1) - 0.2)
    ax.set_xlim(0, max(now, 1.0) / size)
    ax.set_xlabel(f"time ({unit})")
    ax.set_ylabel("node")
    ax.set_title(title or "job runs (first node of each)")
    ax.legend(loc="upper right", fontsize=8)
    fig.tight_layout()
    return fig


def rgb_array(sim: "Simulator") -> np.ndarray:
    """RGB image (H, W, 3) of the Gantt chart of finished runs and current ones."""
    import matplotlib.pyplot as plt

    from hetgym.metrics import format_duration

    segs = list(sim.segments)
    for j in sim.running_jobs().tolist():
        segs.append((j, float(sim.js.run_start[j]), sim.now, int(sim.js.device[j]),
                     int(sim.js.worker_node[j, 0])))
    fig = gantt_figure(segs, sim.devices, len(sim.nodes.dev), sim.now,
                       title=f"t={format_duration(sim.now)}  done {sim.n_done}/{sim.n_jobs}")
    fig.canvas.draw()
    img = np.asarray(fig.canvas.buffer_rgba())[..., :3].copy()
    plt.close(fig)
    return img
