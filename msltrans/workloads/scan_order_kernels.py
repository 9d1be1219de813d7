"""Kernels, cases and inputs shared by scripts/cuda_reference/scan_order.py (run on the lent
NVIDIA GPU) and tests/e2e/test_scan_cuda_order.py (msltrans): floating tt.scan whose result
depends on the order of combination.

Every kernel loads bit patterns (int16 for f16/bf16, int32 for f32), bitcasts to the float
type and runs ten scans along AXIS, storing the bits of each as one row of `out`:
  0/1 add (fwd/rev), 2/3 mul, 4/5 `a*0.5 + b` (not associative: the bracket is the result),
  6..9 a 2-tuple combine (fwd a, fwd b, rev a, rev b).
The combines are explicit @triton.jit functions (not tl.cumsum) so no Triton version promotes
the dtype, and every multiply is by 0.5 (exact), so fma contraction cannot change a bit.
"""

from __future__ import annotations

import re

import numpy as np
import triton
import triton.language as tl

N_OUT = 10
DTYPES = {"bfloat16": (tl.bfloat16, tl.int16), "float16": (tl.float16, tl.int16),
          "float32": (tl.float32, tl.int32)}
SHAPES_2D = [(8, 32), (16, 32), (32, 16), (2, 1024), (1024, 2), (32, 32), (1, 1024)]
SHAPE_1D = (4096,)
SHAPE_3D = (4, 16, 32)
NUM_WARPS = (4, 16)


@triton.jit
def _add(a, b):
    return a + b


@triton.jit
def _mul(a, b):
    return a * b


@triton.jit
def _half(a, b):
    return a * 0.5 + b


@triton.jit
def _pair(a1, b1, a2, b2):
    return a1 * 0.5 + a2, (b1 + b2) + a1


@triton.jit
def _scans(x, m, out_ptr, offs, n: tl.constexpr, AXIS: tl.constexpr, IT: tl.constexpr):
    tl.store(out_ptr + 0 * n + offs, tl.associative_scan(x, AXIS, _add).to(IT, bitcast=True))
    tl.store(out_ptr + 1 * n + offs,
             tl.associative_scan(x, AXIS, _add, reverse=True).to(IT, bitcast=True))
    tl.store(out_ptr + 2 * n + offs, tl.associative_scan(m, AXIS, _mul).to(IT, bitcast=True))
    tl.store(out_ptr + 3 * n + offs,
             tl.associative_scan(m, AXIS, _mul, reverse=True).to(IT, bitcast=True))
    tl.store(out_ptr + 4 * n + offs, tl.associative_scan(x, AXIS, _half).to(IT, bitcast=True))
    tl.store(out_ptr + 5 * n + offs,
             tl.associative_scan(x, AXIS, _half, reverse=True).to(IT, bitcast=True))
    fa, fb = tl.associative_scan((x, m), AXIS, _pair)
    tl.store(out_ptr + 6 * n + offs, fa.to(IT, bitcast=True))
    tl.store(out_ptr + 7 * n + offs, fb.to(IT, bitcast=True))
    ra, rb = tl.associative_scan((x, m), AXIS, _pair, reverse=True)
    tl.store(out_ptr + 8 * n + offs, ra.to(IT, bitcast=True))
    tl.store(out_ptr + 9 * n + offs, rb.to(IT, bitcast=True))


@triton.jit
def scan_order_1d(x_ptr, m_ptr, out_ptr, D0: tl.constexpr, AXIS: tl.constexpr,
                  DT: tl.constexpr, IT: tl.constexpr):
    offs = tl.arange(0, D0)
    x = tl.load(x_ptr + offs).to(DT, bitcast=True)
    m = tl.load(m_ptr + offs).to(DT, bitcast=True)
    _scans(x, m, out_ptr, offs, D0, AXIS, IT)


