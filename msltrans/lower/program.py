"""What `lower_module` returns: the MSL and everything the launcher needs to dispatch it."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal


@dataclass(frozen=True)
class MslParam:
    name: str  # Python parameter name (also the MSL parameter name, sanitised)
    kind: Literal["pointer", "scalar"]
    triton_type: str  # "*fp32", "i32", ...
    buffer_index: int
    arg_cast: str | None  # arg_casts entry for scalars ("int32", "float", ...); None: pointer
    msl_type: str  # element or pointer type as declared in MSL


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
    layouts: tuple[str, ...] = ()  # the encodings used, in MSL helper order (L0, L1, ...)
    # tt.print / tt.assert sites (JSON dicts, msltrans/runtime/debug_buffer.py); when not
    # empty the kernel takes one more buffer, `debug_buffer_index`, after `params`
    debug_sites: tuple[dict[str, Any], ...] = field(default=(), hash=False)
    # (buffer index, bytes): vector accesses assume these buffers aligned so (the launcher
    # specialised the pointer from its address); engines that place buffers themselves (the
    # simulator) must keep that alignment.
    buffer_alignment: tuple[tuple[int, int], ...] = ()

    @property
    def debug_buffer_index(self) -> int | None:
        return len(self.params) if self.debug_sites else None

    @property
    def arg_casts(self) -> dict[int, str]:
        """The `arg_casts=` dict for torch.mps / the simulator (torch's defaults omitted)."""
        from msltrans.lower.msl_types import DEFAULT_WIDTH_CASTS

        return {p.buffer_index: p.arg_cast for p in self.params
                if p.arg_cast is not None and p.arg_cast not in DEFAULT_WIDTH_CASTS}
