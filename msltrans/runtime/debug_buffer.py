"""The hidden debug buffer of kernels that use `tl.device_print` / `tl.device_assert`.

Metal has no printf and no abort, so the lowering (`lower/control/ops_debug.py`) appends one
`device uint*` buffer after the kernel's own buffers and writes fixed-size records into it
through an atomic cursor. After the dispatch the launcher decodes them here: prints go to
stdout in Triton's NVIDIA format (`pid (0, 0, 0) idx (  3) x: 5`), sorted by program id, then
print call, operand and element index; failed asserts go to stderr in CUDA's
`__assertfail` format and raise `DeviceAssertError` (a RuntimeError whose message says
"device-side assert triggered", as torch's CUDA error does).

The buffer's word layout is msltrans/abi/debug_layout.py. A record is (site, seq, pid.x,
pid.y, pid.z, flat index, thread, value lo, value hi): `site`
indexes the kernel's site table (one entry per print operand / assert, JSON in the kernel
metadata), `seq` counts the print/assert calls the thread has executed (uniform over a
program, so it orders calls inside loops). A reservation that does not fit is dropped whole
and counted; the host reports the count, it never drops output silently.
"""

from __future__ import annotations

import math
import struct
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from msltrans import settings
from msltrans.abi.debug_layout import (
    CAPACITY,
    CURSOR,
    DROPPED,
    FAILED,
    HEADER_WORDS,
    METADATA_KEY,
    RECORD_WORDS,
)
from msltrans.errors import MetalNonRecoverableError

BUFFER_ENV = settings.PRINT_BUFFER_BYTES
DEFAULT_BUFFER_BYTES = 8 << 20  # ~233k records; CUDA's printf FIFO is ~6.75 MiB
MIN_BUFFER_BYTES = (HEADER_WORDS + RECORD_WORDS) * 4
MAX_BUFFER_BYTES = 1 << 32  # the cursor is a 32-bit word count
# Unsigned promotion widths of printf's default argument promotion (ints < 32 bits → 32).
_INT_BITS = {"i1": 1, "i8": 8, "i16": 16, "i32": 32, "i64": 64}
_FLOAT_BITS = {"f16": 16, "bf16": 16, "f32": 32, "f64": 64}


class DeviceAssertError(RuntimeError):
    """A `tl.device_assert` failed on the device (Metal cannot abort a kernel: it ran to
    the end, so stores after the failing assert did happen)."""

    def __init__(self, message: str, failures: list[AssertFailure] | None = None,
                 total: int = 0) -> None:
        super().__init__(message)
        self.failures = list(failures or [])
        self.total = total

    def __reduce__(self) -> tuple[Any, ...]:  # picklable (Triton's run_in_process sends it)
        return (type(self), (str(self), self.failures, self.total))


@dataclass(frozen=True)
class AssertFailure:
    message: str
    file: str
    line: int
    function: str
    pid: tuple[int, int, int]
    index: tuple[int, ...]
    thread: int

    def location(self) -> str:
        return f"{self.file}:{self.line}"

    def cuda_line(self) -> str:
        """What CUDA's __assertfail prints for it (plus the element, which CUDA omits)."""
        x, y, z = self.pid
        return (f"{self.file}:{self.line}: {self.function}: block: [{x},{y},{z}], thread: "
                f"[{self.thread},0,0] Assertion `{self.message}` failed. "
                f"(idx {_index_text(self.index)})")


def buffer_bytes() -> int:
    """The debug buffer size from MSLTRANS_PRINT_BUFFER_BYTES (default 8 MiB)."""
    text = settings.text(BUFFER_ENV)
    if not text:
        return DEFAULT_BUFFER_BYTES
    try:
        value = int(text, 0)
    except ValueError:
        raise MetalNonRecoverableError(f"{BUFFER_ENV}={text!r} is not an integer",
                                       hint=f"a byte count, e.g. {DEFAULT_BUFFER_BYTES}") from None
    if not MIN_BUFFER_BYTES <= value <= MAX_BUFFER_BYTES:
        raise MetalNonRecoverableError(
            f"{BUFFER_ENV}={value} is out of range",
            hint=f"between {MIN_BUFFER_BYTES} and {MAX_BUFFER_BYTES} bytes")
    return value


