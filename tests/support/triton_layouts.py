"""Triton's own layout oracle (`to_linear_layout` through the Gluon builder)."""

from __future__ import annotations

import functools
from typing import Any

from triton._C.libtriton import gluon_ir, ir


@functools.lru_cache(maxsize=1)
def _builder() -> Any:
    ctx = ir.context()
    ir.load_dialects(ctx)
    b = gluon_ir.GluonOpBuilder(ctx)
    b._ctx = ctx  # keep the context alive with the builder
    return b


def triton_linear(layout: Any, shape: list[int]) -> tuple[list, list, list]:
    """(reg, lane, warp) bases Triton computes for a gluon layout object on `shape`."""
    b = _builder()
    ll = b.to_linear_layout(layout._to_ir(b), list(shape))
    return ([tuple(x) for x in ll.reg_bases], [tuple(x) for x in ll.lane_bases],
            [tuple(x) for x in ll.warp_bases])


def blocked_text(spt: list[int], tpw: list[int], wpc: list[int], order: list[int]) -> str:
    return (f"#ttg.blocked<{{sizePerThread = {spt}, threadsPerWarp = {tpw}, "
            f"warpsPerCTA = {wpc}, order = {order}}}>")
