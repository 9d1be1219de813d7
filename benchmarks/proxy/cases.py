"""The GPU proxy's cases: what runs, on which inputs, against which references.

Plain data plus torch: this module runs both here (build_proxy.py compiles the msltrans side
and records the simulator's outputs) and on the lent GPU (run_gpu.py times everything), where
msltrans itself cannot be imported (Triton 3.6 there). Every case names

- the Triton kernel (benchmarks/proxy/kernels.py) with its launch (grid, constexprs, warps):
  compiled by msltrans here, by Triton's CUDA backend there;
- optionally a hand-written MSL reference (benchmarks/proxy/reference/*.metal) with its own
  launch, pushed through the same MSL → CUDA mapping;
- the inputs (seeded), the outputs, a float64 reference and the bytes / flops one run moves,
  at a `check` size (run on the simulator too, bits compared) and a `time` size.
"""

from __future__ import annotations

import os
from functools import partial
from typing import Any

import numpy as np

from benchmarks.proxy.case_types import NP, Case, Hand, Launch, Size
from benchmarks.proxy.cases_bwd import attn_bwd_cases


def _bytes(*sizes: tuple[int, int]) -> float:
    return float(sum(n * b for n, b in sizes))


# ---- inputs and references -------------------------------------------------------------
def make_inputs(size: Size, seed: int) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    out = {}
    for name, (ty, shape) in size.inputs.items():
        dt = NP[ty]
        if name in size.outputs:
            out[name] = np.full(shape, np.nan, dtype=dt) if dt != np.int32 else \
                np.zeros(shape, dt)
        else:
            out[name] = rng.standard_normal(shape).astype(dt)
    if size.prepare is not None:
        size.prepare(out)
    return out


def _t(x: Any) -> Any:
    import torch

    return x.double() if isinstance(x, torch.Tensor) else torch.from_numpy(x).double()


def _ref_vadd(t: dict[str, Any]) -> dict[str, Any]:
    return {"out": _t(t["a"]) + _t(t["b"])}


def _ref_softmax(t: dict[str, Any]) -> dict[str, Any]:
    import torch

    return {"y": torch.softmax(_t(t["x"]), dim=1)}


def _ref_softmax_ragged(t: dict[str, Any], cols: int) -> dict[str, Any]:
    """Softmax over the first `cols` columns; the rest is NaN: the output's poison must stay
    there (run_gpu.py checks NaN in the reference as "never written")."""
    import torch

    x = _t(t["x"])
    y = torch.full_like(x, float("nan"))
    y[:, :cols] = torch.softmax(x[:, :cols], dim=1)
    return {"y": y}


def _ref_layer_norm(t: dict[str, Any]) -> dict[str, Any]:
    x = _t(t["x"])
    mu = x.mean(dim=1, keepdim=True)
    var = ((x - mu) ** 2).mean(dim=1, keepdim=True)
    rstd = 1 / (var + 1e-5).sqrt()
    return {"y": (x - mu) * rstd * _t(t["w"]) + _t(t["b"]), "mean": mu[:, 0],
            "rstd": rstd[:, 0]}


def _ref_rowsum(t: dict[str, Any]) -> dict[str, Any]:
    return {"out": _t(t["x"]).sum(dim=1)}


def _ref_matmul(t: dict[str, Any]) -> dict[str, Any]:
    return {"c": _t(t["a"]) @ _t(t["b"])}


LOG2E = 1.4426950408889634


def _ref_attention(t: dict[str, Any], sm_scale: float, causal: bool) -> dict[str, Any]:
    """softmax(Q Kᵀ · sm_scale) V in float64, and the base-2 log-sum-exp of the scaled scores
    (the tutorial kernel's row statistic), a few heads at a time (a 4096² float64 score matrix
    per head)."""
    import torch

    q, k, v = _t(t["q"]), _t(t["k"]), _t(t["v"])
    o, lse = torch.empty_like(q), torch.empty(q.shape[:2], dtype=q.dtype, device=q.device)
    n = q.shape[1]
    hidden = torch.ones(n, n, dtype=torch.bool, device=q.device).triu(1) if causal else None
    for h0 in range(0, q.shape[0], 4):
        s = q[h0:h0 + 4] @ k[h0:h0 + 4].transpose(1, 2) * sm_scale
        if hidden is not None:
            s = s.masked_fill(hidden, float("-inf"))
        o[h0:h0 + 4] = torch.softmax(s, dim=-1) @ v[h0:h0 + 4]
        lse[h0:h0 + 4] = torch.logsumexp(s, dim=-1) * LOG2E
    return {"o": o, "lse": lse}


