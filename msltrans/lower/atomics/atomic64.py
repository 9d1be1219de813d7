"""64-bit (i64/u64) `tt.atomic_rmw`: what Metal can do, and the refusals for the rest.

The Metal Shading Language has one 64-bit atomic type, `atomic_ulong` (MSL specification,
section 2.6, MSL 2.4 and later), with two operations: `atomic_max_explicit` and
`atomic_min_explicit` on device memory, relaxed order, returning **void** (section 6.15.4.6,
"Atomic Modify Functions (64 Bits)": Apple silicon, MSL 2.4 and later; the Metal Feature Set
Tables give the GPUs: Apple9 and later, and Apple8 in a Mac, i.e. M2 and later). Its
exchange, compare-exchange, load/store and fetch-and-modify functions (6.15.4.2–6.15.4.5) take
`atomic_int`, `atomic_uint`, `atomic_bool`, `atomic_float` only. So, when the returned old
value is unused:

- `umax` / `umin` (Triton's `tl.atomic_max/min` on uint64) are that native void atomic;
- `add` is two relaxed 32-bit atomic adds: the low word's `atomic_fetch_add` returns the old
  low word, from which the carry out of bit 31 is known; the high word gets its own addend
  plus that carry. The final value is exact under any interleaving (docs/atomics.md gives
  the proof); a concurrent reader could see the words half-updated, which Triton's
  unused-result atomics give nobody a way to do but a racing plain load;
- `and` / `or` / `xor` are bitwise: each 32-bit word is updated on its own, no carry.

Split and native updates of one address do not combine into a linearisable history, nor do
two different split kinds (a split add and a split xor need not commute word by word), so a
program holds at most one split kind and no native 64-bit op beside it. Everything else —
an old value that is used, signed max/min (`atomic_ulong` compares unsigned), exchange,
compare-and-swap — refuses, naming what Metal lacks.
"""

from __future__ import annotations

from msltrans.lower.emitter import Emitter
from msltrans.lower.templates import macro_text, static_text

SPLIT_KINDS = ("add", "and", "or", "xor")
NATIVE_KINDS = {"umax": "max", "umin": "min"}


def helper(kind: str) -> tuple[str, str]:
    """(function name, MSL text) of the helper for `kind` (add/and/or/xor/umax/umin): add's
    carry from the low word to the high one is templates/atomic_add64.metal, the others are
    templates/atomics.metal.j2's bitwise64 / native64."""
    if kind == "add":
        return "msl_atomic_add64", static_text("atomic_add64")
    if kind in SPLIT_KINDS:
        return f"msl_atomic_{kind}64", macro_text("atomics.bitwise64", op=kind)
    op = NATIVE_KINDS[kind]
    return f"msl_atomic_u{op}64", macro_text("atomics.native64", op=op)


def _check_mix(em: Emitter, kind: str) -> None:
    """At most one split kind per program, and no native 64-bit op beside it."""
    present = {k for k in (*SPLIT_KINDS, *NATIVE_KINDS) if helper(k)[1] in em.prelude}
    kinds = present | {kind}
    split = kinds & set(SPLIT_KINDS)
    if len(split) > 1 or (split and kinds - split):
        em.fail(f"64-bit atomics of different kinds in one kernel ({', '.join(sorted(kinds))}): "
                "msltrans makes 64-bit add/and/or/xor from two 32-bit atomics, whose "
                "half-done state another kind of 64-bit atomic on the same address could "
                "observe",
                "use one kind of 64-bit atomic per kernel, or 32-bit data")


def rmw64(em: Emitter, kind: str, used: bool) -> str:
    """The MSL statement (void; {P}, {V} placeholders) of a 64-bit `tt.atomic_rmw`."""
    if kind in ("max", "min"):
        em.fail(f"64-bit atomic signed {kind}: Metal's only 64-bit atomics, atomic_ulong "
                "max/min (MSL 6.15.4.6), compare unsigned",
                f"tl.atomic_{kind} on a uint64 pointer is supported (its old value unused), "
                "or use 32-bit data")
    if kind == "exch":
        em.fail("64-bit atomic exchange: Metal has no 64-bit exchange (MSL 6.15.4.3 covers "
                "atomic_int, atomic_uint, atomic_bool, atomic_float)", "use 32-bit data")
    if kind not in SPLIT_KINDS and kind not in NATIVE_KINDS:
        em.fail(f"64-bit atomic `{kind}`", "use 32-bit data")
    if used:
        why = ("atomic_ulong max/min return void (MSL 6.15.4.6)" if kind in NATIVE_KINDS else
               "Metal has no 64-bit fetch-and-modify (MSL 6.15.4.5 covers atomic_int and "
               "atomic_uint)")
        em.fail(f"64-bit atomic `{kind}` whose old value is used: {why}",
                "leave the returned value unused (msltrans then lowers it exactly), or use "
                "32-bit data")
    _check_mix(em, kind)
    if kind in NATIVE_KINDS:  # atomic_ulong's version: msltrans/msl_version.py
        em.require_msl("atomic_ulong", f"unsigned 64-bit tl.atomic_{NATIVE_KINDS[kind]}")
    name, text = helper(kind)
    em.prelude_once(text)
    return name + "({P}, {V});"


def cas64(em: Emitter) -> None:
    em.fail("64-bit atomic compare-and-swap: Metal has no 64-bit compare-exchange (MSL "
            "6.15.4.4 covers atomic_int, atomic_uint, atomic_bool, atomic_float)",
            "use 32-bit data")
