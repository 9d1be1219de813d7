"""Host-side TensorDescriptor arguments and device-side tl.make_tensor_descriptor.

Both become pointer arithmetic (TTIR `rewrite_tensor_descriptor_to_pointer`); a host
descriptor is sent as base/shape/strides/padding (runtime/descriptors.py). References are
torch slicing: out-of-bounds elements of a block load read as 0 (or NaN with padding="nan"),
out-of-bounds elements of a block store are not written.
"""

from __future__ import annotations

import pytest
import torch
import triton
import triton.language as tl
from triton.tools.tensor_descriptor import TensorDescriptor

from msltrans.errors import MetalNonRecoverableError
from tests.support.triton_features import descriptors_round_to_tf32

pytestmark = pytest.mark.usefixtures("sim_driver_only")


@triton.jit
def _block_copy_2d(x_desc, z_desc, BM: tl.constexpr, BN: tl.constexpr):
    r, c = tl.program_id(0) * BM, tl.program_id(1) * BN
    z_desc.store([r, c], x_desc.load([r, c]) * 2)


def _padded_block(x: torch.Tensor, r: int, c: int, bm: int, bn: int, fill: float) -> torch.Tensor:
    out = torch.full((bm, bn), fill, dtype=x.dtype)
    part = x[r:r + bm, c:c + bn]
    out[:part.shape[0], :part.shape[1]] = part
    return out


@pytest.mark.parametrize("m, n, bm, bn, dtype", [
    (10, 20, 8, 16, torch.float32), (33, 8, 16, 8, torch.float16), (64, 64, 32, 16, torch.int32),
    (5, 136, 4, 64, torch.bfloat16)])
def test_host_descriptor_tiles_with_edges(m: int, n: int, bm: int, bn: int, dtype) -> None:
    g = torch.Generator().manual_seed(m * n)
    x = (torch.randn(m, n, generator=g) * 100).to(dtype)
    z = torch.full((m, n), -1, dtype=dtype)
    grid = (triton.cdiv(m, bm), triton.cdiv(n, bn))
    _block_copy_2d[grid](TensorDescriptor.from_tensor(x, [bm, bn]),
                         TensorDescriptor.from_tensor(z, [bm, bn]), BM=bm, BN=bn)
    assert torch.equal(z, x * 2)  # every tile written, nothing beyond the edges


@triton.jit
def _load_block(x_desc, out_ptr, R, C, BM: tl.constexpr, BN: tl.constexpr):
    v = x_desc.load([R, C])
    offs = tl.arange(0, BM)[:, None] * BN + tl.arange(0, BN)[None, :]
    tl.store(out_ptr + offs, v)


@pytest.mark.parametrize("padding, fill", [("zero", 0.0), ("nan", float("nan"))])
@pytest.mark.parametrize("r, c", [(0, 0), (6, 12), (9, 19)])
def test_out_of_bounds_reads_follow_the_padding(padding: str, fill: float, r: int, c: int) -> None:
    x = torch.arange(200, dtype=torch.float32).reshape(10, 20) - 50.5
    out = torch.empty(8, 16)
    desc = TensorDescriptor(x, list(x.shape), list(x.stride()), [8, 16], padding=padding)
    _load_block[(1,)](desc, out, r, c, BM=8, BN=16)
    torch.testing.assert_close(out, _padded_block(x, r, c, 8, 16, fill), rtol=0, atol=0,
                               equal_nan=True)


def test_strided_rows_of_a_larger_tensor() -> None:
    big = torch.arange(40 * 32, dtype=torch.int32).reshape(40, 32)
    view = big[::2, 4:20]  # row stride 64 elements, last stride 1
    out = torch.empty(8, 16, dtype=torch.int32)
    desc = TensorDescriptor(view, list(view.shape), list(view.stride()), [8, 16])
    _load_block[(1,)](desc, out, 3, 0, BM=8, BN=16)
    assert torch.equal(out, _padded_block(view, 3, 0, 8, 16, 0))


@triton.jit
def _device_descriptor(x_ptr, z_ptr, M, N, BM: tl.constexpr, BN: tl.constexpr):
    xd = tl.make_tensor_descriptor(x_ptr, shape=[M, N], strides=[N, 1], block_shape=[BM, BN])
    zd = tl.make_tensor_descriptor(z_ptr, shape=[M, N], strides=[N, 1], block_shape=[BM, BN])
    r, c = tl.program_id(0) * BM, tl.program_id(1) * BN
    zd.store([r, c], xd.load([r, c]) + 1)


def test_device_side_descriptor() -> None:
    x = torch.randn(21, 37)
    z = torch.zeros(21, 37)
    _device_descriptor[(triton.cdiv(21, 8), triton.cdiv(37, 16))](x, z, 21, 37, BM=8, BN=16)
    assert torch.equal(z, x + 1)


@pytest.mark.skipif(not descriptors_round_to_tf32(),
                    reason="this Triton's TensorDescriptor has no round_f32_to_tf32 (3.7 on)")
def test_tf32_rounding_descriptor_is_refused() -> None:
    x = torch.randn(8, 16)
    desc = TensorDescriptor(x, [8, 16], [16, 1], [8, 16], round_f32_to_tf32=True)
    with pytest.raises(MetalNonRecoverableError, match="round_f32_to_tf32.*no tf32"):
        _load_block[(1,)](desc, torch.empty(8, 16), 0, 0, BM=8, BN=16)
