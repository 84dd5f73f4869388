"""Kernel-side mirrors of the typed state: one Numba structref per NamedTuple.

Python code reads the state through the NamedTuples of :mod:`hetgym.sim.state`
(``sim.params``, ``sim.state``; attribute access on them is plain Python). The
kernels take a mirror of the same arrays (no copies) built from Numba structrefs
(:mod:`numba.experimental.structref`): a structref is one reference-counted pointer,
so reading ``P.jobs`` or ``S.run`` in compiled code costs one reference count,
where a NamedTuple of NamedTuples increfs and decrefs every array it holds (15-25
per sub-tuple; a 5-line loop over the running jobs cost 0.7-0.9 us that way), and
Numba types and compiles one structref argument instead of some 80 arrays. Each
structref owns its arrays (one reference each, like any Numba container) and lends
them to the kernels: reading an array field takes no reference count at all (see
:func:`packer`), and a mirror stays valid as long as anything holds it.

The mirror shares the NamedTuples' arrays, so writes from either side are seen by
the other; build it again (:func:`mirror`) whenever an array object of the state is
replaced (a grown segment log). Attribute syntax in kernels is unchanged
(``P.jobs.work[j]``, ``S.run.ctr[CTR_Q]``). Reading a mirror's attributes from Python
goes through a getter compiled on first use: Python code reads the NamedTuples.
"""

from __future__ import annotations

import hashlib
from typing import Any, NamedTuple

from numba import njit, types
from numba.core import cgutils
from numba.experimental import structref
from numba.experimental.jitclass.base import imp_dtor
from numba.extending import intrinsic

from hetgym._internals.numba_start import load_registries
from hetgym.compile_log import install_notice
from hetgym.sim.state.layout import (
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
    "PlainParamsK",
    "RunStateK",
    "StateK",
    "is_plain",
    "mirror",
    "packer",
    "struct_of",
]


def _preprocess(self: Any, fields: Any) -> tuple:
    return tuple((n, types.unliteral(t)) for n, t in fields)


def _mangling_args(self: Any) -> tuple:
    """The type's part of compiled symbol names: its class name and a digest of its fields.

    Numba's default is the whole type string (some 3-6 kB for the state's structrefs, in
    every symbol of every kernel that takes them); a short name compiles and loads faster."""
    digest = hashlib.blake2b(self.name.encode(), digest_size=10).hexdigest()
    return f"{type(self).__name__}_{digest}", ()


def struct_of(nt: type, module: str = __name__, name: str | None = None,
              lend: bool = False) -> type:
    """A structref proxy class (name ``<nt>K``, or ``name``) whose fields are those of the
    NamedTuple class ``nt``, in order; construct it in compiled code with ``<nt>K(*tuple)``
    or a :func:`packer`.

    With ``lend``, its :func:`packer` lends the array fields to compiled code (see there).
    The Numba type class is ``<name>Type``; both are registered in ``module``'s globals
    under those names (the on-disk cache finds them there)."""
    import sys

    name = name or nt.__name__ + "K"
    typ = structref.register(type(name + "Type", (types.StructRef,),
                                  {"__module__": module, "preprocess_fields": _preprocess,
                                   "mangling_args": property(_mangling_args)}))
    proxy = type(name, (structref.StructRefProxy,),
                 {"__module__": module, "__doc__": f"Kernel-side mirror of :class:`{nt.__name__}`."})
    structref.define_proxy(proxy, typ, list(nt._fields))
    glb = vars(sys.modules[module])
    glb[name + "Type"] = typ
    glb[name] = proxy
    _TYPES[proxy] = typ, list(nt._fields), lend
    return proxy


_TYPES: dict[type, tuple[type, list, bool]] = {}
_MEMINFO = types.MemInfoPointer(types.voidptr)


def _inst_type(proxy: type, ftypes: Any) -> tuple[Any, list, Any]:
    """The Numba instance type of ``proxy``'s structref for field types ``ftypes``, the
    indices of its lent array fields and the type of its ``owner_`` field (:func:`packer`)."""
    typeclass, fields, lend = _TYPES[proxy]
    lent = [i for i, t in enumerate(ftypes) if lend and isinstance(t, types.Array)]
    own_type = types.UniTuple(_MEMINFO, len(lent))
    inst_type = typeclass(list(zip(fields, ftypes)) + ([("owner_", own_type)] if lent else []))
    return inst_type, lent, own_type


