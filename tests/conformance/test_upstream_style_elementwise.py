"""Upstream-style elementwise cases (test_core's test_bin_op, test_floordiv, test_bitwise_op,
test_shift_op, test_compare_op, test_math_op, test_abs, test_where, test_maximum_minimum /
test_propagate_nan, test_clamp, test_umulhi, test_cast), written for this project.

References are numpy/torch on CPU written to the IR's semantics (docs/semantics.md): C
integer division and remainder, wrapping + - *, IEEE-rounded float ops (checked bit for bit,
NaN matching NaN), minnum/maxnum versus NaN-propagating min/max. A case parametrized over
`op` shares one kernel (and so one compile) with the other ops of its dtype pair.
"""

from __future__ import annotations

import functools

import numpy as np
import pytest
import torch
import triton
import triton.language as tl
from triton.language.extra import libdevice

from tests.conformance.upstream_style_support import (
    INTS,
    TL,
    TORCH,
    assert_same,
    bits,
    is_float,
    is_signed,
    mixed_np,
    promote,
    rand_np,
    require_metal_sim,
    to_np,
    to_t,
)
from tests.support.run_kernel import run_kernel

N = 64


@pytest.fixture(scope="module", autouse=True)
def _metal_sim() -> None:
    require_metal_sim()


# --------------------------------------------------------------------------- binary ops


