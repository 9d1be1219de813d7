"""tt.dot path (a'), scratch: the chain reading A and B from threadgroup memory, for operand
layouts that do not line up with the result's (Triton's passes do not produce those today)."""

from __future__ import annotations

from msltrans.abi.limits import THREADGROUP_MEMORY_BYTES
from msltrans.lower.dot.info import BYTES, DotInfo, align16, render
from msltrans.lower.dot.registers import step_expr
from msltrans.lower.dot.state import staging_source
from msltrans.lower.emitter import LANE, WARP, Emitter


def scratch_bytes_ab(info: DotInfo) -> tuple[int, int]:
    """(byte offset of B, total bytes) for A and B staged row-major in their own type."""
    size = BYTES[info.in_t]
    off_b = align16(info.batch * info.m * info.k * size)
    return off_b, off_b + align16(info.batch * info.k * info.n * size)


def emit(em: Emitter, info: DotInfo) -> None:
    off_b, total = scratch_bytes_ab(info)
    if total > THREADGROUP_MEMORY_BYTES:
        em.fail(f"tt.dot operands need {total} bytes of threadgroup memory (Metal has 32 KB)",
                "use smaller BLOCK sizes")
    scratch = em.need_scratch(total)
    src_a, src_b = staging_source(em, info.a), staging_source(em, info.b)
    L_a, L_b, L_o = em.layout(src_a), em.layout(src_b), em.layout(info.out)
    c, a, b = em.name(info.c), em.name(src_a), em.name(src_b)
    d = em.declare(info.out)
    render(em, "stats", items=[("path", "scratch"), ("k", info.k), ("regs_out", L_o.regs),
                               ("regs_a", L_a.regs), ("regs_b", L_b.regs),
                               ("scratch_bytes", total), ("barriers", 2), ("mma", 0)])
    em.line("{")
    em.indent(1)
    render(em, "scratch_region", ctype=info.in_t, name="sa", scratch=scratch, byte_offset=0)
    render(em, "scratch_region", ctype=info.in_t, name="sb", scratch=scratch,
           byte_offset=off_b)
    em.line("threadgroup_barrier(mem_flags::mem_threadgroup);  // earlier scratch readers done")
    for src, L, dst, conv in ((a, L_a, "sa", info.a_conv), (b, L_b, "sb", info.b_conv)):
        render(em, "stage", dst=dst, src=src, layout=L.name, regs=L.regs, lane=LANE,
               warp=WARP, conv=conv)
    em.line("threadgroup_barrier(mem_flags::mem_threadgroup);")
    rank = len(DotInfo.shape(info.out))
    coords = [f"uint i = {L_o.coord_fn(rank - 2)}(r, {LANE}, {WARP});",
              f"uint j = {L_o.coord_fn(rank - 1)}(r, {LANE}, {WARP});"]
    row_base, col_base = f"i * {info.k}u", "j"
    if rank == 3:
        coords.append(f"uint bt = {L_o.coord_fn(0)}(r, {LANE}, {WARP});")
        row_base = f"(bt * {info.m}u + i) * {info.k}u"
        col_base = f"bt * {info.k * info.n}u + j"
    render(em, "fma_scratch", d=d, c=c, regs=L_o.regs, k=info.k, acc_t=info.acc_t,
           out_t=info.out_t, init=f"{info.acc_t}({c}[r])", row_base=row_base,
           col_base=col_base, coords=coords,
           step=step_expr(info, "sa[a_base + k]", f"sb[b_base + k * {info.n}u]"))
    em.indent(-1)
    em.line("}")


