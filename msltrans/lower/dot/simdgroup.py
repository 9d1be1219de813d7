"""tt.dot path (b): simdgroup_matrix<float, 8, 8> tiles.

A and B are staged in padded row-major threadgroup tiles (staging.py, 16-byte stores where
the layout allows), C (as fp32) row-major; simdgroup w then computes work units w, w + W, ...
(a unit: TM x TN output tiles of one batch) as straight-line code: `slots` = ceil(units / W)
unrolled steps, so every accumulator index is a constant and stays in registers. Each
accumulator starts from C and takes the k-steps of 8 in increasing order; an MMA computes
every element as the fma chain over its 8 k values in order, starting from the running
accumulator, so chaining the steps gives exactly the general path's chain over K. fp16/bf16
fragments are widened to fp32 in registers (exact; same lane ownership). The result returns
to D's layout through scratch, in row passes when it does not fit in one.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from msltrans.abi.limits import THREADGROUP_MEMORY_BYTES
from msltrans.ir.model import Value
from msltrans.lower.dot import staging
from msltrans.lower.dot.info import BYTES, DotInfo, align16, render
from msltrans.lower.dot.state import staging_source
from msltrans.lower.emitter import WARP, Emitter

MAX_TILES_PER_UNIT = 16  # 16 accumulators = 32 fp32 registers per lane and unit
_FLOAT_STAGE = {"float", "half", "bfloat"}


@dataclass(frozen=True)
class SimdPlan:
    tm: int  # 8x8 tiles per unit along M
    tn: int  # ... along N
    units_n: int  # units along N in one batch
    units_per_batch: int
    units: int
    num_warps: int
    lda: int  # staged row lengths (elements, padded)
    ldb: int
    ldc: int  # C's row length in scratch when it moves alone (fp32, padded like A and B)
    ldc_per_dot: int  # ... when the per-dot path stages it beside A and B
    a_bytes: int
    b_bytes: int

    def c_bytes(self, batch: int, m: int, per_dot: bool = False) -> int:
        return align16(batch * m * (self.ldc_per_dot if per_dot else self.ldc) * 4)

    @property
    def slots(self) -> int:
        """Units one simdgroup computes (the unrolled steps of its straight-line code)."""
        return -(-self.units // self.num_warps)

    @property
    def ab_bytes(self) -> int:
        return self.a_bytes + self.b_bytes

    per_dot_fits: bool = False  # C, A and B fit together (the per-dot path stages all three)

    @property
    def mma_per_unit_step(self) -> int:
        return self.tm * self.tn


def _tiles(tiles_m: int, tiles_n: int, batch: int, warps: int) -> tuple[int, int]:
    """The largest TM x TN block (<= 16 tiles, dividing the tile grid) that still gives every
    simdgroup a unit; more tiles per unit reuse each loaded fragment more often."""
    best = (1, 1)
    for tm in (1, 2, 4):
        for tn in (1, 2, 4):
            if tiles_m % tm or tiles_n % tn or tm * tn > MAX_TILES_PER_UNIT:
                continue
            if batch * (tiles_m // tm) * (tiles_n // tn) < warps and (tm, tn) != (1, 1):
                continue
            key = (tm * tn, -abs(tm - tn))
            if key > (best[0] * best[1], -abs(best[0] - best[1])):
                best = (tm, tn)
    return best


def plan(em: Emitter, info: DotInfo) -> SimdPlan | None:
    """A plan when the shapes and types allow 8x8 tiles and A and B fit in threadgroup
    memory (`per_dot_fits` says whether C fits beside them too)."""
    if info.is_int or info.in_t not in _FLOAT_STAGE or info.out_t not in _FLOAT_STAGE:
        return None
    if info.m % 8 or info.n % 8 or info.k % 8:
        return None
    size = BYTES[info.in_t]
    batch, m, n, k = info.batch, info.m, info.n, info.k
    for pad in (True, False):  # A and B padded when they fit so, else plain
        lda, ldb = staging.padded(k, info.in_t, pad), staging.padded(n, info.in_t, pad)
        a_bytes = align16(batch * m * lda * size)
        b_bytes = align16(batch * k * ldb * size)
        if a_bytes + b_bytes <= THREADGROUP_MEMORY_BYTES:
            break
    else:
        return None
    # C moving alone (a resident loop's prologue/epilogue, in the operands' own region):
    # padded unless that takes more row passes than the plain rows.
    ab = a_bytes + b_bytes
    ldc = staging.padded(n, "float")
    if _passes(batch, m, ldc, ab) > _passes(batch, m, n, ab):
        ldc = n
    per_dot = [c for c in (ldc, n) if align16(batch * m * c * 4) + ab <= THREADGROUP_MEMORY_BYTES]
    warps = em.layout(info.out).ll.num_warps
    tm, tn = _tiles(info.m // 8, info.n // 8, info.batch, warps)
    units_n = info.n // 8 // tn
    per_batch = info.m // 8 // tm * units_n
    return SimdPlan(tm, tn, units_n, per_batch, per_batch * info.batch, warps, lda, ldb, ldc,
                    per_dot[0] if per_dot else n, a_bytes, b_bytes, bool(per_dot))


def _passes(batch: int, m: int, ldc: int, budget: int) -> int:
    """Row passes moving an m x ldc fp32 C through `budget` bytes of scratch takes (by rows
    of 8)."""
    rows = max(budget, 0) // (ldc * 4) // 8 * 8
    if rows == 0 and budget < THREADGROUP_MEMORY_BYTES:
        return _passes(batch, m, ldc, THREADGROUP_MEMORY_BYTES)
    return -(-batch * m // rows) if rows else 1 << 30


def c_tile(info: DotInfo, p: SimdPlan, per_dot: bool = False) -> staging.Tile:
    """C (fp32) in scratch at `sc`: m rows of its row length per batch."""
    return staging.Tile("sc", "float", info.m, info.n, p.ldc_per_dot if per_dot else p.ldc)


def pass_rows(info: DotInfo, p: SimdPlan) -> list[tuple[int, int] | None]:
    """How a resident loop's C (fp32) moves through scratch, before and after the loop:
    [None] at once, else the [lo, hi) row ranges of its passes (each a multiple of a unit's
    rows); [] when even that is impossible. The passes fit in the loop's operand region
    (A and B, `ab_bytes`), so the epilogue adds no threadgroup memory of its own; only where
    not even one unit's rows fit there do they take up to Metal's 32 KB."""
    c_bytes = p.c_bytes(info.batch, info.m)
    for budget in (p.ab_bytes, THREADGROUP_MEMORY_BYTES):
        if c_bytes <= budget:
            return [None]
        if info.batch != 1:
            continue  # a batched C moves at once or not at all
        rows = budget // (p.ldc * 4) // (8 * p.tm) * (8 * p.tm)
        if rows:
            return [(lo, min(lo + rows, info.m)) for lo in range(0, info.m, rows)]
    return []  # the caller keeps the register path


def pass_bytes(info: DotInfo, p: SimdPlan) -> int:
    """Scratch bytes of C's largest pass (pass_rows)."""
    return max(p.c_bytes(info.batch, info.m) if rows is None
               else align16((rows[1] - rows[0]) * p.ldc * 4)
               for rows in pass_rows(info, p))


