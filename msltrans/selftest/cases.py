"""The self-test's cases. Each launches a kernel through `ctx.launch(kernel, grid, ...)` on the
engine's tensors (MPS on a Mac, CPU tensors through the simulator elsewhere) and returns its
outputs with an independent float64/numpy reference and what may be expected of them:

- `exact`: the simulator's bytes are the only conforming answer, so an Apple GPU must
  reproduce them bit for bit. Left None it is decided from the MSL the case's kernels
  emitted (msltrans/selftest/accuracy.py): exact unless they reach an approximate function
  of the MSL specification's Tables 8.1/8.2 or a simdgroup matrix product (section 6.7 gives
  those no accuracy); a case may only lower it (float atomics land in arrival order);
- otherwise `ulp` (or `sim_abs`, per element): the largest distance from the simulator's
  bytes a conforming GPU may show, derived from the tables below each case (inf: none is
  specified; the distance is recorded, never a failure);
- `tol`: the bound against the float64 reference: (atol, rtol), ("ulp", n), ("abs", array
  of per-element bounds) or None (equal values).

Error bounds are first order, in units of u = 2^-24 (accuracy.units): an operation within k
ulp adds 2k units of relative error, a correctly rounded one 1, a sum of n terms (n - 1) u
times the sum of their magnitudes.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from msltrans.selftest import accuracy as A
from msltrans.selftest import kernels as K

U = 2.0**-24
INF = float("inf")


@dataclass
class Output:
    name: str
    dtype: str
    bits: np.ndarray                 # raw bits (uint32/uint16 for floats) or integers
    ref: np.ndarray | None           # float64 (or exact integer) reference
    exact: bool | None = None        # None: decided from the emitted MSL
    ulp: float = 0.0                 # largest ULP distance from the simulator when not exact
    tol: Any = None                  # (atol, rtol), ("ulp", n), ("abs", array) or None
    sim_abs: np.ndarray | None = None  # per-element bound against the simulator (not ulp)
    check: Callable[[np.ndarray], dict[str, Any]] | None = None  # replaces the reference


@dataclass
class Case:
    name: str
    group: str
    fn: Callable[[Any], list[Output]]
    full_only: bool = False
    timing: Callable[[Any], tuple[Callable[[], Any], Callable[[], Any]]] | None = None
    notes: str = ""
    kernels: tuple[Any, ...] = field(default_factory=tuple)
    timeout_s: float = 300.0
    sim_bytes: bool = True  # compared with the simulator's bytes (reference.npz)
    crash_passes: str = ""  # what the process dying in this case means, if that is a pass


def _sum_bound(x: np.ndarray, axis: int = -1) -> np.ndarray:
    """|error| of an fp32 sum of x along `axis`, any order: (n - 1) u sum |x|."""
    n = x.shape[axis]
    return (n - 1) * U * np.abs(x.astype(np.float64)).sum(axis=axis) * 1.01


def _vector_add(ctx: Any) -> list[Output]:
    n = 1000
    x, y = ctx.normal(n), ctx.normal(n)
    out = ctx.empty(n, "float32")
    ctx.launch(K.vector_add, (ctx.cdiv(n, 256),), ctx.put(x), ctx.put(y), out, n, BLOCK=256)
    return [Output("out", "float32", ctx.bits(out), x.astype(np.float64) + y, tol=(0, 2**-24))]


def _vector_add_timing(ctx: Any):  # noqa: ANN202
    n = 1 << 22
    x, y = ctx.put(ctx.normal(n)), ctx.put(ctx.normal(n))
    out = ctx.empty(n, "float32")
    return (lambda: K.vector_add[(ctx.cdiv(n, 1024),)](x, y, out, n, BLOCK=1024),
            lambda: ctx.torch.add(x, y, out=out))


def _softmax(ctx: Any, rows: int = 16, cols: int = 100) -> list[Output]:
    x = ctx.normal((rows, cols)) * 4
    out = ctx.empty((rows, cols), "float32")
    ctx.launch(K.softmax, (rows,), out, ctx.put(x), cols, cols, cols, BLOCK=ctx.pow2(cols))
    # float64 from the kernel's fp32 `x - max` on (that subtraction rounds as in numpy).
    # Then precise::exp (Table 8.1) on numerator and terms, a sum of `cols` positive terms
    # and fast::divide (Table 8.2); the simulator's exp is within 0.51 ulp, its division IEEE.
    e = np.exp((x - x.max(axis=1, keepdims=True)).astype(np.float64))
    exp, div = A.bound("precise::exp"), A.bound("fast::divide")
    dev = 2 * A.units(exp) + (cols - 1) + A.units(div)
    sim = 2 * A.units(A.sim_bound("precise::exp")) + (cols - 1) + 1
    return [Output("out", "float32", ctx.bits(out), e / e.sum(axis=1, keepdims=True),
                   ulp=dev + sim, tol=("ulp", dev))]


def _softmax_timing(ctx: Any):  # noqa: ANN202
    rows, cols = 4096, 1024
    x = ctx.put(ctx.normal((rows, cols)))
    out = ctx.empty((rows, cols), "float32")
    return (lambda: K.softmax[(rows,)](out, x, cols, cols, cols, BLOCK=cols),
            lambda: ctx.torch.softmax(x, dim=1))


def _matmul(ctx: Any, dtype: str, m: int = 48, n: int = 40, k: int = 72,
            blocks: tuple[int, int, int] = (32, 32, 16)) -> list[Output]:
    a, b = ctx.operand((m, k), dtype), ctx.operand((k, n), dtype)
    out_dtype = "int32" if dtype == "int8" else "float32"
    c = ctx.empty((m, n), out_dtype)
    ta, tb = ctx.put(a, dtype), ctx.put(b, dtype)
    bm, bn, bk = blocks
    grid = (ctx.cdiv(m, bm) * ctx.cdiv(n, bn),)
    ctx.launch(K.matmul, grid, ta, tb, c, m, n, k, k, 1, n, 1, n, 1, BM=bm, BN=bn, BK=bk, GROUP_M=2,
                   ACC=ctx.tl.int32 if dtype == "int8" else ctx.tl.float32,
                   MASKED=not dtype.startswith("float8"), num_warps=4)
    av, bv = ctx.values(a, dtype), ctx.values(b, dtype)
    ref = av @ bv
    if dtype == "int8":
        return [Output("c", "int32", ctx.bits(c), ref)]
    # simdgroup matrix products: section 6.7 gives them no accuracy, so the simulator's bytes
    # (an in-order fma chain over k) bound nothing (ulp inf, recorded). Against float64: a
    # float32 accumulation of k products in any order, (k + 1) u sum |a||b| (an assumption:
    # Apple documents no wider or narrower accumulator).
    bound = (k + 1) * U * (np.abs(av) @ np.abs(bv)) * 1.01
    return [Output("c", "float32", ctx.bits(c), ref, ulp=INF, tol=("abs", bound))]


def _matmul_timing(ctx: Any):  # noqa: ANN202
    m = n = k = 1024
    a, b = ctx.put(ctx.normal((m, k)), "float16"), ctx.put(ctx.normal((k, n)), "float16")
    c = ctx.empty((m, n), "float32")
    grid = (ctx.cdiv(m, 64) * ctx.cdiv(n, 64),)
    return (lambda: K.matmul[grid](a, b, c, m, n, k, k, 1, n, 1, n, 1, BM=64, BN=64, BK=32,
                                   GROUP_M=8, ACC=ctx.tl.float32, num_warps=4),
            lambda: ctx.torch.matmul(a, b))


def philox_uniform(seed: int, offsets: np.ndarray) -> np.ndarray:
    """`tl.rand(seed, offsets)` in numpy: Philox4x32-10 on (offset, 0, 0, 0) with the key
    (seed low, seed high), the first word mapped to [0, 1) as Triton's random.py does."""
    mask = np.uint64(0xFFFFFFFF)
    c0 = offsets.astype(np.uint64) & mask
    c1 = np.zeros_like(c0)
    c2, c3 = c1.copy(), c1.copy()
    k0, k1 = np.uint64(seed & 0xFFFFFFFF), np.uint64((seed >> 32) & 0xFFFFFFFF)
    a, b = np.uint64(0xD2511F53), np.uint64(0xCD9E8D57)
    for _ in range(10):
        p0, p2 = a * c0, b * c2   # exact in 64 bits: both factors < 2**32
        c0, c2, c1, c3 = ((p2 >> np.uint64(32)) ^ c1 ^ k0, (p0 >> np.uint64(32)) ^ c3 ^ k1,
                          p2 & mask, p0 & mask)
        k0, k1 = (k0 + np.uint64(0x9E3779B9)) & mask, (k1 + np.uint64(0xBB67AE85)) & mask
    x = c0.astype(np.uint32).view(np.int32)
    x = np.where(x < 0, ~x, x)
    return x.astype(np.float32) * np.float32(4.6566127342e-10)