# ---- the cases ---------------------------------------------------------------------------
def _vadd(n: int) -> Size:
    launch = Launch((n // 1024, 1, 1), {"a_ptr": "a", "b_ptr": "b", "out_ptr": "out", "n": n},
                    {"a_ptr": "*fp32", "b_ptr": "*fp32", "out_ptr": "*fp32", "n": "i32"},
                    {"BLOCK": 1024}, 4)
    hand = Hand("vadd.metal", "vadd", 256, {}, (n // 4096, 1, 1),
                ["a", "b", "out", ("i32", n // 4)])
    return Size({"a": ("*fp32", (n,)), "b": ("*fp32", (n,)), "out": ("*fp32", (n,))},
                ("out",), launch, hand, _bytes((3 * n, 4)))


def _softmax(rows: int, cols: int, programs: int) -> Size:
    launch = Launch((programs, 1, 1),
                    {"out_ptr": "y", "in_ptr": "x", "in_stride": cols, "out_stride": cols,
                     "n_rows": rows, "n_cols": cols},
                    {"out_ptr": "*fp32", "in_ptr": "*fp32", "in_stride": "i32",
                     "out_stride": "i32", "n_rows": "i32", "n_cols": "i32"},
                    {"BLOCK": cols, "STAGES": None}, 8)
    hand = Hand("softmax.metal", "softmax", 256, {"COLS": str(cols)}, (programs, 1, 1),
                ["y", "x", ("i32", rows)], exact=False)
    return Size({"x": ("*fp32", (rows, cols)), "y": ("*fp32", (rows, cols))}, ("y",), launch,
                hand, _bytes((2 * rows * cols, 4)))


def _softmax_ragged(rows: int, cols: int, stride: int, programs: int) -> Size:
    """Softmax over `cols` of `stride`-element rows (BLOCK 1024, 8 warps: a bound mask)."""
    launch = Launch((programs, 1, 1),
                    {"out_ptr": "y", "in_ptr": "x", "in_stride": stride, "out_stride": stride,
                     "n_rows": rows, "n_cols": cols},
                    {"out_ptr": "*fp32", "in_ptr": "*fp32", "in_stride": "i32",
                     "out_stride": "i32", "n_rows": "i32", "n_cols": "i32"},
                    {"BLOCK": 1024, "STAGES": None}, 8)
    hand = Hand("softmax_ragged.metal", "softmax_ragged", 256, {"BLOCK": "1024"},
                (programs, 1, 1), ["y", "x", ("i32", rows), ("i32", cols), ("i32", stride)],
                exact=False)
    return Size({"x": ("*fp32", (rows, stride)), "y": ("*fp32", (rows, stride))}, ("y",),
                launch, hand, _bytes((2 * rows * cols, 4)))


def _layer_norm(rows: int, cols: int, dtype: str, block: int = 1024,
                with_hand: bool = False) -> Size:
    eb = 2 if dtype == "*fp16" else 4
    launch = Launch((rows, 1, 1),
                    {"x_ptr": "x", "y_ptr": "y", "w_ptr": "w", "b_ptr": "b",
                     "mean_ptr": "mean", "rstd_ptr": "rstd", "row_stride": cols, "N": cols,
                     "eps": 1e-5},
                    {"x_ptr": dtype, "y_ptr": dtype, "w_ptr": dtype, "b_ptr": dtype,
                     "mean_ptr": "*fp32", "rstd_ptr": "*fp32", "row_stride": "i32", "N": "i32",
                     "eps": "fp32"}, {"BLOCK": block}, 8)
    inputs = {"x": (dtype, (rows, cols)), "y": (dtype, (rows, cols)), "w": (dtype, (cols,)),
              "b": (dtype, (cols,)), "mean": ("*fp32", (rows,)), "rstd": ("*fp32", (rows,))}
    hand = Hand("layer_norm_ragged.metal", "layer_norm_ragged", 256,
                {"LN_T": "half" if eb == 2 else "float", "BLOCK": str(block)}, (rows, 1, 1),
                ["x", "y", "w", "b", "mean", "rstd", ("i32", cols), ("fp32", 1e-5)],
                exact=False) if with_hand else None
    # x read three times (once per pass; the later passes mostly hit in L2), y written once
    return Size(inputs, ("y", "mean", "rstd"), launch, hand,
                _bytes((2 * rows * cols, eb), (2 * cols, eb)))


def _rowsum(rows: int, cols: int) -> Size:
    launch = Launch((rows // 4, 1, 1), {"x_ptr": "x", "out_ptr": "out", "stride": cols,
                                        "cols": cols},
                    {"x_ptr": "*fp32", "out_ptr": "*fp32", "stride": "i32", "cols": "i32"},
                    {"ROWS": 4, "BLOCK": 1024}, 4)
    hand = Hand("rowsum.metal", "rowsum", 128, {"COLS": str(cols)}, (rows // 4, 1, 1),
                ["x", "out"], exact=False)
    return Size({"x": ("*fp32", (rows, cols)), "out": ("*fp32", (rows,))}, ("out",), launch,
                hand, _bytes((rows * cols, 4), (rows, 4)))


def _matmul(m: int, n: int, k: int, dtype: str, bk: int, bm: int = 64, bn: int = 64,
            warps: int = 4) -> Size:
    """msltrans's tile bm x bn x bk on `warps` warps; the hand GEMM keeps its 64 x 64 x 16
    on 4 simdgroups (the common yardstick of every tile)."""
    launch = Launch(((m // bm) * (n // bn), 1, 1),
                    {"a_ptr": "a", "b_ptr": "b", "c_ptr": "c", "M": m, "N": n, "K": k,
                     "s_am": k, "s_ak": 1, "s_bk": n, "s_bn": 1, "s_cm": n, "s_cn": 1},
                    {"a_ptr": dtype, "b_ptr": dtype, "c_ptr": "*fp32", "M": "i32", "N": "i32",
                     "K": "i32", "s_am": "i32", "s_ak": "i32", "s_bk": "i32", "s_bn": "i32",
                     "s_cm": "i32", "s_cn": "i32"}, {"BM": bm, "BN": bn, "BK": bk, "GROUP": 8},
                    warps)
    t = "half" if dtype == "*fp16" else "float"
    hand = Hand("gemm.metal", "gemm", 128, {"GEMM_T": t}, ((m // 64) * (n // 64), 1, 1),
                ["a", "b", "c", ("i32", m), ("i32", n), ("i32", k)])
    return Size({"a": (dtype, (m, k)), "b": (dtype, (k, n)), "c": ("*fp32", (m, n))}, ("c",),
                launch, hand, 2.0 * m * n * k)


# Attention forward, fp16, q/k/v/o [Z*H, N, D] contiguous. Each side runs the tile it is
# suited for: Triton's CUDA backend tutorial 06's test configuration, BLOCK_M = 128,
# BLOCK_N = 64, 4 warps (on Hopper its autotuner may pick it); msltrans BLOCK_M = 64,
# BLOCK_N = 32, 4 warps, the tile a Mac user picks: the QKᵀ result and the accumulator stay
# in simdgroup fragments (16 rows per simdgroup) and the K/V tiles fit Apple's 32 KB of
# threadgroup memory at head dims 64 and 128 (at 128 x 64 the fragments would not fit in
# registers and d128's tiles not in 32 KB). The hand kernel uses MLX's own tiles (32
# queries, 4 simdgroups, 32 / 16 keys per step). Z = H = 8 at the time size and 2 at the
# check size: neither is 1 nor a multiple of 16, so both sizes compile to the same MSL.
# MSLTRANS_PROXY_ATTN_BM (set alike for build_proxy and run_gpu) times another msltrans
# tile height, e.g. 32, the hand kernel's; MSLTRANS_PROXY_ATTN_WARPS another simdgroup count
# (2: 32 query rows per simdgroup, the GEMM's 32 x 32 reuse of each operand fragment).
ATTN_BM = int(os.environ.get("MSLTRANS_PROXY_ATTN_BM", "64"))
ATTN_BN = 32
ATTN_WARPS = int(os.environ.get("MSLTRANS_PROXY_ATTN_WARPS", "4"))
TRITON_ATTN_BM, TRITON_ATTN_BN = 128, 64
_QKVO = ("q", "k", "v", "o")


def _attn_hand(z: int, h: int, n: int, d: int, causal: bool, lse: bool) -> Hand:
    scale = float(np.float32(d ** -0.5 * LOG2E))
    return Hand("attention.metal", "attention", 128,
                {"HEAD_DIM": str(d), "CAUSAL": str(int(causal)), "WRITE_LSE": str(int(lse))},
                (n // 32, z * h, 1),
                [*_QKVO, "lse" if lse else "lse_unused", ("i32", n), ("fp32", scale)],
                exact=False)


def _attn_inputs(z: int, h: int, n: int, d: int, lse: bool) -> dict[str, tuple[str, Any]]:
    inputs: dict[str, tuple[str, Any]] = {x: ("*fp16", (z * h, n, d)) for x in _QKVO}
    inputs["lse" if lse else "lse_unused"] = ("*fp32", (z * h, n) if lse else (1,))
    return inputs


def _attn_plain(z: int, h: int, n: int, d: int, causal: bool) -> Size:
    """benchmarks/proxy/kernels.py's attn_fwd: scale = sm_scale · log2(e) from the host."""
    scale = d ** -0.5 * LOG2E
    def launch(bm: int, bn: int) -> Launch:
        return Launch((n // bm, z * h, 1),
                      {"q_ptr": "q", "k_ptr": "k", "v_ptr": "v", "o_ptr": "o", "n_ctx": n,
                       "scale": scale},
                      {"q_ptr": "*fp16", "k_ptr": "*fp16", "v_ptr": "*fp16", "o_ptr": "*fp16",
                       "n_ctx": "i32", "scale": "fp32"},
                      {"HEAD": d, "BM": bm, "BN": bn, "CAUSAL": causal}, ATTN_WARPS)
    flops = 4.0 * z * h * n * n * d * (0.5 if causal else 1.0)
    return Size(_attn_inputs(z, h, n, d, False), ("o",), launch(ATTN_BM, ATTN_BN),
                _attn_hand(z, h, n, d, causal, False), flops,
                launch(TRITON_ATTN_BM, TRITON_ATTN_BN))


def _attn_tutorial(z: int, h: int, n: int, d: int, causal: bool) -> Size:
    """msltrans/workloads/attention.py's flash_attn_fwd (tutorial 06's shape): device
    tensor descriptors, O and the row statistic; the hand kernel writes both too."""
    def launch(bm: int, bn: int) -> Launch:
        return Launch((n // bm, z * h, 1),
                      {"sm_scale": d ** -0.5, "lse_ptr": "lse", "Z": z, "H": h, "q": "q",
                       "k": "k", "v": "v", "o": "o", "N_CTX": n},
                      {"sm_scale": "fp32", "lse_ptr": "*fp32", "Z": "i32", "H": "i32",
                       "q": "*fp16", "k": "*fp16", "v": "*fp16", "o": "*fp16",
                       "N_CTX": "i32"},
                      {"HEAD_DIM": d, "BLOCK_M": bm, "BLOCK_N": bn, "FP8": False,
                       "CAUSAL": causal}, ATTN_WARPS)
    flops = 4.0 * z * h * n * n * d * (0.5 if causal else 1.0)
    return Size(_attn_inputs(z, h, n, d, True), ("o", "lse"), launch(ATTN_BM, ATTN_BN),
                _attn_hand(z, h, n, d, causal, True), flops,
                launch(TRITON_ATTN_BM, TRITON_ATTN_BN))


def _attn_cases() -> list[Case]:
    out = []
    for kernel, size, label in (("attn_fwd", _attn_plain, "attention fwd"),
                                ("flash_attn_fwd", _attn_tutorial, "tutorial-06 attention fwd")):
        for d in (64, 128):
            for causal in (False, True):
                ref = partial(_ref_attention, sm_scale=d ** -0.5, causal=causal)
                name = f"{label} fp16 d{d}{' causal' if causal else ''} 64x4096"
                # exp2: the simulator's is the host libm's, CUDA's exp2f differs by an ulp
                out.append(Case(name, kernel, "TFLOP/s", size(2, 2, 256, d, causal),
                                size(8, 8, 4096, d, causal), False, ref, 2e-3,
                                ">= 0.80 of hand MSL, also with the MMA stand-in"))
    return out


CASES = [
    Case("vector add fp32", "vadd", "GB/s", _vadd(1 << 16), _vadd(1 << 26), True, _ref_vadd,
         1e-6, ">= 0.95 of Triton"),
    Case("softmax fp32 4096 cols, 8 warps", "row_softmax_kernel", "GB/s", _softmax(64, 4096, 32),
         _softmax(4096, 4096, 528), False, _ref_softmax, 1e-5, ">= 0.95 of Triton"),
    Case("layer norm fwd fp16 8192x4096", "layer_norm_fwd_rows", "GB/s",
         _layer_norm(32, 4096, "*fp16"), _layer_norm(8192, 4096, "*fp16"), False,
         _ref_layer_norm, 2e-3, ">= 0.95 of Triton"),
    Case("layer norm fwd fp32 8192x4096", "layer_norm_fwd_rows", "GB/s",
         _layer_norm(32, 4096, "*fp32"), _layer_norm(8192, 4096, "*fp32"), False,
         _ref_layer_norm, 1e-5, ">= 0.95 of Triton"),
    Case("row sum fp32 16384x4096", "row_sums", "GB/s", _rowsum(64, 4096),
         _rowsum(16384, 4096), True, _ref_rowsum, 1e-5, ">= 0.95 of Triton"),
    Case("matmul fp16->fp32 4096^3, 64x64x32", "tiled_matmul", "TFLOP/s",
         _matmul(256, 256, 256, "*fp16", 32), _matmul(4096, 4096, 4096, "*fp16", 32), True,
         _ref_matmul, 1e-4, ">= 0.90 of hand GEMM"),
    Case("matmul fp32 ieee 2048^3, 64x64x32", "tiled_matmul", "TFLOP/s",
         _matmul(256, 256, 256, "*fp32", 32), _matmul(2048, 2048, 2048, "*fp32", 32), True,
         _ref_matmul, 1e-5, ">= 0.90 of hand GEMM"),
] + [
    Case(f"matmul {name} {size}^3, {bm}x{bn}x{bk} w{warps}", "tiled_matmul", "TFLOP/s",
         _matmul(256, 256, 256, dtype, bk, bm, bn, warps),
         _matmul(size, size, size, dtype, bk, bm, bn, warps), True, _ref_matmul, rtol,
         "no regression against the hand GEMM")
    for name, dtype, size, rtol in (("fp16->fp32", "*fp16", 4096, 1e-4),
                                    ("fp32 ieee", "*fp32", 2048, 1e-5))
    for bm, bn, bk, warps in ((128, 64, 32, 4), (128, 128, 16 if dtype == "*fp32" else 32, 8))
] + _attn_cases() + [
    Case(f"softmax fp32 4096x1000, row stride {stride} (ragged)", "row_softmax_kernel", "GB/s",
         _softmax_ragged(64, 1000, stride, 32), _softmax_ragged(4096, 1000, stride, 528),
         False, partial(_ref_softmax_ragged, cols=1000), 1e-5,
         ">= Triton and >= 0.95 of hand MSL (vector interior, scalar tail)")
    for stride in (1024, 1000)
] + [
    Case(f"layer norm fwd {name} 4096x4000 (ragged)", "layer_norm_fwd_rows", "GB/s",
         _layer_norm(32, 4000, dtype, 4096, True), _layer_norm(4096, 4000, dtype, 4096, True),
         False, _ref_layer_norm, rtol, ">= Triton and >= 0.95 of hand MSL")
    for name, dtype, rtol in (("fp16", "*fp16", 2e-3), ("fp32", "*fp32", 1e-5))
] + attn_bwd_cases()
