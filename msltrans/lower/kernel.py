"""lower_module: one public TTGIR function → a complete MSL kernel (`MslProgram`)."""

from __future__ import annotations

from dataclasses import dataclass, replace

from msltrans import msl_version
from msltrans.abi.limits import (
    MAX_ARGUMENT_BUFFER_POINTERS,
    MAX_THREADS_PER_THREADGROUP,
    SIMD_WIDTH,
    THREADGROUP_MEMORY_BYTES,
)
from msltrans.analysis.axis_info import AxisAnalysis
from msltrans.errors import MetalNonRecoverableError
from msltrans.ir.model import Function, Module
from msltrans.ir.types import PointerType, ScalarType
from msltrans.lower import msl_ascii, msl_types
from msltrans.lower.control import ops_debug
from msltrans.lower.control.cfg import emit_region
from msltrans.lower.dot.choose import fragments_enabled
from msltrans.lower.dot.fragments import plan_encodings
from msltrans.lower.dot.state import PIN_NONE, PIN_SEPARATE, PIN_SHARED, pinned_bytes
from msltrans.lower.emitter import COHERENT, Emitter, sanitize
from msltrans.lower.kernel_args import (
    ARGS_NAME,
    SPILL_NAME,
    ArgsStruct,
    PointerStruct,
    direct_pointers,
    layout_struct,
)
from msltrans.lower.memory import coherence
from msltrans.lower.memory.align_keys import alignment_keys
from msltrans.lower.memory.pointer_offsets import offset_roots, split_bases
from msltrans.lower.program import MslParam, MslProgram, record
from msltrans.lower.templates import render


@dataclass(frozen=True)
class _ParamDecl:
    decl: str
    index: int


@dataclass
class _Bindings:
    params: list[MslParam]
    decls: list[_ParamDecl]
    args_struct: ArgsStruct | None
    pointer_fields: list[tuple[str, str]]  # (MSL name, MSL type) of each pointer, in order
    spill: PointerStruct | None = None


def _params(fn: Function, em: Emitter, kernel_name: str) -> _Bindings:
    """Pointers bind buffer 0, 1, ... in argument order; scalars share one constant struct
    bound after them (msltrans/lower/kernel_args.py). Pointers past Metal's table move into an
    argument buffer once the body is lowered (`_place_pointers`)."""
    where = fn.loc.short()
    pointers: list[tuple[int, str, str, str]] = []    # (arg index, name, msl, triton)
    scalars: list[tuple[int, str, str, str]] = []
    used: set[str] = set()
    for index, arg in enumerate(fn.args):
        name = sanitize(arg.name)
        if name in used:  # e.g. a descriptor's `x.shape.0` appears as i64 and as i32
            name = f"{name}_{index}"
        used.add(name)
        t = arg.value.type
        if isinstance(t, PointerType):
            pointers.append((index, name, msl_types.ctype(t, where), msl_types.triton_type(t)))
        elif isinstance(t, ScalarType):
            msl_types.arg_cast(t, where)  # refuses types a launcher cannot pass
            scalars.append((index, name, msl_types.ctype(t, where), msl_types.triton_type(t)))
        else:
            raise MetalNonRecoverableError(f"kernel argument `{arg.name}` of type {t}",
                                           location=where,
                                           hint="tensor descriptors are not supported")
        em.bind(arg.value, name)
    struct = (layout_struct(f"{kernel_name}_args", [(n, m) for _, n, m, _ in scalars])
              if scalars else None)
    struct_index = len(pointers)
    by_index: dict[int, MslParam] = {}
    decls = []
    for buffer, (index, name, msl, triton) in enumerate(pointers):
        by_index[index] = MslParam(fn.args[index].name, "pointer", triton, buffer, msl)
        decls.append(_ParamDecl(f"{msl} {name}", buffer))
    if struct is not None:
        offsets = {f.name: f.offset for f in struct.fields}
        for index, name, msl, triton in scalars:
            by_index[index] = MslParam(fn.args[index].name, "scalar", triton, struct_index, msl,
                                       offset=offsets[name])
        decls.append(_ParamDecl(f"constant {struct.type_name}& {ARGS_NAME}", struct_index))
    params = [by_index[i] for i in range(len(fn.args))]
    return _Bindings(params, decls, struct, [(name, msl) for _, name, msl, _ in pointers])


def _hold_offsets(fn: Function, em: Emitter) -> None:
    """Pointers into buffers under 2 GB that are only used to address as 32-bit element
    offsets from their argument (lower/memory/pointer_offsets.py): each such argument's own value
    becomes the offset 0."""
    roots = offset_roots(fn, em.users)
    params = {arg.value.id: em.name(arg.value) for arg in set(roots.values())}
    em.offset_base = {vid: params[arg.value.id] for vid, arg in roots.items()}
    if em.axis is not None:
        em.split_address = split_bases(fn, em.producers, em.users, roots, em.axis)
    for arg in fn.args:
        if arg.value.id in params:
            param = params[arg.value.id]
            zero = em.fresh(f"{param}_at")
            em.line(f"const int {zero} = 0;  // pointers into {param}: element offsets "
                    "(buffer < 2 GB)")
            em.bind(arg.value, zero)


