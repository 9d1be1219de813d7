"""arith.index_cast / arith.index_castui (index is 64-bit, `long`, on Metal): a round trip
through `index` from every integer width to every other, against exact integer arithmetic —
index_cast sign-extends, index_castui zero-extends, both truncate on the way down."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from tests.support.run_kernel import compile_ttgir, dispatch
from tests.support.ttgir_gen import elementwise_kernel_1d, write

BLOCK = 128
WIDTHS = {"i8": np.int8, "i16": np.int16, "i32": np.int32, "i64": np.int64}


def _wrap(v: int, bits: int) -> int:
    v &= (1 << bits) - 1
    return v - (1 << bits) if v >> (bits - 1) else v


@pytest.mark.parametrize("dst", list(WIDTHS))
@pytest.mark.parametrize("src", list(WIDTHS))
@pytest.mark.parametrize("op", ["arith.index_cast", "arith.index_castui"])
def test_round_trip_through_index(tmp_path: Path, op: str, src: str, dst: str) -> None:
    sdt, ddt = WIDTHS[src], WIDTHS[dst]
    tin, tidx, tout = (f"tensor<{BLOCK}x{t}, #L>" for t in (src, "index", dst))
    body = f"""%i = {op} %x0 : {tin} to {tidx}
               %res = {op} %i : {tidx} to {tout}"""
    program = compile_ttgir(write(tmp_path, "k", elementwise_kernel_1d(BLOCK, 2, [src], dst,
                                                                       body)))
    info = np.iinfo(sdt)
    rng = np.random.default_rng(7)
    edge = [info.min, info.max, -1, 0, 1, info.min + 1, info.max - 1, -128, 127, 255, -32768]
    x = np.concatenate([np.array([e for e in edge if info.min <= e <= info.max], sdt),
                        rng.integers(info.min, info.max, 190, dtype=sdt, endpoint=True)])
    n = x.size  # 201: an odd size, the last block masked
    out = np.full(n + 3, 0x5A, ddt)
    dispatch(program, ((n + BLOCK - 1) // BLOCK,), (x, out, np.int32(n)))
    sbits, dbits = np.iinfo(sdt).bits, np.iinfo(ddt).bits
    wide = [int(v) if op == "arith.index_cast" else int(v) & ((1 << sbits) - 1) for v in x]
    want = np.array([_wrap(v, min(dbits, 64)) for v in wide], ddt)
    assert out[:n].tobytes() == want.tobytes()
    assert (out[n:] == ddt(0x5A)).all()  # the masked lanes stored nothing
