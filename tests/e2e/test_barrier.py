"""`tl.debug_barrier()` (ttg.barrier): threads see each other's global writes after it."""

from __future__ import annotations

import numpy as np
import pytest
import triton
import triton.language as tl

from tests.support.run_kernel import compile_kernel, dispatch, run_kernel


@triton.jit
def _reverse_after_barrier(x_ptr, BLOCK: tl.constexpr, BARRIER: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(x_ptr + offs, tl.load(x_ptr + offs) + 1.0)
    if BARRIER:
        tl.debug_barrier()
    # Each thread now reads elements other threads wrote above.
    tl.store(x_ptr + BLOCK + offs, tl.load(x_ptr + (BLOCK - 1 - offs)))


@pytest.mark.parametrize("num_warps", [1, 4])
def test_debug_barrier_orders_global_memory(num_warps: int) -> None:
    block = 256
    x = np.zeros(2 * block, np.float32)
    x[:block] = np.arange(block, dtype=np.float32)
    program = run_kernel(_reverse_after_barrier, (1,), x, num_warps=num_warps, BLOCK=block,
                         BARRIER=True)
    assert "threadgroup_barrier(mem_flags::mem_threadgroup | mem_flags::mem_device);" \
        in program.source
    want = np.arange(block, dtype=np.float32) + 1
    assert np.array_equal(x[:block], want)
    assert np.array_equal(x[block:], want[::-1])


def test_without_the_barrier_the_race_is_visible() -> None:
    """The control: the same kernel without the barrier reads stale values on the simulator
    (its threads run to completion one after another), so the test above can fail."""
    block = 256
    x = np.zeros(2 * block, np.float32)
    x[:block] = np.arange(block, dtype=np.float32)
    program = compile_kernel(_reverse_after_barrier, (x,), 4, BLOCK=block, BARRIER=False)
    assert "mem_device);" not in program.source
    dispatch(program, (1,), (x,))
    want = np.arange(block, dtype=np.float32) + 1
    assert not np.array_equal(x[block:], want[::-1])
