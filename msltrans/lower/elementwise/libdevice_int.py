"""CUDA's integer intrinsics in `tl.extra.libdevice` (`__nv_popc`, `__nv_mulhi`, `__nv_sad`,
`__nv_byte_perm`, ...): exact, with the semantics libdevice gives them.

The facts come from libdevice itself (Triton's bundled `libdevice.10.bc`, disassembled with
`llvm-dis`) and CUDA's Math API ("Integer Intrinsics"):

- popc / clz / ffs count bits and return int32 whatever the width; clz(0) is the width,
  ffs(0) is 0; brev keeps the operand's width.
- mulhi / umulhi / mul64hi / umul64hi: the high half of the double-width product, signed or
  unsigned (`llvm.nvvm.mulhi.{i,ui,ll,ull}`).
- mul24 / umul24: the low 24 bits of each operand (sign-extended from bit 23 for mul24,
  zero-extended for umul24), multiplied; the low 32 bits of the product. libdevice multiplies
  with `mul nsw`, which leaves an overflowing signed product undefined in LLVM; msltrans
  gives the wrapped low word, what PTX's `mul.lo.s32` computes.
- sad / usad: |x - y| + z modulo 2^32, x and y compared signed / unsigned (`llvm.nvvm.sad`).
- hadd / uhadd: (x + y) >> 1 without overflow, (x & y) + ((x ^ y) >> 1); rhadd / urhadd:
  (x + y + 1) >> 1, (x | y) - ((x ^ y) >> 1); arithmetic shift for the signed forms.
- abs / llabs: x < 0 ? -x : x with wrapping negation (abs(INT_MIN) is INT_MIN).
- byte_perm(x, y, s): byte i of the result is byte (s >> 4i) & 7 of the 8 bytes y:x (x the
  low word); libdevice masks s with 0x7777 before PTX's `prmt`, so no sign replication.

Triton's IR is signless: a uint32 tensor is an i32 value, and only the symbol says whether an
operation is signed (`__nv_mulhi`) or unsigned (`__nv_umulhi`).
"""

from __future__ import annotations

from msltrans.ir.model import Op
from msltrans.lower.emitter import Emitter
from msltrans.lower.support import need_libdevice

_I, _L = "int", "long"
# symbol → (operand MSL types, MSL expression of the operands {a}, {b}, {c}); `msl_*`
# functions are in templates/libdevice_integer.metal.
INT_FNS: dict[str, tuple[tuple[str, ...], str]] = {
    "__nv_popc": ((_I,), "int(popcount(uint({a})))"),
    "__nv_popcll": ((_L,), "int(popcount(ulong({a})))"),
    "__nv_clz": ((_I,), "int(clz(uint({a})))"),
    "__nv_clzll": ((_L,), "int(clz(ulong({a})))"),
    "__nv_brev": ((_I,), "int(reverse_bits(uint({a})))"),
    "__nv_brevll": ((_L,), "long(reverse_bits(ulong({a})))"),
    "__nv_ffs": ((_I,), "({a} == 0 ? 0 : int(ctz(uint({a}))) + 1)"),
    "__nv_ffsll": ((_L,), "({a} == 0 ? 0 : int(ctz(ulong({a}))) + 1)"),
    "__nv_mulhi": ((_I, _I), "mulhi({a}, {b})"),
    "__nv_umulhi": ((_I, _I), "int(mulhi(uint({a}), uint({b})))"),
    "__nv_mul64hi": ((_L, _L), "mulhi({a}, {b})"),
    "__nv_umul64hi": ((_L, _L), "long(mulhi(ulong({a}), ulong({b})))"),
    "__nv_mul24": ((_I, _I), "msl_mul24({a}, {b})"),
    "__nv_umul24": ((_I, _I), "msl_umul24({a}, {b})"),
    "__nv_sad": ((_I, _I, _I), "msl_sad({a}, {b}, {c})"),
    "__nv_usad": ((_I, _I, _I), "msl_usad({a}, {b}, {c})"),
    "__nv_hadd": ((_I, _I), "msl_hadd({a}, {b})"),
    "__nv_uhadd": ((_I, _I), "msl_uhadd({a}, {b})"),
    "__nv_rhadd": ((_I, _I), "msl_rhadd({a}, {b})"),
    "__nv_urhadd": ((_I, _I), "msl_urhadd({a}, {b})"),
    "__nv_abs": ((_I,), "({a} < 0 ? int(0u - uint({a})) : {a})"),
    "__nv_llabs": ((_L,), "({a} < 0 ? long(0ul - ulong({a})) : {a})"),
    "__nv_byte_perm": ((_I, _I, _I), "msl_byte_perm({a}, {b}, {c})"),
}


def lower_int(em: Emitter, op: Op, symbol: str) -> None:
    """Lower the integer intrinsic `symbol` (a key of INT_FNS) elementwise."""
    want, expr = INT_FNS[symbol]
    got = tuple(em.ctype(v) for v in op.operands)
    if got != want:
        em.fail(f"{symbol} on {', '.join(got)}",
                f"{symbol} takes ({', '.join(want)}) here")
    if "msl_" in expr:
        need_libdevice(em, "integer")
    em.elementwise(op, lambda *args: expr.format(**dict(zip("abc", args, strict=False))))
