"""Exceptions the CPU Metal simulator raises.

Every runtime error names the kernel and, where it applies, the thread (threadgroup id and
local id), the buffer (index and parameter name), the byte offset, read/write and the source
line, so a failing test says what the GPU would have silently done wrong.
"""

from __future__ import annotations

from dataclasses import dataclass, field


class SimError(RuntimeError):
    """Base class of everything msltrans.sim raises."""


class CompilerNotFoundError(SimError):
    """No usable clang (>= 17) was found."""


class CompileError(SimError):
    """clang rejected the MSL source; `diagnostics` holds its messages, `command` a repro."""

    def __init__(self, message: str, diagnostics: str = "", command: str = "") -> None:
        self.diagnostics = diagnostics
        self.command = command
        text = message
        if diagnostics:
            text += "\n" + diagnostics.rstrip()
        if command:
            text += f"\nreproduce with:\n  {command}"
        super().__init__(text)


class LaunchError(SimError):
    """Invalid dispatch: bad geometry, > 1024 threads per group, unknown argument type."""


@dataclass
class Where:
    """The thread and source location a device error happened at."""

    kernel: str
    group: tuple[int, int, int] | None = None
    local: tuple[int, int, int] | None = None
    source_line: str | None = None
    extra: dict[str, object] = field(default_factory=dict)
    # The @triton.jit line(s) the MSL location came from ("kernel.py:36 (tt.load)").
    triton_lines: list[str] = field(default_factory=list)

    def describe(self) -> str:
        parts = [f"kernel `{self.kernel}`"]
        if self.group is not None and self.local is not None:
            parts.append(f"threadgroup {self.group}, thread {self.local}")
        if self.source_line:
            parts.append(f"at {self.source_line}")
        if self.triton_lines:
            parts.append(f"Triton source {', '.join(self.triton_lines)}")
        return ", ".join(parts)


class DeviceError(SimError):
    """An error raised while the kernel ran; `where` says which thread and line."""

    def __init__(self, what: str, where: Where) -> None:
        self.what = what
        self.where = where
        super().__init__(f"{what} ({where.describe()})")


class OutOfBoundsError(DeviceError):
    """A device read/write outside its buffer; `buffer_index`, `param`, `offset`, `is_write`."""

    def __init__(self, what: str, where: Where, buffer_index: int | None, param: str | None,
                 offset: int | None, is_write: bool | None) -> None:
        self.buffer_index = buffer_index
        self.param = param
        self.offset = offset
        self.is_write = is_write
        super().__init__(what, where)


class InvalidAddressError(DeviceError):
    """A device access to an address that belongs to no buffer (wild or null pointer)."""


class DivergenceError(DeviceError):
    """A barrier or SIMD-group op reached by only part of its threadgroup / simdgroup."""


class ThreadgroupMemoryError(DeviceError):
    """Threadgroup memory over Metal's 32 KB limit."""


class StackOverflowError(DeviceError):
    """A thread overflowed its 448 KB fiber stack (huge local arrays; recursion is refused
    at compile time, msltrans/sim/language.py)."""


class DivisionTrapError(DeviceError):
    """An integer division trapped (division by zero or INT_MIN / -1)."""


class KernelTimeoutError(DeviceError):
    """The dispatch ran past its time limit: an endless loop, or a thread spinning on a value
    another thread of its group would write (threads run one at a time until they block)."""


class DeviceFailure(DeviceError):
    """Device code called msl_sim_fail (an unmodelled feature, a shim-detected misuse)."""


class CoherenceError(DeviceError):
    """A plain load from a buffer not declared `coherent(device)` of bytes another threadgroup
    stored during the same dispatch (MSL §4.8 Memory Coherency: on a GPU the load may return a
    stale value). `where` is the reading thread and line; `buffer_index`, `param`, `offset`
    name the byte; `writer_group`, `writer_local` the thread that stored it, `writer_line`
    the MSL line of that store (None where unknown), `writer_atomic` whether it was an
    atomic."""

    def __init__(self, what: str, where: Where, buffer_index: int | None, param: str | None,
                 offset: int | None, writer_group: tuple[int, int, int],
                 writer_local: tuple[int, int, int], writer_line: str | None,
                 writer_atomic: bool) -> None:
        self.buffer_index = buffer_index
        self.param = param
        self.offset = offset
        self.writer_group = writer_group
        self.writer_local = writer_local
        self.writer_line = writer_line
        self.writer_atomic = writer_atomic
        super().__init__(what, where)


class RaceError(SimError):
    """Outputs depend on the thread schedule: a missing barrier or a data race.

    `differences` lists (buffer index, parameter name, schedule, first differing element
    indices) for every output that differs from the forward schedule's.
    """

    def __init__(self, kernel: str, differences: list[tuple[int, str, str, list[int]]],
                 writers: list[str] | None = None) -> None:
        self.kernel = kernel
        self.differences = differences
        self.writers = list(writers or [])
        lines = [f"kernel `{kernel}`: results depend on the thread schedule (a race):"]
        for index, param, schedule, elements in differences:
            lines.append(f"  buffer {index} (`{param}`) differs under {schedule} "
                         f"from forward at element(s) {elements}")
        if self.writers:
            lines.append(f"  Triton source lines that write memory: {', '.join(self.writers)}")
        super().__init__("\n".join(lines))
