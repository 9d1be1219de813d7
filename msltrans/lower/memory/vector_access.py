"""Vectorised global loads and stores: one access of 4, 8 or 16 bytes per run of registers.

A tensor of pointers gets one vector access per *run*: `width` consecutive registers that
(1) the layout puts on consecutive coordinates of one dim (its first register bases are 1, 2,
4, ... along that dim) and (2) the axis analysis proves hold consecutive, `width * element`-
aligned addresses, with (3) the mask, when there is one, constant over the run. Then one
mask test and one `uintN` access replace `width` scalar ones, and the elements are the
access's words reinterpreted (`as_type`), bit for bit what the scalar accesses would give.
`other` fills a masked-off run element by element, as before. A mask that is a bound along
the run (`offs < n`: run_bounds.py) gets one whole-run test instead: runs wholly in bounds
take the vector access, the run the bound cuts goes element by element.

The claims are re-checked at run time by the simulator (`msl_assume_run` /
`msl_assume_uniform`: no-ops on Metal, checks in msltrans's simulator), so a wrong fact
fails a test instead of reading the wrong memory.
"""

from __future__ import annotations

from dataclasses import dataclass

from msltrans.ir.model import Value
from msltrans.ir.types import PointerType
from msltrans.lower import msl_types
from msltrans.lower.emitter import Emitter
from msltrans.lower.layout_table import run_dim
from msltrans.lower.memory import run_bounds
from msltrans.lower.memory.pointer_roots import kernel_argument_ids, roots

# Element types a run may carry, with their size in bytes. (bool is loaded through a char
# pointer and converted per element; pointers-to-pointers stay scalar.)
ELEMENT_BYTES = {"char": 1, "uchar": 1, "short": 2, "ushort": 2, "half": 2, "bfloat": 2,
                 "int": 4, "uint": 4, "float": 4, "long": 8, "ulong": 8}
MAX_BYTES = 16  # Apple GPUs, like NVIDIA's, access at most 16 bytes per instruction
_WORD = {2: "ushort", 4: "uint", 8: "uint2", 16: "uint4"}
_LANES = "xyzw"
# (element, count) -> the MSL vector type that packs sub-word elements into one word.
_SUBWORD = {("char", 2): "char2", ("char", 4): "char4", ("uchar", 2): "uchar2",
            ("uchar", 4): "uchar4", ("short", 2): "short2", ("ushort", 2): "ushort2",
            ("half", 2): "half2", ("bfloat", 2): "bfloat2"}


@dataclass(frozen=True)
class VectorPlan:
    width: int  # elements per access
    elem: str  # element MSL type
    regs: int  # registers of the value (a multiple of width)
    # "" when the mask is the same over every run; else its shape along the run
    # (run_bounds.py): the run is accessed whole only where its mask is true throughout
    bound: str = ""

    @property
    def nbytes(self) -> int:
        return self.width * ELEMENT_BYTES[self.elem]

    @property
    def word(self) -> str:
        return _WORD[self.nbytes]


def pointee(em: Emitter, ptr: Value) -> str:
    """The MSL element type `ptr` points to (from its type: a pointer held as an offset has
    the MSL type `int`)."""
    return msl_types.ctype(ptr.type, em.where()).split()[-1].rstrip("*")