def _place_pointers(bindings: _Bindings, debug: bool, coherent: tuple[int, ...],
                    kernel_name: str, where: str) -> None:
    """Pointers past what Metal's table holds move into one argument buffer bound after the
    pointers that keep their slots (msltrans/lower/kernel_args.py); the scalar struct follows
    it. Decided once the body is lowered, when the debug buffer is known."""
    count = len(bindings.pointer_fields)
    direct = direct_pointers(count, bindings.args_struct is not None, debug)
    if direct == count:
        return
    spilled = count - direct
    if spilled > MAX_ARGUMENT_BUFFER_POINTERS:
        raise MetalNonRecoverableError(
            f"kernel has {count} pointer arguments: {spilled} past Metal's buffer table, "
            f"more than the {MAX_ARGUMENT_BUFFER_POINTERS} GPU addresses one setBytes carries",
            location=where, hint="pass fewer tensors (e.g. one tensor and offsets into it)")
    names = [name for name, _ in bindings.pointer_fields]
    moved = [names[i] for i in range(direct, count) if i in coherent]
    if moved:
        raise MetalNonRecoverableError(
            f"kernel has {count} pointer arguments, so the last {spilled} travel in an "
            f"argument buffer, but {', '.join(moved)} is declared coherent(device), which a "
            "pointer read from an argument buffer cannot be",
            location=where, hint="pass fewer tensors (e.g. one tensor and offsets into it)")
    struct_index = direct + 1
    params = []
    for p in bindings.params:
        if p.kind == "pointer" and p.buffer_index >= direct:
            p = replace(p, buffer_index=direct, slot=p.buffer_index - direct)
        elif p.kind == "scalar":
            p = replace(p, buffer_index=struct_index)
        params.append(p)
    bindings.params = params
    bindings.spill = PointerStruct(f"{kernel_name}_spill",
                                   tuple(bindings.pointer_fields[direct:]))
    decls = bindings.decls[:direct]
    decls.append(_ParamDecl(f"constant {bindings.spill.type_name}& {SPILL_NAME}", direct))
    if bindings.args_struct is not None:
        decls.append(_ParamDecl(f"constant {bindings.args_struct.type_name}& {ARGS_NAME}",
                                struct_index))
    bindings.decls = decls


def _coherent(em: Emitter, fn: Function, module: Module, bindings: _Bindings
              ) -> tuple[int, ...]:
    """Declare `coherent(device)` the buffers other programs' stores reach through
    (lower/memory/coherence.py); their buffer indices."""
    coherent = coherence.plan(em, fn, module)
    if not coherent:
        return ()
    msl_version.require("coherent", em.msl_version, location=fn.loc.short(),
                        what="data one program writes and another reads after an acquire "
                             "(coherent(device) buffers)")
    em.msl_features.add("coherent")
    em.coherent_values = coherence.qualified_values(em, fn, coherent)
    buffers = []
    for arg, param in zip(fn.args, bindings.params, strict=True):
        if param.kind == "pointer" and arg.value.id in coherent:
            buffers.append(param.buffer_index)
    for i, decl in enumerate(bindings.decls):
        if decl.index in buffers:
            bindings.decls[i] = _ParamDecl(f"{COHERENT} {decl.decl}", decl.index)
    return tuple(buffers)


def _version_guard(em: Emitter) -> dict[str, object] | None:
    """An `#error` for compilers older than what the kernel uses (the lowering already refused
    an older target; this catches a cached kernel compiled on an older macOS)."""
    needed = max((msl_version.FEATURES[f].version for f in em.msl_features),
                 default=msl_version.MINIMUM)
    if needed <= msl_version.MINIMUM:
        return None
    features = sorted(f for f in em.msl_features if msl_version.FEATURES[f].version == needed)
    return {"version": needed, "text": msl_version.text(needed),
            "macos": msl_version.MACOS_FOR[needed], "features": ", ".join(features)}


