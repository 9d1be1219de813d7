"""Pointers held as 32-bit element offsets from their argument (lower/memory/pointer_offsets.py).

The launcher specialises a tensor whose storage is under 2 GB (`tt.pointer_range = 32`);
the lowering then keeps `int` offsets instead of 64-bit pointers where the pointers only
address. Each kernel here runs both ways on the same inputs (the 64-bit form forced by
making the launcher see every buffer as large) and must give the same bytes, equal to a
numpy reference.
"""

from __future__ import annotations

import re

import numpy as np
import pytest
import torch
import triton
import triton.language as tl
from triton.runtime.driver import driver

from msltrans.backend import compiler as backend_compiler
from msltrans.backend.compiler import POINTER_RANGE_BYTES, MetalBackend, within_2gb

pytestmark = pytest.mark.usefixtures("sim_driver_only")


@triton.jit
def _shifted(x_ptr, y_ptr, out_ptr, n, shift, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load((x_ptr - shift) + (offs + shift), mask=m)  # a pointer before the view
    y = tl.load(y_ptr + offs.to(tl.int64) * 3, mask=m)  # 64-bit offsets, strided
    # Masked-off lanes form addresses 2^40 elements away: never dereferenced.
    far = tl.load(y_ptr + offs.to(tl.int64) * (1 << 40), mask=offs == 0, other=0.0)
    tl.store(out_ptr + offs, x + y + far, mask=m)


@triton.jit
def _walk_rows(x_ptr, out_ptr, rows, cols, BLOCK: tl.constexpr):
    c = tl.arange(0, BLOCK)
    p = x_ptr + c
    acc = tl.zeros([BLOCK], tl.float32)
    for _ in range(rows):  # a loop-carried pointer: x_ptr stays 64-bit
        acc += tl.load(p, mask=c < cols, other=0.0)
        p += cols
    tl.store(out_ptr + c, acc, mask=c < cols)


@triton.jit
def _alternate(x_ptr, y_ptr, out_ptr, rows, cols, BLOCK: tl.constexpr):
    c = tl.arange(0, BLOCK)
    p = x_ptr + c
    q = y_ptr + c
    acc = tl.zeros([BLOCK], tl.float32)
    for _ in range(rows):  # loop-carried pointers into x and y, swapped every step
        acc += tl.load(p, mask=c < cols, other=0.0)
        p, q = q + cols, p + cols
    tl.store(out_ptr + c, acc, mask=c < cols)


@triton.jit
def _rows_doubled(x_ptr, y_ptr, stride, cols, BLOCK: tl.constexpr):
    r = tl.program_id(0)
    x_row = x_ptr + r * stride  # a scalar row pointer, then one offset per element
    c = tl.arange(0, BLOCK)
    v = tl.load(x_row + c, mask=c < cols, other=0.0).to(tl.float32)
    tl.store(y_ptr + r * stride + c, (v * 2).to(tl.float16), mask=c < cols)


@triton.jit
def _tile_row_sums(x_ptr, out_ptr, rows, stride, cols, ROWS: tl.constexpr,
                   BLOCK: tl.constexpr, WIDE: tl.constexpr):
    r = tl.program_id(0) * ROWS + tl.arange(0, ROWS)
    base = r[:, None].to(tl.int64) * stride if WIDE else r[:, None] * stride
    acc = tl.zeros([ROWS, BLOCK], tl.float32)
    for c0 in range(0, cols, BLOCK):  # row bases outside the loop, columns inside
        c = c0 + tl.arange(0, BLOCK)
        m = (r[:, None] < rows) & (c[None, :] < cols)
        acc += tl.load(x_ptr + base + c[None, :], mask=m, other=0.0)
    tl.store(out_ptr + r, tl.sum(acc, axis=1), mask=r < rows)


def _both(monkeypatch: pytest.MonkeyPatch, launch) -> tuple[str, str]:  # noqa: ANN001
    """MSL of the offset form and of the 64-bit form, after `launch()` ran each once."""
    small = launch()
    monkeypatch.setattr(backend_compiler, "within_2gb", lambda arg: False)
    large = launch()
    monkeypatch.undo()
    return small.asm["msl"].decode(), large.asm["msl"].decode()


def _pointer_arrays(msl: str) -> set[str]:
    """Names of the per-thread arrays of 64-bit pointers the kernel declares."""
    return set(re.findall(r"^\s*device \w+\* (\w+)\[\d+\];", msl, re.M))


def test_views_negative_steps_and_64_bit_offsets_give_the_same_bytes(monkeypatch):
    n, shift, block = 1000, 5, 256
    g = torch.Generator().manual_seed(7)
    base = torch.randn(n + shift, generator=g)
    x = base[shift:]  # a view: offsets count from its first element, not the storage's
    y = torch.randn(3 * n, generator=g)
    outs = []

    def launch():  # noqa: ANN202
        out = torch.full((n,), float("nan"))
        k = _shifted[(triton.cdiv(n, block),)](x, y, out, n, shift, BLOCK=block)
        outs.append(out)
        return k

    small, large = _both(monkeypatch, launch)
    assert "(x_ptr + " in small and "(y_ptr + " in small and not _pointer_arrays(small)
    assert _pointer_arrays(large)
    far = np.where(np.arange(n) == 0, y[0].item(), 0.0).astype(np.float32)
    want = (x + y[::3]).numpy() + far
    assert outs[0].numpy().tobytes() == outs[1].numpy().tobytes() == want.tobytes()


def test_a_loop_carried_pointer_keeps_its_argument_64_bit(monkeypatch):
    rows, cols, block = 7, 100, 128
    x = torch.randn(rows * cols, generator=torch.Generator().manual_seed(3))
    outs = []

    def launch():  # noqa: ANN202
        out = torch.full((cols,), float("nan"))
        k = _walk_rows[(1,)](x, out, rows, cols, BLOCK=block)
        outs.append(out)
        return k

    small, large = _both(monkeypatch, launch)
    assert "(out_ptr + " in small and "(x_ptr + " not in small
    assert any(name.startswith("p") for name in _pointer_arrays(small))
    want = x.view(rows, cols).numpy().astype(np.float64).sum(0)
    for out in outs:
        np.testing.assert_allclose(out.numpy(), want, rtol=1e-6, atol=1e-6)
    assert outs[0].numpy().tobytes() == outs[1].numpy().tobytes()


def test_swapped_loop_carried_pointers_stay_64_bit(monkeypatch):
    rows, cols, block = 5, 100, 128
    g = torch.Generator().manual_seed(4)
    x, y = torch.randn(rows * cols, generator=g), torch.randn(rows * cols, generator=g)
    outs = []

    def launch():  # noqa: ANN202
        out = torch.full((cols,), float("nan"))
        k = _alternate[(1,)](x, y, out, rows, cols, BLOCK=block)
        outs.append(out)
        return k

    small, _ = _both(monkeypatch, launch)
    assert "(out_ptr + " in small and "(x_ptr + " not in small and "(y_ptr + " not in small
    xs, ys = x.view(rows, cols).double(), y.view(rows, cols).double()
    want = sum((xs if i % 2 == 0 else ys)[i] for i in range(rows))
    np.testing.assert_allclose(outs[0].numpy(), want.numpy(), rtol=1e-6, atol=1e-6)
    assert outs[0].numpy().tobytes() == outs[1].numpy().tobytes()


def test_row_pointers_of_a_2d_tensor(monkeypatch):
    rows, cols, block = 9, 70, 128
    x = torch.randn(rows, cols, dtype=torch.float16, generator=torch.Generator().manual_seed(1))
    outs = []

    def launch():  # noqa: ANN202
        y = torch.full_like(x, float("nan"))
        k = _rows_doubled[(rows,)](x, y, cols, cols, BLOCK=block)
        outs.append(y)
        return k

    small, _ = _both(monkeypatch, launch)
    assert not _pointer_arrays(small)
    for y in outs:
        assert torch.equal(y, (x.float() * 2).half())


def test_the_launcher_specialises_buffers_under_2_gb():
    small = torch.zeros(16)
    assert "S" in MetalBackend.get_tensor_specialization(small, align=True)
    assert "S" in MetalBackend.get_tensor_specialization(small[3:], align=True)
    # Untouched pages: this reserves 2 GB of address space, not memory.
    large = torch.empty(POINTER_RANGE_BYTES + 1, dtype=torch.uint8)
    assert not within_2gb(large) and not within_2gb(large[:16])  # the storage counts
    assert "S" not in MetalBackend.get_tensor_specialization(large[:16], align=True)
    assert not within_2gb(object())
    assert ["tt.pointer_range", 32] in MetalBackend.parse_attr("DS")
    assert ["tt.pointer_range", 32] not in MetalBackend.parse_attr("D")


@triton.jit
def _add_block(a_ptr, b_ptr, o_ptr, N: tl.constexpr):
    idx = tl.arange(0, N)
    tl.store(o_ptr + idx, tl.load(a_ptr + idx) + tl.load(b_ptr + idx))


def test_warmup_with_dtypes_compiles_what_a_launch_finds():
    """`kernel.warmup(torch.float32, ...)` passes Triton's MockTensor: it is specialised as
    the tensor it stands for (under 2 GB), so the launch with real tensors hits that
    compile (Triton's test_cache.py::test_jit_warmup_cache)."""
    from triton.runtime.jit import MockTensor

    assert within_2gb(MockTensor(torch.float32))
    assert within_2gb(MockTensor(torch.float16, [1 << 29]))  # 2^30 bytes
    assert not within_2gb(MockTensor(torch.float32, [1 << 29]))  # 2^31 bytes
    args = [torch.randn(32), torch.randn(32), torch.empty(32)]
    device = driver.active.get_current_device()
    caches = _add_block.device_caches[device][0]
    before = len(caches)
    _add_block.warmup(torch.float32, torch.float32, torch.float32, 32, grid=(1,))
    assert len(caches) == before + 1
    _add_block[(1,)](*args, 32)
    assert len(caches) == before + 1
    assert torch.equal(args[2], args[0] + args[1])


@pytest.mark.parametrize("wide", [False, True])
def test_row_bases_outside_a_loop_stay_64_bit_row_pointers(monkeypatch, wide):
    rows, cols, stride = 10, 300, 304
    x = torch.randn(rows * stride, generator=torch.Generator().manual_seed(5))
    outs = []

    def launch():  # noqa: ANN202
        out = torch.full((rows,), float("nan"))
        k = _tile_row_sums[(triton.cdiv(rows, 4),)](x, out, rows, stride, cols, ROWS=4,
                                                    BLOCK=128, WIDE=wide)
        outs.append(out)
        return k

    small, _ = _both(monkeypatch, launch)
    # (x + rows * stride) + columns: the loop-invariant row bases are Triton's own pointers;
    # an i64 base truncated to 32 bits is not, so it is folded into the offsets instead
    split = re.search(r"\(\(x_ptr \+ \w+\[msl_r\]\) \+ \w+\[msl_r\]\)", small)
    assert bool(split) != wide and "(x_ptr + " in small
    assert not _pointer_arrays(small)
    want = x.view(rows, stride)[:, :cols].double().sum(1).float()
    np.testing.assert_allclose(outs[0].numpy(), want.numpy(), rtol=1e-5, atol=1e-5)
    assert outs[0].numpy().tobytes() == outs[1].numpy().tobytes()