def _dropout(ctx: Any) -> list[Output]:
    n, p, seed = 2000, 0.3, 1234
    x = ctx.normal(n)
    out = ctx.empty(n, "float32")
    ctx.launch(K.dropout, (ctx.cdiv(n, 512),), ctx.put(x), out, n, p, seed, BLOCK=512)
    keep = philox_uniform(seed, np.arange(n)) > np.float32(p)
    ref = np.where(keep, x.astype(np.float64) / (np.float32(1) - np.float32(p)), 0.0)
    # The kept/dropped pattern is integer Philox arithmetic (exact); the scaling is one
    # fast::divide of exact operands: 2.5 ulp (Table 8.2), the simulator's 0.5 beside it.
    div = A.bound("fast::divide")
    return [Output("out", "float32", ctx.bits(out), ref, ulp=div + A.sim_bound("fast::divide"),
                   tol=("ulp", div))]


def _layer_norm(ctx: Any, rows: int = 8, cols: int = 300) -> list[Output]:
    x, w, b = ctx.normal((rows, cols)), ctx.normal(cols), ctx.normal(cols)
    y = ctx.empty((rows, cols), "float32")
    mean, rstd = ctx.empty(rows, "float32"), ctx.empty(rows, "float32")
    ctx.launch(K.layer_norm, (rows,), ctx.put(x), y, ctx.put(w), ctx.put(b), mean, rstd, cols,
               cols, 1e-5, BLOCK=ctx.pow2(cols))
    x64 = x.astype(np.float64)
    mu = x64.mean(axis=1)
    r = 1 / np.sqrt(((x64 - mu[:, None]) ** 2).mean(axis=1) + np.float32(1e-5))
    yref = (x64 - mu[:, None]) * r[:, None] * w + b
    dev = _layer_norm_bounds(x64, w, mu, r, yref, A.bound("fast::divide"),
                             A.bound("fast::sqrt"))
    sim = _layer_norm_bounds(x64, w, mu, r, yref, 0.5, 0.5)
    return [Output(name, "float32", ctx.bits(t), want, ulp=INF, tol=("abs", d), sim_abs=d + e)
            for name, t, want, d, e in zip(("y", "mean", "rstd"), (y, mean, rstd),
                                           (yref, mu, r), dev, sim, strict=True)]


