"""tt.dot: D = A @ B + C with one meaning on every path.

Each output element is the chain acc = fma(a[i, k], b[k, j], acc) over k = 0, 1, ..., K-1 in
increasing order, starting from C's element; a K loop carries the accumulator, so the whole
sum is one in-order chain (Triton's FMA path on NVIDIA rounds the same way: fp32 ieee dots
are bit-identical across vendors).

- fp32 inputs: fp32 fma chain. fp16 / bf16 inputs: each product is formed in fp32 (exact:
  11+11 and 8+8 significand bits fit in 24) and accumulated in fp32 by the same chain; with
  an fp16 accumulator (out_dtype=float16) C is widened to fp32, the chain runs in fp32 and the
  result is rounded to fp16 once at the end of each tt.dot (NVIDIA's FMA path rounds to fp16
  after every step instead; ours is the more accurate one and is what we promise).
- int8 inputs: exact int32 products, int32 sum with two's-complement wrap-around.
- fp64: follows the project's fp64 policy (msl_types: downcast to fp32 with a warning, or
  MSLTRANS_FP64=refuse); the dot then is the fp32 dot.
- fp8 operands (f8E4M3FN / f8E5M2, either mix): widened to fp16 where they are read or
  staged (exact: every fp8 value is an fp16 value), then the fp16 dot above.

Paths (one module each in this package; choose.py picks):
 (a) registers.py: the chain on each thread's own #dot_op registers;
 (a') scratch.py: the chain reading A and B from threadgroup memory;
 (b) simdgroup.py: simdgroup_matrix 8x8 tiles for float dots with M, N, K multiples of 8,
     A and B staged in padded threadgroup tiles (staging.py); resident.py keeps a K loop's
     accumulator in simdgroup matrices across the loop, and direct_store.py stores it from
     them straight to device memory where the loop's result only reaches one tt.store.
 (c) fragment_mma.py: the same 8x8 tiles when the result's layout is the simdgroup
     fragment layout (fragments.py decides that for the whole kernel): C, D and an A that
     comes from another dot's fragments stay in registers.
(b) and (a') stage A and B in threadgroup memory anyway, so a ttg.convert_layout feeding
them is folded: the dot stages the convert's source (choose.folds_convert).
Refused: tf32 / tf32x3 / bf16x3 input precisions (Apple has no tf32).
"""

from __future__ import annotations

from msltrans.ir.model import Op
from msltrans.lower.dot import fragment_mma, registers, resident, scratch
from msltrans.lower.dot import simdgroup as sg
from msltrans.lower.dot.choose import choose
from msltrans.lower.dot.info import check
from msltrans.lower.dot.state import is_folded
from msltrans.lower.emitter import Emitter
from msltrans.lower.registry import lowers


@lowers("tt.dot")
def dot(em: Emitter, op: Op) -> None:
    info = check(em, op)
    path, plan = choose(em, info)
    if path == "fragment":
        fragment_mma.emit(em, info, plan)  # type: ignore[arg-type]
    elif path == "simdgroup":
        step = resident.resident_step(em, op)  # its K loop keeps the accumulator resident
        if step is not None:
            resident.emit_step(em, info, *step)
        else:
            sg.emit(em, info, plan)  # type: ignore[arg-type]
    elif path == "registers":
        if is_folded(em, info.a) or is_folded(em, info.b):
            em.fail("internal: an operand was folded but the dot takes the register path")
        registers.emit(em, info, plan)  # type: ignore[arg-type]
    else:
        scratch.emit(em, info)
