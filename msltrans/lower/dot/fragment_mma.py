"""tt.dot path (c): the result in simdgroup-matrix fragments (fragments.py's layout F).

When D's layout is F(M, N, W), simdgroup w computes the M/W rows it owns against all N
columns: TM x TN 8x8 tiles, TM = M / (8·W), TN = N / 8. C comes from this thread's
registers (`thread_elements()` = registers 2·(j + TN·i) and +1, exact fp32 moves) or is a
+0.0 fill; D goes back to registers the same way. Nothing of C or D touches threadgroup
memory.

A comes from registers too when its value (the source of the ttg.convert_layout the dot
folds) is in F(M, K, W): the tiles simdgroup w needs, rows of its block against all K, are
exactly the ones it holds (attention's P·V: P from the first dot's fragments, rounded to
the input type elementwise, then widened back to fp32 in registers exactly as a staged
fp16 fragment is). Otherwise A is staged like B: a padded threadgroup tile written with
16-byte stores, transposed when the operand's registers run along its rows (K of a
transposed K tile), loaded with simdgroup_load's transpose flag.

Bits: the same 8x8 multiply-accumulates in the same k order from the same fp32 C as the
staged simdgroup path (simdgroup.py), so D is bit-identical to it; only where A and C
travel differs.
"""

from __future__ import annotations

from dataclasses import dataclass

from msltrans.abi.limits import THREADGROUP_MEMORY_BYTES
from msltrans.ir.model import Value
from msltrans.lower.dot import staging
from msltrans.lower.dot.fragments import MAX_FRAGMENT_TILES, is_fragment
from msltrans.lower.dot.info import BYTES, DotInfo, align16, render
from msltrans.lower.dot.simdgroup import is_zero_splat
from msltrans.lower.dot.state import TILES, pinned, staging_source
from msltrans.lower.emitter import WARP, Emitter
from msltrans.lower.layout_table import run_dim

_FLOAT_STAGE = {"float", "half", "bfloat"}


@dataclass(frozen=True)
class FragPlan:
    m: int
    n: int
    k: int
    warps: int
    a_regs: bool  # A from registers in F(M, K, W)
    a_tile: staging.Tile | None  # else where A is staged
    b_tile: staging.Tile
    a_bytes: int
    b_bytes: int

    @property
    def tm(self) -> int:
        return self.m // (8 * self.warps)

    @property
    def tn(self) -> int:
        return self.n // 8

    @property
    def staged_bytes(self) -> int:
        return self.a_bytes + self.b_bytes


def operand_source(em: Emitter, v: Value) -> Value:
    """The value whose registers feed operand `v`: the source of the ttg.convert_layout
    that is `v`'s producer and only use (the dot folds it: choose.folds_convert), else v."""
    producer = em.producers.get(v.id)
    if producer is not None and producer.name == "ttg.convert_layout" \
            and em.uses.get(v.id) == 1 and em.is_tensor(producer.operands[0]):
        return producer.operands[0]
    return v


def _tile(em: Emitter, src: Value, name: str, elem: str, rows: int,
          cols: int) -> staging.Tile:
    """A padded tile for operand `src` (rows x cols), stored transposed when its registers
    run along its rows (dim 0) rather than its columns."""
    dim, k = run_dim(em.layout(src).ll.reg)
    transposed = k > 0 and dim == 0
    ld = staging.padded(rows if transposed else cols, elem)
    return staging.Tile(name, elem, rows, cols, ld, transposed)


def _tile_bytes(t: staging.Tile) -> int:
    return align16(t.stored_rows * t.ld * BYTES[t.elem])


