"""Errors the transpiler raises."""

from __future__ import annotations


class MetalNonRecoverableError(RuntimeError):
    """A kernel uses an op, type or attribute msltrans cannot lower correctly.

    Raised instead of emitting plausible-but-wrong MSL. The message names the op, the
    kernel's Python source location and what is supported instead.
    """

    def __init__(self, reason: str, op: str | None = None, location: str | None = None,
                 hint: str | None = None) -> None:
        self.reason = reason
        self.op = op
        self.location = location
        self.hint = hint
        parts = []
        if op:
            parts.append(f"cannot lower `{op}`")
        if location:
            parts.append(f"at {location}")
        head = " ".join(parts)
        msg = f"{head}: {reason}" if head else reason
        if hint:
            msg += f" ({hint})"
        super().__init__(msg)


class MetalPointerDeviceError(MetalNonRecoverableError, ValueError):
    """A pointer argument is not a tensor in the engine's memory (a CPU tensor on the MPS
    engine, say). Also a `ValueError`, which is what Triton's CUDA and AMD drivers raise for a
    pointer they cannot access, so code written against them catches it unchanged."""


class MetalPerformanceWarning(UserWarning):
    """A kernel compiles and runs correctly, but a choice of its (block sizes, warps) forces
    code that a GPU runs slowly; the message names the op, the location and what to change."""
