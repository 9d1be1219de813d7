"""lower_module: one public TTGIR function → a complete MSL kernel (`MslProgram`)."""

from __future__ import annotations

from dataclasses import dataclass

from msltrans.analysis.axis_info import AxisAnalysis
from msltrans.errors import MetalNonRecoverableError
from msltrans.ir.model import Function, Module
from msltrans.ir.types import PointerType, ScalarType
from msltrans.lower import msl_types, ops_debug
from msltrans.lower.cfg import emit_region
from msltrans.lower.emitter import Emitter, sanitize
from msltrans.lower.program import MslParam, MslProgram
from msltrans.lower.templates import render

METAL_SIMD_WIDTH = 32
MAX_THREADS = 1024


@dataclass(frozen=True)
class _ParamDecl:
    decl: str
    index: int


def _params(fn: Function, em: Emitter) -> tuple[list[MslParam], list[_ParamDecl]]:
    params, decls = [], []
    used: set[str] = set()
    for index, arg in enumerate(fn.args):
        where = fn.loc.short()
        name = sanitize(arg.name)
        if name in used:  # e.g. a descriptor's `x.shape.0` appears as i64 and as i32
            name = f"{name}_{index}"
        used.add(name)
        t = arg.value.type
        if isinstance(t, PointerType):
            msl = msl_types.ctype(t, where)
            decl = f"{msl} {name}"
            params.append(MslParam(arg.name, "pointer", msl_types.triton_type(t), index, None, msl))
        elif isinstance(t, ScalarType):
            msl = msl_types.ctype(t, where)
            decl = f"constant {msl}& {name}"
            params.append(MslParam(arg.name, "scalar", msl_types.triton_type(t), index,
                                   msl_types.arg_cast(t, where), msl))
        else:
            raise MetalNonRecoverableError(f"kernel argument `{arg.name}` of type {t}",
                                           location=where,
                                           hint="tensor descriptors are not supported")
        em.bind(arg.value, name)
        decls.append(_ParamDecl(decl, index))
    return params, decls


def lower_module(module: Module, kernel: str | None = None, *,
                 enable_fp_fusion: bool = True) -> MslProgram:
    """Lower the public function `kernel` (default: the only public one) to MSL.

    `enable_fp_fusion` is Triton's option of that name (default on, as in Triton): an fmul
    whose only use is an fadd/fsub becomes one `fma()`, as NVIDIA's ptxas would fuse it.
    """
    fn = module.function(kernel)
    if module.threads_per_warp != METAL_SIMD_WIDTH:
        raise MetalNonRecoverableError(
            f"module built for {module.threads_per_warp} threads per warp",
            location=fn.loc.short(), hint="build TTGIR with 32 threads per warp for Metal")
    if module.num_ctas != 1:
        raise MetalNonRecoverableError("num_ctas > 1", location=fn.loc.short(),
                                       hint="one Triton program is one threadgroup")
    threads = module.num_warps * METAL_SIMD_WIDTH
    if threads > MAX_THREADS:
        raise MetalNonRecoverableError(f"{threads} threads per threadgroup",
                                       location=fn.loc.short(), hint="num_warps <= 32")
    em = Emitter(enable_fp_fusion=enable_fp_fusion)
    em.axis = AxisAnalysis(fn)
    params, decls = _params(fn, em)
    ops_debug.begin(em, fn.name)
    for block in fn.body.blocks:
        em.analyse(block)
    em.module = module  # type: ignore[attr-defined]  # tt.call finds its callees here
    emit_region(em, fn.body)  # several blocks when Triton lowered an early return
    debug_sites = ops_debug.finish(em)  # tt.print / tt.assert: one hidden buffer after the rest
    if debug_sites:
        decls.append(_ParamDecl(ops_debug.buffer_decl(), len(params)))
    layout_data = [ref.helper_data() for ref in em.layouts.all()]
    scratch_bytes = (em.scratch_bytes + 15) // 16 * 16  # Metal's 16-byte granularity
    scratch_words = scratch_bytes // 8
    name = sanitize(fn.name)
    source = render(
        "kernel.metal.j2", function=fn.name, source=fn.loc.short(), num_warps=module.num_warps,
        threads=threads, layouts=layout_data, prelude=em.prelude, kernel_name=name,
        params=decls, scratch_words=scratch_words, scratch_bytes=scratch_bytes,
        body=em.lines)
    return MslProgram(
        source=source, kernel_name=name, num_warps=module.num_warps, threads_per_group=threads,
        params=tuple(params), shared_bytes=scratch_bytes,
        layouts=tuple(ref.encoding for ref in em.layouts.all()), debug_sites=debug_sites,
        buffer_alignment=tuple(sorted((i, a) for i, a in em.buffer_alignment.items() if a > 1)))