@triton.jit
def scan_order_2d(x_ptr, m_ptr, out_ptr, D0: tl.constexpr, D1: tl.constexpr,
                  AXIS: tl.constexpr, DT: tl.constexpr, IT: tl.constexpr):
    offs = tl.arange(0, D0)[:, None] * D1 + tl.arange(0, D1)[None, :]
    x = tl.load(x_ptr + offs).to(DT, bitcast=True)
    m = tl.load(m_ptr + offs).to(DT, bitcast=True)
    _scans(x, m, out_ptr, offs, D0 * D1, AXIS, IT)


@triton.jit
def scan_order_3d(x_ptr, m_ptr, out_ptr, D0: tl.constexpr, D1: tl.constexpr,
                  D2: tl.constexpr, AXIS: tl.constexpr, DT: tl.constexpr, IT: tl.constexpr):
    offs = (tl.arange(0, D0)[:, None, None] * (D1 * D2) + tl.arange(0, D1)[None, :, None] * D2
            + tl.arange(0, D2)[None, None, :])
    x = tl.load(x_ptr + offs).to(DT, bitcast=True)
    m = tl.load(m_ptr + offs).to(DT, bitcast=True)
    _scans(x, m, out_ptr, offs, D0 * D1 * D2, AXIS, IT)


KERNELS = {1: scan_order_1d, 2: scan_order_2d, 3: scan_order_3d}


def cases() -> list[tuple[tuple[int, ...], int, int, str]]:
    """(shape, axis, num_warps, dtype) for every recorded case."""
    out = []
    shapes = [(s, a) for s in SHAPES_2D for a in (0, 1)] + [(SHAPE_1D, 0)]
    shapes += [(SHAPE_3D, a) for a in range(3)]
    for shape, axis in shapes:
        for nw in NUM_WARPS:
            for dt in DTYPES:
                out.append((shape, axis, nw, dt))
    # One warp: lanes along the axis and register repeats above them (the carry shuffle).
    for shape, axis in [((1024, 2), 0), ((2, 1024), 1), ((32, 32), 1), (SHAPE_1D, 0)]:
        for dt in DTYPES:
            out.append((shape, axis, 1, dt))
    return out


def case_key(shape: tuple[int, ...], axis: int, num_warps: int, dtype: str) -> str:
    return f"{'x'.join(map(str, shape))}_a{axis}_w{num_warps}_{dtype}"


def input_key(shape: tuple[int, ...], axis: int, dtype: str) -> str:
    return f"in_{'x'.join(map(str, shape))}_a{axis}_{dtype}"


def constexprs(shape: tuple[int, ...], axis: int, dtype: str) -> dict:
    dt, it = DTYPES[dtype]
    cx = {f"D{i}": d for i, d in enumerate(shape)}
    cx.update(AXIS=axis, DT=dt, IT=it)
    return cx


def _round_bits(v: np.ndarray, dtype: str) -> np.ndarray:
    """float64 values -> bit patterns of `dtype` (bf16 by round-to-nearest-even on f32)."""
    if dtype == "float32":
        return v.astype(np.float32).view(np.int32)
    if dtype == "float16":
        return v.astype(np.float16).view(np.int16)
    u = v.astype(np.float32).view(np.uint32).astype(np.uint64)
    u = (u + 0x7FFF + ((u >> 16) & 1)) >> 16
    return u.astype(np.uint16).view(np.int16)


def inputs(shape: tuple[int, ...], axis: int, dtype: str) -> tuple[np.ndarray, np.ndarray]:
    """x: N(0, 2) values; m: 1 + N(0, 0.02) factors (products stay in range for 4096)."""
    n = int(np.prod(shape))
    seed = n * 31 + axis * 7 + len(shape)
    rng = np.random.default_rng(seed + {"bfloat16": 1, "float16": 2, "float32": 3}[dtype])
    x = rng.standard_normal(n) * 2.0
    m = 1.0 + rng.standard_normal(n) * 0.02
    return _round_bits(x, dtype), _round_bits(m, dtype)


def decode(bits: np.ndarray, dtype: str) -> np.ndarray:
    """Bit patterns -> float64 values."""
    if dtype == "float32":
        return bits.view(np.float32).astype(np.float64)
    if dtype == "float16":
        return bits.view(np.float16).astype(np.float64)
    return (bits.view(np.uint16).astype(np.uint32) << 16).view(np.float32).astype(np.float64)


