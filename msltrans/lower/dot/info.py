"""What a tt.dot is: its operands, shapes and types, checked once (every path uses it),
and the dot macros (templates/dot.metal.j2)."""


from __future__ import annotations

import re
from dataclasses import dataclass

from msltrans.ir.model import Op, Value
from msltrans.ir.types import ScalarType, TensorType
from msltrans.lower.elementwise.ops_fp8 import FP8_SHORT, need_fp8_support
from msltrans.lower.emitter import Emitter
from msltrans.lower.msl_types import FP8_TYPES

_PRECISION_RE = re.compile(r"inputPrecision\s*=\s*(\w+)")
# (input element, accumulator element) pairs Triton's tl.dot produces.
_ALLOWED = {("f32", "f32"), ("f16", "f32"), ("f16", "f16"), ("bf16", "f32"), ("f64", "f64"),
            ("i8", "i32")}
BYTES = {"float": 4, "half": 2, "bfloat": 2, "char": 1, "int": 4}
@dataclass(frozen=True)
class DotInfo:
    """What every path needs to know about one tt.dot."""

    a: Value
    b: Value
    c: Value
    out: Value
    batch: int
    m: int
    n: int
    k: int
    in_t: str  # MSL element type of A and B
    acc_t: str  # MSL type the chain runs in ("float" or "int")
    out_t: str  # MSL element type of C and D
    is_int: bool
    # fp8 operands (bytes) are widened to half, exactly, where they are read or staged:
    # the MSL function applied to each raw element ("" = none).
    a_conv: str = ""
    b_conv: str = ""

    @staticmethod
    def shape(v: Value) -> tuple[int, ...]:
        assert isinstance(v.type, TensorType)
        return v.type.shape


def render(em: Emitter, macro: str, **kw: object) -> None:
    """A dot.metal.j2 macro into the body (`em.render("dot.<macro>", ...)`)."""
    em.render(f"dot.{macro}", **kw)


def _element(em: Emitter, v: Value) -> str:
    if not isinstance(v.type, TensorType) or not isinstance(v.type.element, ScalarType):
        em.fail(f"tt.dot operand {v.name or v.id} is not a tensor of numbers")
    return v.type.element.name


def check(em: Emitter, op: Op) -> DotInfo:
    m = _PRECISION_RE.search(op.text)
    precision = m.group(1).lower() if m else "ieee"
    if precision != "ieee":
        em.fail(f"tt.dot with input_precision={precision!r}: Apple has no tf32",
                "pass input_precision='ieee'")
    if len(op.operands) != 3:
        em.fail(f"tt.dot with {len(op.operands)} operands (expected A, B, C)")
    a, b, c = op.operands
    out = op.results[0]
    ea, eb, ec, eo = (_element(em, v) for v in (a, b, c, out))
    convs = ["", ""]
    if ea.startswith("f8") or eb.startswith("f8"):
        if not (ea in FP8_TYPES and eb in FP8_TYPES) or ec != eo or eo not in ("f32", "f16"):
            em.fail(f"tt.dot {ea} x {eb} + {ec} -> {eo} is not a supported fp8 combination",
                    "fp8 x fp8 (float8e4nv / float8e5, mixed allowed) -> fp32 or fp16")
        need_fp8_support(em)
        convs = [f"msl_{FP8_SHORT[e]}_to_half" for e in (ea, eb)]
        ea = eb = "f16"  # every fp8 value is exact in half: the fp16 dot follows
    if ea != eb or ec != eo or (ea, eo) not in _ALLOWED:
        em.fail(f"tt.dot {ea} x {eb} + {ec} -> {eo} is not a supported combination",
                "fp32/fp16/bf16 -> fp32, fp16 -> fp16, int8 -> int32")
    # max_num_imprecise_acc only changes fp8 dots on NVIDIA sm_90 (how often the tensor-core
    # accumulator is promoted); here every fp8 dot accumulates in fp32, so it has no effect.
    sa, sb, so = DotInfo.shape(a), DotInfo.shape(b), DotInfo.shape(out)
    if not (len(sa) == len(sb) == len(so) and len(sa) in (2, 3)):
        em.fail(f"tt.dot of shapes {sa} x {sb} -> {so}")
    if sa[-1] != sb[-2] or so[-2:] != (sa[-2], sb[-1]) or not sa[:-2] == sb[:-2] == so[:-2]:
        em.fail(f"tt.dot shapes {sa} x {sb} -> {so} do not match")
    if c.type != out.type:
        em.fail("tt.dot accumulator and result differ in type or layout",
                "Triton gives C and D the same layout; report the kernel")
    is_int = ea == "i8"
    in_t, out_t = ("half" if convs[0] else em.ctype(a)), em.ctype(out)
    return DotInfo(a, b, c, out, sa[0] if len(sa) == 3 else 1, sa[-2], sb[-1], sa[-1],
                   in_t, "int" if is_int else "float", out_t, is_int, convs[0], convs[1])




def align16(n: int) -> int:
    return (n + 15) // 16 * 16


def dot_records(source: str) -> list[dict[str, str]]:
    """The `// msltrans-dot: key=value ...` line of each tt.dot in an emitted kernel (which
    path, tile and staging the lowering chose), for tests and the codegen statistics."""
    out = []
    for line in source.splitlines():
        if "// msltrans-dot:" in line:
            out.append(dict(kv.split("=", 1) for kv in line.split(":", 1)[1].split()))
    return out
