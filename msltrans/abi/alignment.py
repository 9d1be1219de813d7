"""The buffer alignment a kernel was specialised on, keyed as the simulator places buffers.

The lowering records the alignment (bytes) it assumed of each pointer: the pointers bound to
their own buffer by buffer index, the pointers that travel in the argument buffer by slot
(MslProgram.buffer_alignment / spilled_alignment, the same pairs in Triton's kernel metadata).
Metal buffers keep a host tensor's alignment by themselves; the simulator allocates its own
copies, so its `buffer_alignment=` says what each must keep: {buffer index: bytes} for the
direct buffers and {(argument buffer index, slot): bytes} for the pointers in the argument
buffer. One function makes that dict for the launcher (msltrans/runtime/launch.py) and for
MslProgram.sim_alignment (direct simulator runs).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

AlignmentKey = int | tuple[int, int]


def sim_alignment(direct: Iterable[Sequence[int]], spilled: Iterable[Sequence[int]],
                  argument_buffer: int | None) -> dict[AlignmentKey, int]:
    """{buffer: bytes} for `direct` (buffer, bytes) pairs, plus {(argument_buffer, slot): bytes}
    for `spilled` (slot, bytes) pairs; `argument_buffer` is the argument buffer's index (None:
    the kernel has none, and then it has no spilled pointers)."""
    out: dict[AlignmentKey, int] = {int(i): int(a) for i, a in direct}
    slots = [(int(slot), int(a)) for slot, a in spilled]
    if slots:
        if argument_buffer is None:
            raise ValueError("spilled pointer alignment without an argument buffer")
        out.update({(int(argument_buffer), slot): a for slot, a in slots})
    return out
