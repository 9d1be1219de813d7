"""The launch-time alignment variant: a second compile keyed on integer divisibility.

Triton keys a compiled kernel on whether each integer argument is a multiple of 16. A fp32
row stride of 1000 is not, yet every row then starts 16-byte aligned: the vector path needs
the stride to be a multiple of 4. The lowering names the integer arguments whose
divisibility would widen a narrow access (`metadata.alignment_keys`, from
msltrans/lower/memory/align_keys.py). On each launch this module reads those arguments' values and
takes, for each, the largest power of two dividing it (up to what the access needs): that
tuple is the variant's key, as Triton's "D" flags are its own. A key that states more than
the kernel in hand was compiled with is compiled once (through `triton.compile`, with
`tt.divisibility` added to the same source's attributes, so Triton's cache holds it beside
the first) and the launch goes to it. A launch whose values lack a divisibility runs the
kernel without it: a variant is never used for values it was not compiled for, and views
whose pointers are not 16-byte aligned were already keyed apart by Triton itself.
"""

from __future__ import annotations

import dataclasses
import threading
import warnings
from collections.abc import Sequence
from typing import Any

from msltrans import settings

DIVISIBILITY = "tt.divisibility"


def _level(value: Any, cap: int) -> int:
    """The largest power of two dividing an integer `value`, at most `cap` (1: unknown)."""
    if isinstance(value, bool) or not isinstance(value, int):
        return 1
    if value == 0:
        return cap
    return min(value & -value, cap)


def _stated(attrs: dict[Any, Any], index: int) -> int:
    for name, value in attrs.get((index,), ()):
        if name == DIVISIBILITY:
            return int(value)
    return 1


def _options(metadata: Any) -> dict[str, Any]:
    """The compile options of `metadata`'s kernel (its option fields, as compiled)."""
    from msltrans.options import MetalOptions

    out = {}
    for f in dataclasses.fields(MetalOptions):
        if hasattr(metadata, f.name):
            value = getattr(metadata, f.name)
            out[f.name] = tuple(value) if isinstance(value, list) else value
    return out


def state_divisibility(attrs: dict[tuple[int, ...], list[list[Any]]], index: int,
                       divisor: int) -> None:
    """State in ASTSource `attrs` that argument `index` is divisible by `divisor`, replacing
    the divisibility stated before (Triton's 16, or none)."""
    kept = [a for a in attrs.get((index,), []) if a[0] != DIVISIBILITY]
    attrs[(index,)] = [*kept, [DIVISIBILITY, divisor]]


class AlignVariants:
    """The variants of one compiled kernel, by key (built by runtime/launch.py)."""

    def __init__(self, src: Any, metadata: Any, keys: Sequence[tuple[int, int]]) -> None:
        self.src = src
        self.metadata = metadata
        self.keys = list(keys)  # (position among all arguments, divisibility wanted)
        self.stated = [_stated(src.attrs, i) for i, _ in self.keys]
        self.compiled: dict[tuple[int, ...], tuple[Any, Any, str] | None] = {}
        self.lock = threading.Lock()

    @classmethod
    def from_launch(cls, src: Any, metadata: Any, has_tuples: bool) -> AlignVariants | None:
        wanted = list(getattr(metadata, "alignment_keys", None) or ())
        target = getattr(metadata, "target", None)
        if not wanted or has_tuples or getattr(target, "backend", None) != "metal":
            return None
        fn = getattr(src, "fn", None)
        names = list(getattr(fn, "arg_names", None) or ())
        if not names or not isinstance(getattr(src, "attrs", None), dict):
            return None  # a kernel compiled from a .ttgir file: no source to respecialise
        keys = []
        for name, divisor in wanted:
            if name in names:
                keys.append((names.index(name), int(divisor)))
        return cls(src, metadata, keys) if keys else None

    def key(self, args: Sequence[Any]) -> tuple[int, ...] | None:
        """What this launch's values allow beyond the kernel in hand; None: nothing."""
        levels = tuple(_level(args[i], d) for i, d in self.keys)
        if all(lv <= st for lv, st in zip(levels, self.stated, strict=True)):
            return None
        return levels

    def pick(self, args: Sequence[Any]) -> tuple[Any, Any] | None:
        """(launcher, function) of the variant for this launch, or None for the kernel in
        hand (always, with MSLTRANS_ALIGN_VARIANTS=0)."""
        if settings.text(settings.ALIGN_VARIANTS, "1") == "0":
            return None
        key = self.key(args)
        if key is None:
            return None
        found = self.compiled.get(key)
        if found is None:
            with self.lock:
                found = self.compiled.get(key)
                if found is None:
                    found = self.compiled[key] = self._compile_or_none(key)
        return None if found is None else (found[0], found[1])

    def _compile_or_none(self, key: tuple[int, ...]) -> tuple[Any, Any, str] | None:
        """The variant, or None (launches with this key then run the kernel in hand, which
        is correct for any values) if it cannot be compiled: said once, as a warning."""
        try:
            return self._compile(key)
        except Exception as exc:  # noqa: BLE001 - any failure leaves the first compile
            warnings.warn(f"msltrans: the alignment variant {key} of kernel "
                          f"`{self.metadata.name}` did not compile ({exc}); launches run the "
                          "kernel without it", RuntimeWarning, stacklevel=3)
            return None

    def _compile(self, key: tuple[int, ...]) -> tuple[Any, Any, str]:
        from triton.compiler import ASTSource
        from triton.compiler import compile as triton_compile

        attrs = {k: [list(a) for a in v] for k, v in self.src.attrs.items()}
        for (index, _), level, stated in zip(self.keys, key, self.stated, strict=True):
            if level > stated:
                state_divisibility(attrs, index, level)
        src = ASTSource(self.src.fn, self.src.signature, dict(self.src.constants), attrs)
        kernel = triton_compile(src, target=self.metadata.target,
                                options=_options(self.metadata))
        kernel._init_handles()
        msl = kernel.asm["msl"]
        return kernel.run, kernel.function, msl.decode() if isinstance(msl, bytes) else msl
