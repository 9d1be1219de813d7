"""Triton's JIT → MetalBackend stages → launcher: argument binding, grid mapping, hooks."""

from __future__ import annotations

import pytest
import torch
import triton
import triton.language as tl

from msltrans.errors import MetalNonRecoverableError
from tests.support.plugin_fakes import unpack_scalars


@triton.jit
def scale_kernel(x_ptr, out_ptr, n, alpha, stride, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs * stride, mask=mask)
    tl.store(out_ptr + offs, x * alpha, mask=mask)


@triton.jit
def optional_kernel(x_ptr, bias_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < n)
    if bias_ptr is not None:
        x += tl.load(bias_ptr + offs, mask=offs < n)
    tl.store(x_ptr + offs, x, mask=offs < n)


def test_binds_runtime_args_in_order_and_skips_constexprs(recording):
    x, out = torch.randn(100), torch.empty(100)
    scale_kernel[(4,)](x, out, 100, 2.5, 3, BLOCK=32)
    (call,) = recording.calls
    assert call.kernel == "scale_kernel"
    assert len(call.args) == 3  # two pointers, then one struct of the three scalars
    assert call.args[0] is x and call.args[1] is out
    assert unpack_scalars(call.args[2], ["*f32", "*f32", "i32", "f32", "i32"]) == [100, 2.5, 3]
    assert call.threads == (4 * 128, 1, 1)  # 4 programs x num_warps(4) x 32
    assert call.group_size == (128, 1, 1)
    assert call.arg_casts == {2: "uint8"}  # the struct's bytes, sent with one setBytes


def test_int_equal_to_one_is_specialised_away(recording):
    x, out = torch.randn(64), torch.empty(64)
    scale_kernel[(1,)](x, out, 64, 1.0, 1, BLOCK=64, num_warps=2)
    (call,) = recording.calls
    # stride == 1 becomes a constexpr: one scalar fewer in the struct
    assert len(call.args) == 3
    assert unpack_scalars(call.args[2], ["*f32", "*f32", "i32", "f32"]) == [64, 1.0]
    assert len(call.args[2]) == 8 and call.arg_casts == {2: "uint8"}
    assert call.group_size == (64, 1, 1)


def test_none_argument_is_skipped(recording):
    x = torch.randn(16)
    optional_kernel[(1,)](x, None, 16, BLOCK=16)
    optional_kernel[(1,)](x, x, 16, BLOCK=16)
    first, second = recording.calls
    assert len(first.args) == 2 and first.args[0] is x
    assert unpack_scalars(first.args[1], ["*f32", "i32"]) == [16]
    assert len(second.args) == 3 and second.args[1] is x


def test_grid_3d_and_callable_grid(recording):
    x, out = torch.randn(10), torch.empty(10)
    scale_kernel[lambda meta: (3, 2, 5)](x, out, 10, 1.5, 2, BLOCK=16, num_warps=1)
    assert recording.calls[0].threads == (3 * 32, 2, 5)
    assert recording.calls[0].group_size == (32, 1, 1)


def test_empty_grid_dispatches_nothing(recording):
    x, out = torch.randn(10), torch.empty(10)
    scale_kernel[(0,)](x, out, 10, 1.5, 2, BLOCK=16)
    assert recording.calls == []


def test_library_loaded_once_across_launches(recording):
    x, out = torch.randn(10), torch.empty(10)
    for _ in range(5):
        scale_kernel[(1,)](x, out, 10, 1.5, 2, BLOCK=16)
    assert len(recording.calls) == 5
    assert len(recording.loads) == 1


def test_launch_hooks_are_called(recording, monkeypatch):
    from triton import knobs

    seen = []
    monkeypatch.setattr(knobs.runtime, "launch_enter_hook", lambda md: seen.append("enter"))
    monkeypatch.setattr(knobs.runtime, "launch_exit_hook", lambda md: seen.append("exit"))
    x, out = torch.randn(10), torch.empty(10)
    scale_kernel[(1,)](x, out, 10, 1.5, 2, BLOCK=16)
    assert seen == ["enter", "exit"]


def test_non_tensor_pointer_is_refused(recording):
    out = torch.empty(4)
    with pytest.raises(MetalNonRecoverableError, match="x_ptr"):
        scale_kernel[(1,)](_FakePtr(), out, 4, 1.0, 2, BLOCK=16)


class _FakePtr:
    """Looks like a pointer to Triton's specializer but is not a tensor."""

    dtype = torch.float32

    def data_ptr(self) -> int:
        return 0


def test_wrong_device_is_refused_with_a_clear_message(recording):
    recording.device_type = "mps"  # pretend the engine is the Apple GPU
    from triton.runtime.driver import driver

    from tests.support.plugin_fakes import install_engine

    install_engine(driver.active, recording)
    x, out = torch.randn(4), torch.empty(4)
    with pytest.raises(MetalNonRecoverableError, match="tensor on 'cpu'.*'mps'"):
        scale_kernel[(1,)](x, out, 4, 1.0, 2, BLOCK=16)


def test_storage_offset_views_are_passed_as_views(recording):
    base = torch.arange(20, dtype=torch.float32)
    view = base[5:]
    out = torch.empty(15)
    scale_kernel[(1,)](view, out, 15, 1.0, 2, BLOCK=16)
    passed = recording.calls[0].args[0]
    assert passed.data_ptr() == base.data_ptr() + 5 * 4


@triton.jit
def scalars_kernel(out_ptr, a, b, flag, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    v = tl.where(flag, a.to(tl.float32), b.to(tl.float32))
    tl.store(out_ptr + offs, tl.zeros([BLOCK], tl.float32) + v)


def test_wide_and_unsigned_ints_keep_their_bits(recording):
    out = torch.empty(16)
    scalars_kernel[(1,)](out, 2**40, 2**64 - 5, True, BLOCK=16)
    (call,) = recording.calls
    a, b, flag = unpack_scalars(call.args[1], ["*f32", "i64", "i64", "i1"])
    assert a == 2**40  # i64: 8 bytes
    assert b == -5  # u64 2**64-5: the same 64 bits
    assert flag is True and call.args[1][16] == 1  # i1 as one byte 0/1
    assert len(call.args[1]) == 24 and call.arg_casts == {1: "uint8"}


def test_launcher_overhead_is_small(recording):
    import time

    x, out = torch.randn(10), torch.empty(10)
    kernel = scale_kernel[(1,)](x, out, 10, 1.5, 2, BLOCK=16)

    def nop(*args, **kwargs):
        return None

    args = (x, out, 10, 1.5, 2, 16)
    t0 = time.perf_counter()
    for _ in range(500):
        kernel.run(2, 1, 1, 0, nop, kernel.packed_metadata, None, None, None, *args)
    per_call_us = (time.perf_counter() - t0) / 500 * 1e6
    assert per_call_us < 100  # measured ~5-15 µs; the budget for the whole launch is 100 µs


@triton.jit
def tuple_kernel(ptrs, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    v = tl.load(ptrs[0] + offs, mask=offs < n)
    tl.store(ptrs[1] + offs, v, mask=offs < n)


def test_tuple_arguments_are_flattened(recording):
    a, b = torch.randn(8), torch.empty(8)
    tuple_kernel[(1,)]((a, b), 8, BLOCK=8)
    (call,) = recording.calls
    assert len(call.args) == 3 and call.args[0] is a and call.args[1] is b
    assert unpack_scalars(call.args[2], ["*f32", "*f32", "i32"]) == [8]
    assert call.arg_casts == {2: "uint8"}
