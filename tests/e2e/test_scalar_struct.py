"""Scalar arguments travel in one `constant` struct: the layout the MSL declares and the bytes
the launcher packs agree for every scalar type, and a kernel with many arguments stays
inside Metal's 31 buffer slots (before the struct, a 35-argument kernel emitted buffer(34))."""

from __future__ import annotations

import re
import struct

import numpy as np
import pytest

from msltrans.abi.scalar_struct import ScalarPacker
from msltrans.ir import read_module
from msltrans.lower import lower_module
from msltrans.toolchain import to_ttgir
from tests.support.run_kernel import dispatch

# 30 scalars cycling through every type a launcher can pass, and the value each receives.
TYPES = ["i8", "i16", "i32", "i64", "fp16", "bf16", "fp32", "i1"]
VALUES = {"i8": [-3, 300, 127, -128], "i16": [-1234, 70000, 32767, -1],
          "i32": [-7, 2**31 + 5, 123456789, -2**31], "i64": [2**40 + 3, -(2**62), 1, -1],
          "fp16": [1.5, -65504.0, 2.0**-24, 0.1], "bf16": [1.0 + 2**-8 + 2**-9, -3.0, 1e30, 0.1],
          "fp32": [0.1, -1e-40, 3.4e38, 2.5], "i1": [True, False, True, True]}
N_SCALARS, N_POINTERS = 30, 5
PRELUDE = "import triton\nimport triton.language as tl\n\n\n@triton.jit\n"


def _kernel_source() -> tuple[str, list[str]]:
    names = [f"s{i}" for i in range(N_SCALARS)]
    types = [TYPES[i % len(TYPES)] for i in range(N_SCALARS)]
    lines = [PRELUDE + f"def many_args({', '.join(['ints', 'floats', 'p2', 'p3', 'p4', *names])}):"]
    for i, (name, ty) in enumerate(zip(names, types, strict=True)):
        if ty.startswith("fp") or ty == "bf16":
            lines.append(f"    tl.store(floats + {i}, {name}.to(tl.float32))")
        else:
            lines.append(f"    tl.store(ints + {i}, {name}.to(tl.int64))")
    return "\n".join(lines) + "\n", types


def _expected_int(ty: str, v: int) -> int:
    if ty == "i1":
        return int(bool(v))
    bits = {"i8": 8, "i16": 16, "i32": 32, "i64": 64}[ty]
    u = v & ((1 << bits) - 1)
    return u - (1 << bits) if u >> (bits - 1) else u


def _expected_float(ty: str, v: float) -> float:
    if ty == "fp16":
        return float(np.float16(v))  # round to nearest even, as PyFloat_Pack2
    f32 = np.float32(v)
    if ty == "bf16":  # Triton's extractBF16 truncates the fp32 bits
        bits = int(f32.view(np.uint32)) & 0xFFFF0000
        return float(np.uint32(bits).view(np.float32))
    return float(f32)


@pytest.fixture(scope="module")
def program():
    source, types = _kernel_source()
    sig = {"ints": "*i64", "floats": "*fp32", "p2": "*fp32", "p3": "*fp32", "p4": "*fp32"}
    sig.update({f"s{i}": t for i, t in enumerate(types)})
    prog = lower_module(read_module(to_ttgir(source, sig, {}, 1)))
    return prog, types


def test_35_arguments_bind_six_buffers(program) -> None:  # noqa: ANN001
    prog, _ = program
    indices = sorted({int(i) for i in re.findall(r"\[\[buffer\((\d+)\)\]\]", prog.source)})
    assert indices == list(range(N_POINTERS + 1))
    assert f"constant many_args_args& msl_args [[buffer({N_POINTERS})]]" in prog.source
    assert f"static_assert(sizeof(many_args_args) == {prog.args_size}" in prog.source


def test_layout_has_no_padding_between_fields(program) -> None:  # noqa: ANN001
    prog, _ = program
    fields = sorted((p.offset, p.msl_type) for p in prog.params if p.kind == "scalar")
    size = {"long": 8, "int": 4, "float": 4, "short": 2, "half": 2, "bfloat": 2, "char": 1,
            "bool": 1}
    end = 0
    for offset, msl in fields:
        assert offset == end and offset % size[msl] == 0, (offset, msl)
        end = offset + size[msl]
    assert prog.args_size == (end + 7) // 8 * 8


