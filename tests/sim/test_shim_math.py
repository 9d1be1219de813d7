"""metal:: math functions against numpy, with the ULP bounds docs/simulator.md states."""

# ruff: noqa: E501 -- embedded MSL sources keep their own line structure

import numpy as np
import pytest

from tests.support.shim import compile_shader
from tests.support.shim_ref import ulp_diff_f32

# name -> (MSL expression of x (and y), numpy float64 reference, max ulp)
UNARY = {
    "exp": (np.exp, 2),
    "exp2": (np.exp2, 2),
    "exp10": (lambda v: np.power(10.0, v), 2),
    "log": (np.log, 2),
    "log2": (np.log2, 2),
    "log10": (np.log10, 2),
    "sqrt": (np.sqrt, 0),
    "rsqrt": (lambda v: 1 / np.sqrt(v), 2),
    "sin": (np.sin, 2),
    "cos": (np.cos, 2),
    "tan": (np.tan, 2),
    "tanh": (np.tanh, 2),
    "asin": (np.arcsin, 2),
    "acos": (np.arccos, 2),
    "atan": (np.arctan, 2),
    "sinh": (np.sinh, 2),
    "cosh": (np.cosh, 2),
    "asinh": (np.arcsinh, 2),
    "acosh": (np.arccosh, 2),
    "atanh": (np.arctanh, 2),
    "fabs": (np.abs, 0),
    "abs": (np.abs, 0),
    "floor": (np.floor, 0),
    "ceil": (np.ceil, 0),
    "trunc": (np.trunc, 0),
    "rint": (np.rint, 0),
    "round": (
        lambda v: np.where(np.abs(v - np.trunc(v)) == 0.5, np.trunc(v) + np.sign(v), np.round(v)),
        0,
    ),
    "fract": (
        lambda v: np.minimum(
            v - np.floor(v), np.float64(np.nextafter(np.float32(1), np.float32(0)))
        ),
        0,
    ),
    "saturate": (lambda v: np.fmin(np.fmax(v, 0), 1), 0),  # NaN -> 0 (documented)
}
BINARY = {
    "pow": (np.power, 2),
    "powr": (np.power, 2),
    "atan2": (np.arctan2, 2),
    "fmod": (np.fmod, 0),
    "copysign": (np.copysign, 0),
    "fmin": (np.fmin, 0),
    "fmax": (np.fmax, 0),
    "min": (np.fmin, 0),
    "max": (np.fmax, 0),
    "precise::max": (np.fmax, 0),
    "fast::min": (np.fmin, 0),
}
TERNARY = {"fma": 0, "clamp": 0, "mix": 1}


def _inputs():
    rng = np.random.default_rng(7)
    special = [
        0.0,
        -0.0,
        np.inf,
        -np.inf,
        np.nan,
        1e-40,
        -1e-40,
        1e-45,
        0.5,
        -0.5,
        1.5,
        2.5,
        -2.5,
        1.0,
        -1.0,
        3.0e38,
        -3.0e38,
        88.7,
        -103.0,
        1e-7,
        0.999,
        -0.999,
        1.0001,
        20.0,
    ]
    x = np.concatenate(
        [
            special,
            rng.standard_normal(300) * 3,
            rng.uniform(-1, 1, 100),
            np.exp(rng.uniform(-80, 80, 100)) * rng.choice([-1, 1], 100),
        ]
    )
    return x.astype(np.float32)


def _source():
    body = ["#include <metal_stdlib>", "using namespace metal;"]
    for i, name in enumerate(UNARY):
        body.append(
            f"kernel void u{i}(device const float* x [[buffer(0)]], device float* o [[buffer(1)]],"
            f" device half* h [[buffer(2)]], uint t [[thread_position_in_grid]])"
            f" {{ o[t] = {name}(x[t]); h[t] = {name}(half(x[t])); }}"
        )
    for i, name in enumerate(BINARY):
        body.append(
            f"kernel void b{i}(device const float* x [[buffer(0)]], device const float* y [[buffer(1)]],"
            f" device float* o [[buffer(2)]], uint t [[thread_position_in_grid]])"
            f" {{ o[t] = {name}(x[t], y[t]); }}"
        )
    for i, name in enumerate(TERNARY):
        body.append(
            f"kernel void t{i}(device const float* x [[buffer(0)]], device const float* y [[buffer(1)]],"
            f" device const float* z [[buffer(2)]], device float* o [[buffer(3)]],"
            f" uint t [[thread_position_in_grid]]) {{ o[t] = {name}(x[t], y[t], z[t]); }}"
        )
    return "\n".join(body) + "\n"


