"""The launch-time alignment variant (runtime/align_variants.py, lower/memory/align_keys.py).

A row softmax over rows `stride` elements apart, launched through `kernel[grid](...)` on CPU
tensors: with stride 1000 (not a multiple of 16, so Triton keys the stride as unknown) the
first compile is scalar, and the launcher runs a second compile that states the stride a
multiple of 4: 16-byte accesses, under a bound mask for the ragged 1000 columns. With
stride 1001, 1002 or an unaligned view the launch stays on the first compile. Every
variant's output is byte-equal to the same numpy computation.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch
import triton
import triton.language as tl

pytestmark = pytest.mark.usefixtures("sim_driver_only")


@triton.jit
def strided_rows_kernel(out_ptr, in_ptr, in_stride, out_stride, cols, BLOCK: tl.constexpr):
    r = tl.program_id(0)
    lanes = tl.arange(0, BLOCK)
    inside = lanes < cols
    x = tl.load(in_ptr + r * in_stride + lanes, mask=inside, other=-float("inf"))
    shifted = x - tl.max(x, axis=0)
    tl.store(out_ptr + r * out_stride + lanes, shifted * 0.5, mask=inside)


ROWS, COLS, BLOCK = 6, 1000, 1024


def _launch(stride: int, offset: int = 0) -> tuple[torch.Tensor, torch.Tensor, object]:
    g = torch.Generator().manual_seed(stride + offset)
    buf = torch.randn(ROWS * stride + offset + 8, generator=g)
    x = buf[offset:offset + ROWS * stride].view(ROWS, stride)
    out = torch.full((ROWS, stride), float("nan"))
    compiled = strided_rows_kernel[(ROWS,)](out, x, stride, stride, COLS, BLOCK=BLOCK,
                                            num_warps=8)
    return x, out, compiled


def _expected(x: torch.Tensor, stride: int) -> np.ndarray:
    rows = x.numpy()[:, :COLS]
    want = np.full((ROWS, stride), np.nan, np.float32)
    want[:, :COLS] = (rows - rows.max(axis=1, keepdims=True)) * np.float32(0.5)
    return want


def _mem(source: str) -> list[str]:
    return [ln.strip() for ln in source.splitlines() if "// msltrans-mem:" in ln]


def test_stride_1000_runs_the_16_byte_variant() -> None:
    x, out, compiled = _launch(1000)
    assert out.numpy().tobytes() == _expected(x, 1000).tobytes()
    launcher = compiled.run
    first = compiled.asm["msl"].decode() if isinstance(compiled.asm["msl"], bytes) \
        else compiled.asm["msl"]
    assert all("width=1" in ln for ln in _mem(first))
    assert launcher.variants is not None
    assert [d for _, d in launcher.variants.keys] == [4, 4]  # in_stride, out_stride
    assert list(launcher.variants.compiled) == [(4, 4)]
    (_, _, source), = launcher.variants.compiled.values()  # type: ignore[misc]
    lines = _mem(source)
    assert len(lines) == 2 and all("width=4 bytes=16" in ln and "bound=prefix" in ln
                                   for ln in lines), lines


def test_variants_off_runs_the_first_compile(monkeypatch: pytest.MonkeyPatch) -> None:
    """MSLTRANS_ALIGN_VARIANTS=0: every launch takes the first compile (what Triton's CUDA
    launcher would run at this stride), still exact."""
    monkeypatch.setenv("MSLTRANS_ALIGN_VARIANTS", "0")
    x, out, compiled = _launch(1000)
    assert out.numpy().tobytes() == _expected(x, 1000).tobytes()
    variants = compiled.run.variants
    assert variants is not None and variants.key([out, x, 1000, 1000, COLS, BLOCK]) == (4, 4)
    assert variants.pick([out, x, 1000, 1000, COLS, BLOCK]) is None


@pytest.mark.parametrize("stride,offset", [(1001, 0), (1002, 0), (1000, 1)])
def test_unaligned_strides_and_views(stride: int, offset: int) -> None:
    # (the first compile is shared by every stride that is not a multiple of 16, and so are
    # its variants: each launch picks by its own values)
    x, out, compiled = _launch(stride, offset)
    assert out.numpy().tobytes() == _expected(x, stride).tobytes()
    variants = compiled.run.variants
    key = variants.key([out, x, stride, stride, COLS, BLOCK])
    if stride == 1001:  # odd: the first compile
        assert key is None
    elif stride == 1002:  # a multiple of 2: an 8-byte variant
        assert key == (2, 2)
        _, _, source = variants.compiled[key]
        assert all("width=2 bytes=8" in ln for ln in _mem(source)), _mem(source)
    else:  # x not 16-byte aligned (Triton keys it apart): x stays scalar, out goes wide
        assert key == (4, 4)
        _, _, source = variants.compiled[key]
        load, store = _mem(source)
        assert "width=1" in load and "width=4 bytes=16" in store, (load, store)


def test_a_variant_that_does_not_compile_leaves_the_first(monkeypatch: pytest.MonkeyPatch
                                                          ) -> None:
    from msltrans.runtime.align_variants import AlignVariants

    variants = _launch(1000)[2].run.variants
    variants.compiled.clear()

    def fail(self: AlignVariants, key: tuple[int, ...]) -> None:
        raise RuntimeError("no compiler today")

    monkeypatch.setattr(AlignVariants, "_compile", fail)
    try:
        with pytest.warns(RuntimeWarning, match="did not compile"):
            x, out, _ = _launch(1000)
        assert out.numpy().tobytes() == _expected(x, 1000).tobytes()
        assert variants.compiled == {(4, 4): None}
    finally:
        variants.compiled.clear()