def _build(context: Any, builder: Any, proxy: type, ftypes: Any, values: list) -> Any:
    """Code that allocates a structref of ``proxy``'s type and stores ``values`` (of types
    ``ftypes``) in its fields, one reference taken each (array fields lent, see
    :func:`packer`); returns the new structref (a new reference)."""
    fields = _TYPES[proxy][1]
    inst_type, lent, own_type = _inst_type(proxy, ftypes)
    data_type = inst_type.get_data_type()
    alloc_type = context.data_model_manager[data_type].get_value_type()
    size = context.get_constant(types.uintp, context.get_abi_sizeof(alloc_type))
    meminfo = context.nrt.meminfo_alloc_dtor(builder, size,
                                             imp_dtor(context, builder.module, inst_type))
    ptr = builder.bitcast(context.nrt.meminfo_data(builder, meminfo), alloc_type.as_pointer())
    builder.store(cgutils.get_null_value(alloc_type), ptr)
    data = cgutils.create_struct_proxy(data_type)(context, builder, ref=ptr)
    owned = []
    for i, field in enumerate(fields):
        value = values[i]
        context.nrt.incref(builder, ftypes[i], value)
        if i in lent:  # the reference goes to owner_, the field keeps no meminfo
            ary = context.make_array(ftypes[i])(context, builder, value)
            owned.append(ary.meminfo)
            ary.meminfo = cgutils.get_null_value(ary.meminfo.type)
            value = ary._getvalue()
        setattr(data, field, value)
    if lent:
        data.owner_ = context.make_tuple(builder, own_type, owned)
    inst = cgutils.create_struct_proxy(inst_type)(context, builder)
    inst.meminfo = meminfo
    return inst._getvalue()


def packer(proxy: type) -> Any:
    """A compiled-code intrinsic ``pack(tup)`` that returns a new structref of ``proxy``'s
    type (from :func:`struct_of`) whose fields are the items of the tuple ``tup``, in order.

    It does what ``proxy(*tup)`` does in compiled code (allocate the payload, store each
    field with one reference taken) without structref's generic constructor, which builds
    a star-args tuple and compiles one overload per type: about 1.2 s -> 0.7 s to compile
    the mirror after install.

    For a type made with ``lend``, the array fields are stored *lent*: without their
    meminfo, so compiled code that reads them takes no reference count (Numba's
    ``NRT_incref`` / ``NRT_decref`` return at once for a null meminfo; otherwise an atomic
    increment and decrement of the meminfo, a separate cache line, on every array read in
    every kernel: 4-7 % of the batched env's kernel time, A/B in BENCHMARKS.md). The
    references the payload owns are kept in one more field, ``owner_`` (a tuple of the
    arrays' meminfos, never read by kernels) and given back by the structref's destructor,
    so the arrays live exactly as long as the structref, whatever holds it (a proxy, a
    typed list, another structref), also after the state's arrays were replaced. The one
    rule: an array read from it must not outlive it (kernels taking the mirror return
    scalars; a kernel storing such an array elsewhere would store it without an owner)."""

    @intrinsic
    def pack(typingctx, tup):
        inst_type = _inst_type(proxy, tup.types)[0]

        def codegen(context, builder, sig, args):
            values = [builder.extract_value(args[0], i) for i in range(len(tup.types))]
            return _build(context, builder, proxy, tup.types, values)

        return inst_type(tup), codegen

    return pack


JobArraysK = struct_of(JobArrays, lend=True)
NodeArraysK = struct_of(NodeArrays, lend=True)
OptionsK = struct_of(Options, lend=True)
ParamsK = struct_of(Params, lend=True)
#: The same fields as :data:`ParamsK` under another Numba type, for runs without
#: interference (``opts.interf_mode == 0``): the kernels compiled for it leave the
#: interference chain out (see :mod:`hetgym.sim.kernels.interference`); chosen by :func:`mirror`.
PlainParamsK = struct_of(Params, name="PlainParamsK", lend=True)
JobStateK = struct_of(JobState, lend=True)
NodeStateK = struct_of(NodeState, lend=True)
RunStateK = struct_of(RunState, lend=True)
StateK = struct_of(State, lend=True)


_PLAIN_TYPE = _TYPES[PlainParamsK][0]


