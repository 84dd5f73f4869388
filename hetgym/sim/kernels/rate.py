"""Numba kernels: the rate of a job on a placement (the rules of :mod:`hetgym.sim.kernels`
apply)."""

from __future__ import annotations

import numpy as np
from numba import njit

from hetgym.sim.rules import scaled_rate_nb

__all__ = ["job_rate_nb", "rate_nb"]


@njit(cache=True, inline="always")
def rate_nb(w, wnodes, wgpus, tput_row, comm, nodes, opts):
    """Rate (iterations/s) of a job on a placement.

    rate = W x min over workers of per-worker throughput on the worker's device
    x W ** (scaling_exponent - 1) x topology factor. The topology factor is
    1 / (1 + topology_coeff x comm x max(0, mean pairwise distance - 1)), with
    GPU-GPU distances from the node's matrix, 1 between CPU workers of one
    node, and ``network_distance`` across nodes. It is exactly 1 when W = 1,
    comm = 0 or topology_coeff = 0.
    """
    mn = np.inf
    for i in range(w):
        t = tput_row[nodes.dev[wnodes[i]]]
        if t < mn:
            mn = t
    rate = w * mn
    if opts.scaling_exponent != 1.0:  # else the same value without a call of pow
        rate = scaled_rate_nb(w, mn, opts.scaling_exponent)
    if w > 1 and comm > 0.0 and opts.topology_coeff > 0.0:
        s = 0.0
        for a in range(w):
            for b in range(a + 1, w):
                if wnodes[a] != wnodes[b]:
                    s += opts.network_distance
                elif wgpus[a] >= 0 and wgpus[b] >= 0:
                    s += nodes.dist[wnodes[a], wgpus[a], wgpus[b]]
                else:
                    s += 1.0
        mean = s / (w * (w - 1) / 2.0)
        if mean > 1.0:
            rate /= 1.0 + opts.topology_coeff * comm * (mean - 1.0)
    return rate


@njit(cache=True, inline="always")
def job_rate_nb(job, w, wnodes, wgpus, P):
    """Rate of ``job`` on a placement of ``w`` workers: :func:`rate_nb` with the job's own
    scaling exponent ``P.jobs.scale_exp[job]`` (``g * tput * g ** (e_j - 1)``, elastic
    jobs); exactly :func:`rate_nb` when it equals the scenario's."""
    jobs, opts = P.jobs, P.opts
    r = rate_nb(w, wnodes, wgpus, jobs.tput[job], jobs.comm[job], P.nodes, opts)
    e = jobs.scale_exp[job]
    if e != opts.scaling_exponent:
        r *= w ** (e - opts.scaling_exponent)
    return r
