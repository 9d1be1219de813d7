"""The kernels the speed benchmarks time, written for this project.

Each one does the work of a common Triton program (the shapes of Triton's tutorials 01, 02,
03 and 05, and a row reduction) with the same stress on the compiler: 1-D and 2-D blocked
layouts, masks on ragged edges, loops over column blocks, a K loop with a grouped program
order. They run unchanged on Triton's CUDA backend (the reference side of the GPU proxy) and
through msltrans. `flash_attn_fwd` is not written here: it is the tutorial-06-shaped forward
of the project's workload tests (tests/e2e/workloads/test_attention.py), imported from there
so the proxy times exactly the kernel the tests check.
"""

from __future__ import annotations

import importlib
import sys
import types
from typing import Any

import triton
import triton.language as tl


@triton.jit
def vadd(a_ptr, b_ptr, out_ptr, n, BLOCK: tl.constexpr):
    # out[i] = a[i] + b[i] over one block of BLOCK elements per program.
    start = tl.program_id(0) * BLOCK
    idx = start + tl.arange(0, BLOCK)
    keep = idx < n
    a = tl.load(a_ptr + idx, mask=keep)
    b = tl.load(b_ptr + idx, mask=keep)
    tl.store(out_ptr + idx, a + b, mask=keep)


@triton.jit
def row_softmax(out_ptr, in_ptr, in_stride, out_stride, rows, cols, BLOCK: tl.constexpr):
    # One whole row per step, programs striding over the rows; -inf pads the ragged tail so it
    # drops out of both the max and the sum.
    first = tl.program_id(0)
    step = tl.num_programs(0)
    lanes = tl.arange(0, BLOCK)
    inside = lanes < cols
    for r in tl.range(first, rows, step):
        x = tl.load(in_ptr + r * in_stride + lanes, mask=inside, other=-float("inf"))
        shifted = x - tl.max(x, axis=0)
        e = tl.exp(shifted)
        total = tl.sum(e, axis=0)
        tl.store(out_ptr + r * out_stride + lanes, e / total, mask=inside)


@triton.jit
def layer_norm_rows(x_ptr, y_ptr, w_ptr, b_ptr, mean_ptr, rstd_ptr, stride, cols, eps,
                    BLOCK: tl.constexpr):
    # One row per program in BLOCK-wide column chunks: a pass for the mean, one for the
    # variance, one to normalise, scale and shift (statistics in fp32 whatever the storage).
    r = tl.program_id(0)
    x_row = x_ptr + r * stride
    y_row = y_ptr + r * stride
    acc = tl.zeros([BLOCK], dtype=tl.float32)
    for c0 in range(0, cols, BLOCK):
        c = c0 + tl.arange(0, BLOCK)
        acc += tl.load(x_row + c, mask=c < cols, other=0.0).to(tl.float32)
    mu = tl.sum(acc, axis=0) / cols
    sq = tl.zeros([BLOCK], dtype=tl.float32)
    for c0 in range(0, cols, BLOCK):
        c = c0 + tl.arange(0, BLOCK)
        v = tl.load(x_row + c, mask=c < cols, other=0.0).to(tl.float32)
        d = tl.where(c < cols, v - mu, 0.0)
        sq += d * d
    inv = 1 / tl.sqrt(tl.sum(sq, axis=0) / cols + eps)
    tl.store(mean_ptr + r, mu)
    tl.store(rstd_ptr + r, inv)
    for c0 in range(0, cols, BLOCK):
        c = c0 + tl.arange(0, BLOCK)
        inb = c < cols
        g = tl.load(w_ptr + c, mask=inb)
        h = tl.load(b_ptr + c, mask=inb)
        v = tl.load(x_row + c, mask=inb, other=0.0).to(tl.float32)
        out = (v - mu) * inv * g + h
        tl.store(y_row + c, out.to(y_ptr.dtype.element_ty), mask=inb)


@triton.jit
def row_sums(x_ptr, out_ptr, stride, cols, ROWS: tl.constexpr, BLOCK: tl.constexpr):
    # ROWS rows per program, summed along the columns in BLOCK-wide chunks.
    rows = tl.program_id(0) * ROWS + tl.arange(0, ROWS)
    acc = tl.zeros([ROWS, BLOCK], dtype=tl.float32)
    for c0 in range(0, cols, BLOCK):
        c = c0 + tl.arange(0, BLOCK)
        acc += tl.load(x_ptr + rows[:, None] * stride + c[None, :], mask=c[None, :] < cols,
                       other=0.0)
    tl.store(out_ptr + rows, tl.sum(acc, axis=1))


