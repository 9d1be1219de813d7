"""Kernel arguments → Metal bindings: pointers get one `[[buffer(i)]]` each, in argument
order; every scalar goes into ONE `constant` struct bound after them.

Metal's buffer argument table has 31 slots, `[[buffer(0)]]` … `[[buffer(30)]]` (MSL
specification §5.2.1, "Locating Buffer, Texture, and Sampler Arguments"; the Metal feature
set tables give 31 buffer entries per stage). A buffer per scalar ran out at 31 arguments; one
struct also means one `setBytes` per launch instead of one per scalar.

The struct's layout is decided here, in Python, and nowhere else: fields are ordered by
decreasing alignment (stable in argument order), so no field needs padding before it and the
offsets are the running sum of the sizes, under any C++ layout rules. Sizes and alignments
are those of MSL §2.5 ("Alignment of Data Types", Table 2.2): bool/char 1, short/half/bfloat
2, int/float 4, long 8. The struct ends with padding to its largest alignment, so
`sizeof` is the byte count the launcher sends; a `static_assert` in the MSL holds the compiler
to it. The launcher (msltrans/abi/scalar_struct.py) writes each value at its offset.
"""

from __future__ import annotations

from dataclasses import dataclass

ARGS_NAME = "msl_args"

# MSL storage type → (size, alignment) per MSL §2.5 Table 2.2.
_SIZES = {"bool": 1, "char": 1, "uchar": 1, "short": 2, "ushort": 2, "half": 2, "bfloat": 2,
          "int": 4, "uint": 4, "float": 4, "long": 8, "ulong": 8}


@dataclass(frozen=True)
class ScalarField:
    name: str        # MSL field (and local variable) name
    msl_type: str
    offset: int
    size: int


@dataclass(frozen=True)
class ArgsStruct:
    type_name: str
    fields: tuple[ScalarField, ...]
    size: int

    def declaration(self) -> str:
        lines = [f"struct {self.type_name} {{  // scalar arguments, packed by the launcher"]
        for f in self.fields:
            lines.append(f"    {f.msl_type} {f.name};  // byte {f.offset}")
        lines.append("};")
        lines.append(f"static_assert(sizeof({self.type_name}) == {self.size}, "
                     f"\"msltrans packs {self.size} bytes of scalar arguments\");")
        return "\n".join(lines)

    def locals(self) -> list[str]:
        """The kernel body names each scalar as before: one local per field."""
        return [f"const {f.msl_type} {f.name} = {ARGS_NAME}.{f.name};" for f in self.fields]


def scalar_size(msl_type: str) -> int:
    return _SIZES[msl_type]


def layout_struct(type_name: str, scalars: list[tuple[str, str]]) -> ArgsStruct:
    """`scalars`: (name, MSL type) in argument order."""
    order = sorted(range(len(scalars)), key=lambda i: -_SIZES[scalars[i][1]])
    fields, offset = [], 0
    for i in order:
        name, msl = scalars[i]
        size = _SIZES[msl]
        fields.append(ScalarField(name, msl, offset, size))
        offset += size
    align = max((f.size for f in fields), default=1)
    total = (offset + align - 1) // align * align
    by_name = {f.name: f for f in fields}
    # Fields keep the layout order; callers look a field up by name.
    return ArgsStruct(type_name, tuple(by_name[scalars[i][0]] for i in order), total)