def plan(em: Emitter, ptr: Value, mask: Value | None) -> VectorPlan | None:
    """The widest provably correct run for accesses through the tensor of pointers `ptr`."""
    axis = em.axis
    if axis is None or not em.is_tensor(ptr):
        return None
    elem = pointee(em, ptr)
    eb = ELEMENT_BYTES.get(elem)
    if eb is None:
        return None
    ll = em.layout(ptr).ll
    dim, k = run_dim(ll.reg)
    width = 1 << k
    info = axis.info(ptr)
    width = min(width, info.contiguity[dim], MAX_BYTES // eb)
    # The run's first address must be aligned to the whole access.
    while width > 1 and info.divisibility[dim] % (width * eb):
        width //= 2
    # Runs must start at a multiple of `width` along dim: no other basis may move the low
    # coordinate bits that the run's registers enumerate.
    others = ll.reg[k:] + ll.lane + ll.warp
    while width > 1 and any(b[dim] % width for b in others):
        width //= 2
    bound = ""
    if mask is not None and em.is_tensor(mask) and width > 1:
        shape = run_bounds.mask_shape(em, mask, dim, width)
        if shape in ("prefix", "suffix", "interval"):
            bound = shape  # a bound cuts some runs: test each run whole (run_bounds.py)
        elif shape != "const":
            width = min(width, axis.info(mask).constancy[dim])
    if width < 2 or width * eb < 2:
        return None
    return VectorPlan(width, elem, ll.num_regs, bound)


def _piece(p: VectorPlan, i: int) -> str:
    """Word `i` of the access variable `msl_v` (4-byte words; one 2-byte word for 2 bytes)."""
    words = max(1, p.nbytes // 4)
    return "msl_v" if words == 1 else f"msl_v.{_LANES[i]}"


def unpack(p: VectorPlan, out: str, reg: str) -> list[str]:
    """Statements setting out[reg + i] from the loaded words, i < width."""
    eb = ELEMENT_BYTES[p.elem]
    lines = []
    for i in range(p.width):
        dst = f"{out}[{reg} + {i}u]"
        if eb == 4:
            src = f"as_type<{p.elem}>({_piece(p, i)})"
        elif eb == 8:
            src = f"as_type<{p.elem}>(uint2({_piece(p, 2 * i)}, {_piece(p, 2 * i + 1)}))"
        else:
            per = (4 if p.nbytes >= 4 else p.nbytes) // eb
            src = f"as_type<{_SUBWORD[p.elem, per]}>({_piece(p, i // per)}).{_LANES[i % per]}"
        lines.append(f"{dst} = {src};")
    return lines


def pack(p: VectorPlan, value: str, reg: str, conv: str = "") -> str:
    """The word expression holding value[reg .. reg + width - 1] (each element passed
    through the MSL function `conv` first, when given)."""
    eb = ELEMENT_BYTES[p.elem]
    elems = [f"{conv}({value}[{reg} + {i}u])" if conv else f"{value}[{reg} + {i}u]"
             for i in range(p.width)]
    if eb == 4:
        pieces = [f"as_type<uint>({e})" for e in elems]
    elif eb == 8:
        pieces = [f"as_type<uint2>({e})" for e in elems]
    else:
        per = (4 if p.nbytes >= 4 else p.nbytes) // eb
        word = "uint" if p.nbytes >= 4 else "ushort"
        pieces = [f"as_type<{word}>({_SUBWORD[p.elem, per]}({', '.join(elems[j:j + per])}))"
                  for j in range(0, p.width, per)]
    return pieces[0] if len(pieces) == 1 else f"{p.word}({', '.join(pieces)})"


def require_alignment(em: Emitter, ptr: Value, nbytes: int) -> None:
    """Record that accesses through `ptr` assume its buffer(s) `nbytes`-aligned where the
    launcher's specialisation said so, for engines that place buffers themselves (the
    simulator must keep a host tensor's alignment: MslProgram.buffer_alignment)."""
    module = em.module
    if module is None:
        return
    fn = module.function()
    args = kernel_argument_ids(em)
    found = roots(em, ptr, args)
    need = em.buffer_alignment
    # Pointers bind buffer 0, 1, ... in argument order (lower/kernel.py); scalars do not.
    pointers = [arg for arg in fn.args if isinstance(arg.value.type, PointerType)]
    for buffer, arg in enumerate(pointers):
        if found is None or arg.value.id in found:
            need[buffer] = max(need.get(buffer, 1), min(nbytes, arg.divisibility or 1))


def element_bits(elem: str, value: object) -> int | None:
    """The bit pattern of one `elem` holding the constant `value` (None if not exact)."""
    import struct

    import numpy as np

    try:
        if elem == "float":
            return struct.unpack("<I", struct.pack("<f", float(value)))[0]  # type: ignore[arg-type]
        if elem == "half":
            h = np.float16(value)
            return int(h.view(np.uint16)) if float(h) == float(value) or h != h else None  # type: ignore[arg-type]
        if elem == "bfloat":
            bits = struct.unpack("<I", struct.pack("<f", float(value)))[0]  # type: ignore[arg-type]
            return bits >> 16 if bits & 0xFFFF == 0 else None
        if elem in ELEMENT_BYTES and isinstance(value, int | bool):
            return int(value) & ((1 << (8 * ELEMENT_BYTES[elem])) - 1)
    except (OverflowError, ValueError, TypeError):
        return None
    return None


def fill_word(p: VectorPlan, bits: int) -> str:
    """A word literal whose every element is `bits` (what a masked-off run reads as)."""
    eb = ELEMENT_BYTES[p.elem]
    if eb == 8:
        lo, hi = bits & 0xFFFFFFFF, bits >> 32
        return f"uint4({lo:#x}u, {hi:#x}u, {lo:#x}u, {hi:#x}u)"
    piece = p.nbytes if p.nbytes < 4 else 4
    word = 0
    for i in range(piece // eb):
        word |= bits << (8 * eb * i)
    lit = f"{word:#x}u"
    words = max(1, p.nbytes // 4)
    if p.nbytes == 2:
        return f"ushort({lit})"
    return lit if words == 1 else f"{p.word}({', '.join([lit] * words)})"
