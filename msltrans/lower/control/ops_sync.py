"""Synchronisation: `ttg.barrier` (`tl.debug_barrier()`), a threadgroup barrier.

Triton's barrier synchronises the program's threads and orders their memory accesses
(CUDA's `__syncthreads`: shared and global memory). The Metal equivalent is one
`threadgroup_barrier` fencing both threadgroup and device memory. Triton's conditions are
uniform scalars, so every thread of the program reaches the same barrier.
"""

from __future__ import annotations

from msltrans.ir.model import Op
from msltrans.lower.emitter import Emitter
from msltrans.lower.registry import lowers

# The address spaces Triton can name on `ttg.barrier` (printed as `ttg.barrier all` etc.).
_KNOWN_SPACES = ("all", "local", "global", "shared", "tensor")


@lowers("ttg.barrier", "gpu.barrier")
def barrier(em: Emitter, op: Op) -> None:
    text = getattr(op, "text", "") or ""
    spaces = [w for w in _KNOWN_SPACES if f" {w}" in text.split("loc(")[0]]
    if op.name == "ttg.barrier" and text and not spaces:
        em.fail(f"barrier with an unknown address-space spec ({text.strip()})",
                "use tl.debug_barrier()")
    # Fencing both spaces is never wrong for any of the specs above (a stronger fence).
    em.line("threadgroup_barrier(mem_flags::mem_threadgroup | mem_flags::mem_device);")
