"""The MSL support libraries, pulled into a kernel's program scope once, only when used:
templates/elementwise_support.metal (IEEE min/max, rounding helpers, erf) and the libdevice
functions msltrans implements itself (templates/libdevice_basic.metal, libdevice_special.metal,
libdevice_integer.metal).
"""

from __future__ import annotations

from msltrans.lower.emitter import Emitter

LIBDEVICE_PARTS = ("basic", "special", "integer")


def need_support(em: Emitter) -> None:
    em.include("elementwise_support")


def need_libdevice(em: Emitter, part: str) -> None:
    """`basic` (ilogb, ldexp, nextafter, expm1, log1p, hypot), `special` (erfc, erfcx,
    erfinv, lgamma, i0, i1; needs msl_erf and the basic part, added first) or `integer`
    (CUDA's integer intrinsics: mul24, sad, hadd, rhadd, byte_perm)."""
    if part not in LIBDEVICE_PARTS:
        raise ValueError(f"libdevice support part {part!r}")
    if part == "integer":
        em.include("libdevice_integer")
        return
    if part == "special":
        need_support(em)
    em.include("libdevice_basic")
    if part == "special":
        em.include("libdevice_special")