@pytest.fixture(scope="module")
def lib():
    return compile_shader(_source())


def _check(got, ref64, bound, what):
    with np.errstate(all="ignore"):
        ref = ref64.astype(np.float32)
    d = ulp_diff_f32(got, ref)
    bad = np.nonzero(d > bound)[0]
    assert bad.size == 0, (
        f"{what}: {bad.size} lanes over {bound} ulp, e.g. {got[bad[:3]]} vs {ref[bad[:3]]}"
    )


@pytest.mark.parametrize("i,name", list(enumerate(UNARY)))
def test_unary_float_and_half(lib, i, name):
    ref_fn, bound = UNARY[name]
    x = _inputs()
    o = np.zeros_like(x)
    h = np.zeros(len(x), np.float16)
    getattr(lib, f"u{i}")(x, o, h, threads=len(x), group_size=64)
    with np.errstate(all="ignore"):
        _check(o, ref_fn(x.astype(np.float64)), bound, name)
        # half: computed in float and rounded once -> within 1 half ulp of the exact result
        xh = x.astype(np.float16)
        refh = ref_fn(xh.astype(np.float64)).astype(np.float16)
    ok = (h == refh) | (np.isnan(h) & np.isnan(refh))
    close = np.abs(h.view(np.int16).astype(np.int32) - refh.view(np.int16).astype(np.int32)) <= max(
        1, bound
    )
    assert np.all(ok | (close & (np.sign(h) == np.sign(refh)))), name


@pytest.mark.parametrize("i,name", list(enumerate(BINARY)))
def test_binary(lib, i, name):
    ref_fn, bound = BINARY[name]
    x = _inputs()
    y = np.roll(x, 17)
    if name in ("pow", "powr"):
        x = np.abs(x)  # powr is defined for x >= 0 only; keep pow on the same domain
    o = np.zeros_like(x)
    getattr(lib, f"b{i}")(x, y, o, threads=len(x), group_size=64)
    with np.errstate(all="ignore"):
        _check(o, ref_fn(x.astype(np.float64), y.astype(np.float64)), bound, name)


def test_ternary(lib):
    from tests.support.shim_ref import fma_f32

    x = _inputs()
    y, z = np.roll(x, 5), np.roll(x, 11)
    for i, name in enumerate(TERNARY):
        o = np.zeros_like(x)
        getattr(lib, f"t{i}")(x, y, z, o, threads=len(x), group_size=64)
        with np.errstate(all="ignore"):
            if name == "fma":
                assert np.array_equal(o, fma_f32(x, y, z), equal_nan=True)
            elif name == "clamp":
                assert np.array_equal(o, np.fmin(np.fmax(x, y), z), equal_nan=True)
            else:  # mix(x, y, a) = x + (y - x) * a, each step rounded in float
                ref = x + (y - x) * z
                assert np.array_equal(o, ref, equal_nan=True)


def test_predicates_and_denormals():
    lib = compile_shader("""#include <metal_stdlib>
using namespace metal;
kernel void p(device const float* x [[buffer(0)]], device int* o [[buffer(1)]], uint t [[thread_position_in_grid]]) {
    float v = x[t];
    o[t] = isnan(v) | (isinf(v) << 1) | (isfinite(v) << 2) | (signbit(v) << 3) | (isnormal(v) << 4);
}
kernel void d(device float* o [[buffer(0)]]) {
    float tiny = as_type<float>(1u);          // smallest denormal survives arithmetic (no FTZ)
    o[0] = tiny * 2.0f; o[1] = sqrt(1e-40f); o[2] = fma(tiny, 1.0f, tiny);
}
""")
    x = _inputs()
    o = np.zeros(len(x), np.int32)
    lib.p(x, o, threads=len(x), group_size=64)
    with np.errstate(all="ignore"):
        ref = (
            np.isnan(x).astype(int)
            | np.isinf(x) << 1
            | np.isfinite(x) << 2
            | np.signbit(x) << 3
            | ((np.abs(x) >= np.finfo(np.float32).tiny) & np.isfinite(x)) << 4
        )
    assert np.array_equal(o, ref)
    d = np.zeros(3, np.float32)
    lib.d(d, threads=1, group_size=1)
    tiny = np.array([1], np.uint32).view(np.float32)[0]
    assert (
        d[0] == tiny * 2
        and d[1] == np.float32(np.sqrt(np.float64(np.float32(1e-40))))
        and d[2] == tiny * 2
    )