def _layer_norm_bounds(x: np.ndarray, w: np.ndarray, mu: np.ndarray, r: np.ndarray,
                       y: np.ndarray, div: float, sqrt: float) -> list[np.ndarray]:
    """Absolute error bounds of layer_norm's y, mean and rstd given the ULP bounds of its
    divide and sqrt (fast:: on Apple, Table 8.2; IEEE on the simulator), first order, 5 %
    margin: mean = sum / n; xc = x - mean; rstd = 1 / sqrt(sum(xc^2) / n + eps);
    y = xc * rstd * w + b."""
    n = x.shape[1]
    k_div, k_sqrt = A.units(div), A.units(sqrt)
    scale = np.abs(x).sum(axis=1) / n
    d_mean = ((n - 1) + k_div) * U * scale
    xc = x - mu[:, None]
    q = (xc * xc).sum(axis=1)
    d_q = 2 * d_mean * np.abs(xc).sum(axis=1) + (n + 2) * U * q
    rel_rstd = ((d_q / q + k_div * U + U) / 2 + k_sqrt * U) + k_div * U
    rw = np.abs(r[:, None] * w)
    d_y = rw * d_mean[:, None] + np.abs(xc) * rw * (rel_rstd[:, None] + 3 * U) + U * np.abs(y)
    return [1.05 * d_y, 1.05 * d_mean, 1.05 * rel_rstd * r]


def _layer_norm_timing(ctx: Any):  # noqa: ANN202
    rows, cols = 4096, 1024
    x, w, b = (ctx.put(ctx.normal(s)) for s in ((rows, cols), cols, cols))
    y, mean, rstd = ctx.empty((rows, cols), "float32"), ctx.empty(rows, "float32"), \
        ctx.empty(rows, "float32")
    return (lambda: K.layer_norm[(rows,)](x, y, w, b, mean, rstd, cols, cols, 1e-5, BLOCK=cols),
            lambda: ctx.torch.nn.functional.layer_norm(x, (cols,), w, b, 1e-5))


