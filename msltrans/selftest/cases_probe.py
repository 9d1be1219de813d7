"""Cases that measure what only a Mac can answer and record it as a property: whether the GPU
flushes subnormals (MSL 8.1 allows it), the MSL version torch's compile_shader really uses,
atomic_ulong max/min, whether plain loads see another threadgroup's stores, whether a
non-ASCII source is rejected, the math mode, and the order of the fp32 matrix product."""

from __future__ import annotations

from fractions import Fraction
from typing import Any

import numpy as np

from msltrans import settings
from msltrans.errors import MetalNonRecoverableError
from msltrans.selftest import accuracy
from msltrans.selftest import kernels as K
from msltrans.selftest.cases import INF, Case, Output
from msltrans.selftest.context import Skip

# ---- the MSL version ------------------------------------------------------------------------

VERSION_PROBE = """#include <metal_stdlib>
using namespace metal;
kernel void msl_version_probe(device int *out [[buffer(0)]],
                              uint i [[thread_position_in_grid]]) {
    if (i == 0) { out[0] = __METAL_VERSION__; }
}
"""


def _msl_version(ctx: Any) -> list[Output]:
    from msltrans import msl_version

    lib = ctx.compile_msl(VERSION_PROBE)
    out = ctx.zeros(1, "int32")
    lib.msl_version_probe(out, threads=(1, 1, 1), group_size=(1, 1, 1))
    got = int(ctx.bits(out)[0])
    predicted = msl_version.target()
    ctx.properties.update(metal_version=got, msltrans_predicted=predicted)
    return [Output("metal_version", "int32", ctx.bits(out), np.array([predicted]))]


# ---- the math mode ---------------------------------------------------------------------------

def _math_mode(ctx: Any) -> list[Output]:

    from msltrans import msl_version
    from msltrans.selftest.checks import FAST_MATH_ENV, fast_math_env

    n = 64
    x = ctx.normal(n)
    out = ctx.empty(n, "float32")
    ctx.launch(K.vector_add, (1,), ctx.put(x), ctx.put(x), out, n, BLOCK=64)
    version = msl_version.target()
    mode = accuracy.math_mode(fast_math_env(), version, ctx.sources)
    ctx.properties.update(
        env={FAST_MATH_ENV: settings.raw(FAST_MATH_ENV)}, msl_version=version,
        safe_pragma_emitted=all(accuracy.has_safe_pragma(s) for s in ctx.sources),
        effective=mode)
    return [Output("sum", "float32", ctx.bits(out), 2 * x.astype(np.float64), tol=(0, 0))]


# ---- subnormals ----------------------------------------------------------------------------

_SMALLEST = {"float32": 2.0**-149, "float16": 2.0**-24, "bfloat16": 2.0**-133}
_MIN_NORMAL = {"float32": 2.0**-126, "float16": 2.0**-14, "bfloat16": 2.0**-126}


def _subnormal_inputs(dtype: str) -> tuple[np.ndarray, np.ndarray]:
    """Pairs whose product and sum cover: subnormal in and out, subnormal in and normal out,
    normal in and subnormal out (every value exactly representable in `dtype`)."""
    s, m = _SMALLEST[dtype], _MIN_NORMAL[dtype]
    big = 4 * m / s  # the smallest subnormal times this is normal
    x = [s, 3 * s, -5 * s, m / 2, m / 4, s, 4 * s, m, 1.5 * m, m / 8]
    y = [1.0, 1.0, 1.0, 2.0**8, 2.0**4, big, -1.0, 0.25, 0.5, -m / 16]
    return np.array(x, np.float64), np.array(y, np.float64)


def _classify(got: np.ndarray, ieee: np.ndarray, flushed_in: np.ndarray, dtype: str
              ) -> dict[str, Any]:
    """Each result is the IEEE one, one section 8.5 allows when subnormals are flushed
    (operands read as zero, a subnormal result written as a zero of either sign), or wrong."""
    m = _MIN_NORMAL[dtype]

    def flushes_to(v: np.ndarray) -> np.ndarray:
        return (v != 0) & (np.abs(v) < m)

    same = got == ieee
    alt = (got == flushed_in) | ((got == 0) & (flushes_to(ieee) | flushes_to(flushed_in)))
    ieee_sub = flushes_to(ieee)
    return {"ok": bool((same | alt).all()), "ieee": int(same.sum()),
            "flushed": int((~same & alt).sum()), "wrong": int((~same & ~alt).sum()),
            "subnormal_results_kept": int((same & ieee_sub).sum()),
            "subnormal_results_flushed": int((~same & ieee_sub & (got == 0)).sum())}