# ---- value formatting (C printf as Triton's NVIDIA lowering calls it) ---------------------

def _as_double(bits: int, storage: str) -> float:
    if storage == "f16":
        return float(np.array([bits & 0xFFFF], dtype=np.uint16).view(np.float16)[0])
    if storage == "bf16":
        return struct.unpack("<f", struct.pack("<I", (bits & 0xFFFF) << 16))[0]
    if storage == "f32":
        return struct.unpack("<f", struct.pack("<I", bits & 0xFFFFFFFF))[0]
    return struct.unpack("<d", struct.pack("<Q", bits))[0]


def _c_nan_inf(v: float) -> str | None:
    if math.isnan(v):
        return "-nan" if math.copysign(1.0, v) < 0 else "nan"
    if math.isinf(v):
        return "-inf" if v < 0 else "inf"
    return None


def c_hex_float(v: float) -> str:
    """C's `%a` of a double, glibc spelling: 0x1p+0, 0x1.8p+0, -0x0p+0, inf, nan."""
    special = _c_nan_inf(v)
    if special is not None:
        return special
    text = v.hex()  # '0x1.8000000000000p+0', '-0x0.0p+0'
    sign = "-" if text.startswith("-") else ""
    mantissa, exponent = text.lstrip("-")[2:].split("p")
    lead, _, frac = mantissa.partition(".")
    frac = frac.rstrip("0")
    if v == 0.0:
        exponent = "+0"
    body = f"{lead}.{frac}" if frac else lead
    return f"{sign}0x{body}p{exponent}"


def format_value(bits: int, site: dict[str, Any]) -> str:
    """One element as Triton's NVIDIA printf formats it (promoted like a C vararg)."""
    storage, hexa = site["storage"], site["hex"]
    if storage == "ptr":
        return f"0x{bits:x}" if bits else "(nil)"
    if storage in _FLOAT_BITS:
        v = _as_double(bits, storage)
        if hexa:
            return c_hex_float(v)
        special = _c_nan_inf(v)
        return special if special is not None else f"{v:f}"
    width = _INT_BITS[storage]
    raw = bits & ((1 << width) - 1)
    if site["signed"] and raw >> (width - 1):
        raw -= 1 << width  # sign-extend
    promoted = 64 if width == 64 else 32
    if hexa:
        digits = width // 4  # "0x%0<n>x": i1 gets no padding, i8 pads to 2 (of 32-bit value)
        return f"0x{raw & ((1 << promoted) - 1):0{digits}x}" if digits else \
            f"0x{raw & ((1 << promoted) - 1):x}"
    if site["signed"]:
        return str(raw)
    return str(raw & ((1 << promoted) - 1))


def _dim_width(dim: int) -> int:
    """ceil(log10(dim)) as NVIDIA's lowering pads each index (0 for dims of 1)."""
    width = 0
    while 10**width < dim:
        width += 1
    return width


def _unflatten(flat: int, shape: Sequence[int]) -> tuple[int, ...]:
    out = []
    for dim in reversed(shape):
        out.append(flat % dim)
        flat //= dim
    return tuple(reversed(out))


def _index_text(index: Sequence[int], shape: Sequence[int] | None = None) -> str:
    if shape is None:
        return ", ".join(str(i) for i in index)
    return ", ".join(f"{i:{_dim_width(d)}}" if _dim_width(d) else str(i)
                     for i, d in zip(index, shape, strict=True))


def format_print(site: dict[str, Any], pid: tuple[int, int, int], flat: int,
                 bits: int) -> str:
    x, y, z = pid
    head = f"pid ({x}, {y}, {z})"
    if site["operands"] == 0:
        return head + site["prefix"]
    shape = site["shape"]
    index = _index_text(_unflatten(flat, shape), shape) if shape else ""
    operand = f"(operand {site['operand']}) " if site["operands"] > 1 else ""
    return f"{head} idx ({index}){site['prefix']}{operand}{format_value(bits, site)}"


# ---- the buffer --------------------------------------------------------------------------