def stats(info: DotInfo, p: SimdPlan, regs: int) -> list[tuple[str, object]]:
    return [
        ("path", "simdgroup"), ("k", info.k), ("tiles", f"{p.tm}x{p.tn}"),
        ("units", p.units), ("warps", p.num_warps), ("slots", p.slots),
        ("mma", info.batch * info.m // 8 * info.n // 8 * info.k // 8),
        ("mma_per_simdgroup", p.slots * p.tm * p.tn * info.k // 8),
        ("scratch_bytes", p.c_bytes(info.batch, info.m, True) + p.ab_bytes),
        ("operand_bytes", p.ab_bytes), ("barriers", 3),
        ("regs_out", regs), ("mma_regs", 2 * (p.tm * p.tn + p.tm + p.tn)),
        ("lda", p.lda), ("ldb", p.ldb), ("pad", "yes" if p.lda != info.k else "no"),
    ]


def is_zero_splat(em: Emitter, v: Value) -> bool:
    """C is `arith.constant dense<0.0>` (+0.0: the accumulators can start filled instead of
    loaded; fma(a, b, +0.0) is the same first link either way)."""
    producer = em.producers.get(v.id)
    if producer is None or producer.name != "arith.constant" or not producer.attrs.get("splat"):
        return False
    value = producer.attrs.get("value")
    return isinstance(value, int | float) and value == 0 and math.copysign(1.0, value) > 0


def mma_params(info: DotInfo, p: SimdPlan, *, init: str, steps: bool, store: bool,
               acc: str = "", rows: tuple[int, int] | None = None) -> dict[str, object]:
    ldc = p.ldc if acc else p.ldc_per_dot
    """The simdgroup_mma macro's parameters. init: "fill" | "load" (from `sc`) | "" (none);
    `acc` names a K loop's resident matrices (then the macro uses slot `s` of it); `rows`
    limits the C load/store to units whose rows lie in [lo, hi) (a pass over C)."""
    lo, hi = rows if rows is not None else (0, 0)
    return {
        "warp": WARP, "num_warps": p.num_warps, "units": p.units, "slots": p.slots,
        "guard": p.units % p.num_warps != 0,
        "units_per_batch": p.units_per_batch, "units_n": p.units_n,
        "unit_rows": 8 * p.tm, "unit_cols": 8 * p.tn, "tm": p.tm, "tn": p.tn,
        "sa": "sa", "sb": "sb", "sc": "sc", "stage_t": info.in_t,
        "a_batch": info.m * p.lda, "b_batch": info.k * p.ldb, "c_batch": info.m * ldc,
        "lda": p.lda, "ldb": p.ldb, "n": ldc, "k": info.k,
        "convert": info.in_t != "float", "init": init, "steps": steps, "store": store,
        "resident": bool(acc), "acc": f"{acc}[s]" if acc else "acc",
        "row_lo": lo, "row_hi": hi, "rows": rows is not None,
    }


def stage_operands(em: Emitter, info: DotInfo, p: SimdPlan) -> None:
    """A and B into their padded tiles `sa` / `sb` (the caller declared them)."""
    for v, name, rows, cols, ld, conv in (
            (info.a, "sa", info.m, info.k, p.lda, info.a_conv),
            (info.b, "sb", info.k, info.n, p.ldb, info.b_conv)):
        src = staging_source(em, v)
        staging.stage(em, src, staging.Tile(name, info.in_t, rows, cols, ld), conv)


def emit(em: Emitter, info: DotInfo, p: SimdPlan) -> None:
    """One tt.dot on its own: stage C, A, B; multiply; read D back."""
    c_bytes = p.c_bytes(info.batch, info.m, per_dot=True)
    scratch = em.need_scratch(c_bytes + p.ab_bytes)
    L_o = em.layout(info.out)
    d = em.declare(info.out)
    zero_c = is_zero_splat(em, info.c)
    render(em, "stats", items=stats(info, p, L_o.regs) + [("c", "zero" if zero_c else "staged")])
    em.line("{")
    em.indent(1)
    for ctype, name, off in (("float", "sc", 0), (info.in_t, "sa", c_bytes),
                             (info.in_t, "sb", c_bytes + p.a_bytes)):
        render(em, "scratch_region", ctype=ctype, name=name, scratch=scratch, byte_offset=off)
    em.line("threadgroup_barrier(mem_flags::mem_threadgroup);  // earlier scratch readers done")
    if not zero_c:
        staging.stage(em, info.c, c_tile(info, p, per_dot=True), "float")
    stage_operands(em, info, p)
    em.line("threadgroup_barrier(mem_flags::mem_threadgroup);")
    render(em, "simdgroup_mma", p=mma_params(info, p, init="fill" if zero_c else "load",
                                             steps=True, store=True))
    em.line("threadgroup_barrier(mem_flags::mem_threadgroup);  // all tiles stored")
    staging.read_back(em, d, L_o, c_tile(info, p, per_dot=True), info.out_t)
    em.indent(-1)
    em.line("}")
