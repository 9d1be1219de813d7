"""The MSL support libraries, pulled into a kernel's program scope once, only when used:
templates/elementwise_support.metal (IEEE min/max, rounding helpers, erf) and the libdevice
functions msltrans implements itself (templates/libdevice_basic.metal, libdevice_special.metal).
"""

from __future__ import annotations

import functools

from msltrans.lower.emitter import Emitter
from msltrans.lower.templates import TEMPLATE_DIR

LIBDEVICE_PARTS = ("basic", "special")


@functools.cache
def _text(name: str) -> str:
    return (TEMPLATE_DIR / name).read_text().strip("\n")


def _once(em: Emitter, name: str) -> None:
    if _text(name) not in em.prelude:
        em.prelude.append(_text(name))


def need_support(em: Emitter) -> None:
    _once(em, "elementwise_support.metal")


def need_libdevice(em: Emitter, part: str) -> None:
    """`basic` (ilogb, ldexp, nextafter, expm1, log1p, hypot) or `special` (erfc, erfcx,
    erfinv, lgamma, i0, i1; needs msl_erf and the basic part, added first)."""
    if part not in LIBDEVICE_PARTS:
        raise ValueError(f"libdevice support part {part!r}")
    if part == "special":
        need_support(em)
    _once(em, "libdevice_basic.metal")
    if part == "special":
        _once(em, "libdevice_special.metal")
