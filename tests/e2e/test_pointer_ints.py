"""tt.int_to_ptr / tt.ptr_to_int: pointers as 64-bit device addresses, both ways."""

from __future__ import annotations

import pytest
import torch
import triton
import triton.language as tl

pytestmark = pytest.mark.usefixtures("sim_driver_only")


@triton.jit
def _select_addresses(cond_ptr, a_ptr, b_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    a = tl.load(a_ptr + offs, mask=m).to(tl.pi32_t)  # int64 -> pointer (never dereferenced)
    b = tl.load(b_ptr + offs, mask=m).to(tl.pi32_t)
    tl.store(out_ptr + offs, tl.where(tl.load(cond_ptr + offs, mask=m), a, b), mask=m)


@pytest.mark.parametrize("n, block", [(1000, 1024), (37, 16)])
def test_int64_through_pointers_is_a_bit_copy(n: int, block: int) -> None:
    g = torch.Generator().manual_seed(n)
    a = torch.randint(-2**63, 2**63 - 1, (n,), generator=g, dtype=torch.int64)
    b = torch.randint(-2**63, 2**63 - 1, (n,), generator=g, dtype=torch.int64)
    cond = torch.rand(n, generator=g) < 0.5
    out = torch.zeros(n, dtype=torch.int64)
    _select_addresses[(triton.cdiv(n, block),)](cond, a, b, out, n, BLOCK=block)
    assert torch.equal(out, torch.where(cond, a, b))


@triton.jit
def _round_trip(x_ptr, addr_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    m = offs < n
    addr = (x_ptr + offs).to(tl.int64, bitcast=True)  # tt.ptr_to_int
    tl.store(addr_ptr + offs, addr, mask=m)
    tl.debug_barrier()  # other threads read these addresses next
    back = tl.load(addr_ptr + (n - 1 - offs), mask=m).to(tl.pointer_type(tl.float16))
    tl.store(out_ptr + offs, tl.load(back, mask=m), mask=m)


def test_addresses_from_ptr_to_int_dereference_after_int_to_ptr() -> None:
    n = 45
    x = (torch.arange(64, dtype=torch.float32) * -0.75).to(torch.float16)
    addr = torch.zeros(64, dtype=torch.int64)
    out = torch.zeros(64, dtype=torch.float16)
    _round_trip[(1,)](x, addr, out, n, BLOCK=64)
    steps = (addr[1:n] - addr[: n - 1]).tolist()
    assert steps == [2] * (n - 1)  # consecutive f16 addresses
    assert torch.equal(out[:n], x[:n].flip(0))
    assert torch.equal(out[n:], torch.zeros(64 - n, dtype=torch.float16))
