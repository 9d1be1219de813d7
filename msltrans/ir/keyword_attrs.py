"""Integer attributes an op's custom syntax prints as keywords, read back from its text.

Triton 3.7 and later bind `operation.get_int_attr`; before that the bindings give no way to
read an integer attribute, so the walker reads them from the op's printed line instead: the
attribute dictionary (`{axis = 1 : i32}`, `<{axis = 0 : i32}>`, read by msltrans.ir.text) and,
for the attributes the custom syntax turns into keywords, these tables. Their numbers are the
attributes' enum values: MLIR's `arith::CmpIPredicate` / `arith::CmpFPredicate`, Triton's
`ProgramIDDim`, `RoundingMode`, `PropagateNan`, `RMWOp`, `MemSemantic` and `MemSyncScope`.
"""

from __future__ import annotations

import re
from typing import Any

CMPI_PREDICATES = {"eq": 0, "ne": 1, "slt": 2, "sle": 3, "sgt": 4, "sge": 5,
                   "ult": 6, "ule": 7, "ugt": 8, "uge": 9}
CMPF_PREDICATES = {"false": 0, "oeq": 1, "ogt": 2, "oge": 3, "olt": 4, "ole": 5, "one": 6,
                   "ord": 7, "ueq": 8, "ugt": 9, "uge": 10, "ult": 11, "ule": 12, "une": 13,
                   "uno": 14, "true": 15}
PROGRAM_AXES = {"x": 0, "y": 1, "z": 2}
ROUNDING_MODES = {"rtz": 0, "rtne": 1}
PROPAGATE_NAN = {"none": 0, "all": 0xFFFF}
RMW_OPS = {"and": 1, "or": 2, "xor": 3, "add": 4, "fadd": 5, "max": 6, "min": 7, "umax": 8,
           "umin": 9, "exch": 10}
MEM_SEMANTICS = {"relaxed": 1, "acquire": 2, "release": 3, "acq_rel": 4}
MEM_SCOPES = {"gpu": 1, "cta": 2, "sys": 3}

# op name -> the keywords right after it, in order: (attribute, table).
_LEADING: dict[str, tuple[tuple[str, dict[str, int]], ...]] = {
    "arith.cmpi": (("predicate", CMPI_PREDICATES),),
    "arith.cmpf": (("predicate", CMPF_PREDICATES),),
    "tt.get_program_id": (("axis", PROGRAM_AXES),),
    "tt.get_num_programs": (("axis", PROGRAM_AXES),),
    "tt.atomic_rmw": (("atomic_rmw_op", RMW_OPS), ("sem", MEM_SEMANTICS),
                      ("scope", MEM_SCOPES)),
    "tt.atomic_cas": (("sem", MEM_SEMANTICS), ("scope", MEM_SCOPES)),
}
# op name -> `name = keyword` clauses of its custom syntax.
_CLAUSES: dict[str, tuple[tuple[str, dict[str, int]], ...]] = {
    "tt.fp_to_fp": (("rounding", ROUNDING_MODES),),
    "tt.clampf": (("propagateNan", PROPAGATE_NAN),),
}


def keyword_int_attrs(name: str, line: str) -> dict[str, Any]:
    """The keyword-printed integer attributes of one op line (`%7 = arith.cmpi slt, ...`)."""
    out: dict[str, Any] = {}
    leading = _LEADING.get(name)
    if leading:
        at = line.find(name)
        rest = line[at + len(name):].split(",") if at >= 0 else []
        words = [(w.split() or [""])[0] for w in rest]
        for (attr, table), word in zip(leading, words, strict=False):
            if word in table:
                out[attr] = table[word]
    for attr, table in _CLAUSES.get(name, ()):
        m = re.search(rf"\b{attr} = (\w+)", line)
        if m and m.group(1) in table:
            out[attr] = table[m.group(1)]
    return out