def _subnormals(ctx: Any, dtype: str) -> list[Output]:
    x, y = _subnormal_inputs(dtype)
    n = len(x)
    out = ctx.empty(2 * n, dtype)
    ctx.launch(K.subnormal_ops, (1,), ctx.put(x, dtype), ctx.put(y, dtype), out, n, BLOCK=16)
    xs, ys = ctx.values(x, dtype), ctx.values(y, dtype)
    m = _MIN_NORMAL[dtype]
    xf = np.where(np.abs(xs) < m, 0.0, xs)
    yf = np.where(np.abs(ys) < m, 0.0, ys)
    # exact in float64 and representable in float32, so one rounding to `dtype` (ctx.values
    # of a float array) is the IEEE result
    ieee = ctx.values(np.concatenate([xs * ys, xs + ys]).astype(np.float32), dtype)
    flushed = ctx.values(np.concatenate([xf * yf, xf + yf]).astype(np.float32), dtype)
    bits = ctx.bits(out)

    def check(b: np.ndarray) -> dict[str, Any]:
        result = _classify(ctx.values(b, dtype), ieee, flushed, dtype)
        ctx.properties[f"{dtype}_subnormals"] = {k: v for k, v in result.items() if k != "ok"}
        return {"ok": result["ok"], "wrong": result["wrong"]}

    # Section 8.1 allows flushing: not bit-exact, the simulator's (IEEE) bytes recorded only.
    return [Output("mul_add", dtype, bits, None, exact=False, ulp=INF, check=check)]


# ---- atomic_ulong max/min ----------------------------------------------------------------------

def _ulong_minmax(ctx: Any) -> list[Output]:
    n, slots = 777, 5
    hi = ctx.rng.integers(0, 2**32, n, dtype=np.uint64)
    lo = ctx.rng.integers(0, 2**32, n, dtype=np.uint64)
    x = (hi << np.uint64(32)) | lo
    x[::9] &= np.uint64(0xFFFFFFFF)           # some below 2^32
    x[1::11] |= np.uint64(1) << np.uint64(63)  # some with the top bit (negative as int64)
    mx = ctx.put(np.zeros(slots, np.int64))
    mn = ctx.put(np.full(slots, -1, np.int64))  # 2^64 - 1
    ctx.launch(K.ulong_minmax, (ctx.cdiv(n, 256),), ctx.put(x.view(np.int64)), mx, mn, n,
               SLOTS=slots, BLOCK=256)
    idx = np.arange(n) % slots
    want_max = np.array([x[idx == k].max() for k in range(slots)], np.uint64)
    want_min = np.array([x[idx == k].min() for k in range(slots)], np.uint64)
    return [Output("max", "int64", ctx.bits(mx), want_max.view(np.int64)),
            Output("min", "int64", ctx.bits(mn), want_min.view(np.int64))]


# ---- coherence across threadgroups -------------------------------------------------------------

COHERENCE = """#include <metal_stdlib>
using namespace metal;
// Threadgroup 0 stores data[] and publishes a flag after a device fence; threadgroup 1
// waits for the flag, fences, and reads data[] with plain loads (MSL 4.8: visible across
// threadgroups only for a coherent(device) buffer).
kernel void publish_read(QUAL device int *data [[buffer(0)]],
                         device atomic_int *flag [[buffer(1)]],
                         device int *out [[buffer(2)]],
                         uint group [[threadgroup_position_in_grid]],
                         uint t [[thread_position_in_threadgroup]]) {
    if (group == 0) {
        data[t] = 1000 + int(t);
        threadgroup_barrier(mem_flags::mem_device);
        if (t == 0) {
            atomic_thread_fence(mem_flags::mem_device, memory_order_seq_cst,
                                thread_scope_device);
            atomic_store_explicit(flag, 1, memory_order_relaxed);
        }
    } else {
        if (t == 0) {
            while (atomic_load_explicit(flag, memory_order_relaxed) != 1) {
            }
            atomic_thread_fence(mem_flags::mem_device, memory_order_seq_cst,
                                thread_scope_device);
        }
        threadgroup_barrier(mem_flags::mem_device);
        out[t] = data[t];
    }
}
"""


def _coherence_error() -> type | None:
    from msltrans.sim import errors

    return getattr(errors, "CoherenceError", None)


