"""ttg.convert_layout: in registers when each thread already holds what it needs,
otherwise through threadgroup scratch (owners write row-major, barrier, all read)."""

from __future__ import annotations

from msltrans.ir.model import Op, Value
from msltrans.ir.types import TensorType
from msltrans.layout import gather_registers
from msltrans.lower.dot.choose import folds_convert  # a tt.dot operand it stages itself
from msltrans.lower.dot.state import take_prelowered
from msltrans.lower.emitter import LANE, WARP, Emitter
from msltrans.lower.registry import lowers

SCRATCH_CHUNK_BYTES = 16384
_BYTES = {"bool": 1, "char": 1, "uchar": 1, "short": 2, "int": 4, "long": 8, "ulong": 8, "half": 2,
          "bfloat": 2, "float": 4}
ELEMENT_BYTES = _BYTES  # bytes per MSL element type (pointers travel as ulong)


def convert_through_scratch(em: Emitter, src: Value, out: Value) -> None:
    """out gets src's elements by row-major flat index (so reshape can use it too)."""
    assert isinstance(src.type, TensorType)
    c = em.ctype(src)
    # Pointers are 64-bit addresses: they travel through the scratch as ulong and are
    # cast back to their MSL pointer type on the way out.
    stype, wcast, rcast = ("ulong", "(ulong)", f"({c})") if c.endswith("*") else (c, "", "")
    numel, size = src.type.numel, _BYTES[stype]
    # Whole tensor when it fits in half of the threadgroup memory; else passes over
    # flat-index ranges of 16 KB, leaving the other half to other threadgroup users (a
    # register-path dot operand of 128x128 fp16 would otherwise take all 32 KB: tutorial 06's
    # backward at d128).
    chunk = numel if numel * size <= SCRATCH_CHUNK_BYTES else SCRATCH_CHUNK_BYTES // size
    scratch = em.need_scratch(chunk * size)
    L_src, L_out = em.layout(src), em.layout(out)
    name = em.declare(out)
    em.render("scratch_convert", ctype=c, scratch=scratch, src=em.name(src), dst=name,
              src_layout=L_src.name, dst_layout=L_out.name, src_regs=L_src.regs,
              dst_regs=L_out.regs, lane=LANE, warp=WARP, chunked=chunk < numel,
              numel=numel, chunk=chunk, stype=stype, wcast=wcast, rcast=rcast)


@lowers("ttg.convert_layout")
def convert_layout(em: Emitter, op: Op) -> None:
    src, out = op.operands[0], op.results[0]
    if take_prelowered(em, op):
        em.line("// done by the K loop's epilogue: its accumulator was read back in this layout")
        return
    if folds_convert(em, op):
        return
    plan = gather_registers(em.layout(out).ll, [em.layout(src).ll], lambda c: (0, c))
    if plan is not None:
        em.copy_registers(out, [(em.name(src), r) for _, r in plan])
        return
    convert_through_scratch(em, src, out)
