"""Packing a kernel's scalar arguments into the bytes of its `constant` argument struct.

The lowering lays the struct out (msltrans/lower/kernel_args.py) and records each scalar's
Triton type and byte offset; this module writes Python values there exactly as Triton's CUDA
launcher converts them (triton/backends/nvidia/driver.c, `extract*`):

- integers wrap to their width (a C cast of `PyLong_AsLong`); a value outside 64 bits is an
  error, as it is there;
- fp32 (and fp64, which the lowering downcasts) is the C `(float)` of the double: round to
  nearest, overflow to ±inf;
- fp16 is `PyFloat_Pack2`: round to nearest even, `OverflowError` past 65504;
- bf16 TRUNCATES the fp32 value to its high 16 bits (Triton's `extractBF16` shifts right by
  16, it does not round);
- i1/u1 is 0 or 1 in one byte.

Both engines receive the struct the same way: a list of byte values with `arg_casts`
"uint8", which torch.mps sends with one `setBytes` (its `OptionalArgCaster` turns a list of
ints into a `std::vector<uint8_t>`), and which the simulator copies into a guarded buffer.
"""

from __future__ import annotations

import math
import struct
from collections.abc import Callable, Sequence
from typing import Any

from msltrans.abi.limits import SET_BYTES_LIMIT
from msltrans.errors import MetalNonRecoverableError

_INT_BITS = {"i8": 8, "u8": 8, "i16": 16, "u16": 16, "i32": 32, "u32": 32, "i64": 64,
             "u64": 64}
_INT_FORMATS = {8: "<B", 16: "<H", 32: "<I", 64: "<Q"}
_TYPE_ALIASES = {"f16": "fp16", "f32": "fp32", "f64": "fp64", "u1": "i1"}


def _f32_bits(value: float) -> int:
    """Bits of C's `(float)value`: round to nearest even, overflow to ±inf, NaN kept."""
    try:
        return int.from_bytes(struct.pack("<f", value), "little")
    except OverflowError:
        return 0x7F800000 | (0x80000000 if math.copysign(1.0, value) < 0 else 0)


def _int(name: str, bits: int) -> Callable[[Any], bytes]:
    fmt = _INT_FORMATS[bits]
    mask = (1 << bits) - 1

    def pack(value: Any) -> bytes:
        v = int(value)
        if not -(1 << 63) <= v < (1 << 64):
            raise OverflowError(f"scalar `{name}`: {v} does not fit in 64 bits")
        return struct.pack(fmt, v & mask)

    return pack


def _fp16(value: Any) -> bytes:
    return struct.pack("<e", float(value))


def _bf16(value: Any) -> bytes:
    return struct.pack("<H", _f32_bits(float(value)) >> 16)


def _fp32(value: Any) -> bytes:
    return struct.pack("<I", _f32_bits(float(value)))


def _bool(value: Any) -> bytes:
    return b"\x01" if value else b"\x00"


def converter(name: str, triton_type: str) -> tuple[Callable[[Any], bytes], int]:
    """(value → bytes, size) for one scalar of `triton_type`."""
    ty = _TYPE_ALIASES.get(triton_type, triton_type)
    if ty in _INT_BITS:
        return _int(name, _INT_BITS[ty]), _INT_BITS[ty] // 8
    table: dict[str, tuple[Callable[[Any], bytes], int]] = {
        "i1": (_bool, 1), "fp16": (_fp16, 2), "bf16": (_bf16, 2), "fp32": (_fp32, 4),
        "fp64": (_fp32, 4)}
    if ty not in table:
        raise MetalNonRecoverableError(f"argument `{name}` has Triton type {triton_type}, "
                                       "which the Metal launcher cannot pass")
    return table[ty]


# One struct format per field, for the per-launch fast path: values in range pack directly;
# anything else (wrapping ints, huge floats) falls back to the converters above.
_FAST = {"i8": "b", "u8": "B", "i16": "h", "u16": "H", "i32": "i", "u32": "I", "i64": "q",
         "u64": "Q", "i1": "?", "fp16": "e", "fp32": "f", "fp64": "f"}


def _bf16_fast(value: Any) -> int:
    return _f32_bits(float(value)) >> 16


class ScalarPacker:
    """Built once per compiled kernel; `pack(values)` runs per launch."""

    def __init__(self, fields: Sequence[tuple[str, int | None]], size: int,
                 names: Sequence[str] | None = None) -> None:
        if size > SET_BYTES_LIMIT:
            raise MetalNonRecoverableError(
                f"{size} bytes of scalar arguments: over the {SET_BYTES_LIMIT}-byte setBytes "
                "limit")
        self.size = size
        self.plan: list[tuple[int, Callable[[Any], bytes]]] = []
        for i, (triton_type, offset) in enumerate(fields):
            name = names[i] if names else f"#{i}"
            pack, width = converter(name, triton_type)
            if offset is None or offset < 0 or offset + width > size:
                raise MetalNonRecoverableError(
                    f"scalar `{name}` ({triton_type}) at offset {offset} does not fit the "
                    f"{size}-byte argument struct")
            self.plan.append((offset, pack))
        self._fast, self._fast_bf16 = self._fast_format(fields, size)
        self._order = sorted(range(len(fields)), key=lambda i: fields[i][1] or 0)

    @staticmethod
    def _fast_format(fields: Sequence[tuple[str, int | None]], size: int
                     ) -> tuple[struct.Struct | None, tuple[int, ...]]:
        """One `struct.Struct` for the whole argument struct (pad bytes between fields)."""
        order = sorted(range(len(fields)), key=lambda i: fields[i][1] or 0)
        fmt, at, bf16 = "<", 0, []
        for i in order:
            ty = _TYPE_ALIASES.get(fields[i][0], fields[i][0])
            offset = fields[i][1] or 0
            code = "H" if ty == "bf16" else _FAST.get(ty)
            if code is None or offset < at:
                return None, ()
            fmt += "x" * (offset - at) + code
            at = offset + struct.calcsize("<" + code)
            if ty == "bf16":
                bf16.append(i)
        fmt += "x" * (size - at)
        return struct.Struct(fmt), tuple(bf16)

    def pack_bytes(self, values: Sequence[Any]) -> bytes:
        if len(values) != len(self.plan):
            raise MetalNonRecoverableError(
                f"{len(values)} scalar values for {len(self.plan)} scalar arguments")
        if self._fast is not None:
            fast = values
            if self._fast_bf16:
                fast = list(values)
                for i in self._fast_bf16:
                    fast[i] = _bf16_fast(fast[i])
            try:
                return self._fast.pack(*(fast[i] for i in self._order))
            except (OverflowError, struct.error, TypeError):
                pass  # out of range for the plain format: wrap / convert as Triton does
        buf = bytearray(self.size)
        for (offset, pack), value in zip(self.plan, values, strict=True):
            data = pack(value)
            buf[offset:offset + len(data)] = data
        return bytes(buf)

    def pack(self, values: Sequence[Any]) -> list[int]:
        """The struct as torch.mps takes it: a list of byte values (arg_casts "uint8")."""
        return list(self.pack_bytes(values))