def lower_module(module: Module, kernel: str | None = None, *,
                 enable_fp_fusion: bool = True, msl_version_target: int | None = None,
                 dot_fragments: bool | None = None) -> MslProgram:
    """Lower the public function `kernel` (default: the only public one) to MSL.

    `enable_fp_fusion` is Triton's option of that name (default on, as in Triton): an fmul
    whose only use is an fadd/fsub becomes one `fma()`, as NVIDIA's ptxas would fuse it.
    `msl_version_target` is the MSL version to emit for (default: msl_version.target());
    an op that needs a newer one is refused.
    `dot_fragments` (Triton option of that name; default: on unless
    MSLTRANS_DOT_FRAGMENTS=0): tt.dot results may be laid out as simdgroup fragments.
    """
    fragments = fragments_enabled(dot_fragments)
    fn = module.function(kernel)
    if module.threads_per_warp != SIMD_WIDTH:
        raise MetalNonRecoverableError(
            f"module built for {module.threads_per_warp} threads per warp",
            location=fn.loc.short(), hint="build TTGIR with 32 threads per warp for Metal")
    if module.num_ctas != 1:
        raise MetalNonRecoverableError("num_ctas > 1", location=fn.loc.short(),
                                       hint="one Triton program is one threadgroup")
    threads = module.num_warps * SIMD_WIDTH
    if threads > MAX_THREADS_PER_THREADGROUP:
        raise MetalNonRecoverableError(f"{threads} threads per threadgroup",
                                       location=fn.loc.short(), hint="num_warps <= 32")
    # The fragment dots' pinned tiles and the shared scratch must fit together: else fewer
    # pinned bytes, then none (lower/dot/fragment_loop.py).
    for level in (PIN_SEPARATE, PIN_SHARED, PIN_NONE):
        program = _lower(module, fn, threads, enable_fp_fusion, msl_version_target,
                         fragments, pin_tiles=level)
        if program.shared_bytes <= THREADGROUP_MEMORY_BYTES or level == PIN_NONE:
            break
    record(program)  # MSLTRANS_RECORD_MSL (scripts/msl_identity.py)
    return program


def _lower(module: Module, fn: Function, threads: int, enable_fp_fusion: bool,
           msl_version_target: int | None, fragments: bool, *, pin_tiles: int) -> MslProgram:
    em = Emitter(enable_fp_fusion=enable_fp_fusion, pin_tiles=pin_tiles)
    em.axis = AxisAnalysis(fn)
    em.msl_version = msl_version_target or msl_version.target()
    name = sanitize(fn.name)
    bindings = _params(fn, em, name)
    ops_debug.begin(em, fn.name)
    for block in fn.body.blocks:
        em.analyse(block)
    _hold_offsets(fn, em)
    if fragments:  # dot results kept in simdgroup fragments (lower/dot/fragments.py)
        em.layouts.rewrites = plan_encodings(module, module.num_warps, em.users, em.uses,
                                              em.producers)
    em.module = module  # tt.call finds its callees here
    coherent_buffers = _coherent(em, fn, module, bindings)
    emit_region(em, fn.body)  # several blocks when Triton lowered an early return
    debug_sites = ops_debug.finish(em)  # tt.print / tt.assert: one hidden buffer after the rest
    _place_pointers(bindings, bool(debug_sites), coherent_buffers, name, fn.loc.short())
    decls = bindings.decls
    if debug_sites:
        decls.append(_ParamDecl(ops_debug.buffer_decl(), len(decls)))
    layout_data = [ref.helper_data() for ref in em.layouts.all()]
    # msl_tiles (the fragment dots' pinned tiles) sits in msl_scratch above what other
    # scratch users need while tiles are live (lower/dot/fragment_loop.py).
    tiles_bytes = pinned_bytes(em)  # 16-byte multiples already
    tiles_base = (em.scratch_beside_tiles + 15) // 16 * 16 if tiles_bytes else 0
    scratch_bytes = (max(em.scratch_bytes, tiles_base + tiles_bytes) + 15) // 16 * 16
    scratch_words = scratch_bytes // 8
    struct, spill = bindings.args_struct, bindings.spill
    declarations = "\n\n".join(d.declaration() for d in (spill, struct) if d is not None)
    arg_locals = (spill.locals() if spill else []) + (struct.locals() if struct else [])
    direct = len(bindings.pointer_fields) - (len(spill.fields) if spill else 0)
    source = msl_ascii.ascii_source(render(
        "kernel.metal.j2", function=fn.name, source=fn.loc.short(), num_warps=module.num_warps,
        threads=threads, layouts=layout_data, prelude=em.prelude, kernel_name=name,
        params=decls, scratch_words=scratch_words, scratch_bytes=scratch_bytes,
        scratch_quads=scratch_bytes // 16,
        tiles_base_words=tiles_base // 8 if tiles_bytes else None, tiles_bytes=tiles_bytes,
        args_struct=declarations, arg_locals=arg_locals, version_guard=_version_guard(em),
        body=em.lines), fn.loc.short())
    return MslProgram(
        source=source, kernel_name=name, num_warps=module.num_warps, threads_per_group=threads,
        params=tuple(bindings.params), shared_bytes=scratch_bytes,
        args_size=struct.size if struct else 0,
        layouts=tuple(ref.encoding for ref in em.layouts.all()), debug_sites=debug_sites,
        buffer_alignment=tuple(sorted((i, a) for i, a in em.buffer_alignment.items()
                                      if a > 1 and i < direct)),
        spilled_alignment=tuple(sorted((i - direct, a) for i, a in em.buffer_alignment.items()
                                       if a > 1 and i >= direct)),
        coherent_buffers=coherent_buffers, alignment_keys=alignment_keys(em, fn))
