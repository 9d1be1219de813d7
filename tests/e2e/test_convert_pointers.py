"""ttg.convert_layout of a tensor of POINTERS: 64-bit addresses moved through registers or
the threadgroup scratch (as ulong), then loaded through in the new layout; bit-exact."""

from __future__ import annotations

import random
from pathlib import Path

import numpy as np
import pytest

from tests.support.run_kernel import compile_ttgir, dispatch
from tests.support.ttgir_gen import _offsets_2d, blocked, module_header, random_blocked, write

_TT = {np.float32: "f32", np.float16: "f16", np.int64: "i64", np.int8: "i8", np.int32: "i32"}


def ptr_convert_kernel(src: str, dst: str, m: int, n: int, num_warps: int, elt: str) -> str:
    """Pointers built in `src`, converted to `dst`, loaded (masked: flat < limit) and stored
    from `dst`; the stored offsets come from `dst`'s own make_range."""
    a_text, a_off = _offsets_2d("a", src, m, n)
    b_text, b_off = _offsets_2d("b", dst, m, n)
    p_src = f"tensor<{m}x{n}x!tt.ptr<{elt}>, {src}>"
    p_dst = f"tensor<{m}x{n}x!tt.ptr<{elt}>, {dst}>"
    i_dst = f"tensor<{m}x{n}xi32, {dst}>"
    return f"""{module_header(num_warps)} {{
  tt.func public @ptr_convert(%in: !tt.ptr<{elt}>, %out: !tt.ptr<{elt}>, %lim: i32) {{{a_text}
    %pin = tt.splat %in : !tt.ptr<{elt}> -> {p_src}
    %pa = tt.addptr %pin, {a_off} : {p_src}, tensor<{m}x{n}xi32, {src}>
    %pc = ttg.convert_layout %pa : {p_src} -> {p_dst}{b_text}
    %ls = tt.splat %lim : i32 -> {i_dst}
    %mk = arith.cmpi slt, {b_off}, %ls : {i_dst}
    %y = tt.load %pc, %mk : {p_dst}
    %pout = tt.splat %out : !tt.ptr<{elt}> -> {p_dst}
    %pb = tt.addptr %pout, {b_off} : {p_dst}, {i_dst}
    tt.store %pb, %y, %mk : {p_dst}
    tt.return
  }}
}}
"""



def _data(dtype: type, size: int, rng: np.random.Generator) -> np.ndarray:
    if dtype is np.int64:
        return rng.integers(-(2**62), 2**62, size, dtype=np.int64) | (1 << 40)
    if np.issubdtype(dtype, np.integer):
        info = np.iinfo(dtype)
        return rng.integers(info.min, info.max, size, dtype=dtype)
    return (rng.standard_normal(size) * 100).astype(dtype)


CASES = [(nw, shape, dt, seed) for nw in (1, 4, 8)
         for shape in ((16, 16), (8, 64), (4, 4), (64, 32))
         for dt in (np.float32, np.int64, np.int8, np.float16) for seed in range(1)]


@pytest.mark.parametrize(("num_warps", "shape", "dtype", "seed"), CASES)
def test_pointer_tensor_changes_layout(tmp_path: Path, num_warps: int,
                                       shape: tuple[int, int], dtype: type, seed: int) -> None:
    rng = random.Random(hash((num_warps, shape, dtype.__name__, seed)) & 0xFFFF)
    src, dst = random_blocked(rng, num_warps), random_blocked(rng, num_warps)
    m, n = shape
    text = ptr_convert_kernel(src, dst, m, n, num_warps, _TT[dtype])
    program = compile_ttgir(write(tmp_path, "pcvt", text))
    x = _data(dtype, m * n, np.random.default_rng(seed))
    lim = m * n - 3  # odd: the masked tail stays untouched
    out = np.zeros(m * n, dtype=dtype)
    dispatch(program, (1,), (x, out, lim))
    ref = x.copy()
    ref[lim:] = 0
    assert out.tobytes() == ref.tobytes()


@pytest.mark.parametrize("num_warps", [1, 4])
def test_pointer_convert_goes_through_scratch(tmp_path: Path, num_warps: int) -> None:
    # A transposing conversion (row-major owners → column-major owners) cannot stay in
    # registers: the addresses travel through threadgroup memory as 8-byte ulongs.
    src = blocked([1, 4], [8, 4], [num_warps, 1], [1, 0])
    dst = blocked([4, 1], [4, 8], [1, num_warps], [0, 1])
    m, n = 32, 32
    program = compile_ttgir(write(tmp_path, "pscr", ptr_convert_kernel(src, dst, m, n,
                                                                       num_warps, "i64")))
    assert program.shared_bytes >= m * n * 8
    assert "(ulong)" in program.source
    x = np.arange(m * n, dtype=np.int64) * -0x10000000001
    out = np.zeros(m * n, np.int64)
    dispatch(program, (1,), (x, out, m * n))
    assert out.tobytes() == x.tobytes()


def test_pointer_convert_chunked(tmp_path: Path) -> None:
    # 128x64 pointers = 64 KB of addresses: converted in 16 KB passes.
    src = blocked([1, 4], [8, 4], [4, 1], [1, 0])
    dst = blocked([4, 1], [4, 8], [1, 4], [0, 1])
    m, n = 128, 64
    program = compile_ttgir(write(tmp_path, "pch", ptr_convert_kernel(src, dst, m, n, 4,
                                                                      "f32")))
    assert program.shared_bytes == 16384
    x = np.arange(m * n, dtype=np.float32) * 0.25
    out = np.zeros(m * n, np.float32)
    dispatch(program, (1,), (x, out, m * n - 5))
    ref = x.copy()
    ref[m * n - 5:] = 0
    assert out.tobytes() == ref.tobytes()