def test_integer_functions():
    lib = compile_shader("""#include <metal_stdlib>
using namespace metal;
kernel void ints(device const int* a [[buffer(0)]], device const int* b [[buffer(1)]], device int* o [[buffer(2)]],
                 device uint* u [[buffer(3)]], uint t [[thread_position_in_grid]]) {
    int x = a[t], y = b[t]; uint ux = as_type<uint>(x), uy = as_type<uint>(y);
    device int* r = o + 12 * t; device uint* s = u + 8 * t;
    r[0] = min(x, y); r[1] = max(x, y); r[2] = abs(x); r[3] = clamp(x, -100, 100); r[4] = addsat(x, y);
    r[5] = subsat(x, y); r[6] = mulhi(x, y); r[7] = hadd(x, y); r[8] = rhadd(x, y); r[9] = extract_bits(x, 3u, 7u);
    r[10] = popcount(x); r[11] = clz(x);
    s[0] = absdiff(x, y); s[1] = ctz(ux); s[2] = rotate(ux, uy); s[3] = insert_bits(ux, uy, 5u, 9u);
    s[4] = addsat(ux, uy); s[5] = subsat(ux, uy); s[6] = mulhi(ux, uy); s[7] = reverse_bits(ux);
}
""")
    rng = np.random.default_rng(3)
    a = np.concatenate(
        [[0, -1, 2**31 - 1, -(2**31), 5, -5], rng.integers(-(2**31), 2**31, 200)]
    ).astype(np.int32)
    b = np.concatenate(
        [[0, -(2**31), 1, -1, 7, 2**31 - 1], rng.integers(-(2**31), 2**31, 200)]
    ).astype(np.int32)
    n = len(a)
    o = np.zeros(12 * n, np.int32)
    u = np.zeros(8 * n, np.uint32)
    lib.ints(a, b, o, u, threads=n, group_size=32)
    o, u = o.reshape(n, 12), u.reshape(n, 8)
    for t in range(n):
        x, y = int(a[t]), int(b[t])
        ux, uy = x & 0xFFFFFFFF, y & 0xFFFFFFFF

        def s32(v):
            v &= 0xFFFFFFFF
            return v - (1 << 32) if v >> 31 else v

        sat = lambda v: max(-(2**31), min(2**31 - 1, v))  # noqa: E731
        field = (x >> 3) & 0x7F
        exp = [
            min(x, y),
            max(x, y),
            s32(abs(x)),
            max(-100, min(100, x)),
            sat(x + y),
            sat(x - y),
            (x * y) >> 32,
            (x + y) >> 1,
            (x + y + 1) >> 1,
            field - 0x80 if field & 0x40 else field,
            bin(ux).count("1"),
            32 - ux.bit_length(),
        ]
        assert o[t].tolist() == exp, (t, x, y)
        k = uy % 32
        rot = ((ux << k) | (ux >> (32 - k))) & 0xFFFFFFFF if k else ux
        mask = ((1 << 9) - 1) << 5
        uexp = [
            abs(x - y) & 0xFFFFFFFF,
            (ux & -ux).bit_length() - 1 if ux else 32,
            rot,
            (ux & ~mask & 0xFFFFFFFF) | ((uy << 5) & mask),
            min(ux + uy, 0xFFFFFFFF),
            max(ux - uy, 0),
            (ux * uy) >> 32,
            int(f"{ux:032b}"[::-1], 2),
        ]
        assert u[t].tolist() == uexp, (t, ux, uy)


def test_min_max_signed_zero_and_nan():
    lib = compile_shader("""#include <metal_stdlib>
using namespace metal;
kernel void z(device float* o [[buffer(0)]], device half* h [[buffer(1)]]) {
    o[0] = fmin(0.0f, -0.0f); o[1] = fmin(-0.0f, 0.0f); o[2] = fmax(-0.0f, 0.0f); o[3] = max(0.0f, -0.0f);
    o[4] = min(NAN, 1.0f); o[5] = max(2.0f, NAN); o[6] = fast::min(NAN, 3.0f); o[7] = precise::fmax(NAN, NAN);
    h[0] = min(half(-0.0f), half(0.0f)); h[1] = max(half(NAN), half(4.0f));
}
""")
    o = np.zeros(8, np.float32)
    h = np.zeros(2, np.float16)
    lib.z(o, h, threads=1, group_size=1)
    # opposite zeros: Metal leaves the sign open, the simulator gives the unordered one
    assert [np.signbit(v) for v in o[:4]] == [False, False, True, True] and np.all(o[:4] == 0)
    assert o[4:7].tolist() == [1, 2, 3] and np.isnan(o[7])
    assert not np.signbit(h[0]) and h[0] == 0 and h[1] == 4


