"""tt.dot path (b): simdgroup_matrix<float, 8, 8> tiles (the helper of ops_dot, no op of its own).

C (as fp32), A and B are staged row-major in threadgroup memory by their owners; simdgroup w
then computes work units w, w + W, ... (a unit: TM x TN output tiles of one batch), each
accumulator starting from C and taking the k-steps of 8 in increasing order. An MMA computes
every element as the fma chain over its 8 k values in order, starting from the running
accumulator, so chaining the steps gives exactly the general path's chain over K. fp16/bf16
fragments are widened to fp32 in registers (exact; same lane ownership) so the MMA is fp32,
as on the register path. The result returns to D's layout through the same scratch.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from msltrans.ir.model import Value
from msltrans.lower.emitter import LANE, WARP, Emitter
from msltrans.lower.ops_dot import (
    _BYTES,
    METAL_THREADGROUP_BYTES,
    DotInfo,
    _align16,
    render,
    staging_source,
)

MAX_TILES_PER_UNIT = 16  # 16 accumulators = 32 fp32 registers per lane
_FLOAT_STAGE = {"float", "half", "bfloat"}


@dataclass(frozen=True)
class SimdPlan:
    tm: int  # 8x8 tiles per unit along M
    tn: int  # ... along N
    units_n: int  # units along N in one batch
    units_per_batch: int
    units: int
    num_warps: int
    off_a: int  # byte offsets in the scratch (C is at 0)
    off_b: int
    total_bytes: int

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
    """A plan when the shapes and types allow 8x8 tiles and the staging fits; else None."""
    if info.is_int or info.in_t not in _FLOAT_STAGE or info.out_t not in _FLOAT_STAGE:
        return None
    if info.m % 8 or info.n % 8 or info.k % 8:
        return None
    size = _BYTES[info.in_t]
    off_a = _align16(info.batch * info.m * info.n * 4)
    off_b = off_a + _align16(info.batch * info.m * info.k * size)
    total = off_b + _align16(info.batch * info.k * info.n * size)
    if total > METAL_THREADGROUP_BYTES:
        return None
    warps = em.layout(info.out).ll.num_warps
    tm, tn = _tiles(info.m // 8, info.n // 8, info.batch, warps)
    units_n = info.n // 8 // tn
    per_batch = info.m // 8 // tm * units_n
    return SimdPlan(tm, tn, units_n, per_batch, per_batch * info.batch, warps, off_a, off_b,
                    total)


def stats(info: DotInfo, p: SimdPlan, regs: int) -> list[tuple[str, object]]:
    units_per_warp = -(-p.units // p.num_warps)
    return [
        ("path", "simdgroup"), ("k", info.k), ("tiles", f"{p.tm}x{p.tn}"),
        ("units", p.units), ("warps", p.num_warps),
        ("mma", info.batch * info.m // 8 * info.n // 8 * info.k // 8),
        ("mma_per_simdgroup", units_per_warp * p.tm * p.tn * info.k // 8),
        ("scratch_bytes", p.total_bytes), ("barriers", 3),
        ("regs_out", regs), ("mma_regs", 2 * (p.tm * p.tn + p.tm + p.tn)),
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
               acc: str = "") -> dict[str, object]:
    """The simdgroup_mma macro's parameters. init: "fill" | "load" (from `sc`) | "" (none);
    `acc` names a K loop's resident matrices (then the macro uses slot `s` of it)."""
    return {
        "warp": WARP, "num_warps": p.num_warps, "units": p.units,
        "units_per_batch": p.units_per_batch, "units_n": p.units_n,
        "unit_rows": 8 * p.tm, "unit_cols": 8 * p.tn, "tm": p.tm, "tn": p.tn,
        "sa": "sa", "sb": "sb", "sc": "sc", "stage_t": info.in_t,
        "a_batch": info.m * info.k, "b_batch": info.k * info.n, "c_batch": info.m * info.n,
        "k": info.k, "n": info.n, "convert": info.in_t != "float",
        "init": init, "steps": steps, "store": store, "resident": bool(acc),
        "acc": f"{acc}[s]" if acc else "acc",
    }


def emit(em: Emitter, info: DotInfo, p: SimdPlan) -> None:
    scratch = em.need_scratch(p.total_bytes)
    src_a, src_b = staging_source(em, info.a), staging_source(em, info.b)
    L_a, L_b, L_c, L_o = (em.layout(v) for v in (src_a, src_b, info.c, info.out))
    a, b, c = em.name(src_a), em.name(src_b), em.name(info.c)
    d = em.declare(info.out)
    zero_c = is_zero_splat(em, info.c)
    render(em, "stats", items=stats(info, p, L_o.regs) + [("c", "zero" if zero_c else "staged")])
    em.line("{")
    em.indent(1)
    for ctype, name, off in (("float", "sc", 0), (info.in_t, "sa", p.off_a),
                             (info.in_t, "sb", p.off_b)):
        render(em, "scratch_region", ctype=ctype, name=name, scratch=scratch, byte_offset=off)
    em.line("threadgroup_barrier(mem_flags::mem_threadgroup);  // earlier scratch readers done")
    staged = [(a, L_a, "sa", info.a_conv), (b, L_b, "sb", info.b_conv)]
    if not zero_c:
        staged.insert(0, (c, L_c, "sc", "float"))
    for src, L, dst, conv in staged:
        render(em, "stage", dst=dst, src=src, layout=L.name, regs=L.regs, lane=LANE,
               warp=WARP, conv=conv)
    em.line("threadgroup_barrier(mem_flags::mem_threadgroup);")
    render(em, "simdgroup_mma", p=mma_params(info, p, init="fill" if zero_c else "load",
                                             steps=True, store=True))
    em.line("threadgroup_barrier(mem_flags::mem_threadgroup);  // all tiles stored")
    render(em, "read_back", d=d, out_t=info.out_t, src="sc", layout=L_o.name, regs=L_o.regs,
           lane=LANE, warp=WARP)
    em.indent(-1)
    em.line("}")