def is_plain(typ: Any) -> bool:
    """Whether the Numba type ``typ`` is that of :data:`PlainParamsK` (for overloads that
    leave a mechanism out of the kernels compiled for runs without it)."""
    return isinstance(typ, _PLAIN_TYPE)


class Mirror(NamedTuple):
    """The kernels' view of one simulator's state (structref proxies over its arrays)."""

    P: Any      # ParamsK
    S: Any      # StateK
    nodes: Any  # NodeArraysK (= P.nodes)
    ns: Any     # NodeStateK (= S.node)
    run: Any    # RunStateK (= S.run)
    jobs: Any   # JobArraysK (= P.jobs)
    js: Any     # JobStateK (= S.job)


def _members(builder: Any, tupty: Any, value: Any) -> list:
    return [builder.extract_value(value, i) for i in range(len(tupty.types))]


@intrinsic
def _pack_mirror(typingctx, P, S):
    """``(kp, kpp, *rest)``: the fields of :class:`Mirror` for the NamedTuples ``P``
    (:class:`Params`) and ``S`` (:class:`State`), ``P`` packed twice, as a
    :data:`ParamsK` ``kp`` and as a :data:`PlainParamsK` ``kpp`` (the same parts; the
    caller keeps one). Each structref is built as :func:`packer` builds it, straight from
    the arguments' members: no intermediate tuples, and one compiled function, so one
    unboxing of the state's ~85 arrays, for runs with and without interference."""
    jobs_t = _inst_type(JobArraysK, P.types[0].types)[0]
    nodes_t = _inst_type(NodeArraysK, P.types[1].types)[0]
    opts_t = _inst_type(OptionsK, P.types[2].types)[0]
    kp_fields = (jobs_t, nodes_t, opts_t) + tuple(P.types[3:])
    kp_t = _inst_type(ParamsK, kp_fields)[0]
    kpp_t = _inst_type(PlainParamsK, kp_fields)[0]
    js_t = _inst_type(JobStateK, S.types[0].types)[0]
    ns_t = _inst_type(NodeStateK, S.types[1].types)[0]
    run_t = _inst_type(RunStateK, S.types[2].types)[0]
    ks_fields = (js_t, ns_t, run_t) + tuple(S.types[3:])
    ks_t = _inst_type(StateK, ks_fields)[0]
    ret = types.Tuple((kp_t, kpp_t, ks_t, nodes_t, ns_t, run_t, jobs_t, js_t))

    def codegen(context, builder, sig, args):
        pv, sv = _members(builder, P, args[0]), _members(builder, S, args[1])
        parts = []
        for proxy, k, tupty, vals in ((JobArraysK, 0, P, pv), (NodeArraysK, 1, P, pv),
                                      (OptionsK, 2, P, pv), (JobStateK, 0, S, sv),
                                      (NodeStateK, 1, S, sv), (RunStateK, 2, S, sv)):
            parts.append(_build(context, builder, proxy, tupty.types[k].types,
                                _members(builder, tupty.types[k], vals[k])))
        jobs, nodes, opts, js, ns, run = parts
        kp = _build(context, builder, ParamsK, kp_fields, [jobs, nodes, opts] + pv[3:])
        kpp = _build(context, builder, PlainParamsK, kp_fields, [jobs, nodes, opts] + pv[3:])
        context.nrt.decref(builder, opts_t, opts)  # held by kp and kpp only
        ks = _build(context, builder, StateK, ks_fields, [js, ns, run] + sv[3:])
        return context.make_tuple(builder, ret, [kp, kpp, ks, nodes, ns, run, jobs, js])

    return ret(P, S), codegen


@njit(cache=True, no_cfunc_wrapper=True)
def _mirror_nb(P, S):
    return _pack_mirror(P, S)


def mirror(params: Params, state: State) -> Mirror:
    """The structref mirror of ``(params, state)`` (same arrays, no copies); ``P`` is a
    :data:`PlainParamsK` when the run has no interference, else a :data:`ParamsK`."""
    load_registries()  # the first compiled call of a run: Numba's start without scipy.linalg
    install_notice()  # a compile announces itself (hetgym.compile_log)
    kp, kpp, *rest = _mirror_nb(params, state)
    return Mirror(kpp if params.opts.interf_mode == 0 else kp, *rest)
