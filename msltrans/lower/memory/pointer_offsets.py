"""Pointers as 32-bit element offsets from their kernel argument (buffers under 2 GB).

Triton computes every address as a 64-bit pointer: `x_ptr + row * stride` is a pointer, and
`+ cols` gives one 64-bit pointer per element. A hand-written Metal kernel keeps the buffer
argument and one 32-bit offset per element instead (`x[row * stride + c]`): half the
registers, 32-bit instead of 64-bit integer arithmetic per element, and the base stays a
kernel argument the compiler can see. msltrans does the same where it is exact:

- The launcher specialises a pointer argument whose whole storage is under 2^31 bytes
  (`tt.pointer_range = 32`, the attribute and the test AMD's backend uses; MetalBackend in
  msltrans/backend/compiler.py). Then every element the kernel may legally reach from that
  argument lies less than 2^31 elements before or after it.
- Every pointer derived from such an argument is held as a 32-bit offset in elements
  (`int`), added modulo 2^32 along the chain of `tt.addptr`s. The true offset of an address
  that is dereferenced is in range, so its offset modulo 2^32 is the offset itself:
  `arg + offset` is the address Triton's 64-bit arithmetic gives. Addresses that are never
  dereferenced (masked-off lanes) may wrap; nothing reads them.
- That argument holds only while the pointers are used for nothing but addressing. So an
  argument is taken in this form only when every value derived from it flows through
  addptr (as its pointer), splat, broadcast, expand_dims, reshape, trans and layout
  conversions into the pointer operand of loads and stores. Any other use (a loop-carried
  pointer, a select, ptr_to_int, an atomic, a call, a stored pointer) keeps the argument and
  everything derived from it as 64-bit pointers. (Carrying offsets through scf.for slots as
  well was built and timed: the tutorial-03 matmul went from 1.02 to 1.00 of the hand GEMM
  at fp32 in the GPU proxy, so loop-carried pointers stay 64-bit; benchmarks/README.md.)

Row bases (`split_bases`). An access inside a loop whose address adds a loop-variant offset
to a loop-invariant base that differs between elements (`x + rows[:, None] * stride` plus
the step's columns) is emitted as `(x + base) + offset`, as Triton's own code keeps it: the
64-bit row pointers are computed once, outside the loop, and each step adds one offset. The
base's int is exactly Triton's 32-bit offset (one addptr of an i32 from the argument), so the
sum is Triton's address, and it is in range wherever it is dereferenced. (Measured through the
GPU proxy: folding such bases into the 32-bit offsets lets nvcc keep one load in flight
instead of two, 0.91 instead of 0.95 of Triton for the row sum; a base that is the same for
every element, a row pointer in a loop over columns, folds better: 0.98 instead of 0.93 for
layer norm fp16. benchmarks/README.md.)
"""

from __future__ import annotations

from msltrans.analysis.axis_info import AxisAnalysis
from msltrans.ir.model import Argument, Block, Function, Op, Value
from msltrans.ir.types import PointerType, ScalarType, TensorType

# Ops whose result is the pointer operand at this position moved or offset (same buffer).
FORWARD: dict[str, int] = {
    "tt.addptr": 0, "tt.splat": 0, "tt.broadcast": 0, "tt.expand_dims": 0, "tt.reshape": 0,
    "tt.trans": 0, "ttg.convert_layout": 0,
}
# Ops that only dereference the pointer operand at this position.
ACCESS: dict[str, int] = {"tt.load": 0, "tt.store": 0}
OFFSET_CTYPE = "int"


def offset_roots(fn: Function, users: dict[int, list[tuple[Op, int]]]) -> dict[int, Argument]:
    """value id -> the argument it is an offset into, for every value held as an offset
    (the arguments themselves included)."""
    held: dict[int, Argument] = {}
    for arg in fn.args:
        if not isinstance(arg.value.type, PointerType) or arg.pointer_range != 32:
            continue
        closure = _closure(arg.value.id, users)
        if closure is not None:
            held.update(dict.fromkeys(closure, arg))
    return held


def _closure(root: int, users: dict[int, list[tuple[Op, int]]]) -> set[int] | None:
    """Every value derived from `root` by FORWARD ops, or None if one is used otherwise."""
    seen, stack = {root}, [root]
    while stack:
        for op, position in users.get(stack.pop(), []):
            if ACCESS.get(op.name) == position:
                continue
            if FORWARD.get(op.name) != position:
                return None
            for result in op.results:
                if result.id not in seen:
                    seen.add(result.id)
                    stack.append(result.id)
    return seen


LOOPS = frozenset({"scf.for", "scf.while"})


def loop_nests(fn: Function) -> dict[int, tuple[int, ...]]:
    """value id -> the loops (op ids, outermost first) its definition sits in; ops are keyed
    by id(op) the same way."""
    where: dict[int, tuple[int, ...]] = {}

    def walk(block: Block, nest: tuple[int, ...]) -> None:
        for arg in block.args:
            where[arg.id] = nest
        for op in block.ops:
            where[id(op)] = nest
            for v in op.results:
                where[v.id] = nest
            inner = nest + (id(op),) if op.name in LOOPS else nest
            for region in op.regions:
                for b in region.blocks:
                    walk(b, inner)

    for block in fn.body.blocks:
        walk(block, ())
    return where


def split_bases(fn: Function, producers: dict[int, Op], users: dict[int, list[tuple[Op, int]]],
                held: dict[int, Argument], axis: AxisAnalysis) -> dict[int, tuple[Value, Value]]:
    """addptr result id -> (base, offset) for the addresses to emit as `(arg + base) + offset`
    (see the module docstring): every access through it sits in a loop the base is outside
    of and the offset inside of, the base differs between elements, and the base's chain from
    the argument holds exactly one addptr, of an i32."""
    nests = loop_nests(fn)
    out: dict[int, tuple[Value, Value]] = {}
    for vid in held:
        op = producers.get(vid)
        if op is None or op.name != "tt.addptr" or not isinstance(op.results[0].type, TensorType):
            continue
        base, offset = op.operands
        uses = users.get(vid, [])
        if not uses or not _one_i32_addptr(base, producers) or _uniform(base, axis):
            continue
        if all(ACCESS.get(u.name) == i and _hoistable(nests, id(u), base, offset)
               for u, i in uses):
            out[vid] = (base, offset)
    return out


def _hoistable(nests: dict[int, tuple[int, ...]], access: int, base: Value,
               offset: Value) -> bool:
    loops = nests.get(access, ())
    if not loops:
        return False
    inner = loops[-1]
    return inner not in nests.get(base.id, ()) and inner in nests.get(offset.id, ())


def _uniform(v: Value, axis: AxisAnalysis) -> bool:
    assert isinstance(v.type, TensorType)
    info = axis.info(v)
    return all(c >= n for c, n in zip(info.constancy, v.type.shape, strict=True))


def _one_i32_addptr(v: Value, producers: dict[int, Op]) -> bool:
    adds = 0
    while (op := producers.get(v.id)) is not None:
        if op.name == "tt.addptr":
            t = op.operands[1].type
            elem = t.element if isinstance(t, TensorType) else t
            if not (isinstance(elem, ScalarType) and elem.name == "i32"):
                return False
            adds += 1
        v = op.operands[0]
    return adds == 1
