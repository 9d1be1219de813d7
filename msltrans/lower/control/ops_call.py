"""tt.call of `@triton.jit(noinline=True)` helpers: one MSL function per callee.

Triton inlines every other helper before TTGIR, and refuses `noinline` helpers called with
tensor arguments, so parameters are scalars and pointers (passed by value). Results may be
tensors: every result is an out-parameter (`thread T&` for scalars, `thread T*` for register
arrays). The callee runs in the caller's threadgroup, so the program/thread ids and the shared
scratch are passed along. Recursion refuses (MSL has none).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from msltrans.ir.model import Function, Op
from msltrans.ir.text import symbol_ref
from msltrans.ir.types import PointerType, ScalarType
from msltrans.lower.control.cfg import emit_region
from msltrans.lower.control.ops_scf import assign, declare_var
from msltrans.lower.emitter import Emitter, sanitize
from msltrans.lower.registry import lowers

_CONTEXT = (("uint3", "msl_pid"), ("uint3", "msl_nprog"), ("uint", "msl_tid"),
            ("uint", "msl_lane"), ("uint", "msl_warp"))
# The kernel owns the scratch array and picks its element type; the callee takes it as a
# template parameter so that choice stays in one place (kernel.metal.j2).
_SCRATCH = ("threadgroup MslScratch*", "msl_scratch")


class _CalleeEmitter(Emitter):
    """Emits a helper body; `tt.return %v...` writes the out-parameters and returns."""

    outputs: list[str]

    def emit_op(self, op: Op) -> None:
        if op.name != "tt.return":
            super().emit_op(op)
            return
        outer, self.op = self.op, op
        try:
            if len(op.operands) != len(self.outputs):
                self.fail("tt.return arity differs from the function type")
            for name, v in zip(self.outputs, op.operands, strict=True):
                if self.is_tensor(v):
                    assign(self, name, v)
                else:
                    self.line(f"{name} = {self.name(v)};")
            self.line("return;")
        finally:
            self.op = outer


@dataclass
class _Calls:
    """Per kernel, shared by the kernel's emitter and every helper's (`_emit_function`)."""

    # callee symbol -> (its MSL function, whether it takes the scratch array)
    done: dict[str, tuple[str, bool]] = field(default_factory=dict)
    active: set[str] = field(default_factory=set)  # callees being emitted (recursion)
    msl_names: set[str] = field(default_factory=set)  # the MSL functions' names


def _callee(em: Emitter, op: Op) -> Function:
    module = em.module
    # An MLIR symbol, bare or quoted, read whole: Triton names each specialisation of a
    # helper by its constants (`f__i32__(2,)cconstexpr_3_` on 3.6, `"f_c-5"` on 3.7 on).
    sym = symbol_ref(op.text)
    callee = sym[0] if sym else None
    if module is None or callee is None:
        em.fail("tt.call without a resolvable callee", "report the kernel")
    for fn in module.functions:
        if fn.name == callee:
            return fn
    em.fail(f"callee @{callee} is not in the module")


def _msl_name(state: _Calls, symbol: str) -> str:
    """A distinct MSL identifier per callee symbol: two symbols that sanitize alike (say
    `f_c-5` and `f_c_5`) get different names."""
    taken = state.msl_names
    base = "tt_" + sanitize(symbol)
    name, k = base, 1
    while name in taken:
        name, k = f"{base}_{k}", k + 1
    taken.add(name)
    return name


def _emit_function(em: Emitter, op: Op, fn: Function) -> tuple[str, bool]:
    state = em.family(_Calls)
    if fn.name in state.done:
        return state.done[fn.name]
    if fn.name in state.active:
        em.fail(f"recursive call of @{fn.name}", "Metal has no recursion")
    state.active.add(fn.name)
    # Constant tables and nested callees go to the same program (prelude); the call state
    # is the kernel's. The helper is lowered for the kernel's MSL version, and the gated
    # features it uses are the kernel's (its version guard, kernel.py).
    sub = _CalleeEmitter(em.layouts, enable_fp_fusion=em.enable_fp_fusion, module=em.module,
                         prelude=em.prelude,
                         msl_version=em.msl_version, msl_features=em.msl_features,
                         families={_Calls: state}, op=op)
    params = []
    for arg in fn.args:
        if not isinstance(arg.value.type, ScalarType | PointerType):
            em.fail(f"helper @{fn.name} takes a {arg.value.type} argument",
                    "noinline helpers take scalars and pointers")
        name = sub.fresh(arg.name)
        sub.bind(arg.value, name)
        params.append(f"{sub.ctype(arg.value)} {name}")
    sub.outputs = []
    for k, r in enumerate(op.results):
        name = sub.fresh(f"ret{k}")
        ref = "*" if sub.is_tensor(r) else "&"
        params.append(f"thread {sub.ctype(r)}{ref} {name}")
        sub.outputs.append(name)
    for block in fn.body.blocks:
        sub.analyse(block)
    emit_region(sub, fn.body)
    uses_scratch = sub.scratch_bytes > 0
    em.scratch_bytes = max(em.scratch_bytes, sub.scratch_bytes)
    params += [f"{t} {n}" for t, n in _CONTEXT + ((_SCRATCH,) if uses_scratch else ())]
    msl_name = _msl_name(state, fn.name)
    head = f"inline void {msl_name}({', '.join(params)})"
    if uses_scratch:
        head = "template <typename MslScratch>\n" + head
    text = "\n".join([f"// @triton.jit(noinline=True) helper {fn.name} ({fn.loc.short()})",
                      head, "{", *sub.lines, "}"])
    em.prelude.append(text)
    state.active.discard(fn.name)
    state.done[fn.name] = (msl_name, uses_scratch)
    return msl_name, uses_scratch


@lowers("tt.call")
def call(em: Emitter, op: Op) -> None:
    fn = _callee(em, op)
    msl_name, uses_scratch = _emit_function(em, op, fn)
    args = [em.name(v) for v in op.operands]
    for k, r in enumerate(op.results):
        args.append(declare_var(em, r, r.name or f"call{k}"))
    args += [n for _, n in _CONTEXT]
    if uses_scratch:
        args.append(em.need_scratch(em.scratch_bytes))
    em.line(f"{msl_name}({', '.join(args)});")
    outs = args[len(op.operands):len(op.operands) + len(op.results)]
    for r, name in zip(op.results, outs, strict=True):
        em.bind(r, name)
