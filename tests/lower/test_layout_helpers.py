"""The MSL coordinate helpers (`Lk_d<i>`, `Lk_flat`, register part joined to one lane/warp
expression) equal the linear layout's own coord() for every (register, lane, warp), run on
the simulator: blocked layouts in 1-3 dims, slices, broadcasts, and linear layouts whose
bases overlap (the XOR form)."""

from __future__ import annotations

import random

import numpy as np

from msltrans.layout import LinearLayout
from msltrans.lower.layout_table import LayoutRef
from msltrans.lower.templates import macro_text
from tests.support.run_kernel import sim_or_skip
from tests.support.triton_layouts import blocked_text

LAYOUTS = [
    ("#ttg.blocked<{sizePerThread = [4], threadsPerWarp = [32], warpsPerCTA = [4], "
     "order = [0]}>", (1024,)),
    ("#ttg.blocked<{sizePerThread = [1, 8], threadsPerWarp = [8, 4], warpsPerCTA = [4, 1], "
     "order = [1, 0]}>", (64, 32)),
    ("#ttg.blocked<{sizePerThread = [4, 4], threadsPerWarp = [2, 16], warpsPerCTA = [4, 1], "
     "order = [1, 0]}>", (64, 64)),
    ("#ttg.slice<{dim = 1, parent = #ttg.blocked<{sizePerThread = [1, 8], threadsPerWarp = "
     "[8, 4], warpsPerCTA = [4, 1], order = [1, 0]}>}>", (64,)),
    ("#ttg.blocked<{sizePerThread = [1, 1], threadsPerWarp = [4, 8], warpsPerCTA = [2, 2], "
     "order = [0, 1]}>", (2, 16)),  # a shape smaller than the layout: broadcast bases
]


def _random_linear(rng: random.Random) -> LinearLayout:
    """A layout of 16x16 whose bases overlap (so coordinates combine by XOR, not +)."""
    def basis() -> tuple[int, int]:
        return (rng.randrange(16), rng.randrange(16))
    return LinearLayout((16, 16), tuple(basis() for _ in range(3)),
                        tuple(basis() for _ in range(5)), tuple(basis() for _ in range(2)))


def _case_layouts() -> list[LayoutRef]:
    from msltrans.layout import decode_layout

    refs = [LayoutRef(f"L{i}", decode_layout(text, shape), text)
            for i, (text, shape) in enumerate(LAYOUTS)]
    rng = random.Random(5)
    refs += [LayoutRef(f"L{len(LAYOUTS) + j}", _random_linear(rng), "random linear")
             for j in range(4)]
    rng2 = random.Random(7)
    for _ in range(3):
        spt, tpw, wpc = [rng2.choice([1, 2, 4]) for _ in range(3)], [2, 4, 4], [1, 2, 2]
        text = blocked_text(spt, tpw, wpc, [2, 0, 1])
        refs.append(LayoutRef(f"L{len(refs)}", decode_layout(text, (8, 16, 16)), text))
    return refs


def test_helpers_equal_coord_everywhere() -> None:
    sim = sim_or_skip()
    refs = _case_layouts()
    helpers = "\n".join(macro_text("layout_helpers", L=r.helper_data()) for r in refs)
    rows = []
    for r in refs:
        dims = len(r.ll.shape)
        rows.append((r, dims + 1))  # coordinates, then flat
    # one output slot per (layout, r, lane, warp, dim): 4 warps x 32 lanes run every layout
    writes, offset = [], 0
    for r, n in rows:
        calls = [f"{r.coord_fn(d)}(reg, lane, warp)" for d in range(n - 1)] + \
                [f"{r.flat_fn}(reg, lane, warp)"]
        body = " ".join(f"out[base + reg * {n} + {i}] = {c};" for i, c in enumerate(calls))
        writes.append(f"    if (warp < {r.ll.num_warps}u && lane < {r.ll.num_lanes}u) "
                      f"for (uint reg = 0; reg < {r.regs}u; ++reg) {{ uint base = {offset} + "
                      f"(warp * 32u + lane) * {r.regs * n}u; {body} }}")
        offset += 4 * 32 * r.regs * n
    src = ("#include <metal_stdlib>\nusing namespace metal;\n" + helpers + "\n"
           "kernel void probe(device int* out [[buffer(0)]],\n"
           "                  uint tid [[thread_index_in_threadgroup]]) {\n"
           "    uint lane = tid % 32u, warp = tid / 32u;\n" + "\n".join(writes) + "\n}\n")
    out = np.full(offset, -1, np.int32)
    sim.compile_shader(src).probe(out, threads=128, group_size=128)
    offset = 0
    for r, n in rows:
        got = out[offset:offset + 4 * 32 * r.regs * n].reshape(4, 32, r.regs, n)
        for w in range(r.ll.num_warps):
            for lane in range(r.ll.num_lanes):
                for reg in range(r.regs):
                    c = r.ll.coord(reg, lane, w)
                    want = list(c) + [r.ll.flat(c)]
                    assert list(got[w, lane, reg]) == want, (r.encoding, reg, lane, w)
        offset += 4 * 32 * r.regs * n
