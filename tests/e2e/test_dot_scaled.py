"""tt.dot_scaled (msltrans/lower/ops_dot_scaled.py) against an independent reference.

Reference: decode each operand in numpy/torch (e2m1 by table, fp8 by torch's fp8 dtypes),
convert to the compute type (fp16 if either side is fp16, else bf16), multiply by the e8m0
scale 2^(s-127) as Triton's decomposition builds it (s = 0 gives 0; NaN for s = 0xff) with
the product rounded to the compute type (torch), then a float64 matmul. The kernel's fp32
chain of exact products must lie within K * 2^-24 * sum|a'||b'| of it; NaN positions match.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch
import triton
import triton.language as tl

from msltrans.errors import MetalNonRecoverableError
from msltrans.ir import read_module
from msltrans.lower import lower_module
from msltrans.toolchain import to_ttgir
from tests.support.run_kernel import dispatch

E2M1 = np.array([0, 0.5, 1, 1.5, 2, 3, 4, 6, -0.0, -0.5, -1, -1.5, -2, -3, -4, -6])
CT = {"bf16": torch.bfloat16, "fp16": torch.float16}


@triton.jit
def _kernel(a_ptr, sa0, sa1, as_ptr, b_ptr, sb0, sb1, bs_ptr, o_ptr, M: tl.constexpr,
            N: tl.constexpr, K: tl.constexpr, TA: tl.constexpr, TB: tl.constexpr,
            HAS_SA: tl.constexpr, HAS_SB: tl.constexpr, KPACK_B: tl.constexpr):
    KA: tl.constexpr = K // 2 if TA == "e2m1" else K
    KB: tl.constexpr = K // 2 if (TB == "e2m1" and KPACK_B) else K
    NB: tl.constexpr = N // 2 if (TB == "e2m1" and not KPACK_B) else N
    a = tl.load(a_ptr + tl.arange(0, M)[:, None] * sa0 + tl.arange(0, KA)[None, :] * sa1)
    b = tl.load(b_ptr + tl.arange(0, KB)[:, None] * sb0 + tl.arange(0, NB)[None, :] * sb1)
    KS: tl.constexpr = K // 32
    if HAS_SA:
        s_a = tl.load(as_ptr + tl.arange(0, M)[:, None] * KS + tl.arange(0, KS)[None, :])
    else:
        s_a = None
    if HAS_SB:
        s_b = tl.load(bs_ptr + tl.arange(0, N)[:, None] * KS + tl.arange(0, KS)[None, :])
    else:
        s_b = None
    c = tl.dot_scaled(a, s_a, TA, b, s_b, TB, rhs_k_pack=KPACK_B)
    tl.store(o_ptr + tl.arange(0, M)[:, None] * N + tl.arange(0, N)[None, :], c)


_PTR = {"e2m1": "*u8", "e4m3": "*u8", "e5m2": "*u8", "bf16": "*u16", "fp16": "*fp16"}


def _operand(fmt: str, shape: tuple[int, ...], rng: np.random.Generator) -> np.ndarray:
    if fmt in ("bf16", "fp16"):
        v = torch.from_numpy(rng.standard_normal(shape).astype(np.float32)).clamp(-60, 60)
        t = v.to(CT[fmt])
        return t.view(torch.int16).numpy().view(np.uint16) if fmt == "bf16" else t.numpy()
    raw = rng.integers(0, 256, shape).astype(np.uint8)
    if fmt in ("e4m3", "e5m2"):  # finite values only (NaN scales are tested separately)
        d = _decode_fp8(raw, fmt)
        raw[~np.isfinite(d)] = 0x3C
    return raw


def _decode_fp8(raw: np.ndarray, fmt: str) -> np.ndarray:
    dt = torch.float8_e4m3fn if fmt == "e4m3" else torch.float8_e5m2
    return torch.from_numpy(raw.copy()).view(dt).double().numpy()


def _decode(fmt: str, x: np.ndarray, kpack: bool, is_a: bool) -> np.ndarray:
    """Logical [M, K] (is_a) or [K, N] float64 values of the stored operand."""
    if fmt == "e2m1":
        lo, hi = E2M1[x & 0xF], E2M1[x >> 4]
        axis = (1 if is_a else 0) if kpack else (0 if is_a else 1)
        shape = list(x.shape)
        shape[axis] *= 2
        out = np.empty(shape)
        idx = [slice(None)] * 2
        idx[axis] = slice(0, None, 2)
        out[tuple(idx)] = lo
        idx[axis] = slice(1, None, 2)
        out[tuple(idx)] = hi
        return out
    if fmt in ("e4m3", "e5m2"):
        return _decode_fp8(x, fmt)
    if fmt == "bf16":
        return torch.from_numpy(x.view(np.int16).copy()).view(torch.bfloat16).double().numpy()
    return x.astype(np.float64)


def _scaled(v: np.ndarray, scale: np.ndarray | None, ct: str, k_axis: int) -> np.ndarray:
    t = torch.from_numpy(v).to(CT[ct])  # exact for fp8 / e2m1; RTNE for bf16 -> fp16
    if scale is None:
        return t.double().numpy()
    s = scale if k_axis == 1 else scale.T  # rhs scales are given [N, K/32]
    s = np.repeat(s, 32, axis=k_axis)
    s32 = torch.from_numpy((s.astype(np.uint32) << 23).view(np.float32))
    prod = (t.float() * s32.to(CT[ct]).float()).to(CT[ct]).double().numpy()
    prod[s == 0xFF] = np.nan
    return prod


def _run(m: int, n: int, k: int, ta: str, tb: str, has_sa: bool, has_sb: bool,
         col_a: bool = False, col_b: bool = False, kpack_b: bool = True, seed: int = 0,
         nan_scale: bool = False) -> None:
    rng = np.random.default_rng(seed)
    ka = k // 2 if ta == "e2m1" else k
    kb = k // 2 if (tb == "e2m1" and kpack_b) else k
    nb = n // 2 if (tb == "e2m1" and not kpack_b) else n
    a = _operand(ta, (m, ka), rng)
    b = _operand(tb, (kb, nb), rng)
    ct = "fp16" if "fp16" in (ta, tb) else "bf16"
    lo, hi = (0, 142) if ct == "bf16" else (124, 131)
    sa = rng.integers(lo, hi, (m, k // 32)).astype(np.uint8)
    sb = rng.integers(lo, hi, (n, k // 32)).astype(np.uint8)
    if nan_scale:
        sa[1, 0] = 0xFF
        sb[2, -1] = 0xFF
    a_mem = np.ascontiguousarray(a.T) if col_a else a
    b_mem = np.ascontiguousarray(b.T) if col_b else b
    sa0, sa1 = (1, m) if col_a else (ka, 1)
    sb0, sb1 = (1, kb) if col_b else (nb, 1)
    sig = {"a_ptr": _PTR[ta], "sa0": "i32", "sa1": "i32", "as_ptr": "*u8",
           "b_ptr": _PTR[tb], "sb0": "i32", "sb1": "i32", "bs_ptr": "*u8", "o_ptr": "*fp32"}
    consts = dict(M=m, N=n, K=k, TA=ta, TB=tb, HAS_SA=has_sa, HAS_SB=has_sb, KPACK_B=kpack_b)
    prog = lower_module(read_module(to_ttgir(_kernel, sig, consts, 4)))
    assert "path=dot_scaled" in prog.source
    out = np.zeros((m, n), np.float32)
    dispatch(prog, (1,), (a_mem, sa0, sa1, sa, b_mem, sb0, sb1, sb, out))
    A = _scaled(_decode(ta, a, True, True), sa if has_sa else None, ct, 1)
    B = _scaled(_decode(tb, b, kpack_b, False), sb if has_sb else None, ct, 0)
    with np.errstate(invalid="ignore", over="ignore"):
        ref = A @ B
        bound = k * 2.0**-24 * (np.abs(A) @ np.abs(B)) + 1e-30
    np.testing.assert_array_equal(np.isnan(out), np.isnan(ref))
    fin = np.isfinite(ref)
    assert fin.any()
    err = np.abs(out[fin].astype(np.float64) - ref[fin])
    assert np.all(err <= bound[fin]), float((err / bound[fin]).max())


@pytest.mark.parametrize("ta,tb", [("e2m1", "bf16"), ("e4m3", "e5m2"), ("e5m2", "fp16"),
                                   ("bf16", "e2m1"), ("fp16", "e4m3"), ("e2m1", "e2m1"),
                                   ("e4m3", "bf16")])
def test_formats_scale_both(ta: str, tb: str) -> None:
    has_sa, has_sb = ta not in ("bf16", "fp16"), tb not in ("bf16", "fp16")
    _run(32, 32, 64, ta, tb, has_sa, has_sb)


@pytest.mark.parametrize("has_sa,has_sb", [(True, False), (False, True), (False, False)])
def test_scale_sides(has_sa: bool, has_sb: bool) -> None:
    _run(32, 16, 64, "e4m3", "e2m1", has_sa, has_sb, seed=1)


def test_col_major_operands_and_bigger_chunks() -> None:
    # 128 x 128 x 128 bf16 operands do not fit 32 KB at once: K goes in chunks.
    _run(64, 128, 128, "e2m1", "bf16", True, False, col_a=True, col_b=True, seed=2)


def test_rhs_e2m1_packed_along_n() -> None:
    _run(32, 32, 64, "e4m3", "e2m1", True, True, kpack_b=False, seed=3)


def test_nan_scale() -> None:
    _run(32, 32, 64, "e5m2", "e4m3", True, True, nan_scale=True, seed=4)


@triton.jit
def _batched(a_ptr, b_ptr, o_ptr):
    r = tl.arange(0, 32)
    offs = tl.arange(0, 2)[:, None, None] * 1024 + r[None, :, None] * 32 + r[None, None, :]
    c = tl.dot_scaled(tl.load(a_ptr + offs), None, "bf16", tl.load(b_ptr + offs), None, "bf16")
    tl.store(o_ptr + offs, c)


def test_batched_refuses() -> None:
    with pytest.raises(MetalNonRecoverableError, match="batched.*loop over the batch"):
        lower_module(read_module(to_ttgir(_batched, {"a_ptr": "*bf16", "b_ptr": "*bf16",
                                                     "o_ptr": "*fp32"}, {}, 4)))


@triton.jit
def _nvfp4(a_ptr, as_ptr, b_ptr, bs_ptr, o_ptr, M: tl.constexpr, N: tl.constexpr,
           K: tl.constexpr, VEC: tl.constexpr, TB: tl.constexpr):
    KB: tl.constexpr = K // 2 if TB == "e2m1" else K
    KS: tl.constexpr = K // VEC
    a = tl.load(a_ptr + tl.arange(0, M)[:, None] * (K // 2) + tl.arange(0, K // 2)[None, :])
    b = tl.load(b_ptr + tl.arange(0, KB)[:, None] * N + tl.arange(0, N)[None, :])
    s_a = tl.load(as_ptr + tl.arange(0, M)[:, None] * KS + tl.arange(0, KS)[None, :])
    s_b = tl.load(bs_ptr + tl.arange(0, N)[:, None] * KS + tl.arange(0, KS)[None, :])
    c = tl.dot_scaled(a, s_a, "e2m1", b, s_b, TB)
    tl.store(o_ptr + tl.arange(0, M)[:, None] * N + tl.arange(0, N)[None, :], c)


@pytest.mark.parametrize("vec,tb", [(16, "e2m1"), (32, "e2m1"), (16, "bf16")])
def test_fp8e4m3_scales_nvfp4(vec: int, tb: str) -> None:
    """nvfp4: fp8e4nv scales, one per `vec` elements of K (upstream's test_block_scale_fp4).
    Triton converts the scale to the compute type (exact) and rounds each product once; a
    NaN scale (0x7f / 0xff) gives NaN."""
    m, n, k = 32, 32, 64
    rng = np.random.default_rng(5 + vec)
    a = rng.integers(0, 256, (m, k // 2)).astype(np.uint8)
    b = _operand(tb, (k // 2 if tb == "e2m1" else k, n), rng)
    scales = torch.rand(2, max(m, n), k // vec).to(torch.float8_e4m3fn).view(torch.uint8)
    sa, sb = scales[0, :m].numpy().copy(), scales[1, :n].numpy().copy()
    sa[3, 1], sb[5, 0] = 0x7F, 0xFF  # NaN scales, both signs
    sig = {"a_ptr": "*u8", "as_ptr": "*fp8e4nv", "b_ptr": _PTR[tb], "bs_ptr": "*fp8e4nv",
           "o_ptr": "*fp32"}
    prog = lower_module(read_module(to_ttgir(_nvfp4, sig, dict(M=m, N=n, K=k, VEC=vec, TB=tb),
                                             4)))
    out = np.zeros((m, n), np.float32)
    dispatch(prog, (1,), (a, sa, b, sb, out))

    def scaled(v: np.ndarray, s: np.ndarray, k_axis: int) -> np.ndarray:
        sv = np.repeat(_decode_fp8(s, "e4m3"), vec, axis=1)
        sv = sv if k_axis == 1 else sv.T
        t = torch.from_numpy(v).to(torch.bfloat16).float()
        prod = (t * torch.from_numpy(sv).to(torch.bfloat16).float()).to(torch.bfloat16)
        return prod.double().numpy()

    A = scaled(_decode("e2m1", a, True, True), sa, 1)
    B = scaled(_decode(tb, b, True, False), sb, 0)
    with np.errstate(invalid="ignore", over="ignore"):
        ref = A @ B
        bound = k * 2.0**-24 * (np.abs(A) @ np.abs(B)) + 1e-30
    np.testing.assert_array_equal(np.isnan(out), np.isnan(ref))
    assert np.isnan(out[3]).all() and np.isnan(out[:, 5]).all()
    fin = np.isfinite(ref)
    err = np.abs(out[fin].astype(np.float64) - ref[fin])
    assert np.all(err <= bound[fin]), float((err / bound[fin]).max())
