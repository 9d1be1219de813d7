"""ttg.convert_layout between blocked layouts: shapes × num_warps (1..16), incl. replication."""

from __future__ import annotations

import random
from pathlib import Path

import numpy as np
import pytest

from tests.support.run_kernel import compile_ttgir, dispatch
from tests.support.ttgir_gen import blocked, convert_kernel_2d, random_blocked, write

CASES = [(nw, shape, seed) for nw in (1, 2, 4, 8, 16)
         for shape in ((16, 16), (8, 64), (64, 32), (4, 4)) for seed in range(2)]


@pytest.mark.parametrize(("num_warps", "shape", "seed"), CASES)
def test_convert_round_trip(tmp_path: Path, num_warps: int, shape: tuple[int, int],
                            seed: int) -> None:
    rng = random.Random(hash((num_warps, shape, seed)) & 0xFFFF)
    src, dst = random_blocked(rng, num_warps), random_blocked(rng, num_warps)
    m, n = shape
    program = compile_ttgir(write(tmp_path, "cvt", convert_kernel_2d(src, dst, m, n, num_warps)))
    assert program.threads_per_group == 32 * num_warps
    x = np.arange(m * n, dtype=np.float32).reshape(m, n) * 0.5 - 3
    out = np.full((m, n), np.nan, dtype=np.float32)
    dispatch(program, (1,), (x, out))
    np.testing.assert_array_equal(out, x)


@pytest.mark.parametrize("num_warps", [1, 2, 4, 8])
def test_reshape_through_scratch(tmp_path: Path, num_warps: int) -> None:
    # The verifier pins the result layout unless allow_reorder; with it, a result layout
    # that is not the same threads' registers goes through scratch (row-major order kept).
    from tests.support.ttgir_gen import reshape_kernel_1d_to_2d

    src = blocked([1], [32], [num_warps], [0])
    dst = blocked([1, 2], [4, 8], [num_warps, 1], [0, 1])
    m, n = 32, 16
    program = compile_ttgir(write(tmp_path, "rs", reshape_kernel_1d_to_2d(src, dst, m, n,
                                                                          num_warps, True)))
    assert program.shared_bytes >= m * n * 4
    x = np.arange(m * n, dtype=np.float32)
    out = np.full((m, n), np.nan, np.float32)
    dispatch(program, (1,), (x, out))
    np.testing.assert_array_equal(out, x.reshape(m, n))


@pytest.mark.parametrize(("shape", "num_warps"), [((128, 128), 4), ((64, 256), 8)])
def test_convert_larger_than_threadgroup_memory(tmp_path: Path, shape: tuple[int, int],
                                                num_warps: int) -> None:
    m, n = shape  # 64 KB of fp32: converted in 16 KB passes
    src = blocked([1, 4], [8, 4], [num_warps, 1], [1, 0])
    dst = blocked([4, 1], [4, 8], [1, num_warps], [0, 1])
    program = compile_ttgir(write(tmp_path, "big", convert_kernel_2d(src, dst, m, n, num_warps)))
    assert program.shared_bytes == 16384
    x = np.arange(m * n, dtype=np.float32).reshape(m, n)
    out = np.full((m, n), np.nan, np.float32)
    dispatch(program, (1,), (x, out))
    np.testing.assert_array_equal(out, x)