@triton.jit
def tiled_matmul(a_ptr, b_ptr, c_ptr, M, N, K, s_am, s_ak, s_bk, s_bn, s_cm, s_cn,
                 BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr, GROUP: tl.constexpr):
    # C = A @ B, one BM x BN tile per program. Programs are ordered in groups of GROUP tile
    # rows so that neighbouring programs share A rows and B columns in the cache; rows and
    # columns past the edge wrap (modulo) and are masked only at the store; K is masked.
    pid = tl.program_id(0)
    tiles_m = tl.cdiv(M, BM)
    tiles_n = tl.cdiv(N, BN)
    per_group = GROUP * tiles_n
    group = pid // per_group
    row0 = group * GROUP
    rows_here = min(tiles_m - row0, GROUP)
    tm = row0 + (pid % per_group) % rows_here
    tn = (pid % per_group) // rows_here
    rm = (tm * BM + tl.arange(0, BM)) % M
    rn = (tn * BN + tl.arange(0, BN)) % N
    rk = tl.arange(0, BK)
    a_tile = a_ptr + rm[:, None] * s_am + rk[None, :] * s_ak
    b_tile = b_ptr + rk[:, None] * s_bk + rn[None, :] * s_bn
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k0 in range(0, tl.cdiv(K, BK)):
        left = K - k0 * BK
        a = tl.load(a_tile, mask=rk[None, :] < left, other=0.0)
        b = tl.load(b_tile, mask=rk[:, None] < left, other=0.0)
        acc = tl.dot(a, b, acc, input_precision="ieee")
        a_tile += BK * s_ak
        b_tile += BK * s_bk
    out = acc.to(c_ptr.dtype.element_ty)
    cm = tm * BM + tl.arange(0, BM)
    cn = tn * BN + tl.arange(0, BN)
    c_tile = c_ptr + cm[:, None] * s_cm + cn[None, :] * s_cn
    tl.store(c_tile, out, mask=(cm[:, None] < M) & (cn[None, :] < N))


@triton.jit
def attn_fwd(q_ptr, k_ptr, v_ptr, o_ptr, n_ctx, scale, HEAD: tl.constexpr,
             BM: tl.constexpr, BN: tl.constexpr, CAUSAL: tl.constexpr):
    # FlashAttention forward, one BM block of queries of one (batch, head) per program, the
    # online softmax written inline (no helper functions, no descriptors). q, k, v, o are
    # [batch*heads, n_ctx, HEAD] contiguous; scale folds 1/sqrt(HEAD) and log2(e).
    bh = tl.program_id(1)
    q0 = tl.program_id(0) * BM
    rows = q0 + tl.arange(0, BM)
    d = tl.arange(0, HEAD)
    base = bh.to(tl.int64) * n_ctx * HEAD
    q = tl.load(q_ptr + base + rows[:, None] * HEAD + d[None, :], mask=rows[:, None] < n_ctx,
                other=0.0)
    m_i = tl.zeros([BM], dtype=tl.float32) - float("inf")
    l_i = tl.zeros([BM], dtype=tl.float32)
    acc = tl.zeros([BM, HEAD], dtype=tl.float32)
    hi = tl.minimum(q0 + BM, n_ctx) if CAUSAL else n_ctx
    for start in tl.range(0, hi, BN):
        keys = start + tl.arange(0, BN)
        kt = tl.load(k_ptr + base + keys[None, :] * HEAD + d[:, None],
                     mask=keys[None, :] < n_ctx, other=0.0)
        s = tl.dot(q, kt) * scale
        keep = keys[None, :] < n_ctx
        if CAUSAL:
            keep = keep & (keys[None, :] <= rows[:, None])
        s = tl.where(keep, s, -float("inf"))
        m_new = tl.maximum(m_i, tl.max(s, axis=1))
        p = tl.math.exp2(s - m_new[:, None])
        alpha = tl.math.exp2(m_i - m_new)
        l_i = l_i * alpha + tl.sum(p, axis=1)
        v = tl.load(v_ptr + base + keys[:, None] * HEAD + d[None, :],
                    mask=keys[:, None] < n_ctx, other=0.0)
        acc = acc * alpha[:, None] + tl.dot(p.to(v.dtype), v)
        m_i = m_new
    acc = acc / l_i[:, None]
    tl.store(o_ptr + base + rows[:, None] * HEAD + d[None, :], acc.to(o_ptr.dtype.element_ty),
             mask=rows[:, None] < n_ctx)


class _InertPytest(types.ModuleType):
    """Stands in for pytest while a test module is imported on a machine without it (the lent
    GPU): every attribute is another stand-in, and calling one returns the decorated function
    (`@pytest.fixture(...)`, `@pytest.mark.parametrize(...)`) or itself."""

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):  # module protocol (__file__, __path__, ...): not there
            raise AttributeError(name)
        return _InertPytest(name)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        if len(args) == 1 and callable(args[0]) and not kwargs:
            return args[0]
        return self


def _workload_kernel(module: str, name: str) -> Any:
    try:
        mod = importlib.import_module(module)
    except ModuleNotFoundError as exc:
        if exc.name != "pytest":
            raise
        sys.modules["pytest"] = _InertPytest("pytest")
        try:
            mod = importlib.import_module(module)
        finally:
            del sys.modules["pytest"]
    return getattr(mod, name)


# Tutorial 06's forward: device tensor descriptors, the online softmax in a helper, causal as
# two sweeps; writes O and the row statistic (base-2 log-sum-exp) for the backward.
flash_attn_fwd = _workload_kernel("tests.e2e.workloads.test_attention", "flash_attn_fwd")

# Tutorial 06's backward shape (dK, dV then dQ in one program): timed beside the forward.
flash_attn_bwd = _workload_kernel("tests.e2e.workloads.test_attention", "flash_attn_bwd")
