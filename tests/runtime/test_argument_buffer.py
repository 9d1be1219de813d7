"""Kernels with more pointers than Metal's buffer table holds (31 slots): the last pointers
travel as GPU addresses in one argument buffer (msltrans/lower/kernel_args.py), which the
simulator stages and checks like any buffer. References: each output element is the fp32
sum in argument order, computed in float64 and rounded to fp32 after every add (exact: a
double holds the sum of two floats before its one rounding to fp32)."""

from __future__ import annotations

import numpy as np
import pytest
import torch
import triton
import triton.language as tl

from msltrans.abi.limits import BUFFER_TABLE_SLOTS, DIRECT_POINTER_SLOTS
from msltrans.sim.errors import OutOfBoundsError

pytestmark = pytest.mark.usefixtures("sim_driver_only")


@triton.jit
def _sum_block(out, xs, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    acc = tl.zeros([BLOCK], dtype=tl.float32)
    for i in tl.static_range(len(xs)):
        acc += tl.load(xs[i] + offs, mask=mask, other=0.0)
    tl.store(out + offs, acc, mask=mask)


@triton.jit
def sum_into(out, xs, n, BLOCK: tl.constexpr):
    _sum_block(out, xs, n, BLOCK)


@triton.jit
def sum_into_fixed(out, xs, N: tl.constexpr, BLOCK: tl.constexpr):
    """No scalar argument (N is a constexpr): no scalar struct beside the pointers."""
    _sum_block(out, xs, N, BLOCK)


@triton.jit
def scale_each(xs, outs, n, BLOCK: tl.constexpr):
    """outs[i] = xs[i] * (i + 1) + 0.5: the outputs come last, so they are the spilled ones."""
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    for i in tl.static_range(len(xs)):
        x = tl.load(xs[i] + offs, mask=mask, other=0.0)
        tl.store(outs[i] + offs, x * (i + 1.0) + 0.5, mask=mask)


def _sum_reference(xs: list[torch.Tensor]) -> np.ndarray:
    acc = np.zeros(xs[0].numel(), dtype=np.float32)
    for x in xs:
        acc = (acc.astype(np.float64) + x.numpy().astype(np.float64)).astype(np.float32)
    return acc


def _msl(compiled) -> str:
    src = compiled.asm["msl"]
    return src.decode() if isinstance(src, bytes) else src


def _spilled(compiled) -> list[dict]:
    return [p for p in compiled.metadata.params if p.get("slot") is not None]


def test_forty_pointers_sum_through_the_argument_buffer():
    n, gen = 1000, torch.Generator().manual_seed(40)
    xs = [torch.randn(n, generator=gen) for _ in range(39)]
    out = torch.full((n,), float("nan"))
    compiled = sum_into[(triton.cdiv(n, 256),)](out, tuple(xs), n, BLOCK=256)
    # 40 pointers + the scalar struct: 29 direct, the argument buffer, then the struct
    spilled = _spilled(compiled)
    assert [p["name"] for p in spilled] == [f"xs.{i}" for i in range(28, 39)]  # the last 11
    assert {p["buffer_index"] for p in spilled} == {DIRECT_POINTER_SLOTS}
    assert [p["slot"] for p in spilled] == list(range(11))
    msl = _msl(compiled)
    assert "constant sum_into_spill& msl_spill [[buffer(29)]]" in msl
    assert "static_assert(sizeof(sum_into_spill) == 88" in msl
    assert msl.isascii()
    assert out.numpy().tobytes() == _sum_reference(xs).tobytes()  # masked tail: n % 256 != 0


def test_stores_through_spilled_pointers_and_in_place():
    n = 300
    xs = [torch.randn(n, generator=torch.Generator().manual_seed(i)) for i in range(20)]
    outs = [torch.full((n,), float("nan")) for _ in range(20)]
    compiled = scale_each[(triton.cdiv(n, 128),)](tuple(xs), tuple(outs), n, BLOCK=128)
    assert len(_spilled(compiled)) == 11  # outs[9:] travel in the argument buffer
    for i, (x, o) in enumerate(zip(xs, outs, strict=True)):
        want = (x.numpy().astype(np.float64) * (i + 1) + 0.5).astype(np.float32)
        # x * (i + 1.0) + 0.5 may be one fma (fp fusion on): compare with both roundings
        fused = (x.numpy().astype(np.float64) * (i + 1) + 0.5)
        got = o.numpy()
        assert np.all((got == want) | (got == fused.astype(np.float32))), i
    # In place, as a compiled optimizer step does: each output IS its input, one passed
    # directly and the other through the argument buffer (they share one staging copy).
    before = [x.clone() for x in xs]
    scale_each[(triton.cdiv(n, 128),)](tuple(xs), tuple(xs), n, BLOCK=128)
    for i, (x, b) in enumerate(zip(xs, before, strict=True)):
        want = b.numpy().astype(np.float64) * (i + 1) + 0.5
        assert np.allclose(x.numpy(), want, rtol=1e-6, atol=0), i


@pytest.mark.parametrize("short", [3, 35])
def test_out_of_bounds_through_a_spilled_pointer_is_reported(short):
    """xs[3] has its own buffer, xs[35] is read from the argument buffer: the same error."""
    n = 100
    xs = [torch.randn(n) for _ in range(39)]
    xs[short] = torch.randn(50)  # the kernel reads 100 elements of it
    with pytest.raises(OutOfBoundsError) as info:
        sum_into[(1,)](torch.empty(n), tuple(xs), n, BLOCK=128)
    message = str(info.value)
    assert "read" in message and "200 bytes" in message and "element 50" in message
    assert info.value.param == f"xs_{short}"
    if short == 35:
        assert f"buffer {DIRECT_POINTER_SLOTS} (`msl_spill`) address 7" in message


@pytest.mark.parametrize("pointers, scalars, spilled", [
    (BUFFER_TABLE_SLOTS - 1, True, 0),      # 30 pointers + the struct: exactly the table
    (BUFFER_TABLE_SLOTS, True, 2),          # one past: 29 direct, 2 addresses
    (BUFFER_TABLE_SLOTS, False, 0),         # 31 pointers, no scalars: exactly the table
    (BUFFER_TABLE_SLOTS + 1, False, 2),     # one past: 30 direct, 2 addresses
])
def test_table_boundary(pointers, scalars, spilled):
    n = 70
    xs = [torch.randn(n, generator=torch.Generator().manual_seed(i)) for i in range(pointers - 1)]
    out = torch.full((n,), float("nan"))
    if scalars:
        compiled = sum_into[(1,)](out, tuple(xs), n, BLOCK=128)
    else:
        compiled = sum_into_fixed[(1,)](out, tuple(xs), N=n, BLOCK=128)
    assert len(_spilled(compiled)) == spilled
    assert ("msl_spill" in _msl(compiled)) == bool(spilled)
    assert out.numpy().tobytes() == _sum_reference(xs).tobytes()


@triton.jit(debug=True)
def sum_checked(out, xs, n, limit, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    acc = tl.zeros([BLOCK], dtype=tl.float32)
    for i in tl.static_range(len(xs)):
        acc += tl.load(xs[i] + offs, mask=mask, other=0.0)
    tl.device_assert(acc < limit, "sum over the limit")
    tl.store(out + offs, acc, mask=mask)


def test_debug_buffer_after_the_argument_buffer():
    """30 pointers, the scalar struct and the device_assert buffer need 32 slots: 28 pointers
    keep theirs, 2 move, and the debug buffer still reaches the launcher."""
    from msltrans.runtime.debug_buffer import DeviceAssertError

    n = 64
    xs = [torch.full((n,), 0.25) for _ in range(29)]
    out = torch.empty(n)
    compiled = sum_checked[(1,)](out, tuple(xs), n, 100.0, BLOCK=64)
    spilled = _spilled(compiled)
    assert len(spilled) == 2 and {p["buffer_index"] for p in spilled} == {28}
    msl = _msl(compiled)
    assert "[[buffer(29)]]" in msl and "[[buffer(30)]]" in msl  # the struct, the debug buffer
    assert torch.all(out == 29 * 0.25)
    xs[-1][5] = 1000.0  # read through the argument buffer, trips the assert
    with pytest.raises(DeviceAssertError):
        sum_checked[(1,)](out, tuple(xs), n, 100.0, BLOCK=64)


def _explicit_kernel(tmp_path, inputs: int):
    """A kernel written out with one parameter per pointer (in_ptr0, ..., out_ptr0, as
    Inductor names them), in its own module file so that Triton can read its source."""
    import importlib.util

    params = ", ".join(f"in_ptr{i}" for i in range(inputs))
    loads = "\n".join(f"    acc += tl.load(in_ptr{i} + offs, mask=mask, other=0.0)"
                      for i in range(inputs))
    path = tmp_path / f"explicit_{inputs}.py"
    path.write_text(
        "import triton\nimport triton.language as tl\n\n\n@triton.jit\n"
        f"def explicit_sum({params}, out_ptr0, n, BLOCK: tl.constexpr):\n"
        "    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)\n"
        "    mask = offs < n\n"
        "    acc = tl.zeros([BLOCK], dtype=tl.float32)\n"
        f"{loads}\n"
        "    tl.store(out_ptr0 + offs, acc, mask=mask)\n")
    spec = importlib.util.spec_from_file_location(path.stem, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.explicit_sum


def test_forty_named_pointer_parameters(tmp_path):
    kernel = _explicit_kernel(tmp_path, 39)
    n = 500
    xs = [torch.randn(n, generator=torch.Generator().manual_seed(100 + i)) for i in range(39)]
    out = torch.full((n,), float("nan"))
    compiled = kernel[(triton.cdiv(n, 128),)](*xs, out, n, BLOCK=128)
    # the last 11 move: in_ptr29 ... in_ptr38 and the output, stored through the buffer
    assert [p["name"] for p in _spilled(compiled)] == \
        [f"in_ptr{i}" for i in range(29, 39)] + ["out_ptr0"]
    assert out.numpy().tobytes() == _sum_reference(xs).tobytes()
