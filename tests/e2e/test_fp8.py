"""fp8 storage and conversions (msltrans/lower/elementwise/ops_fp8.py, templates/fp8_support.metal).

Downcasts are compared bit for bit with Triton's CUDA backend on an H200
(tests/data/cuda/fp8_conversions.npz, scripts/cuda_reference/fp8_conversions.py): fp16 and
bf16 over all 65,536 bit patterns, fp32 over every fp8 value's neighbourhood and the RTNE
ties. Upcasts are compared with an exact decoding of all 256 bit patterns (and with the CUDA
record, which agrees except for NVIDIA's e5m2 -> bf16 inf/NaN quirk, see docs/semantics.md).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch
import triton
import triton.language as tl

from msltrans.errors import MetalNonRecoverableError
from msltrans.ir import read_module
from msltrans.lower import lower_module
from msltrans.toolchain import to_ttgir
from msltrans.workloads.fp8_kernels import fp8_downcast
from tests.support.run_kernel import dispatch, run_kernel

REF = np.load(Path(__file__).resolve().parents[1] / "data" / "cuda" / "fp8_conversions.npz")
TL8 = {"e4m3": tl.float8e4nv, "e5m2": tl.float8e5}
TORCH8 = {"e4m3": torch.float8_e4m3fn, "e5m2": torch.float8_e5m2}
TLSRC = {"float32": None, "float16": tl.float16, "bfloat16": tl.bfloat16}


@triton.jit
def _up(x_ptr, o_ptr, SRC8: tl.constexpr, DST: tl.constexpr, BITS: tl.constexpr):
    offs = tl.arange(0, 256)
    x = tl.load(x_ptr + offs).to(SRC8, bitcast=True)
    tl.store(o_ptr + offs, x.to(DST).to(BITS, bitcast=True))


def _inputs(src: str) -> np.ndarray:
    return REF["in_float32"] if src == "float32" else REF["in_16bit"]


@pytest.mark.parametrize("src", ["float32", "float16", "bfloat16"])
@pytest.mark.parametrize("fmt", ["e4m3", "e5m2"])
def test_downcast_matches_cuda(src: str, fmt: str) -> None:
    x = _inputs(src)
    out = np.zeros(len(x), np.uint8)
    run_kernel(fp8_downcast, (triton.cdiv(len(x), 512),), x, out, len(x), DST=TL8[fmt],
               SRC=TLSRC[src], RTZ=False, BLOCK=512)
    ref = REF[f"down_{src}_{fmt}_rtne"]
    bad = np.nonzero(out != ref)[0]
    assert bad.size == 0, [(hex(int(x.view(np.uint32 if src == "float32" else np.uint16)[i])),
                            hex(out[i]), hex(ref[i])) for i in bad[:10]]


def test_downcast_rtz_f32_to_e5m2_matches_cuda() -> None:
    x = REF["in_float32"]
    out = np.zeros(len(x), np.uint8)
    run_kernel(fp8_downcast, (triton.cdiv(len(x), 512),), x, out, len(x), DST=tl.float8e5,
               SRC=None, RTZ=True, BLOCK=512)
    np.testing.assert_array_equal(out, REF["down_float32_e5m2_rtz"])


def test_downcast_edge_values_explicit() -> None:
    """The satfinite / NaN / tie rules spelled out (independent of the record)."""
    x = np.array([448, 464, 480, 1e6, np.inf, -np.inf, np.nan, -np.nan, 0.0, -0.0,
                  2.0**-10, 2.0**-10 * 1.5, 2.0**-9 * 1.5, 2.0**-9 * 2.5, 17.0, 19.0],
                 np.float32)
    out = np.zeros(len(x), np.uint8)
    run_kernel(fp8_downcast, (1,), x, out, len(x), DST=tl.float8e4nv, SRC=None, RTZ=False,
               BLOCK=16)
    # 2^-10 is half the smallest subnormal: tie to even (0); 1.5 * 2^-10 -> 2^-9; 1.5 * 2^-9
    # ties to 2 * 2^-9; 2.5 * 2^-9 ties to 2 * 2^-9; 17 ties to 16, 19 to 20 (3 mantissa bits).
    want = [0x7E, 0x7E, 0x7E, 0x7E, 0x7E, 0xFE, 0x7F, 0x7F, 0x00, 0x80, 0x00, 0x01, 0x02, 0x02,
            0x58, 0x5A]
    assert [hex(v) for v in out] == [hex(v) for v in want]


_BITS = {"float32": (tl.int32, np.int32), "float16": (tl.int16, np.int16),
         "bfloat16": (tl.int16, np.int16)}
_DST = {"float32": tl.float32, "float16": tl.float16, "bfloat16": tl.bfloat16}


def _exact(fmt: str, dst: str) -> np.ndarray:
    """Exact decoding (torch's fp8 dtypes), NaN as the canonical positive quiet NaN."""
    v = torch.arange(256, dtype=torch.int32).to(torch.uint8).view(TORCH8[fmt])
    w = v.to({"float32": torch.float32, "float16": torch.float16,
              "bfloat16": torch.bfloat16}[dst])
    bits = w.view(torch.int32 if dst == "float32" else torch.int16).numpy().copy()
    nan = torch.isnan(v.float()).numpy()
    bits[nan] = 0x7FFFFFFF if dst == "float32" else 0x7FFF
    return bits


@pytest.mark.parametrize("fmt", ["e4m3", "e5m2"])
@pytest.mark.parametrize("dst", ["float32", "float16", "bfloat16"])
def test_upcast_all_bit_patterns(fmt: str, dst: str) -> None:
    x = np.arange(256, dtype=np.uint8)
    tbits, nbits = _BITS[dst]
    out = np.zeros(256, nbits)
    run_kernel(_up, (1,), x, out, SRC8=TL8[fmt], DST=_DST[dst], BITS=tbits)
    exact = _exact(fmt, dst)
    np.testing.assert_array_equal(out, exact)
    cuda = REF[f"up_{fmt}_{dst}"]
    differ = np.nonzero(out != cuda)[0]
    if (fmt, dst) == ("e5m2", "bfloat16"):
        # Triton 3.6's NVIDIA e5m2 -> bf16 maps the inf/NaN exponent to 2^16 (finite); we decode
        # exactly. Only those 8 patterns differ.
        assert sorted(differ) == [0x7C, 0x7D, 0x7E, 0x7F, 0xFC, 0xFD, 0xFE, 0xFF]
    else:
        assert differ.size == 0


# ---- storage: loads, stores, constants, select, layout moves ---------------------------------
def _compile(fn, sig: dict[str, str], num_warps: int = 4, **constexprs):  # noqa: ANN001, ANN202
    return lower_module(read_module(to_ttgir(fn, sig, constexprs, num_warps)))


@triton.jit
def _copy_where(x_ptr, o_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < n, other=0.0)
    y = tl.where(offs % 3 == 0, x, tl.full([BLOCK], -1.5, x.dtype))
    tl.store(o_ptr + offs, y, mask=offs < BLOCK - 1)


@pytest.mark.parametrize("fmt,one_half", [("e4m3", 0xBC), ("e5m2", 0xBE)])
def test_load_store_where_constant(fmt: str, one_half: int) -> None:
    ty = {"e4m3": "*fp8e4nv", "e5m2": "*fp8e5"}[fmt]
    prog = _compile(_copy_where, {"x_ptr": ty, "o_ptr": ty, "n": "i32"}, BLOCK=128)
    x = np.random.default_rng(0).integers(0, 256, 128).astype(np.uint8)
    out = np.full(128, 0x11, np.uint8)
    dispatch(prog, (1,), (x, out, 100))
    offs = np.arange(128)
    loaded = np.where(offs < 100, x, 0)
    want = np.where(offs % 3 == 0, loaded, one_half).astype(np.uint8)
    want[127] = 0x11  # masked store
    np.testing.assert_array_equal(out, want)


@triton.jit
def _transpose(x_ptr, o_ptr, M: tl.constexpr, N: tl.constexpr):
    rm = tl.arange(0, M)[:, None]
    rn = tl.arange(0, N)[None, :]
    x = tl.load(x_ptr + rm * N + rn)
    t = tl.trans(x)
    r = tl.reshape(t, [N * M])
    tl.store(o_ptr + tl.arange(0, N * M), r)


def test_trans_reshape_convert_layout() -> None:
    prog = _compile(_transpose, {"x_ptr": "*fp8e5", "o_ptr": "*fp8e5"}, M=16, N=32)
    x = np.random.default_rng(1).integers(0, 256, (16, 32)).astype(np.uint8)
    out = np.zeros(16 * 32, np.uint8)
    dispatch(prog, (1,), (x, out))
    np.testing.assert_array_equal(out, x.T.reshape(-1))


@triton.jit
def _bitcast_roundtrip(x_ptr, o_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs).to(tl.float8e4nv, bitcast=True)
    tl.store(o_ptr + offs, x.to(tl.int8, bitcast=True))


def test_bitcast_u8_i8() -> None:
    x = np.arange(256, dtype=np.uint8)
    out = np.zeros(256, np.int8)
    run_kernel(_bitcast_roundtrip, (1,), x, out, BLOCK=256)
    np.testing.assert_array_equal(out.view(np.uint8), x)


# ---- refusals ------------------------------------------------------------------------------
@triton.jit
def _add(x_ptr, o_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs)
    tl.store(o_ptr + offs, x + x)


def test_fp8_arithmetic_refuses() -> None:
    with pytest.raises(MetalNonRecoverableError,
                       match=r"arith.addf on f8E4M3FN.*\.to\(tl.float16\)"):
        _compile(_add, {"x_ptr": "*fp8e4nv", "o_ptr": "*fp8e4nv"}, BLOCK=64)


@triton.jit
def _f8_to_f8(x_ptr, o_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(o_ptr + offs, tl.load(x_ptr + offs).to(tl.float8e4nv))


def test_fp8_to_fp8_refuses() -> None:
    with pytest.raises(MetalNonRecoverableError, match="fp8 to fp8.*through tl.float16"):
        _compile(_f8_to_f8, {"x_ptr": "*fp8e5", "o_ptr": "*fp8e4nv"}, BLOCK=64)


@pytest.mark.parametrize("src", ["*fp16", "*bf16"])
def test_rtz_other_than_f32_to_e5m2_refuses(src: str) -> None:
    with pytest.raises(MetalNonRecoverableError, match="rounding rtz is not supported"):
        _compile(fp8_downcast, {"x_ptr": src, "o_ptr": "*u8", "n": "i32"}, DST=tl.float8e4nv,
                 SRC=None, RTZ=True, BLOCK=64)


@pytest.mark.parametrize("ty", ["*fp8e4b15", "*fp8e4b8", "*fp8e5b16"])
def test_unimplemented_fp8_types_refuse(ty: str) -> None:
    # Left out of supported_fp8_dtypes: Triton's front end refuses them, naming ours.
    with pytest.raises(Exception, match=r"not supported in this architecture.*fp8e4nv"):
        _compile(_add, {"x_ptr": ty, "o_ptr": ty}, BLOCK=64)


# ---- tt.dot on fp8: widened to fp16 (exact), fp32 accumulation ------------------------------
@triton.jit
def _dot8(a_ptr, b_ptr, o_ptr, M: tl.constexpr, N: tl.constexpr, K: tl.constexpr,
          OUT: tl.constexpr):
    rm, rn, rk = tl.arange(0, M), tl.arange(0, N), tl.arange(0, K)
    a = tl.load(a_ptr + rm[:, None] * K + rk[None, :])
    b = tl.load(b_ptr + rk[:, None] * N + rn[None, :])
    c = tl.dot(a, b, out_dtype=OUT)
    tl.store(o_ptr + rm[:, None] * N + rn[None, :], c)


def _finite_bytes(fmt: str, shape: tuple[int, ...], seed: int) -> np.ndarray:
    v = np.random.default_rng(seed).integers(0, 256, shape).astype(np.uint8)
    d = torch.from_numpy(v).view(TORCH8[fmt]).float().numpy()
    v[~np.isfinite(d) | (np.abs(d) > 64)] = 0x38  # keep the sums finite (fp16 output too)
    return v


def decode8(v: np.ndarray, fmt: str) -> np.ndarray:
    return torch.from_numpy(v).view(TORCH8[fmt]).double().numpy()


@pytest.mark.parametrize("fa,fb,m,n,k,out", [("e4m3", "e4m3", 16, 16, 32, "fp32"),
                                            ("e5m2", "e4m3", 32, 16, 16, "fp32"),
                                            ("e4m3", "e5m2", 16, 32, 64, "fp16")])
def test_dot_fp8(fa: str, fb: str, m: int, n: int, k: int, out: str) -> None:
    a, b = _finite_bytes(fa, (m, k), 2), _finite_bytes(fb, (k, n), 3)
    ty = {"e4m3": "*fp8e4nv", "e5m2": "*fp8e5"}
    np_out = np.float32 if out == "fp32" else np.float16
    prog = _compile(_dot8, {"a_ptr": ty[fa], "b_ptr": ty[fb],
                            "o_ptr": "*fp32" if out == "fp32" else "*fp16"},
                    M=m, N=n, K=k, OUT=tl.float32 if out == "fp32" else tl.float16)
    o = np.zeros((m, n), np_out)
    dispatch(prog, (1,), (a, b, o))
    A, B = decode8(a, fa), decode8(b, fb)
    ref = A @ B
    # fp32 chain of exact products: |err| <= k * 2^-24 * sum|a||b| (+ the fp16 output rounding)
    bound = k * 2.0**-24 * (np.abs(A) @ np.abs(B))
    if out == "fp16":
        bound += np.abs(ref) * 2.0**-11 + 2.0**-24
    assert np.all(np.abs(o.astype(np.float64) - ref) <= bound)
