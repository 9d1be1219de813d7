"""Bound masks at vector width (msltrans/lower/memory/run_bounds.py), bit for bit on the simulator.

Each row r of these kernels has its own bounds (loaded from memory, so one launch covers
every residue of the bound modulo the run width): runs wholly inside take one 16-byte
access, the run a bound cuts goes element by element. The checks: every stored byte and
every `other` fill equal numpy's, masked-off outputs keep their NaN poison, the simulator's
run-time check of each whole-run decision (`msl_assume_uniform` in the vector branch) stays
quiet, and views the launcher cannot prove aligned stay scalar and never fault.
"""

from __future__ import annotations

import numpy as np
import pytest
import triton
import triton.language as tl

from msltrans.errors import MetalNonRecoverableError
from tests.support.run_kernel import run_kernel

BLOCK = 256
OTHER = {np.float32: -7.5, np.float16: -7.5, np.int8: -7}


@triton.jit
def ragged_copy_kernel(x_ptr, y_ptr, z_ptr, lo_ptr, hi_ptr, stride, OTHER: tl.constexpr,
                       SHAPE: tl.constexpr, BLOCK: tl.constexpr):
    # y[r, m] = 2 x[r, m] where the row's mask m holds (y keeps its poison elsewhere);
    # z[r, :] = the loaded row, `OTHER` where m is off.
    r = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    lo = tl.load(lo_ptr + r)
    hi = tl.load(hi_ptr + r)
    if SHAPE == "prefix":
        m = offs < hi
    elif SHAPE == "prefix_flipped":
        m = hi >= offs + 1
    elif SHAPE == "suffix":
        m = offs >= lo
    elif SHAPE == "unsigned":
        m = offs.to(tl.uint32) < hi.to(tl.uint32)
    else:
        m = (offs >= lo) & (offs < hi)
    x = tl.load(x_ptr + r * stride + offs, mask=m, other=OTHER)
    tl.store(y_ptr + r * stride + offs, x + x, mask=m)
    tl.store(z_ptr + r * BLOCK + offs, x)


def _mask(shape: str, lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    offs = np.arange(BLOCK)[None, :]
    lo, hi = lo[:, None], hi[:, None]
    return {"prefix": offs < hi, "prefix_flipped": hi >= offs + 1, "suffix": offs >= lo,
            "unsigned": offs < hi,
            "interval": (offs >= lo) & (offs < hi)}[shape]


def _bounds() -> tuple[np.ndarray, np.ndarray]:
    """Rows whose bounds take every residue modulo 16, near both ends and in the middle,
    plus empty and full rows."""
    his = [0, 1, BLOCK, *range(2, 18), *range(BLOCK - 17, BLOCK), 101, 130]
    los = [(7 * i) % 40 for i in range(len(his))]
    return np.array(los, np.int32), np.array(his, np.int32)


def _run(dtype: type, shape: str, x_offset: int = 0, stride: int = BLOCK + 16,
         num_warps: int = 1) -> str:
    lo, hi = _bounds()
    rows = len(hi)
    rng = np.random.default_rng(rows)
    if dtype is np.int8:
        data = rng.integers(-60, 60, rows * stride + x_offset).astype(np.int8)
        poison = np.int8(99)
    else:
        data = rng.standard_normal(rows * stride + x_offset).astype(dtype)
        poison = dtype(np.nan)
    x = data[x_offset:]
    y = np.full(rows * stride, poison, dtype)
    z = np.full(rows * BLOCK, poison, dtype)
    program = run_kernel(ragged_copy_kernel, (rows,), x, y, z, lo, hi, stride,
                         num_warps=num_warps, OTHER=OTHER[dtype], SHAPE=shape, BLOCK=BLOCK)
    m = _mask(shape, lo, hi)
    x2 = x[: rows * stride].reshape(rows, stride)[:, :BLOCK]
    want_y = np.full((rows, stride), poison, dtype)
    want_y[:, :BLOCK] = np.where(m, x2 + x2, poison)
    want_z = np.where(m, x2, dtype(OTHER[dtype]))
    assert y.tobytes() == want_y.reshape(-1).tobytes()
    assert z.tobytes() == want_z.reshape(-1).tobytes()
    return program.source


def _mem_lines(source: str) -> list[str]:
    return [ln.strip() for ln in source.splitlines() if "// msltrans-mem:" in ln]


@pytest.mark.parametrize("shape", ["prefix", "prefix_flipped", "suffix", "interval"])
def test_bound_masks_take_whole_runs_fp32(shape: str) -> None:
    src = _run(np.float32, shape)
    kind = "prefix" if shape == "prefix_flipped" else shape
    lines = _mem_lines(src)
    # the row load and the row store: 16-byte runs under the bound; z's store is unmasked
    assert sum(f"width=4 bytes=16 accesses=2 bound={kind}" in ln for ln in lines) == 2, lines


@pytest.mark.parametrize("dtype,nbytes", [(np.float16, 16), (np.int8, 8)])
def test_bound_masks_take_whole_runs_narrow_types(dtype: type, nbytes: int) -> None:
    # one warp, 256 elements: 8 a thread (fp16: 16 bytes, int8: 8 bytes a run)
    src = _run(dtype, "interval")
    lines = _mem_lines(src)
    assert sum(f"width=8 bytes={nbytes}" in ln and "bound=interval" in ln
               for ln in lines) == 2, lines


def test_unaligned_view_stays_scalar_and_exact() -> None:
    # x one element past a 16-byte boundary: the launch does not specialise it as aligned,
    # so its load is element by element; the aligned y keeps its whole-run stores.
    src = _run(np.float32, "interval", x_offset=1)
    lines = _mem_lines(src)
    assert "load elements=8 width=1" in lines[0], lines
    assert "bound=interval" in lines[1], lines


def test_stride_not_a_multiple_of_16_stays_scalar_and_exact() -> None:
    src = _run(np.float32, "prefix", stride=BLOCK + 4)
    lines = _mem_lines(src)
    assert "width=1" in lines[0] and "width=1" in lines[1], lines


def test_unsigned_bounds_stay_scalar_and_exact() -> None:
    # an increasing run may cross 2^32 - 1 -> 0 in the unsigned order: no whole-run test
    lines = _mem_lines(_run(np.float32, "unsigned"))
    assert "width=1" in lines[0] and "width=1" in lines[1], lines


def test_the_simulator_catches_a_wrong_whole_run_test(monkeypatch: pytest.MonkeyPatch) -> None:
    """The whole-run test for a prefix must look at the run's last element: testing its
    first instead sends the cut run through the vector branch, which the simulator's check
    stops (the GPU would have read past the bound)."""
    from msltrans.lower.memory import run_bounds

    real = run_bounds.whole_run_test

    def wrong(em, mask, shape, reg, width):  # type: ignore[no-untyped-def]
        return real(em, mask, "suffix" if shape == "prefix" else shape, reg, width)

    monkeypatch.setattr(run_bounds, "whole_run_test", wrong)
    with pytest.raises((MetalNonRecoverableError, RuntimeError), match="mask is not the same"):
        _run(np.float32, "prefix")