@triton.jit
def _bin_ops(X, Y, ADD, SUB, MUL, DIV, MOD, n, DIVMOD: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(X + offs, mask=m)
    y = tl.load(Y + offs, mask=m)
    s = x + y
    tl.static_assert(s.dtype == ADD.dtype.element_ty)
    tl.store(ADD + offs, s, mask=m)
    tl.store(SUB + offs, x - y, mask=m)
    tl.store(MUL + offs, x * y, mask=m)
    if DIVMOD:
        q = x / y
        tl.static_assert(q.dtype == DIV.dtype.element_ty)
        tl.store(DIV + offs, q, mask=m)
        tl.store(MOD + offs, x % y, mask=m)


PAIRS = [(d, d) for d in ("int8", "int32", "int64", "uint32", "uint64", "float16",
                          "bfloat16", "float32")] + [
    ("int8", "int32"), ("uint8", "int16"), ("int32", "uint32"), ("int16", "float32"),
    ("float16", "bfloat16"),
]


def _bin_inputs(dx: str, dy: str) -> tuple[np.ndarray, np.ndarray]:
    x = mixed_np(dx, N, seed=1)
    y = mixed_np(dy, N, seed=2)[::-1].copy()
    if not (is_float(dx) or is_float(dy)):  # / and % by zero and INT_MIN / -1 are poison
        y[y == 0] = 3
        if is_signed(dy):
            y[y == -1] = -3
    return x, y


def _ref_bin(op: str, x: np.ndarray, y: np.ndarray, rt: str) -> torch.Tensor:
    if op in ("/", "%"):  # Triton computes / and % on floats in f32, / on ints in f32 too
        xf, yf = (to_t(v, "float32") if is_float(rt) else torch.from_numpy(v).float()
                  for v in (x, y))
        if op == "/":
            return xf / yf
        return torch.from_numpy(np.fmod(xf.numpy(), yf.numpy()))  # C fmod: exact
    if is_float(rt):
        xt, yt = to_t(x, rt), to_t(y, rt)
        return {"+": xt + yt, "-": xt - yt, "*": xt * yt}[op]
    with np.errstate(over="ignore"):
        xs, ys = x.astype(rt), y.astype(rt)
        return torch.from_numpy({"+": xs + ys, "-": xs - ys, "*": xs * ys}[op])


@pytest.mark.parametrize("op", ["+", "-", "*", "/", "%"])
@pytest.mark.parametrize("dtype_x, dtype_y", PAIRS)
def test_bin_op(dtype_x: str, dtype_y: str, op: str) -> None:
    x, y = _bin_inputs(dtype_x, dtype_y)
    divmod_ok = is_float(dtype_x) or is_float(dtype_y) or is_signed(dtype_x) == is_signed(dtype_y)
    if op in ("/", "%") and not divmod_ok:
        with pytest.raises(triton.CompilationError, match="different signedness"):
            outs = [torch.empty(N, dtype=TORCH[promote(dtype_x, dtype_y)])] * 3
            _bin_ops[(1,)](to_t(x, dtype_x), to_t(y, dtype_y), *outs, *[torch.empty(N)] * 2, N,
                           DIVMOD=True, BLOCK=N)
        return
    rt = promote(dtype_x, dtype_y)
    qt = promote(dtype_x, dtype_y, div_or_mod=True) if not is_float(rt) else "float32"
    outs = [torch.empty(N, dtype=TORCH[rt]) for _ in range(3)]
    outs.append(torch.empty(N, dtype=torch.float32))
    outs.append(torch.empty(N, dtype=TORCH["float32" if is_float(rt) else qt]))
    _bin_ops[(1,)](to_t(x, dtype_x), to_t(y, dtype_y), *outs, N, DIVMOD=divmod_ok, BLOCK=N)
    got = outs[["+", "-", "*", "/", "%"].index(op)]
    if op == "%" and not is_float(rt):
        ref = torch.from_numpy(np.fmod(x.astype(qt), y.astype(qt)))
    else:
        ref = _ref_bin(op, x, y, rt)
    assert_same(got, ref)


@triton.jit
def _bin_scalar(X, Z, s, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(X + offs)
    tl.store(Z + offs, x * s + s)


@pytest.mark.parametrize("dtype, scalar, out", [
    ("int8", 3, "int8"), ("uint8", 5, "uint8"), ("int16", -7, "int16"),
    ("float16", 2, "float16"), ("float32", 3, "float32"), ("int32", 2.5, "float32"),
])
def test_bin_op_python_scalar(dtype: str, scalar: float, out: str) -> None:
    """A Python scalar of an equal or lower kind does not widen the tensor's type."""
    x = rand_np(dtype, N, seed=5, low=-50, high=50)
    z = torch.empty(N, dtype=TORCH[out])
    _bin_scalar[(1,)](to_t(x, dtype), z, scalar, BLOCK=N)
    if is_float(out):  # mulf + addf fuse (enable_fp_fusion): one rounding of the exact value
        exact = torch.from_numpy(x.astype(np.float64) * scalar + scalar)
        assert_same(z, exact.to(TORCH[out]))
    else:
        with np.errstate(over="ignore"):
            ref = x * np.array(scalar).astype(out) + np.array(scalar).astype(out)
        assert_same(z, torch.from_numpy(ref.astype(out)))


# ---------------------------------------------------------- floordiv, modulo, bitwise, shift


@triton.jit
def _int_ops(X, Y, FDIV, MOD, AND, OR, XOR, SHL, SHR, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(X + offs)
    y = tl.load(Y + offs)
    tl.store(FDIV + offs, x // y)
    tl.store(MOD + offs, x % y)
    tl.store(AND + offs, x & y)
    tl.store(OR + offs, x | y)
    tl.store(XOR + offs, x ^ y)
    sh = y & (X.dtype.element_ty.primitive_bitwidth - 1)
    tl.store(SHL + offs, x << sh)
    tl.store(SHR + offs, x >> sh)


INT_OPS = ["//", "%", "&", "|", "^", "<<", ">>"]


def _ref_int(op: str, x: np.ndarray, y: np.ndarray, dtype: str) -> np.ndarray:
    if op in ("//", "%"):  # C semantics: truncate toward zero, remainder has x's sign
        xi, yi = x.astype(object), y.astype(object)
        q = np.array([abs(a) // abs(b) * (1 if (a < 0) == (b < 0) else -1)
                      for a, b in zip(xi, yi, strict=True)], dtype=object)
        r = xi - q * yi
        return (q if op == "//" else r).astype(dtype)
    sh = (y & (bits(dtype) - 1)).astype(dtype)
    with np.errstate(over="ignore"):
        return {"&": x & y, "|": x | y, "^": x ^ y, "<<": np.left_shift(x, sh),
                ">>": np.right_shift(x, sh)}[op].astype(dtype)


@functools.cache
def _int_ops_run(dtype: str) -> tuple[np.ndarray, np.ndarray, tuple[np.ndarray, ...]]:
    """One run of `_int_ops` per dtype, shared by that dtype's seven `op` cases."""
    x = mixed_np(dtype, N, seed=3)
    y = mixed_np(dtype, N, seed=4)[::-1].copy()
    y[y == 0] = 7
    if is_signed(dtype):
        y[(y == -1) & (x == np.iinfo(dtype).min)] = 5
    outs = tuple(np.zeros(N, dtype=dtype) for _ in INT_OPS)
    run_kernel(_int_ops, (1,), x, y, *outs, BLOCK=N)
    return x, y, outs


@pytest.mark.parametrize("op", INT_OPS)
@pytest.mark.parametrize("dtype", ["int8", "int32", "int64", "uint8", "uint32", "uint64"])
def test_int_op(dtype: str, op: str) -> None:
    """Through run_kernel: `//` and `%` with negatives, bitwise ops, in-range shifts."""
    x, y, outs = _int_ops_run(dtype)
    np.testing.assert_array_equal(outs[INT_OPS.index(op)], _ref_int(op, x, y, dtype))


# ------------------------------------------------------------------------------ compare


@triton.jit
def _compare(X, Y, EQ, NE, LT, LE, GT, GE, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(X + offs)
    y = tl.load(Y + offs)
    tl.store(EQ + offs, x == y)
    tl.store(NE + offs, x != y)
    tl.store(LT + offs, x < y)
    tl.store(LE + offs, x <= y)
    tl.store(GT + offs, x > y)
    tl.store(GE + offs, x >= y)


CMP = {"==": np.equal, "!=": np.not_equal, "<": np.less, "<=": np.less_equal,
       ">": np.greater, ">=": np.greater_equal}


@pytest.mark.parametrize("op", list(CMP))
@pytest.mark.parametrize("dtype", ["int8", "uint32", "int64", "float16", "bfloat16", "float32"])
def test_compare_op(dtype: str, op: str) -> None:
    """Unsigned compares stay unsigned; every compare with NaN is false except !=."""
    x = mixed_np(dtype, N, seed=6)
    y = x.copy()
    y[::3] = mixed_np(dtype, N, seed=7)[::3]  # a third differ, the rest are equal pairs
    y[1::5] = x[1::5][::-1]
    outs = [torch.zeros(N, dtype=torch.bool) for _ in CMP]
    _compare[(1,)](to_t(x, dtype), to_t(y, dtype), *outs, BLOCK=N)
    np.testing.assert_array_equal(outs[list(CMP).index(op)].numpy(), CMP[op](x, y))


# ------------------------------------------------------------------------------ unary / math


@triton.jit
def _unary(X, Z, OP: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(X + offs)
    if OP == "neg":
        z = -x
    elif OP == "abs":
        z = tl.abs(x)
    elif OP == "floor":
        z = tl.floor(x)
    elif OP == "ceil":
        z = tl.ceil(x)
    elif OP == "exp":
        z = tl.exp(x)
    elif OP == "log":
        z = tl.log(x)
    elif OP == "sqrt":
        z = tl.sqrt(x)
    elif OP == "sqrt_rn":
        z = tl.sqrt_rn(x)
    elif OP == "rsqrt":
        z = tl.rsqrt(x)
    elif OP == "sin":
        z = tl.sin(x)
    elif OP == "cos":
        z = tl.cos(x)
    elif OP == "exp2":
        z = tl.exp2(x)
    elif OP == "log2":
        z = tl.log2(x)
    elif OP == "erf":
        z = tl.erf(x)
    else:
        z = ~x
    tl.store(Z + offs, z)


EXACT_UNARY = {"neg": torch.neg, "abs": torch.abs, "floor": torch.floor, "ceil": torch.ceil}


@pytest.mark.parametrize("dtype, op", [(d, o) for d in ("float16", "bfloat16", "float32")
                                       for o in EXACT_UNARY if d == "float32" or o in
                                       ("neg", "abs")])
def test_unary_exact(dtype: str, op: str) -> None:
    x = mixed_np(dtype, N, seed=8)
    z = torch.empty(N, dtype=TORCH[dtype])
    _unary[(1,)](to_t(x, dtype), z, OP=op, BLOCK=N)
    assert_same(z, EXACT_UNARY[op](to_t(x, dtype)))


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_math_refuses_16bit_in_frontend(dtype: str) -> None:
    """tl.floor on f16/bf16 is a frontend TypeError, as on every backend (cast first)."""
    with pytest.raises(triton.CompilationError):
        _unary[(1,)](torch.zeros(N, dtype=TORCH[dtype]), torch.empty(N, dtype=TORCH[dtype]),
                     OP="floor", BLOCK=N)


@pytest.mark.parametrize("dtype", INTS + ("uint8", "uint32"))
def test_abs_and_invert_int(dtype: str) -> None:
    """tl.abs wraps on INT_MIN (and is the identity on unsigned); ~x flips every bit."""
    x = mixed_np(dtype, N, seed=9)
    za, zi = np.zeros_like(x), np.zeros_like(x)
    run_kernel(_unary, (1,), x, za, OP="abs", BLOCK=N)
    run_kernel(_unary, (1,), x, zi, OP="invert", BLOCK=N)
    with np.errstate(over="ignore"):
        np.testing.assert_array_equal(za, np.abs(x) if is_signed(dtype) else x)
    np.testing.assert_array_equal(zi, np.invert(x))


MATH = {  # op: (float64 reference, max ULP of the f32 result; docs/semantics.md's table)
    "exp": (np.exp, 1), "log": (np.log, 1), "sqrt": (np.sqrt, 0.5), "sqrt_rn": (np.sqrt, 0.5),
    "rsqrt": (lambda v: 1 / np.sqrt(v), 1.5), "sin": (np.sin, 1), "cos": (np.cos, 1),
    "exp2": (np.exp2, 1), "log2": (np.log2, 1), "erf": (None, 1),
}


@pytest.mark.parametrize("op", list(MATH))
def test_math_op(op: str) -> None:
    rng = np.random.default_rng(10)
    positive = op in ("log", "sqrt", "sqrt_rn", "rsqrt", "log2")
    x = (rng.uniform(0.01, 20, N) if positive else rng.uniform(-8, 8, N)).astype(np.float32)
    z = torch.empty(N, dtype=torch.float32)
    _unary[(1,)](torch.from_numpy(x), z, OP=op, BLOCK=N)
    fn, ulps = MATH[op]
    x64 = x.astype(np.float64)
    ref = torch.erf(torch.from_numpy(x64)).numpy() if fn is None else fn(x64)
    ulp = np.spacing(np.abs(ref).astype(np.float32)).astype(np.float64)
    err = np.abs(z.numpy().astype(np.float64) - ref) / ulp
    assert err.max() <= ulps + 1e-6, (op, float(err.max()))
    if ulps == 0.5:
        assert_same(z, torch.from_numpy(ref.astype(np.float32)))


# ----------------------------------------------------------- where, min/max with NaN, clamp


@triton.jit
def _minmax(X, Y, MIN, MAX, MIN_ALL, MAX_ALL, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(X + offs)
    y = tl.load(Y + offs)
    tl.store(MIN + offs, tl.minimum(x, y))
    tl.store(MAX + offs, tl.maximum(x, y))
    tl.store(MIN_ALL + offs, tl.minimum(x, y, propagate_nan=tl.PropagateNan.ALL))
    tl.store(MAX_ALL + offs, tl.maximum(x, y, propagate_nan=tl.PropagateNan.ALL))


def _num(fn, x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """minnum/maxnum with -0.0 < +0.0: NaN only where both are NaN."""
    xs, ys = np.signbit(x), np.signbit(y)
    r = fn(x, y)
    tie = (x == y) & (xs != ys)
    r[tie] = (-0.0 if fn is np.fmin else 0.0)
    return r


MINMAX = ["minimum", "maximum", "minimum_all", "maximum_all"]


@pytest.mark.parametrize("op", MINMAX)
@pytest.mark.parametrize("dtype", ["float16", "bfloat16", "float32"])
def test_maximum_minimum_nan(dtype: str, op: str) -> None:
    x = mixed_np(dtype, N, seed=11)
    y = np.roll(x, 7)
    y[:4] = [0.0, -0.0, np.nan, 1.0]
    x[:4] = [-0.0, 0.0, 2.0, np.nan]
    x, y = (to_t(v, dtype).float().numpy() for v in (x, y))
    outs = [torch.empty(N, dtype=TORCH[dtype]) for _ in MINMAX]
    _minmax[(1,)](to_t(x, dtype), to_t(y, dtype), *outs, BLOCK=N)
    if op == "minimum":
        ref = _num(np.fmin, x, y)
    elif op == "maximum":
        ref = _num(np.fmax, x, y)
    else:
        ref = _num(np.fmin if op == "minimum_all" else np.fmax, x, y)
        ref[np.isnan(x) | np.isnan(y)] = np.nan
    assert_same(outs[MINMAX.index(op)], to_t(ref, dtype))


@pytest.mark.parametrize("dtype", ["int8", "uint8", "int32", "uint32", "int64", "uint64"])
def test_maximum_minimum_int(dtype: str) -> None:
    x = mixed_np(dtype, N, seed=12)
    y = np.roll(x, 5)
    outs = [np.zeros(N, dtype=dtype) for _ in range(4)]
    run_kernel(_minmax, (1,), x, y, *outs, BLOCK=N)
    for o, ref in zip(outs, [np.minimum(x, y), np.maximum(x, y)] * 2, strict=True):
        np.testing.assert_array_equal(o, ref)


@triton.jit
def _clamp(X, LO, HI, Z, PROPAGATE: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(X + offs)
    lo = tl.load(LO + offs)
    hi = tl.load(HI + offs)
    if PROPAGATE:
        z = tl.clamp(x, lo, hi, propagate_nan=tl.PropagateNan.ALL)
    else:
        z = tl.clamp(x, lo, hi)
    tl.store(Z + offs, z)


@pytest.mark.parametrize("propagate", [False, True])
@pytest.mark.parametrize("dtype", ["float16", "bfloat16", "float32"])
def test_clamp(dtype: str, propagate: bool) -> None:
    x = mixed_np(dtype, N, seed=13)
    rng = np.random.default_rng(14)
    lo = (-np.abs(rng.standard_normal(N)) * 2).astype(np.float32)
    hi = (np.abs(rng.standard_normal(N)) * 2).astype(np.float32)
    x, lo, hi = (to_t(v, dtype).float().numpy() for v in (x, lo, hi))
    z = torch.empty(N, dtype=TORCH[dtype])
    _clamp[(1,)](to_t(x, dtype), to_t(lo, dtype), to_t(hi, dtype), z, PROPAGATE=propagate,
                 BLOCK=N)
    ref = np.fmin(np.fmax(x, lo), hi)  # a NaN x gives lo under minnum(maxnum(x, lo), hi)
    if propagate:
        ref[np.isnan(x)] = np.nan
    assert_same(z, to_t(ref, dtype))


@triton.jit
def _where(C, X, Y, Z, n, SCALAR_Y: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    m = offs < n
    c = tl.load(C + offs, mask=m, other=0) != 0
    x = tl.load(X + offs, mask=m)
    if SCALAR_Y:
        z = tl.where(c, x, 7)
    else:
        z = tl.where(c, x, tl.load(Y + offs, mask=m))
    tl.store(Z + offs, z, mask=m)


@pytest.mark.parametrize("scalar_y", [False, True])
@pytest.mark.parametrize("dtype", ["int8", "int64", "bfloat16", "float32"])
def test_where(dtype: str, scalar_y: bool) -> None:
    n = N - 9
    c = (np.random.default_rng(15).random(N) > 0.5).astype(np.int8)
    x, y = mixed_np(dtype, N, seed=16), mixed_np(dtype, N, seed=17)
    z = torch.full((N,), 3, dtype=TORCH[dtype])
    _where[(1,)](torch.from_numpy(c), to_t(x, dtype), to_t(y, dtype), z, n,
                 SCALAR_Y=scalar_y, BLOCK=N)
    ref = to_t(np.where(c != 0, x, 7 if scalar_y else y).astype(x.dtype), dtype)
    ref[n:] = 3
    assert_same(z, ref)


# ------------------------------------------------------------------------------- umulhi, fma


@triton.jit
def _umulhi(X, Y, Z, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(Z + offs, tl.umulhi(tl.load(X + offs), tl.load(Y + offs)))


@pytest.mark.parametrize("dtype", ["int32", "uint32"])
def test_umulhi(dtype: str) -> None:
    """The high 32 bits of the unsigned 64-bit product (signed inputs read as unsigned)."""
    x, y = mixed_np(dtype, N, seed=18), mixed_np(dtype, N, seed=19)[::-1].copy()
    z = np.zeros(N, dtype=dtype)
    run_kernel(_umulhi, (1,), x, y, z, BLOCK=N)
    xu, yu = x.view(np.uint32).astype(object), y.view(np.uint32).astype(object)
    ref = np.array([(a * b) >> 32 for a, b in zip(xu, yu, strict=True)], dtype=np.uint32)
    np.testing.assert_array_equal(z.view(np.uint32), ref)


@triton.jit
def _fma(X, Y, W, Z, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    z = tl.fma(tl.load(X + offs), tl.load(Y + offs), tl.load(W + offs))
    tl.store(Z + offs, z)


@pytest.mark.parametrize("dtype", ["float16", "bfloat16", "float32"])
def test_fma_single_rounding(dtype: str) -> None:
    rng = np.random.default_rng(20)
    x, y, w = (to_t(rng.standard_normal(N).astype(np.float32), dtype) for _ in range(3))
    z = torch.empty(N, dtype=TORCH[dtype])
    _fma[(1,)](x, y, w, z, BLOCK=N)
    exact = x.double() * y.double() + w.double()  # exact for these widths, then one rounding
    assert_same(z, exact.to(TORCH[dtype]))


# ------------------------------------------------------------------------------------- cast


@triton.jit
def _cast(X, Z, BITCAST: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(X + offs)
    tl.store(Z + offs, x.to(Z.dtype.element_ty, bitcast=BITCAST))


CASTS = [
    ("int8", "int64"), ("uint8", "int32"), ("int32", "int8"), ("uint32", "uint8"),
    ("int32", "float32"), ("int64", "float32"), ("int8", "float16"), ("uint8", "bfloat16"),
    ("float32", "int32"), ("float32", "int64"), ("bfloat16", "int32"), ("float32", "uint8"),
    ("float32", "float16"), ("float32", "bfloat16"), ("bfloat16", "float32"),
    ("float16", "bfloat16"),
]


def _cast_input(src: str, dst: str) -> np.ndarray:
    if is_float(src) and not is_float(dst):  # in range: out-of-range conversions are poison
        lo, hi = (0, np.iinfo(dst).max) if not is_signed(dst) else (-100, 100)
        rng = np.random.default_rng(21)
        x = rng.uniform(lo, min(hi, 120), N).astype(np.float32)
        return to_t(x, src).float().numpy()
    if is_float(dst) and not is_float(src) and bits(dst) == 16:
        return rand_np(src, N, seed=22, low=-200, high=200)  # exact in f16/bf16's range
    return mixed_np(src, N, seed=23)


@pytest.mark.parametrize("src, dst", CASTS)
def test_cast(src: str, dst: str) -> None:
    x = _cast_input(src, dst)
    z = torch.empty(N, dtype=TORCH[dst])
    _cast[(1,)](to_t(x, src), z, BITCAST=False, BLOCK=N)
    if is_float(src) or is_float(dst):
        ref = to_t(x, src).to(TORCH[dst])  # RNE between floats, truncation to ints
    else:
        ref = torch.from_numpy(x.astype(dst))  # wrap / sign- or zero-extend
    assert_same(z, ref)


@pytest.mark.parametrize("src, dst", [("float32", "int32"), ("int32", "float32"),
                                      ("float16", "int16"), ("bfloat16", "uint16"),
                                      ("uint32", "int32")])
def test_cast_bitcast(src: str, dst: str) -> None:
    x = mixed_np(src, N, seed=24)
    xt = to_t(x, src)
    z = torch.empty(N, dtype=TORCH[dst])
    _cast[(1,)](xt, z, BITCAST=True, BLOCK=N)
    assert_same(z, xt.view(TORCH[dst]))


def test_cast_dtype_table_is_complete() -> None:
    assert set(TL) == set(TORCH) - {"bool"}
    assert all(bits(d) == TL[d].primitive_bitwidth for d in TL)
    assert to_np(torch.zeros(1, dtype=torch.bfloat16)).dtype == np.float32


@triton.jit
def _libdevice(X, Y, Z, FN: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(X + offs)
    y = tl.load(Y + offs)
    if FN == "exp_erf":
        z = libdevice.exp(x) + libdevice.erf(x)
    elif FN == "tanh":
        z = libdevice.tanh(x)
    else:
        z = libdevice.pow(tl.abs(x) + 0.5, y)
    tl.store(Z + offs, z)


@pytest.mark.parametrize("fn", ["exp_erf", "tanh", "pow"])
def test_libdevice_through_module_map(fn: str) -> None:
    x = torch.linspace(-2, 2, N)
    y = torch.linspace(-3, 3, N)
    z = torch.empty(N)
    _libdevice[(1,)](x, y, z, FN=fn, BLOCK=N)
    x64, y64 = x.double(), y.double()
    ref = {"exp_erf": torch.exp(x64) + torch.erf(x64), "tanh": torch.tanh(x64),
           "pow": torch.pow(x64.abs() + 0.5, y64)}[fn]
    torch.testing.assert_close(z.double(), ref, rtol=3e-6, atol=1e-6)