def test_vector_and_bfloat_forms():
    lib = compile_shader("""#include <metal_stdlib>
using namespace metal;
kernel void v(device const float4* x [[buffer(0)]], device float4* o [[buffer(1)]], device float* s [[buffer(2)]],
              device ushort* b [[buffer(3)]], uint t [[thread_position_in_grid]]) {
    float4 a = x[t];
    o[3 * t] = exp(a); o[3 * t + 1] = pow(abs(a), float4(0.5f)); o[3 * t + 2] = clamp(a, -1.0f, 1.0f);
    for (int i = 0; i < 4; ++i) s[4 * t + i] = exp(a[i]);
    bfloat4 bv = bfloat4(a);
    bfloat4 r = sqrt(abs(bv)) + exp(bv * bfloat(0.25f));
    b[4 * t] = as_type<ushort>(r.x); b[4 * t + 1] = as_type<ushort>(r.y);
    b[4 * t + 2] = as_type<ushort>(r.z); b[4 * t + 3] = as_type<ushort>(r.w);
}
""")
    from tests.support.shim_ref import to_bf16

    x = np.random.default_rng(9).standard_normal((16, 4)).astype(np.float32)
    o = np.zeros((48, 4), np.float32)
    s = np.zeros(64, np.float32)
    b = np.zeros(64, np.uint16)
    lib.v(x, o, s, b, threads=16, group_size=16)
    assert np.array_equal(o[0::3].ravel(), s)  # vector form == scalar form, lane by lane
    assert np.all(
        ulp_diff_f32(o[1::3], np.sqrt(np.abs(x).astype(np.float64)).astype(np.float32)) <= 2
    )
    assert np.array_equal(o[2::3], np.clip(x, -1, 1))
    # bfloat: each operation computed in float and rounded to bfloat
    xb = to_bf16(x)
    expect = to_bf16(
        to_bf16(np.sqrt(np.abs(xb)))
        + to_bf16(np.exp(to_bf16(xb * np.float32(0.25)).astype(np.float64)).astype(np.float32))
    )
    got = (b.astype(np.uint32) << 16).view(np.float32).reshape(16, 4)
    assert np.all(np.abs(got.view(np.int32) - expect.view(np.int32)) <= 1 << 16)  # <= 1 bf16 ulp


NAMESPACED = {"exp": np.exp, "log": np.log, "tanh": np.tanh}


@pytest.mark.parametrize("space", ["fast", "precise"])
def test_fast_and_precise_transcendentals(space):
    # docs/simulator.md: all three namespaces are the same host-libm functions, within 2 ulp of
    # numpy's float64 result rounded to float (Apple's fast:: bounds are looser: do not rely).
    body = ["#include <metal_stdlib>", "using namespace metal;"]
    for name in NAMESPACED:
        body.append(
            f"kernel void {name}_k(device const float4* x [[buffer(0)]], device float4* o [[buffer(1)]],"
            f" device float* s [[buffer(2)]], uint t [[thread_position_in_grid]])"
            f" {{ o[t] = {space}::{name}(x[t]); s[t] = metal::{space}::{name}(x[t].y); }}"
        )
    body.append(
        "kernel void powr_k(device const float* x [[buffer(0)]], device const float* y [[buffer(1)]],"
        f" device float* o [[buffer(2)]], uint t [[thread_position_in_grid]]) {{ o[t] = {space}::powr(x[t], y[t]); }}"
    )
    lib = compile_shader("\n".join(body) + "\n")
    x = _inputs()
    x = x[: len(x) // 4 * 4]
    for name, ref_fn in NAMESPACED.items():
        o = np.zeros_like(x)
        s = np.zeros(len(x) // 4, np.float32)
        getattr(lib, f"{name}_k")(x, o, s, threads=len(x) // 4, group_size=32)
        with np.errstate(all="ignore"):
            _check(o, ref_fn(x.astype(np.float64)), 2, f"{space}::{name}(float4)")
            _check(s, ref_fn(x[1::4].astype(np.float64)), 2, f"{space}::{name}(float)")
    base, expo = np.abs(x), np.roll(x, 17)   # powr: x >= 0
    o = np.zeros_like(x)
    lib.powr_k(base, expo, o, threads=len(x), group_size=64)
    with np.errstate(all="ignore"):
        _check(o, np.power(base.astype(np.float64), expo.astype(np.float64)), 2, f"{space}::powr")
