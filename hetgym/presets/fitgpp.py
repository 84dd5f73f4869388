"""FitGpp's lab scenario, registered on import as ``fitgpp-lab``.

``hetgym.scenarios.get("fitgpp-lab", n_jobs=2**16, seed=0)`` builds the paper's
setup (sec. 4.1-4.2): 84 nodes x (32 CPUs, 256 GB, 8 GPUs) and jobs from
:func:`hetgym.traces.lab.fitgpp_jobs` (TE 30 %, TE duration mean 5 min truncated at
30 min, BE mean 30 min truncated at 24 h, grace periods mean 3 min truncated at
20 min, arrivals scaled to an offered load of 2.0). Options: ``P = 1``
(``max_preemptions=1``, which binds every scheduler run on the scenario) and no
restart delay (the paper models none). Override any option as usual, e.g.
``get("fitgpp-lab", max_preemptions=None)`` for unlimited preemptions.

The FitGpp schedulers that run on it are in ``baselines.fitgpp``.
"""

from __future__ import annotations

import dataclasses

from hetgym import scenarios
from hetgym.specs import ClusterSpec, Scenario, SimOptions
from hetgym.traces.lab import fitgpp_cluster, fitgpp_jobs
from hetgym.traces.windows import offered_load, scale_to_load
from hetgym.workload import Workload

__all__ = ["fitgpp_lab"]


def fitgpp_lab(n_jobs: int = 2**13, seed: int = 0, te_fraction: float | None = None,
               load: float | None = None, grace_scale: float = 1.0, nodes: int = 84) -> Scenario:
    """FitGpp's synthetic lab workload on its 84-node cluster.

    Args:
        n_jobs: Number of jobs (the paper used 2**16; the default keeps runs short).
        seed: Seed of the workload generator (the simulation seed is separate).
        te_fraction: Share of TE jobs (default 0.3, the generator's).
        load: Offered load (default 2.0, the generator's).
        grace_scale: Multiplies every grace period (the paper's Fig. 7 scales the
            distribution's mean, std and truncation alike, which this matches).
        nodes: Number of nodes (84 in the paper); arrivals are rescaled so that the
            offered load on the smaller or larger cluster is the same (tests use few).
    """
    df = fitgpp_jobs(n_jobs, seed=seed, te_fraction=te_fraction, load=load)
    if grace_scale != 1.0:
        df = df.assign(grace_period=df["grace_period"] * float(grace_scale))
    cluster = fitgpp_cluster()
    if nodes != cluster.num_nodes:
        cluster = ClusterSpec([dataclasses.replace(g, count=int(nodes)) for g in cluster.nodes])
        if n_jobs > 1:
            target = offered_load(df, fitgpp_cluster(), resources="dominant")
            df = scale_to_load(df, cluster, target, resources="dominant")
    return Scenario(cluster=cluster, workload=Workload.from_frame(df, source="fitgpp-lab"),
                    options=SimOptions(max_preemptions=1, restart_delay=0.0))


scenarios.register("fitgpp-lab", fitgpp_lab)
