"""A list of tensors is an argument buffer, as torch.mps.compile_shader takes it: one 8-byte GPU
address per tensor in buffer i (msltrans/sim/args.py). The simulator stages every tensor like
any buffer and checks what Metal requires of the addresses."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from msltrans.abi.limits import MAX_ARGUMENT_BUFFER_POINTERS
from msltrans.sim import check_races, compile_shader
from msltrans.sim.errors import LaunchError, OutOfBoundsError, RaceError

SOURCE = """#include <metal_stdlib>
using namespace metal;
struct three {
    device float* a;
    device float* b;
    device float* c;
};
static_assert(sizeof(three) == 24, "three 8-byte GPU addresses");
kernel void last_writer(device float* out [[buffer(0)]], constant three& ptrs [[buffer(1)]],
                        uint i [[thread_position_in_grid]]) {
    ptrs.b[0] = float(i);  // every thread stores to one element: the last one wins
}
kernel void add3(device float* out [[buffer(0)]], constant three& ptrs [[buffer(1)]],
                 uint i [[thread_position_in_grid]]) {
    out[i] = ptrs.a[i] + ptrs.b[i] + ptrs.c[i];
    ptrs.c[i] = -1.0f;
}
"""


@pytest.fixture(scope="module")
def lib():
    return compile_shader(SOURCE)


def test_addresses_reach_the_tensors_and_writes_come_back(lib):
    xs = [torch.arange(8, dtype=torch.float32) * (k + 1) for k in range(3)]
    c_before = xs[2].clone()
    out = torch.zeros(8)
    lib.add3(out, xs, threads=8, group_size=8)
    assert out.numpy().tobytes() == (xs[0] + xs[1] + c_before).numpy().tobytes()
    assert torch.all(xs[2] == -1.0)  # a store through an address reaches the caller's tensor


def test_a_view_is_addressed_at_its_storage_offset(lib):
    base = torch.arange(20, dtype=torch.float32)
    out = torch.zeros(8)
    lib.add3(out, [base[4:12], base[4:12].clone(), torch.zeros(8)], threads=8)
    assert np.array_equal(out.numpy(), 2 * np.arange(4, 12, dtype=np.float32))


def test_reading_past_a_tensor_names_the_member(lib):
    xs = [torch.zeros(8), torch.zeros(5), torch.zeros(8)]
    with pytest.raises(OutOfBoundsError, match=r"buffer 1 \(`ptrs`\) address 1 \(`b`, 20 bytes\)"
                                               r" at byte offset 20, element 5"):
        lib.add3(torch.zeros(8), xs, threads=8, group_size=8)


def test_fewer_addresses_than_the_struct_reads_is_out_of_bounds(lib):
    """The kernel's struct has three members; two addresses are 16 bytes: reading member c
    reads past the argument buffer's own bytes."""
    with pytest.raises(OutOfBoundsError, match=r"buffer 1 \(`ptrs`, 16 bytes\) at byte offset "
                                               r"16"):
        lib.add3(torch.zeros(4), [torch.zeros(4), torch.zeros(4)], threads=4)


def test_what_torch_and_metal_refuse(lib):
    with pytest.raises(LaunchError, match="element 1 of a list of tensors is a float"):
        lib.add3(torch.zeros(4), [torch.zeros(4), 1.0, torch.zeros(4)], threads=4)
    many = [torch.zeros(1)] * (MAX_ARGUMENT_BUFFER_POINTERS + 1)
    with pytest.raises(LaunchError, match="4104 bytes of GPU addresses, over the 4096-byte "
                                          "setBytes limit"):
        lib.add3(torch.zeros(4), many, threads=4)
    with pytest.raises(LaunchError, match=r"no \[\[buffer\(2\)\]\] parameter"):
        lib.add3(torch.zeros(4), [torch.zeros(4)] * 3, [torch.zeros(4)], threads=4)


def test_race_check_compares_the_argument_buffers_tensors(lib):
    xs = [torch.zeros(4), torch.zeros(4), torch.zeros(4)]
    with pytest.raises(RaceError, match=r"ptrs\[1\]"):
        check_races(lib.last_writer, torch.zeros(4), xs, threads=64, group_size=64)
    assert all(torch.all(x == 0) for x in xs)  # the runs wrote copies