@pytest.mark.parametrize("case", range(4))
def test_every_scalar_type_arrives_with_triton_cuda_conversions(program, case) -> None:  # noqa: ANN001
    prog, types = program
    values = [VALUES[t][(i + case) % 4] for i, t in enumerate(types)]
    ints, floats = np.zeros(N_SCALARS, np.int64), np.zeros(N_SCALARS, np.float32)
    spare = [np.zeros(1, np.float32) for _ in range(3)]
    dispatch(prog, (1,), (ints, floats, *spare, *values))
    for i, (ty, v) in enumerate(zip(types, values, strict=True)):
        if ty in ("fp16", "bf16", "fp32"):
            expected = np.float32(_expected_float(ty, v))
            assert floats[i].tobytes() == expected.tobytes(), (i, ty, v)
        else:
            assert ints[i] == _expected_int(ty, v), (i, ty, v)


def test_packer_matches_triton_cuda_extractors() -> None:
    layout = [("bf16", 0), ("fp16", 2), ("fp32", 4), ("i8", 8), ("u32", 12)]
    data = ScalarPacker(layout, 16).pack_bytes([1.0 + 2**-8 + 2**-9, 1.0 + 2**-11, 1e300,
                                                -1, 2**32 - 1])
    assert struct.unpack_from("<H", data, 0)[0] == 0x3F80      # truncated, not rounded
    assert struct.unpack_from("<H", data, 2)[0] == 0x3C00      # tie to even
    assert struct.unpack_from("<I", data, 4)[0] == 0x7F800000  # (float)1e300 = inf
    assert data[8] == 0xFF and struct.unpack_from("<I", data, 12)[0] == 0xFFFFFFFF
    with pytest.raises(OverflowError):
        ScalarPacker([("fp16", 0)], 2).pack([1e6])
    with pytest.raises(OverflowError):
        ScalarPacker([("i64", 0)], 8).pack([2**64])


def test_more_pointers_than_buffer_slots_travel_in_the_argument_buffer() -> None:
    """32 pointers and no scalar: the first 30 keep their slots, the last two move into the
    argument buffer in slot 30 (docs/backend.md, "Pointers past the table")."""
    names = [f"p{i}" for i in range(32)]
    source = PRELUDE + f"def wide({', '.join(names)}):\n    tl.store(p0, tl.load(p31))\n"
    msl = lower_module(read_module(to_ttgir(source, {n: "*fp32" for n in names}, {},
                                            1))).source
    assert "device float* p29 [[buffer(29)]]" in msl
    assert "constant wide_spill& msl_spill [[buffer(30)]]" in msl
    assert "device float* p31 = msl_spill.p31;" in msl and "[[buffer(31)]]" not in msl


def test_fast_path_equals_the_per_field_converters() -> None:
    from msltrans.abi.scalar_struct import converter

    fields = [("i64", 0), ("fp32", 8), ("u32", 12), ("bf16", 16), ("fp16", 18), ("i16", 20),
              ("i8", 22), ("i1", 23)]
    packer = ScalarPacker(fields, 24)
    rng = np.random.default_rng(0)
    cases = [[-5, 0.1, 7, 1.5, 2.0, -3, 4, True],            # all in range: fast path
             [2**63 + 1, 1e39, -1, -3.0, 1.0, 70000, 300, 0],  # wrapping / inf: fallback
             *[[int(rng.integers(-2**40, 2**40)), float(rng.standard_normal() * 1e3),
                int(rng.integers(0, 2**32)), float(rng.standard_normal()),
                float(rng.standard_normal()), int(rng.integers(-2**15, 2**15)),
                int(rng.integers(-128, 128)), bool(rng.integers(0, 2))] for _ in range(50)]]
    for values in cases:
        slow = bytearray(24)
        for (ty, offset), v in zip(fields, values, strict=True):
            data = converter("v", ty)[0](v)
            slow[offset:offset + len(data)] = data
        assert packer.pack_bytes(values) == bytes(slow), values
