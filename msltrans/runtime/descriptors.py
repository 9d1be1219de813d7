"""Host-side tensor descriptors (`triton.tools.tensor_descriptor.TensorDescriptor`).

Metal has no TMA unit: the TTIR pass `rewrite_tensor_descriptor_to_pointer` (ir/pipeline.py)
turns every descriptor into pointer arithmetic, and a descriptor *argument* of type
`tensordesc<fp32[8, 16]>` becomes these kernel arguments, in this order:

    base pointer, shape (i64 × rank), strides (i64 × rank), padding-is-NaN (i1),
    round-f32-to-tf32 (i1), shape (i32 × rank), strides (i64 × rank)

(the last two groups are the frontend's own shape/stride arguments of the descriptor) —
what Triton's `triton.backends.driver.decompose_descriptor` sends on GPUs without TMA
metadata. The launcher expands the signature and each TensorDescriptor the same way. A Triton
whose TensorDescriptor has no `round_f32_to_tf32` field (3.6) has no such flag argument
either (`msltrans._triton_compat.descriptor_has_tf32_flag`).
"""

from __future__ import annotations

import functools
import re
from collections.abc import Sequence
from typing import Any

from msltrans._triton_compat import descriptor_has_tf32_flag
from msltrans.errors import MetalNonRecoverableError

_DESCRIPTOR = re.compile(r"tensordesc<(\w+)\[([\d,\s]*)\]")


def is_descriptor(ty: Any) -> bool:
    return isinstance(ty, str) and ty.startswith("tensordesc")


def has_descriptors(signature: Sequence[Any]) -> bool:
    return any(has_descriptors(t) if isinstance(t, tuple) else is_descriptor(t)
               for t in signature)


def _rank_and_dtype(ty: str) -> tuple[str, int]:
    m = _DESCRIPTOR.match(ty)
    if m is None:
        raise MetalNonRecoverableError(f"tensor descriptor type {ty!r} is not understood",
                                       hint="pass a TensorDescriptor of a plain dtype")
    return m.group(1), len([s for s in m.group(2).split(",") if s.strip()])


@functools.cache
def _flags() -> int:
    """How many i1 flags follow the strides: padding-is-NaN, then round-f32-to-tf32 where
    this Triton's TensorDescriptor has that field."""
    return 2 if descriptor_has_tf32_flag() else 1


def descriptor_types(ty: str) -> tuple[str, ...]:
    dtype, rank = _rank_and_dtype(ty)
    return ("*" + dtype, *["i64"] * (2 * rank), *["i1"] * _flags(), *["i32"] * rank,
            *["i64"] * rank)


def expand_signature(signature: Sequence[Any]) -> list[Any]:
    """Each descriptor type becomes a tuple of the kernel argument types it stands for."""
    return [tuple(expand_signature(t)) if isinstance(t, tuple)
            else descriptor_types(t) if is_descriptor(t) else t for t in signature]


def _decompose(arg: Any, ty: str, name: str) -> tuple[Any, ...]:
    _, rank = _rank_and_dtype(ty)
    base = getattr(arg, "base", None)
    shape, strides = list(getattr(arg, "shape", ())), list(getattr(arg, "strides", ()))
    if base is None or len(shape) != rank or len(strides) != rank:
        raise MetalNonRecoverableError(
            f"argument `{name}` must be a rank-{rank} TensorDescriptor, got {type(arg).__name__}")
    if getattr(arg, "round_f32_to_tf32", False):
        raise MetalNonRecoverableError(
            f"descriptor `{name}` asks for round_f32_to_tf32: Apple GPUs have no tf32",
            hint="create the TensorDescriptor without round_f32_to_tf32")
    shape_i, strides_i = [int(s) for s in shape], [int(s) for s in strides]
    flags = (getattr(arg, "padding", "zero") == "nan", False)[:_flags()]
    return (base, *shape_i, *strides_i, *flags, *shape_i, *strides_i)


def expand_args(args: Sequence[Any], signature: Sequence[Any],
                names: Sequence[str] | None = None) -> list[Any]:
    """Each TensorDescriptor argument becomes the tuple of values `expand_signature` types."""
    out: list[Any] = []
    for k, (arg, ty) in enumerate(zip(args, signature, strict=True)):
        name = names[k] if names is not None and k < len(names) else str(k)
        if isinstance(ty, tuple):
            out.append(tuple(expand_args(arg, ty)))
        elif is_descriptor(ty):
            out.append(_decompose(arg, ty, name))
        else:
            out.append(arg)
    return out