def _coherence(ctx: Any, coherent: bool) -> list[Output]:
    from msltrans import msl_version

    if msl_version.target() < 320:
        raise MetalNonRecoverableError(
            "the probe needs MSL 3.2 (macOS 15): atomic_thread_fence and coherent(device)")
    model = _coherence_error() if ctx.engine == "sim" else None
    if ctx.engine == "sim" and model is None:
        raise Skip("this simulator does not model cross-threadgroup coherence "
                   "(msltrans.sim.errors.CoherenceError is missing)")
    threads, rounds = 128, 8 if ctx.engine == "mps" else 1
    lib = ctx.compile_msl(COHERENCE.replace("QUAL", "coherent(device)" if coherent else ""))
    stale, got = 0, None
    for _ in range(rounds):
        data = ctx.put(np.full(threads, -1, np.int32))
        flag, out = ctx.zeros(1, "int32"), ctx.put(np.full(threads, -2, np.int32))
        try:
            lib.publish_read(data, flag, out, threads=(2 * threads, 1, 1),
                             group_size=(threads, 1, 1))
        except Exception as exc:
            if model is not None and isinstance(exc, model) and not coherent:
                ctx.properties.update(simulator_reported=str(exc).splitlines()[0])
                return []  # what the simulator must do without the qualifier
            raise
        got = ctx.bits(out)
        stale += int((got != 1000 + np.arange(threads)).sum())
    ctx.properties.update(rounds=rounds, stale_loads=stale)
    if ctx.engine == "sim" and not coherent:
        raise AssertionError("the simulator let a plain load read another threadgroup's "
                             "store without coherent(device)")
    if not coherent:  # a Mac: stale data is allowed; recorded
        return []
    assert got is not None
    return [Output("read", "int32", got, 1000 + np.arange(threads))]


# ---- non-ASCII source --------------------------------------------------------------------------

NON_ASCII = """#include <metal_stdlib>
using namespace metal;
// clamps to \u00b11
kernel void non_ascii(device float *x [[buffer(0)]], uint i [[thread_position_in_grid]]) {
    x[i] = clamp(x[i], -1.0f, 1.0f);
}
"""


def _non_ascii(ctx: Any) -> list[Output]:
    try:
        ctx.compile_msl(NON_ASCII)
    except Exception as exc:
        first = (str(exc).strip().splitlines() or ["no message"])[0]
        ctx.properties.update(rejected=True, error=f"{type(exc).__name__}: {first}"[:300])
        if ctx.engine == "sim" and not first.startswith("non-ASCII"):
            raise AssertionError(
                f"the simulator rejected it for another reason: {first}") from exc
        return []
    ctx.properties.update(rejected=False)
    if ctx.engine == "sim":
        raise Skip("this simulator accepts non-ASCII source (torch's compileLibrary reads "
                   "the source as 7-bit ASCII)")
    return []


# ---- the order of the fp32 matrix product -----------------------------------------------------

def _round32(x: Fraction) -> Fraction:
    """`x` rounded to float32, to nearest, ties to even (subnormals included)."""
    if x == 0:
        return Fraction(0)
    a = abs(x)
    e = a.numerator.bit_length() - a.denominator.bit_length()
    e += 1 if Fraction(2) ** (e + 1) <= a else 0
    e -= 1 if Fraction(2) ** e > a else 0
    q = Fraction(2) ** (max(e, -126) - 23)
    n = a / q
    whole = n.numerator // n.denominator
    rest = n - whole
    whole += 1 if rest > Fraction(1, 2) or (rest == Fraction(1, 2) and whole % 2) else 0
    return (1 if x > 0 else -1) * whole * q


def _chain(c: Fraction, p: list[Fraction], order: Any) -> Fraction:
    for k in order:
        c = _round32(c + p[k])
    return c


def _tree(v: list[Fraction]) -> Fraction:
    while len(v) > 1:
        v = [_round32(v[i] + v[i + 1]) for i in range(0, len(v), 2)]
    return v[0]


# c + sum_k a_k b_k over k = 0..15 as a GPU might: each model in exact arithmetic; 8 = the
# depth of one simdgroup_multiply_accumulate (the kernel chains two).
ORDER_MODELS: dict[str, Any] = {
    "in_order_fma_chain": lambda c, p: _chain(c, p, range(16)),
    "fma_chain_accumulator_last": lambda c, p: _round32(
        _chain(_round32(p[0]), p, range(1, 16)) + c),
    "reverse_fma_chain_per_8": lambda c, p: _chain(
        c, p, [k for b in (0, 8) for k in range(b + 7, b - 1, -1)]),
    "one_rounding_per_8": lambda c, p: _round32(_round32(c + sum(p[:8])) + sum(p[8:])),
    "one_rounding": lambda c, p: _round32(c + sum(p)),
    "pairwise_tree_per_8": lambda c, p: _round32(
        _round32(c + _tree([_round32(x) for x in p[:8]])) + _tree([_round32(x) for x in p[8:]])),
    "rounded_products_in_order": lambda c, p: _chain(c, [_round32(x) for x in p], range(16)),
}


