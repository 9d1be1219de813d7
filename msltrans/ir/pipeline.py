"""Triton's generic pass pipeline for the Metal target: TTIR, then TTGIR.

The ONE place the pass lists live; the Triton plugin's stages call these too. Only generic
passes appear: NVIDIA-specific ones abort the process on a "metal:<chip>" target, and
accelerate_matmul / reduce_data_duplication / pipeline would introduce MMA or shared-memory
encodings the lowering does not handle.
"""

from __future__ import annotations

from typing import Any

from triton._C.libtriton import ir, passes

from msltrans._triton_compat import add_block_pointer_rewrite
from msltrans.abi.limits import SIMD_WIDTH

DEFAULT_CHIP = "apple-m1"


def metal_target(chip: str = DEFAULT_CHIP) -> str:
    return f"metal:{chip}"


def make_ttir(mod: Any, opt: Any) -> Any:
    pm = ir.pass_manager(mod.context)
    passes.common.add_inliner(pm)
    add_block_pointer_rewrite(pm)  # where block pointers still reach the backend (<= 3.7)
    passes.ttir.add_rewrite_tensor_descriptor_to_pointer(pm)
    passes.common.add_canonicalizer(pm)
    passes.ttir.add_combine(pm)
    passes.ttir.add_reorder_broadcast(pm)
    passes.common.add_cse(pm)
    passes.common.add_symbol_dce(pm)
    passes.ttir.add_loop_unroll(pm)
    pm.run(mod, "make_ttir")
    return mod


def make_ttgir(mod: Any, opt: Any) -> Any:
    chip = getattr(opt, "arch", None) or DEFAULT_CHIP
    pm = ir.pass_manager(mod.context)
    passes.ttir.add_convert_to_ttgpuir(pm, metal_target(chip), opt.num_warps, SIMD_WIDTH, 1)
    passes.ttgpuir.add_coalesce(pm)
    passes.ttgpuir.add_remove_layout_conversions(pm)
    passes.ttgpuir.add_optimize_thread_locality(pm)
    passes.ttgpuir.add_remove_layout_conversions(pm)
    passes.ttir.add_loop_aware_cse(pm)
    # Flatten `tl.range(..., flatten=True)` nests into one loop, then clean up and hoist: the
    # order of NVIDIA's sm80/sm90 and AMD's make_ttgir (Triton 3.9).
    passes.ttgpuir.add_fuse_nested_loops(pm)
    passes.common.add_canonicalizer(pm)
    passes.ttir.add_triton_licm(pm)
    passes.common.add_canonicalizer(pm)
    passes.ttir.add_loop_aware_cse(pm)
    passes.ttgpuir.add_remove_layout_conversions(pm)
    passes.ttgpuir.add_reorder_instructions(pm)
    passes.common.add_symbol_dce(pm)
    passes.common.add_sccp(pm)
    passes.common.add_cse(pm)
    passes.common.add_canonicalizer(pm)
    pm.run(mod, "make_ttgir")
    return mod
