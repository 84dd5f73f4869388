"""Kernel-side mirrors of the typed state: one Numba structref per NamedTuple.

Python code reads the state through the NamedTuples of :mod:`hetgym.sim.state`
(``sim.params``, ``sim.state``; attribute access on them is plain Python). The
kernels take a mirror of the same arrays (no copies) built from Numba structrefs
(:mod:`numba.experimental.structref`): a structref is one reference-counted pointer,
so reading ``P.jobs`` or ``S.run`` in compiled code costs one reference count,
where a NamedTuple of NamedTuples increfs and decrefs every array it holds (15-25
per sub-tuple; a 5-line loop over the running jobs cost 0.7-0.9 us that way), and
Numba types and compiles one structref argument instead of some 80 arrays.

The mirror shares the NamedTuples' arrays, so writes from either side are seen by
the other; build it again (:func:`mirror`) whenever an array object of the state is
replaced (a grown segment log). Attribute syntax in kernels is unchanged
(``P.jobs.work[j]``, ``S.run.ctr[CTR_Q]``). Reading a mirror's attributes from Python
goes through a getter compiled on first use: Python code reads the NamedTuples.
"""

from __future__ import annotations

from typing import Any, NamedTuple

from numba import njit, types
from numba.experimental import structref

from hetgym.sim.state import (
    JobArrays,
    JobState,
    NodeArrays,
    NodeState,
    Options,
    Params,
    RunState,
    State,
)

__all__ = [
    "JobArraysK",
    "JobStateK",
    "Mirror",
    "NodeArraysK",
    "NodeStateK",
    "OptionsK",
    "ParamsK",
    "RunStateK",
    "StateK",
    "mirror",
    "struct_of",
]


def _preprocess(self: Any, fields: Any) -> tuple:
    return tuple((n, types.unliteral(t)) for n, t in fields)


def struct_of(nt: type, module: str = __name__) -> type:
    """A structref proxy class (name ``<nt>K``) whose fields are those of the NamedTuple
    class ``nt``, in order; construct it in compiled code with ``<nt>K(*tuple)``.

    The Numba type class is ``<nt>KType``; both are registered in ``module``'s globals
    under those names (the on-disk cache finds them there)."""
    import sys

    name = nt.__name__ + "K"
    typ = structref.register(type(name + "Type", (types.StructRef,),
                                  {"__module__": module, "preprocess_fields": _preprocess}))
    proxy = type(name, (structref.StructRefProxy,),
                 {"__module__": module, "__doc__": f"Kernel-side mirror of :class:`{nt.__name__}`."})
    structref.define_proxy(proxy, typ, list(nt._fields))
    glb = vars(sys.modules[module])
    glb[name + "Type"] = typ
    glb[name] = proxy
    return proxy


JobArraysK = struct_of(JobArrays)
NodeArraysK = struct_of(NodeArrays)
OptionsK = struct_of(Options)
ParamsK = struct_of(Params)
JobStateK = struct_of(JobState)
NodeStateK = struct_of(NodeState)
RunStateK = struct_of(RunState)
StateK = struct_of(State)


class Mirror(NamedTuple):
    """The kernels' view of one simulator's state (structref proxies over its arrays)."""

    P: Any      # ParamsK
    S: Any      # StateK
    nodes: Any  # NodeArraysK (= P.nodes)
    ns: Any     # NodeStateK (= S.node)
    run: Any    # RunStateK (= S.run)
    jobs: Any   # JobArraysK (= P.jobs)
    js: Any     # JobStateK (= S.job)


@njit(cache=True)
def _mirror_nb(P, S):
    jobs = JobArraysK(*P.jobs)
    nodes = NodeArraysK(*P.nodes)
    kp = ParamsK(jobs, nodes, OptionsK(*P.opts), *P[3:])
    ns = NodeStateK(*S.node)
    run = RunStateK(*S.run)
    js = JobStateK(*S.job)
    ks = StateK(js, ns, run, *S[3:])
    return kp, ks, nodes, ns, run, jobs, js


def mirror(params: Params, state: State) -> Mirror:
    """The structref mirror of ``(params, state)`` (same arrays, no copies)."""
    return Mirror(*_mirror_nb(params, state))