def mma_probe_inputs() -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """A, B, C (16 x 16 fp32) whose diagonal elements tell the models apart: row 0, c = 1
    plus sixteen 2^-24 (a chain keeps 1, a sum first reaches 1 + 2^-20); row 1, 1 then seven
    2^-24 (a chain keeps 1, reverse or one rounding 1 + 2^-21, a pairwise tree 1 + 3 2^-23);
    row 2, (1 + 2^-12)^2 + 2^-25 (one rounding of the fma, or two with a rounded product);
    row 3, c = 1 and 2^-24 in each half (one rounding over 16 terms or one per half)."""
    e = 2.0**-24
    a, b, c = np.zeros((16, 16)), np.zeros((16, 16)), np.zeros((16, 16))
    b[:, :] = 1.0
    a[0, :], c[0, 0] = e, 1.0
    a[1, 0], a[1, 1:8] = 1.0, e
    a[2, 0], b[0, 2], c[2, 2] = 1 + 2.0**-12, 1 + 2.0**-12, 2.0**-25
    a[3, 0], a[3, 8], c[3, 3] = e, e, 1.0
    return a.astype(np.float32), b.astype(np.float32), c.astype(np.float32)


def order_predictions(a: np.ndarray, b: np.ndarray, c: np.ndarray, rows: int = 4
                      ) -> dict[str, list[float]]:
    out = {}
    for name, model in ORDER_MODELS.items():
        vals = []
        for t in range(rows):
            p = [Fraction(float(a[t, k])) * Fraction(float(b[k, t])) for k in range(16)]
            vals.append(float(model(Fraction(float(c[t, t])), p)))
        out[name] = vals
    return out


def _mma_order(ctx: Any) -> list[Output]:
    a, b, c = mma_probe_inputs()
    out = ctx.empty((16, 16), "float32")
    ctx.launch(K.dot_probe, (1,), ctx.put(a), ctx.put(b), ctx.put(c), out, N=16, num_warps=1)
    got = ctx.values(ctx.bits(out), "float32").reshape(16, 16)
    diag = [float(got[t, t]) for t in range(4)]
    predicted = order_predictions(a, b, c)
    matches = sorted(n for n, v in predicted.items() if v == diag)
    order = ("in_order_fma_chain" if matches == ["in_order_fma_chain"] else
             "single_rounding" if matches and all(m.startswith("one_rounding") for m in matches)
             else "other_order")
    ctx.properties.update(mma_fp32_order=order, consistent_models=matches, diagonal=diag)
    # The product itself: any order, against float64 (17 terms with c: 17 u sum |a||b| + |c|)
    ref = a.astype(np.float64) @ b + c
    bound = 17 * 2.0**-24 * (np.abs(a.astype(np.float64)) @ np.abs(b) + np.abs(c)) * 1.01
    return [Output("product", "float32", ctx.bits(out), ref, ulp=INF, tol=("abs", bound))]


PROBES: list[Case] = [
    Case("msl_version", "probe", _msl_version, sim_bytes=False,
         notes="the __METAL_VERSION__ the compiler used, beside msltrans's prediction"),
    Case("math_mode", "probe", _math_mode, notes="PYTORCH_MPS_FAST_MATH and the safe pragma"),
    Case("subnormals_fp32", "probe", lambda c: _subnormals(c, "float32"),
         notes="MSL 8.1 allows flushing: recorded"),
    Case("subnormals_fp16", "probe", lambda c: _subnormals(c, "float16")),
    Case("subnormals_bf16", "probe", lambda c: _subnormals(c, "bfloat16")),
    Case("atomic_ulong_minmax", "atomic", _ulong_minmax,
         notes="MSL 6.15.4.6; M2 and later (refused on M1)"),
    Case("coherence_plain", "probe", lambda c: _coherence(c, False), sim_bytes=False,
         notes="plain loads of another threadgroup's stores: stale data recorded"),
    Case("coherence_device", "probe", lambda c: _coherence(c, True), sim_bytes=False,
         notes="the same with coherent(device) (MSL 3.2)"),
    Case("non_ascii_rejected", "probe", _non_ascii, sim_bytes=False,
         notes="compile_shader reads the source as 7-bit ASCII",
         crash_passes="rejected: the process died compiling a non-ASCII source"),
    Case("mma_fp32_order", "probe", _mma_order,
         notes="the fp32 simdgroup matrix product's order, as a property"),
]