_ALIAS = re.compile(r"^(#[\w.]+) = (#ttg\..*)$", re.M)
_SCAN = re.compile(r'"tt\.scan"\(.*?\}\) : \(tensor<[^,>]*, (#[^>]*?)>', re.S)


def scan_layouts(ttgir: str) -> list[str]:
    """The encoding (aliases resolved) of the first operand of every tt.scan, in order."""
    aliases = dict(_ALIAS.findall(ttgir))
    found = [m.group(1) for m in _SCAN.finditer(ttgir)]
    return [aliases.get(e, e).strip() for e in found]


# Triton 3.6 (the CUDA machine) orders the two non-contiguous dims of the 3-D load the other
# way round from Triton 3.9 (msltrans's front end, and 3.9's own CUDA target): the recorder
# builds the 3-D case as a Gluon kernel with 3.9's layout, so both sides scan the same layout.
# (sizePerThread, threadsPerWarp, warpsPerCTA, order) by (num_warps, element bytes).
LAYOUTS_3D = {(4, 2): ([1, 1, 8], [1, 8, 4], [2, 2, 1], [2, 1, 0]),
              (4, 4): ([1, 1, 4], [1, 4, 8], [1, 4, 1], [2, 1, 0]),
              (16, 2): ([1, 1, 4], [1, 4, 8], [4, 4, 1], [2, 1, 0]),
              (16, 4): ([1, 1, 4], [1, 4, 8], [4, 4, 1], [2, 1, 0])}


def layout_3d(num_warps: int, dtype: str) -> tuple[list[int], ...]:
    return LAYOUTS_3D[(num_warps, 4 if dtype == "float32" else 2)]


@triton.jit
def upstream_scan2d(X, Y, Z, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, AXIS: tl.constexpr,
                    REV: tl.constexpr, PROD: tl.constexpr):
    """Upstream test_scan2d's kernel for cumsum/cumprod (bf16 in, f32 out), with Triton 3.9's
    semantics spelled out: 3.9's tl.cumsum/tl.cumprod scan bf16 in bf16, 3.6's (the CUDA
    machine's) promoted it to f32 first, so the combines are given explicitly."""
    range_m = tl.arange(0, BLOCK_M)
    range_n = tl.arange(0, BLOCK_N)
    x = tl.load(X + range_m[:, None] * BLOCK_N + range_n[None, :])
    y = tl.load(Y + range_m[:, None] * BLOCK_N + range_n[None, :])  # noqa: F841 - as upstream
    if PROD:
        z = tl.associative_scan(x, AXIS, _mul, reverse=REV)
    else:
        z = tl.associative_scan(x, AXIS, _add, reverse=REV)
    tl.store(Z + range_m[:, None] * BLOCK_N + range_n[None, :], z)


def upstream_cases() -> list[tuple[tuple[int, int], int, bool, int, bool]]:
    """(shape, axis, reverse, num_warps, prod): upstream test_scan2d's bf16 cumsum/cumprod."""
    return [(s, a, r, nw, p) for nw in NUM_WARPS for a in (1, 0) for r in (True, False)
            for s in SHAPES_2D for p in (False, True)]


def upstream_key(shape: tuple[int, int], axis: int, rev: bool, nw: int, prod: bool) -> str:
    op = "cumprod" if prod else "cumsum"
    return f"up_{op}_{shape[0]}x{shape[1]}_a{axis}_r{int(rev)}_w{nw}"


def upstream_input(shape: tuple[int, int]) -> np.ndarray:
    """test_scan2d's x for bfloat16 (RandomState(17), N(0,1) truncated to bf16), as bits."""
    rs = np.random.RandomState(17)
    v = rs.normal(0, 1, shape).astype("float32").view("uint32") & np.uint32(0xFFFF0000)
    return (v >> 16).astype(np.uint16).view(np.int16)