class DebugBuffer:
    """Allocates the hidden buffer for one kernel and decodes it after each dispatch."""

    def __init__(self, sites: Sequence[dict[str, Any]], kernel: str) -> None:
        self.sites = list(sites)
        self.kernel = kernel
        self._buffer: Any = None

    @classmethod
    def from_metadata(cls, metadata: Any) -> DebugBuffer | None:
        sites = getattr(metadata, METADATA_KEY, None)
        if not sites:
            return None
        return cls(sites, str(getattr(metadata, "name", "kernel")))

    def allocate(self, device_type: str) -> Any:
        """The buffer for the next dispatch: header zeroed, capacity set (records are
        only read up to the cursor, so they need no clearing)."""
        import torch

        words = buffer_bytes() // 4
        buf = self._buffer
        if buf is None or buf.numel() != words or buf.device.type != device_type:
            buf = torch.empty(words, dtype=torch.int32, device=device_type)
            self._buffer = buf
        header = torch.zeros(HEADER_WORDS, dtype=torch.int32)
        header[CAPACITY] = np.uint32(words - HEADER_WORDS).astype(np.int32).item()
        buf[:HEADER_WORDS].copy_(header.to(device_type))
        return buf

    def records(self, buf: Any) -> tuple[np.ndarray, int, int]:
        """(records as an (n, RECORD_WORDS) uint32 array, dropped, failed asserts)."""
        words = buf.cpu().numpy().view(np.uint32)
        used = int(words[CURSOR])
        dropped = int(words[DROPPED]) | int(words[DROPPED + 1]) << 32
        failed = int(words[FAILED]) | int(words[FAILED + 1]) << 32
        body = words[HEADER_WORDS:HEADER_WORDS + used]
        return body.reshape(-1, RECORD_WORDS), dropped, failed

    def report(self, buf: Any, stdout: Any = None, stderr: Any = None) -> None:
        """Print the records, report lost ones, raise for failed asserts."""
        stdout = stdout or sys.stdout
        stderr = stderr or sys.stderr
        recs, dropped, failed = self.records(buf)
        # pid (x, y, z), call sequence, site (operand order), element, thread
        order = np.lexsort((recs[:, 6], recs[:, 5].view(np.int32), recs[:, 0], recs[:, 1],
                            recs[:, 4], recs[:, 3], recs[:, 2]))
        lines, failures = [], []
        for rec in recs[order]:
            site = self.sites[int(rec[0])]
            pid = (int(rec[2]), int(rec[3]), int(rec[4]))
            flat = int(np.int32(rec[5]))
            if site["kind"] == "assert":
                index = _unflatten(flat, site["shape"]) if site["shape"] else ()
                failures.append(AssertFailure(site["message"], site["file"], site["line"],
                                              site["function"], pid, index, int(rec[6])))
                continue
            bits = int(rec[7]) | int(rec[8]) << 32
            lines.append(format_print(site, pid, flat, bits))
        if lines:
            stdout.write("\n".join(lines) + "\n")
            stdout.flush()
        if dropped:
            stderr.write(f"msltrans: kernel `{self.kernel}`: the device_print/device_assert "
                         f"buffer overflowed, {dropped} record(s) were lost (raise "
                         f"{BUFFER_ENV}, now {buffer_bytes()} bytes)\n")
            stderr.flush()
        if failed:
            self._raise(failures, failed, dropped, stderr)

    def _raise(self, failures: list[AssertFailure], failed: int, dropped: int,
               stderr: Any) -> None:
        for f in failures:
            stderr.write(f.cuda_line() + "\n")
        stderr.flush()
        if failures:
            first = failures[0]
            x, y, z = first.pid
            what = (f"{first.location()}: {first.function}: Assertion `{first.message}` "
                    f"failed at pid ({x}, {y}, {z}) idx ({_index_text(first.index)})")
        else:
            what = "the failure records were lost to a buffer overflow"
        more = f"; {failed} element(s) failed in all" if failed > 1 else ""
        lost = f" ({dropped} record(s) lost: raise {BUFFER_ENV})" if dropped else ""
        raise DeviceAssertError(
            f"device-side assert triggered in kernel `{self.kernel}`: {what}{more}{lost}",
            failures, failed)
