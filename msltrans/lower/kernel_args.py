"""Kernel arguments → Metal bindings: pointers get one `[[buffer(i)]]` each, in argument
order; every scalar goes into ONE `constant` struct bound after them; pointers past what
Metal's table holds travel in ONE argument buffer of GPU addresses (`PointerStruct`).

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

from msltrans.abi.limits import BUFFER_TABLE_SLOTS, GPU_ADDRESS_BYTES

ARGS_NAME = "msl_args"
SPILL_NAME = "msl_spill"

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


# ---- pointers past the table: one argument buffer ---------------------------------------------
#
# The table holds 31 buffers. A kernel whose pointers, scalar struct and debug buffer need more
# keeps its first pointers in their own slots and moves the LAST ones (argument order, so the
# choice depends on the signature alone) into a struct of device pointers bound at the slot
# after them: an argument buffer (MSL specification, "Argument Buffers": a buffer whose struct
# holds pointers to other buffers; Apple silicon GPUs are Metal 3, whose argument buffers are
# plain structs the host fills with each buffer's `gpuAddress`, no argument encoder). Every
# member is an 8-byte `device T*`, so the struct has no padding: member j is at byte 8 j and
# `sizeof` is 8 times the count (static_asserts in the MSL hold the compiler to it). The kernel
# copies each member into a local of the pointer's own name at entry, so the rest of the
# lowering reads the pointer as it reads any other.


def direct_pointers(pointers: int, scalars: bool, debug: bool) -> int:
    """How many of a kernel's `pointers` bind their own `[[buffer(i)]]`: all when they fit
    beside the scalar struct and the debug buffer, else the table less those and the argument
    buffer's own slot (the rest go into the argument buffer)."""
    others = int(scalars) + int(debug)
    if pointers + others <= BUFFER_TABLE_SLOTS:
        return pointers
    return BUFFER_TABLE_SLOTS - others - 1


@dataclass(frozen=True)
class PointerStruct:
    type_name: str
    fields: tuple[tuple[str, str], ...]  # (MSL name, MSL pointer type), in slot order

    @property
    def size(self) -> int:
        return GPU_ADDRESS_BYTES * len(self.fields)

    def declaration(self) -> str:
        lines = [f"struct {self.type_name} {{  // pointers past Metal's buffer table: GPU "
                 "addresses, set by the launcher"]
        for slot, (name, msl) in enumerate(self.fields):
            lines.append(f"    {msl} {name};  // byte {GPU_ADDRESS_BYTES * slot}")
        lines.append("};")
        lines.append(f"static_assert(sizeof({self.type_name}) == {self.size}, "
                     f"\"msltrans passes {len(self.fields)} {GPU_ADDRESS_BYTES}-byte GPU "
                     "addresses\");")
        lines.append(f"static_assert(alignof({self.type_name}) == {GPU_ADDRESS_BYTES}, "
                     f"\"GPU addresses are {GPU_ADDRESS_BYTES}-byte aligned\");")
        return "\n".join(lines)

    def locals(self) -> list[str]:
        """Each pointer read once, at entry, into a local of its own name."""
        return [f"{msl} {name} = {SPILL_NAME}.{name};" for name, msl in self.fields]
