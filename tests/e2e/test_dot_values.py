"""tt.dot over the K loop on every path, with the values randn never draws and with 16-bit
inputs over several K steps.

fp16 and bf16 products are exact in fp32 (11 + 11 and 8 + 8 significand bits fit in 24), so
a dot of 16-bit inputs accumulating in fp32 has one right answer too: the in-order fp32 fma
chain of the widened inputs, bit for bit. Special values (NaN, ±inf, -0.0, fp32 denormals,
values near FLT_MAX whose sums overflow) go through the same chain; NaN results are compared
as NaN (Metal does not promise a NaN payload), every other result bit for bit.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

from msltrans.workloads.dot_kernels import matmul_f32_kernel
from tests.e2e.dot_support import TRITON_PTR, as_f32, chain, compile_with, dot_stats, run

INT_ARGS = ("M", "N", "K", "sa_m", "sa_k", "sb_k", "sb_n", "sc_m", "sc_n")
PATHS = ("simdgroup", "registers", "scratch")


def _special(shape: tuple[int, int], dtype: str, seed: int) -> np.ndarray:
    """Normal values with NaN, ±inf, ±0, denormals (fp32: 2**-140; 16-bit: their smallest
    subnormals) and huge values sprinkled in; device-ready (bf16 as its uint16 bits)."""
    g = np.random.default_rng(seed)
    x = g.standard_normal(shape).astype(np.float32)
    big = {"float32": 3e38, "float16": 6e4, "bfloat16": 3e38}[dtype]
    tiny = {"float32": 2.0**-140, "float16": 2.0**-24, "bfloat16": 2.0**-133}[dtype]
    specials = np.array([np.nan, np.inf, -np.inf, -0.0, 0.0, tiny, -tiny, big, -big],
                        np.float32)
    flat = x.reshape(-1)
    where = g.choice(flat.size, size=flat.size // 6, replace=False)
    flat[where] = g.choice(specials, size=where.size)
    t = torch.from_numpy(x).to(getattr(torch, dtype))
    if dtype == "bfloat16":
        return t.view(torch.int16).numpy().view(np.uint16)
    return t.numpy()


def _randn(shape: tuple[int, int], dtype: str, seed: int) -> np.ndarray:
    t = torch.randn(shape, generator=torch.Generator().manual_seed(seed)).to(getattr(torch, dtype))
    if dtype == "bfloat16":
        return t.view(torch.int16).numpy().view(np.uint16)
    return t.numpy()


def _run_matmul(a: np.ndarray, b: np.ndarray, dtype: str, path: str,
                blocks: tuple[int, int, int], num_warps: int) -> tuple[np.ndarray, list]:
    m, k = a.shape
    n = b.shape[1]
    sig = {"a_ptr": TRITON_PTR[dtype], "b_ptr": TRITON_PTR[dtype], "c_ptr": "*fp32"}
    sig.update(dict.fromkeys(INT_ARGS, "i32"))
    bm, bn, bk = blocks
    program = compile_with(matmul_f32_kernel, sig, num_warps, path, BM=bm, BN=bn, BK=bk,
                           GROUP_M=2)
    c = np.full((m, n), 7.0, np.float32)
    run(program, (-(-m // bm) * -(-n // bn),), a, b, c, m, n, k, k, 1, n, 1, n, 1)
    return c, dot_stats(program)


def _same_bits_nan_as_nan(got: np.ndarray, want: np.ndarray) -> None:
    nan = np.isnan(want)
    assert np.array_equal(np.isnan(got), nan), "NaN positions differ"
    assert got[~nan].tobytes() == want[~nan].tobytes(), \
        f"{int((got[~nan].view(np.uint32) != want[~nan].view(np.uint32)).sum())} elements differ"


@pytest.mark.parametrize("path", PATHS)
@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16"])
def test_special_values_follow_the_fma_chain(dtype: str, path: str) -> None:
    m, n, k = 24, 20, 29  # ragged in M, N and K: wrapped rows and a masked K tail
    a, b = _special((m, k), dtype, 1), _special((k, n), dtype, 2)
    c, stats = _run_matmul(a, b, dtype, path, (16, 16, 8), 4)
    assert stats and all(s["path"] == path for s in stats)
    want = chain(as_f32(a, dtype), as_f32(b, dtype))
    assert np.isnan(want).any() and np.isinf(want).any()  # the inputs reach both
    _same_bits_nan_as_nan(c, want)


@pytest.mark.parametrize("path", PATHS)
@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_16bit_inputs_over_many_k_steps_are_the_fp32_chain(dtype: str, path: str) -> None:
    m, n, k = 32, 24, 100  # 7 K steps of 16, the last one masked
    a, b = _randn((m, k), dtype, 3), _randn((k, n), dtype, 4)
    c, stats = _run_matmul(a, b, dtype, path, (32, 8, 16), 4)
    assert stats and all(s["path"] == path for s in stats)
    fa, fb = as_f32(a, dtype), as_f32(b, dtype)
    assert c.tobytes() == chain(fa, fb).tobytes()
    # and within the stated tolerance of torch's fp32 matmul of the widened inputs
    ref = (torch.from_numpy(fa) @ torch.from_numpy(fb)).numpy()
    np.testing.assert_allclose(c, ref, rtol=1e-5, atol=1e-5 * np.sqrt(k))