def plan(em: Emitter, info: DotInfo) -> FragPlan | None:
    """The fragment path's plan when D is in the fragment layout (and C, its type, too)."""
    if info.batch != 1 or info.is_int or info.out_t != "float":
        return None
    if info.in_t not in _FLOAT_STAGE:
        return None
    L = em.layout(info.out).ll
    warps = L.num_warps
    if not is_fragment(L, info.m, info.n, warps) or info.k % 8:
        return None
    if (info.m // (8 * warps)) * (info.n // 8) > MAX_FRAGMENT_TILES:
        return None
    a_src = operand_source(em, info.a)
    a_regs = (not info.a_conv and em.ctype(a_src) == info.in_t
              and is_fragment(em.layout(a_src).ll, info.m, info.k, warps))
    a_tile = None if a_regs else _tile(em, a_src, "sa", info.in_t, info.m, info.k)
    b_tile = _tile(em, operand_source(em, info.b), "sb", info.in_t, info.k, info.n)
    a_bytes = _tile_bytes(a_tile) if a_tile else 0
    b_bytes = _tile_bytes(b_tile)
    if a_bytes + b_bytes > THREADGROUP_MEMORY_BYTES:
        return None
    return FragPlan(info.m, info.n, info.k, warps, a_regs, a_tile, b_tile, a_bytes, b_bytes)


def _params(info: DotInfo, p: FragPlan, c: str, a: str, d: str) -> dict[str, object]:
    """The fragment_mma macro's parameters (every number decided here)."""
    a_t, b_t = p.a_tile, p.b_tile
    return {
        "tm": p.tm, "tn": p.tn, "k": p.k, "kt": p.k // 8,
        "row0": f"{WARP} * {8 * p.tm}u",
        "fill": not c, "c": c, "d": d, "a": a, "a_regs": p.a_regs,
        "stage_t": info.in_t, "convert": info.in_t != "float",
        "lda": a_t.ld if a_t else 0, "a_transposed": bool(a_t and a_t.transposed),
        "ldb": b_t.ld, "b_transposed": b_t.transposed,
    }


def stats(info: DotInfo, p: FragPlan, barriers: int,
          zero_c: bool) -> list[tuple[str, object]]:
    a = "regs" if p.a_regs else ("staged_t" if p.a_tile and p.a_tile.transposed else "staged")
    b = "staged_t" if p.b_tile.transposed else "staged"
    return [
        ("path", "fragment"), ("k", info.k), ("tiles", f"{p.tm}x{p.tn}"), ("warps", p.warps),
        ("mma", info.m // 8 * info.n // 8 * info.k // 8),
        ("mma_per_simdgroup", p.tm * p.tn * info.k // 8), ("a", a), ("b", b),
        ("c", "zero" if zero_c else "regs"), ("d", "regs"),
        ("scratch_bytes", p.staged_bytes), ("operand_bytes", p.a_bytes + p.b_bytes),
        ("barriers", barriers),
        ("lda", p.a_tile.ld if p.a_tile else 0), ("ldb", p.b_tile.ld), ("pad", "yes"),
    ]


def emit(em: Emitter, info: DotInfo, p: FragPlan) -> None:
    """One tt.dot on the fragment path: stage what is not in registers, multiply, done.
    Inside a loop its tiles may be pinned (fragment_loop.py): then the loop-invariant ones
    were staged before the loop and the barrier before the copies may be elided."""
    zero_c = is_zero_splat(em, info.c)
    c = "" if zero_c else em.name(info.c)
    a = em.name(staging_source(em, info.a)) if p.a_regs else ""
    d = em.declare(info.out)
    pin = pinned(em, info.out)
    operands = [(t, v, conv) for t, v, conv in ((p.a_tile, info.a, info.a_conv),
                                                (p.b_tile, info.b, info.b_conv))
                if t is not None]
    if pin is None:
        scratch = em.need_scratch(p.staged_bytes)
        offsets = {"sa": 0, "sb": p.a_bytes}
        copies = operands
        lead = True
    else:
        scratch, offsets = TILES, pin.offsets
        copies = [o for o in operands if o[0].name not in pin.hoisted]
        lead = pin.lead_barrier
    barriers = int(lead) + int(bool(copies))
    render(em, "stats", items=stats(info, p, barriers, zero_c) + [
        ("tiles_at", "pinned" if pin else "scratch"),
        ("hoisted", "+".join(sorted(pin.hoisted)) if pin and pin.hoisted else "-")])
    em.line("{")
    em.indent(1)
    for t, _, _ in operands:
        render(em, "scratch_region", ctype=t.elem, name=t.name, scratch=scratch,
               byte_offset=offsets[t.name])
    if lead:
        em.line("threadgroup_barrier(mem_flags::mem_threadgroup);  // earlier readers done")
    for t, v, conv in copies:
        staging.stage(em, staging_source(em, v), t, conv)
    if copies:
        em.line("threadgroup_barrier(mem_flags::mem_threadgroup);  // tiles written")
    render(em, "fragment_mma", p=_params(info, p, c, a, d))
    em.indent(-1)
    em.line("}")