def _attention(ctx: Any, causal: bool) -> list[Output]:
    bh, n_ctx, head = 2, 64, 16
    q, k, v = (ctx.normal((bh, n_ctx, head)) for _ in range(3))
    o = ctx.empty((bh, n_ctx, head), "float16")
    ctx.launch(K.attention, (n_ctx // 16, bh), ctx.put(q, "float16"), ctx.put(k, "float16"),
                                   ctx.put(v, "float16"), o, 0.25, n_ctx, HEAD=head, BM=16,
                                   BN=16, CAUSAL=causal, num_warps=2)
    qf, kf, vf = (ctx.values(a, "float16") for a in (q, k, v))
    s = qf @ kf.transpose(0, 2, 1) * 0.25
    if causal:
        s = np.where(np.tril(np.ones((n_ctx, n_ctx), bool)), s, -np.inf)
    p = np.exp(s - s.max(axis=2, keepdims=True))
    ref = (p / p.sum(axis=2, keepdims=True)) @ vf
    # simdgroup matrix products (no accuracy in section 6.7) feed exp2 and a division: no
    # bound against the simulator (recorded); against float64 an fp16-output bound.
    return [Output("o", "float16", ctx.bits(o), ref, ulp=INF, tol=(5e-3, 5e-3))]


def _attention_timing(ctx: Any):  # noqa: ANN202
    bh, n_ctx, head = 8, 1024, 64
    q, k, v = (ctx.put(ctx.normal((bh, n_ctx, head)), "float16") for _ in range(3))
    o = ctx.empty((bh, n_ctx, head), "float16")
    sdpa = ctx.torch.nn.functional.scaled_dot_product_attention
    return (lambda: K.attention[(n_ctx // 64, bh)](q, k, v, o, 0.125, n_ctx, HEAD=head, BM=64,
                                                   BN=32, CAUSAL=False, num_warps=4),
            lambda: sdpa(q[None], k[None], v[None], scale=0.125))


def _reductions(ctx: Any) -> list[Output]:
    rows, cols = 12, 200
    x = ctx.normal((rows, cols))
    x[3, 50] = x[3, 120] = 50.0  # a tie: argmax takes the first
    s, m, a = ctx.empty(rows, "float32"), ctx.empty(rows, "float32"), ctx.empty(rows, "int32")
    ctx.launch(K.row_reductions, (rows,), ctx.put(x), s, m, a, cols, BLOCK=256)
    return [Output("sum", "float32", ctx.bits(s), x.astype(np.float64).sum(axis=1),
                   tol=("abs", _sum_bound(x))),
            Output("max", "float32", ctx.bits(m), x.max(axis=1).astype(np.float64)),
            Output("argmax", "int32", ctx.bits(a), x.argmax(axis=1))]


def _scans(ctx: Any) -> list[Output]:
    rows, cols = 6, 300
    x = ctx.normal((rows, cols))
    i = ctx.rng.integers(-1000, 1000, (rows, cols)).astype(np.int32)
    fs, isum = ctx.empty((rows, cols), "float32"), ctx.empty((rows, cols), "int32")
    ctx.launch(K.row_scans, (rows,), ctx.put(x), ctx.put(i), fs, isum, cols, BLOCK=512)
    # a prefix of j + 1 terms: j u sum |x| (any order)
    bound = np.arange(cols) * U * np.cumsum(np.abs(x.astype(np.float64)), axis=1) * 1.01
    return [Output("fsum", "float32", ctx.bits(fs), np.cumsum(x.astype(np.float64), axis=1),
                   tol=("abs", bound)),
            Output("isum", "int32", ctx.bits(isum), np.cumsum(i, axis=1))]


def _histogram(ctx: Any) -> list[Output]:
    n, bins = 3000, 16
    x = ctx.normal(n)
    counts, sums = ctx.zeros(bins, "int32"), ctx.zeros(bins, "float32")
    ctx.launch(K.histogram_add, (ctx.cdiv(n, 256),), ctx.put(x), counts, sums, n, BINS=bins,
               BLOCK=256)
    b = (np.abs(x) * 4).astype(np.int32) % bins
    count = np.bincount(b, minlength=bins)
    mag = np.bincount(b, weights=np.abs(x.astype(np.float64)), minlength=bins)
    return [Output("counts", "int32", ctx.bits(counts), count),
            # fp32 atomic adds land in arrival order on a GPU: not reproducible bit for bit;
            # a sum of `count` terms in some order against float64
            Output("sums", "float32", ctx.bits(sums),
                   np.bincount(b, weights=x.astype(np.float64), minlength=bins),
                   exact=False, ulp=INF, tol=("abs", count * U * mag * 1.01))]


def _spin_lock(ctx: Any) -> list[Output]:
    programs = 64
    lock, counter = ctx.zeros(1, "int32"), ctx.zeros(1, "int32")
    seen = ctx.zeros(programs, "int32")
    ctx.launch(K.locked_counter, (programs,), lock, counter, seen, num_warps=1)
    got = np.sort(ctx.bits(seen))
    # Which program got which ticket is the GPU's schedule: compare the sorted tickets.
    return [Output("counter", "int32", ctx.bits(counter), np.array([programs])),
            Output("tickets", "int32", got, np.arange(programs))]


def _nan_clamp(ctx: Any) -> list[Output]:
    x = np.array([0.0, -0.0, np.inf, 3.0, -300.0], np.float32)
    y = np.array([np.inf, np.inf, -0.0, 2.0, 1.0], np.float32)
    f, i = ctx.empty(5, "float32"), ctx.empty(5, "int32")
    ctx.launch(K.nan_clamp, (1,), ctx.put(x), ctx.put(y), f, i, 5, BLOCK=8)
    # Triton's CUDA backend: NaN from 0 x inf is positive, clamp(NaN) = +100 (min.xorsign.abs)
    ref = np.array([100.0, 100.0, 100.0, 6.0, -100.0])
    return [Output("clamped", "float32", ctx.bits(f), ref),
            Output("as_int16", "int32", ctx.bits(i), ref.astype(np.int32))]


def _math(ctx: Any) -> list[Output]:
    n = 512
    x = ctx.normal(n) * 3
    out = ctx.empty(4 * n, "float32")
    ctx.launch(K.math_fns, (ctx.cdiv(n, 256),), ctx.put(x), out, n, BLOCK=256)
    x64 = x.astype(np.float64)
    log_in = (np.abs(x) + np.float32(1)).astype(np.float64)  # the kernel's fp32 |x| + 1
    ref = np.concatenate([np.exp(x64), np.log(log_in), np.sin(x64), np.sqrt(np.abs(x64))])
    # precise:: exp, log, sin (Table 8.1: 4 ulp) of exact fp32 inputs; sqrt_rn is exact.
    calls = ("precise::exp", "precise::log", "precise::sin")
    dev = max(A.bound(c) for c in calls)
    sim = max(A.sim_bound(c) for c in calls)
    return [Output("exp_log_sin_sqrt", "float32", ctx.bits(out), ref, ulp=dev + sim,
                   tol=("ulp", dev))]


CASES: list[Case] = [
    Case("vector_add", "seed", _vector_add, timing=_vector_add_timing,
         notes="tutorial 01"),
    Case("softmax", "seed", _softmax, timing=_softmax_timing, notes="tutorial 02"),
    Case("matmul_fp32_ieee", "seed", lambda c: _matmul(c, "float32"),
         notes="the order Apple accumulates in is the mma_fp32_order probe's property"),
    Case("matmul_fp16", "dot", lambda c: _matmul(c, "float16"), timing=_matmul_timing,
         notes="tutorial 03"),
    Case("matmul_bf16", "dot", lambda c: _matmul(c, "bfloat16")),
    Case("matmul_int8", "dot", lambda c: _matmul(c, "int8"), full_only=True),
    Case("matmul_fp8e4nv", "dot", lambda c: _matmul(c, "float8e4nv", 64, 64, 64),
         full_only=True),
    Case("matmul_fp8e5", "dot", lambda c: _matmul(c, "float8e5", 64, 64, 64), full_only=True),
    Case("dropout", "tutorial", _dropout, notes="tutorial 04"),
    Case("layer_norm", "tutorial", _layer_norm, timing=_layer_norm_timing,
         notes="tutorial 05"),
    Case("attention", "attention", lambda c: _attention(c, False), timing=_attention_timing,
         notes="tutorial 06"),
    Case("attention_causal", "attention", lambda c: _attention(c, True), full_only=True),
    Case("reductions", "reduction", _reductions),
    Case("scans", "scan", _scans),
    Case("histogram_atomics", "atomic", _histogram),
    Case("spin_lock_64", "atomic", _spin_lock,
         notes="atomic_cas lock + volatile read, 64 programs; needs MSL 3.2 (macOS 15)"),
    Case("nan_sign_clamp", "elementwise", _nan_clamp),
    Case("math_functions", "elementwise", _math, full_only=True),
]
