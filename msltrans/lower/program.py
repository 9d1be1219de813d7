"""What `lower_module` returns: the MSL and everything the launcher needs to dispatch it."""

from __future__ import annotations

import hashlib
import os
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from msltrans import settings
from msltrans.abi.alignment import AlignmentKey, sim_alignment


@dataclass(frozen=True)
class MslParam:
    name: str  # Python parameter name (also the MSL parameter name, sanitised)
    kind: Literal["pointer", "scalar"]
    triton_type: str  # "*fp32", "i32", ...
    # a pointer's own buffer (for a spilled pointer, the argument buffer's); for a scalar,
    # the argument struct's buffer
    buffer_index: int
    msl_type: str  # element or pointer type as declared in MSL
    offset: int | None = None  # a scalar's byte offset in the argument struct
    # a pointer past Metal's buffer table: its entry in the argument buffer of GPU addresses
    # (msltrans/lower/kernel_args.py, PointerStruct); None for a pointer in its own slot
    slot: int | None = None


@dataclass(frozen=True)
class MslProgram:
    """Dispatch: grid (gx, gy, gz) → lib.<kernel_name>(*args, threads=(gx*T, gy, gz),
    group_size=(T, 1, 1)) with T = threads_per_group."""

    source: str
    kernel_name: str
    num_warps: int
    threads_per_group: int
    params: tuple[MslParam, ...]
    shared_bytes: int
    args_size: int = 0  # bytes of the scalar-argument struct (0: the kernel has no scalars)
    layouts: tuple[str, ...] = ()  # the encodings used, in MSL helper order (L0, L1, ...)
    # tt.print / tt.assert sites (JSON dicts, msltrans/runtime/debug_buffer.py); when not
    # empty the kernel takes one more buffer, `debug_buffer_index`, after `params`
    debug_sites: tuple[dict[str, Any], ...] = field(default=(), hash=False)
    # (buffer index, bytes): vector accesses assume these buffers aligned so (the launcher
    # specialised the pointer from its address); engines that place buffers themselves (the
    # simulator) must keep that alignment.
    buffer_alignment: tuple[tuple[int, int], ...] = ()
    # (argument-buffer slot, bytes): the same for the pointers in the argument buffer
    spilled_alignment: tuple[tuple[int, int], ...] = ()
    # Buffers declared coherent(device) (lower/memory/coherence.py): the launcher refuses a launch
    # where one overlaps another argument (the analysis took distinct arguments as apart).
    coherent_buffers: tuple[int, ...] = ()
    # (integer argument, divisibility): launches whose values have these divisibilities run
    # a variant compiled with them stated (lower/memory/align_keys.py, runtime/align_variants.py)
    alignment_keys: tuple[tuple[str, int], ...] = ()

    @property
    def direct_pointers(self) -> int:
        """Pointers bound to their own buffer: buffer 0, 1, ... in argument order."""
        return sum(p.kind == "pointer" and p.slot is None for p in self.params)

    @property
    def spilled(self) -> tuple[MslParam, ...]:
        """Pointers in the argument buffer, in slot order."""
        return tuple(sorted((p for p in self.params if p.slot is not None),
                            key=lambda p: p.slot or 0))

    @property
    def argument_buffer_index(self) -> int | None:
        """The buffer of the pointers' argument buffer (after the direct pointers), if any."""
        return self.direct_pointers if self.spilled else None

    @property
    def args_buffer_index(self) -> int | None:
        """The buffer of the scalar-argument struct (after the pointers), if any."""
        if not self.args_size:
            return None
        return self.direct_pointers + (1 if self.spilled else 0)

    @property
    def buffer_count(self) -> int:
        return (self.direct_pointers + (1 if self.spilled else 0)
                + (1 if self.args_size else 0))

    @property
    def debug_buffer_index(self) -> int | None:
        return self.buffer_count if self.debug_sites else None

    @property
    def sim_alignment(self) -> dict[AlignmentKey, int]:
        """The simulator's `buffer_alignment=`: {buffer: bytes}, and {(argument buffer,
        slot): bytes} for the pointers in the argument buffer."""
        return sim_alignment(self.buffer_alignment, self.spilled_alignment,
                             self.argument_buffer_index)

    @property
    def arg_casts(self) -> dict[int, str]:
        """The `arg_casts=` dict for torch.mps / the simulator: the struct travels as a list
        of byte values sent as uint8 (torch's `setBytes` of a vector)."""
        index = self.args_buffer_index
        return {} if index is None else {index: "uint8"}

    def engine_args(self, args: Sequence[Any]) -> list[Any]:
        """One value per `params` entry (Triton's argument order, constexprs removed) → the
        engine's positional arguments: the pointers, the spilled pointers' tensors as one list
        (the argument buffer, as torch.mps takes a list of tensors), then the packed scalar
        struct."""
        from msltrans.abi.scalar_struct import ScalarPacker

        if len(args) != len(self.params):
            raise ValueError(f"kernel `{self.kernel_name}` takes {len(self.params)} runtime "
                             f"arguments, got {len(args)}")
        out: list[Any] = [a for a, p in zip(args, self.params, strict=True)
                          if p.kind == "pointer" and p.slot is None]
        spilled = sorted(((p.slot, a) for a, p in zip(args, self.params, strict=True)
                          if p.slot is not None), key=lambda item: item[0])
        if spilled:
            out.append([a for _, a in spilled])
        if self.args_size:
            scalars = [(p.triton_type, p.offset) for p in self.params if p.kind == "scalar"]
            values = [a for a, p in zip(args, self.params, strict=True) if p.kind == "scalar"]
            out.append(ScalarPacker(scalars, self.args_size).pack(values))
        return out


def record(program: MslProgram) -> None:
    """Write the kernel's MSL to `$MSLTRANS_RECORD_MSL/<kernel>-<sha256[:16]>.metal` when that
    variable names a folder (scripts/msl_identity.py compares two such records)."""
    folder = settings.raw(settings.RECORD_MSL)
    if not folder:
        return
    text = program.source.encode()
    path = Path(folder) / f"{program.kernel_name}-{hashlib.sha256(text).hexdigest()[:16]}.metal"
    if path.exists():
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".record-")
    with os.fdopen(fd, "wb") as f:
        f.write(text)
    os.replace(tmp, path)  # whole files only, when test workers record side by side
