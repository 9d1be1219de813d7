"""Global-memory atomics (tt.atomic_rmw, tt.atomic_cas, tt.atomic_poll) and tt.histogram.

What is emitted and why it is sound is written up in docs/atomics.md. In short:
- Metal's device atomics are relaxed; Triton's `sem` becomes `atomic_thread_fence`s around
  the relaxed RMWs a thread performs for one op (release: before, acquire: after, acq_rel:
  both; hoisted out of the element loop) at the scope Triton asked for (cta → threadgroup,
  gpu → device). C++ fence-atomic synchronisation makes that as strong as an acq_rel RMW per
  element. `sys` scope has no Metal equivalent and refuses.
- A tensor element is updated once: only the owning (register, lane, warp) of a replicated
  layout performs it, and only where the mask is true. The old value is broadcast to the
  replicas through threadgroup scratch when the result is used. Masked-off results are 0.
- A scalar atomic runs in thread 0 only and its old value is broadcast, so the scalar stays
  uniform (it may steer an scf.while, e.g. a spin lock).
- i32/u32 ops and f32 add/exchange are native; f16/bf16 add and 16-bit cas go through a
  32-bit CAS loop on the containing word; compare-and-swap is made strong from Metal's weak
  one. fp32 `tl.atomic_max/min` reach the IR already split by Triton's front end into
  signed-max/unsigned-min on the bits, so they are integer ops here. 64-bit RMWs whose old
  value is unused are lowered by atomic64.py (add/and/or/xor from two 32-bit atomics,
  unsigned max/min native); the rest of 64-bit, and 8-bit, refuse.
- tt.atomic_poll spins on relaxed atomic loads (16-bit: of the containing 32-bit word) until
  each owned element equals the expected value, then the acquire fence; a timeout of
  constant 0 loads once. Metal has no global timer, so every other timeout refuses.
"""

from __future__ import annotations

from msltrans.ir.model import Op, Value
from msltrans.ir.types import PointerType, ScalarType
from msltrans.lower import msl_types
from msltrans.lower.atomics import atomic64
from msltrans.lower.emitter import LANE, REG, TID, WARP, Emitter
from msltrans.lower.registry import lowers
from msltrans.lower.values import zero_literal

_SCOPES = {"cta": "thread_scope_threadgroup", "gpu": "thread_scope_device"}
_DEVICE_FLAGS = "mem_flags::mem_device | mem_flags::mem_threadgroup"
_SEMS = ("relaxed", "acquire", "release", "acq_rel")
_INT_OPS = {"add": "add", "and": "and", "or": "or", "xor": "xor", "max": "max", "min": "min"}
_UINT_OPS = {"umax": "max", "umin": "min"}


def _keywords(em: Emitter, op: Op, count: int) -> list[str]:
    """The leading keywords of the custom syntax (`add, acq_rel, gpu, %ptr, ...`)."""
    body = op.text.split(op.name, 1)[-1]
    words = [w.strip() for w in body.split(",")][:count]
    if len(words) != count or any(w.startswith("%") for w in words):
        em.fail(f"could not read the atomic's keywords from `{op.text}`", "report the kernel")
    return words


def _fences(em: Emitter, sem: str, scope: str) -> tuple[str, str]:
    if sem not in _SEMS:
        em.fail(f"memory semantics `{sem}`", f"use one of {', '.join(_SEMS)}")
    if scope not in _SCOPES:
        em.fail(f"atomic scope `{scope}`: Metal has no system-scope atomics",
                "use scope='gpu' (device) or scope='cta' (threadgroup)")
    fence = f"atomic_thread_fence(mem_flags::mem_device, memory_order_seq_cst, {_SCOPES[scope]});"
    if sem != "relaxed":
        em.require_msl("atomic_thread_fence", f"an atomic with sem={sem!r} (its fences)")
    pre = fence if sem in ("release", "acq_rel") else ""
    post = fence if sem in ("acquire", "acq_rel") else ""
    return pre, post


def _word16(em: Emitter, kind: str, ct: str) -> str:
    """The helper doing a 16-bit `kind` (fadd, exch, cas) on `ct` through a CAS loop on the
    containing 32-bit word (templates/atomics.metal.j2); its name."""
    name = f"msl_atomic16_{kind}_{ct}"
    em.render("atomics.word16", prelude=True, kind=kind, ct=ct, name=name)
    return name


def _elem_ctype(em: Emitter, ptr: Value) -> str:
    pt = msl_types.element(ptr.type)
    if not isinstance(pt, PointerType) or not isinstance(pt.pointee, ScalarType):
        em.fail("atomic through a non-pointer operand")
    name = pt.pointee.name
    if name == "f64":  # a downcast buffer would not make it a 64-bit atomic
        em.fail("64-bit atomic on f64", "Metal has no 64-bit float atomics; use fp32 data")
    if name in ("i1", "i8"):
        em.fail(f"atomic on {name}", "Metal atomics are 32-bit; use int32")
    return msl_types.scalar_ctype(pt.pointee, em.where())


def _rmw_expr(em: Emitter, kind: str, ct: str) -> str:
    """MSL expression of one relaxed RMW returning the old value ({P}, {V} placeholders)."""
    order = "memory_order_relaxed"
    if ct == "int" and kind in _INT_OPS:
        return f"atomic_fetch_{_INT_OPS[kind]}_explicit((device atomic_int*){{P}}, {{V}}, {order})"
    if ct == "int" and kind in _UINT_OPS:
        return (f"int(atomic_fetch_{_UINT_OPS[kind]}_explicit((device atomic_uint*){{P}}, "
                f"uint({{V}}), {order}))")
    if ct == "int" and kind == "exch":
        return f"atomic_exchange_explicit((device atomic_int*){{P}}, {{V}}, {order})"
    if ct == "float" and kind == "fadd":
        return f"atomic_fetch_add_explicit((device atomic_float*){{P}}, {{V}}, {order})"
    if ct == "float" and kind == "exch":
        return (f"as_type<float>(atomic_exchange_explicit((device atomic_uint*){{P}}, "
                f"as_type<uint>({{V}}), {order}))")
    if ct in ("half", "bfloat") and kind == "fadd":  # Triton allows no other 16-bit RMW
        return _word16(em, kind, ct) + "({P}, {V}, {V})"
    em.fail(f"atomic `{kind}` on {ct} elements",
            "supported: add/and/or/xor/max/min/umax/umin/exch on int32, fadd/exch on fp32, "
            "fadd on fp16/bf16")


def _cas_expr(em: Emitter, ct: str) -> str:
    """Strong compare-and-swap returning the old value ({P}, {C} compare, {V} new)."""
    if ct == "long":
        atomic64.cas64(em)
    if ct in ("int", "float"):
        # Metal only has a weak compare-exchange, which may fail spuriously; Triton's
        # atomic_cas is strong: msl_cas32 retries while the failure was spurious.
        em.include("atomic_cas32")
        if ct == "int":
            return "int(msl_cas32((device atomic_uint*){P}, uint({C}), uint({V})))"
        return ("as_type<float>(msl_cas32((device atomic_uint*){P}, as_type<uint>({C}), "
                "as_type<uint>({V})))")
    if ct in ("half", "bfloat", "short"):
        return _word16(em, "cas", ct) + "({P}, {V}, {C})"
    em.fail(f"atomic_cas on {ct} elements", "use 32-bit or 16-bit data")


def _fill(expr: str, **subs: str) -> str:
    return expr.format(**{key: f"({val})" for key, val in subs.items()})


def _guarded(em: Emitter, guard: str, pre: str, stmt: str, post: str) -> None:
    em.line(f"if ({guard}) {{")
    em.indent(1)
    for line in (pre, stmt, post):
        if line:
            em.line(line)
    em.indent(-1)
    em.line("}")


def _result_used(em: Emitter, op: Op) -> bool:
    uses = em.uses
    return not uses or uses.get(op.results[0].id, 0) > 0  # no use analysis: assume used


def _perform(em: Emitter, op: Op, expr: str, operands: dict[str, Value], mask: Value | None,
             sem: str, scope: str, void: bool = False) -> None:
    """Run `expr` once per element (owner + mask) or once for a scalar, then broadcast.
    `void`: `expr` is a statement whose result is unused (64-bit RMWs): the result stays 0."""
    pre, post = _fences(em, sem, scope)
    out = op.results[0]
    used = not void and _result_used(em, op)
    ct = em.ctype(out)
    ptr = operands["P"]
    if not em.is_tensor(ptr):
        name = em.fresh(out.name or "old")
        em.bind(out, name)
        em.line(f"{ct} {name} = {zero_literal(ct)};")
        guard = f"{TID} == 0u" + (f" && {em.name(mask)}" if mask is not None else "")
        call = _fill(expr, **{k: em.name(v) for k, v in operands.items()})
        if pre:  # release: every thread's earlier device writes precede thread 0's atomic
            em.line(f"threadgroup_barrier({_DEVICE_FLAGS});")
        _guarded(em, guard, pre, call if void else f"{name} = {call};", post)
        if used:
            _broadcast(em, name, ct, "1u", lambda r: "0")
        elif post:  # acquire: thread 0's acquire covers the whole program's later reads
            em.line(f"threadgroup_barrier({_DEVICE_FLAGS});")
        return
    L = em.layout(ptr)
    name = em.declare(out)
    owns = f"{L.owns_fn}({REG}, {LANE}, {WARP})"
    guard = owns + (f" && {em.at(mask)}" if mask else "")
    # The fences go around the element loop, in a thread that performs at least one of its
    # RMWs (docs/atomics.md, "Hoisted fences"): one release before all of this thread's
    # elements, one acquire after them, instead of a pair around each element.
    active = em.fresh("atomic_active") if (pre or post) and L.regs > 1 else ""
    if active:
        em.line(f"bool {active} = false;")
        em.line(f"msl_unroll for (uint {REG} = 0; {REG} < {L.regs}u; ++{REG}) "
                f"{active} = {active} || ({guard});")
        if pre:
            em.line(f"if ({active}) {pre}")
    em.line(f"msl_unroll for (uint {REG} = 0; {REG} < {L.regs}u; ++{REG}) {{")
    em.indent(1)
    em.line(f"{name}[{REG}] = {zero_literal(ct)};")
    call = _fill(expr, **{k: em.at(v) for k, v in operands.items()})
    _guarded(em, guard, "" if active else pre, call if void else f"{name}[{REG}] = {call};",
             "" if active else post)
    em.indent(-1)
    em.line("}")
    if active and post:
        em.line(f"if ({active}) {post}")
    if used and any(L.ll.free_masks()):
        numel = 1
        for d in L.ll.shape:
            numel *= d
        _broadcast(em, name, ct, f"{L.regs}u", lambda r: f"{L.flat_fn}({r}, {LANE}, {WARP})",
                   owner=owns, numel=numel)


def _broadcast(em: Emitter, name: str, ct: str, regs: str, slot, owner: str | None = None,  # noqa: ANN001
               numel: int = 1) -> None:
    """Owners publish their old values through scratch; every replica reads them back."""
    size = {"half": 2, "bfloat": 2, "short": 2}.get(ct, 4)
    scratch = em.need_scratch(numel * size)
    scalar = owner is None
    src = name if scalar else f"{name}[{REG}]"
    em.line("threadgroup_barrier(mem_flags::mem_threadgroup);  // earlier scratch readers done")
    em.line("{")
    em.indent(1)
    em.line(f"threadgroup {ct}* buf = (threadgroup {ct}*){scratch};")
    if scalar:
        em.line(f"if ({TID} == 0u) buf[0] = {src};")
    else:
        em.line(f"msl_unroll for (uint {REG} = 0; {REG} < {regs}; ++{REG}) {{")
        em.line(f"    if ({owner}) buf[{slot(REG)}] = {src};")
        em.line("}")
    # mem_device too: a scalar acquire by thread 0 must order every thread's later reads.
    em.line(f"threadgroup_barrier({_DEVICE_FLAGS});")
    if scalar:
        em.line(f"{name} = buf[0];")
    else:
        em.line(f"msl_unroll for (uint {REG} = 0; {REG} < {regs}; ++{REG}) "
                f"{src} = buf[{slot(REG)}];")
    em.indent(-1)
    em.line("}")


@lowers("tt.atomic_rmw")
def atomic_rmw(em: Emitter, op: Op) -> None:
    kind, sem, scope = _keywords(em, op, 3)
    ptr, val = op.operands[0], op.operands[1]
    mask = op.operands[2] if len(op.operands) > 2 else None
    ct = _elem_ctype(em, ptr)
    if ct == "long":
        stmt = atomic64.rmw64(em, kind, _result_used(em, op))
        _perform(em, op, stmt, {"P": ptr, "V": val}, mask, sem, scope, void=True)
        return
    expr = _rmw_expr(em, kind, ct)
    _perform(em, op, expr, {"P": ptr, "V": val}, mask, sem, scope)


@lowers("tt.atomic_cas")
def atomic_cas(em: Emitter, op: Op) -> None:
    sem, scope = _keywords(em, op, 2)
    ptr, cmp, val = op.operands[:3]
    ct = _elem_ctype(em, ptr)
    _perform(em, op, _cas_expr(em, ct), {"P": ptr, "C": cmp, "V": val}, None, sem, scope)


def _poll_load(em: Emitter, ptr: str, ct: str) -> tuple[str, str]:
    """(relaxed atomic load of *ptr as unsigned bits, the expected value's cast to them)."""
    if ct == "int":
        return (f"atomic_load_explicit((device atomic_uint*)({ptr}), memory_order_relaxed)",
                "uint")
    if ct == "short":
        em.include("atomic_load16")  # Metal has no 16-bit atomic load: the 32-bit word's half
        return f"msl_atomic_load16({ptr})", "as_type<ushort>"
    em.fail(f"atomic_poll on {ct} elements", "tl.atomic_poll takes 16- or 32-bit integers")


def _poll_timeout(em: Emitter, op: Op) -> bool:
    """True for `timeout_ns=0` (load once), False without a timeout; anything else refuses."""
    if len(op.operands) < 3:
        return False
    producer = em.producers.get(op.operands[2].id)
    if (producer is not None and producer.name == "arith.constant"
            and producer.attrs.get("value") == 0):
        return True
    em.fail("atomic_poll with a timeout other than a compile-time 0: Metal shaders have no "
            "global timer to measure nanoseconds with",
            "omit timeout_ns (wait until the value matches) or pass 0 as a tl.constexpr "
            "(load once; the result says whether it matched)")


@lowers("tt.atomic_poll")
def atomic_poll(em: Emitter, op: Op) -> None:
    # Every owned element is polled by its owner (scalar: by thread 0): spin on relaxed
    # atomic loads until the bits equal the expected value (timeout 0: load once), then the
    # acquire fence. A device+threadgroup barrier makes the program wait for all polls and
    # orders its later reads after them (docs/atomics.md).
    sem, scope = _keywords(em, op, 2)
    if sem not in ("acquire", "relaxed"):
        em.fail(f"atomic_poll with sem `{sem}`", "atomic_poll takes sem='acquire' or 'relaxed'")
    ptr, want = op.operands[0], op.operands[1]
    pt = msl_types.element(ptr.type)
    if isinstance(pt, PointerType) and isinstance(pt.pointee, ScalarType) and \
            pt.pointee.name in ("i64", "u64"):
        em.fail(f"64-bit atomic load (atomic_poll on {pt.pointee.name})",
                "Metal has no 64-bit atomic loads (atomic_ulong offers only min/max); "
                "poll a 32-bit flag")
    _, post = _fences(em, sem, scope)
    ct = _elem_ctype(em, ptr)
    once = _poll_timeout(em, op)
    out = op.results[0]
    used = not em.uses or em.uses.get(out.id, 0) > 0
    tensor = em.is_tensor(ptr)
    if tensor:
        L = em.layout(ptr)
        name = em.declare(out)
        guard = f"{L.owns_fn}({REG}, {LANE}, {WARP})"
        em.line(f"msl_unroll for (uint {REG} = 0; {REG} < {L.regs}u; ++{REG}) {{")
        em.indent(1)
        slot, p, v = f"{name}[{REG}]", em.at(ptr), em.at(want)
    else:
        name = em.fresh(out.name or "matched")
        em.bind(out, name)
        guard, slot, p, v = f"{TID} == 0u", name, em.name(ptr), em.name(want)
    load, cast = _poll_load(em, p, ct)
    # Without a timeout every poll ends matched: the result is true in every thread.
    em.line(f"{'bool ' if not tensor else ''}{slot} = {'false' if once else 'true'};")
    if once:
        body = f"{slot} = {load} == {cast}({v});"
    else:
        body = f"while ({load} != {cast}({v})) {{}}  // spin until it matches"
    _guarded(em, guard, "", body, post)
    if tensor:
        em.indent(-1)
        em.line("}")
    if once and used and (not tensor or any(L.ll.free_masks())):
        if tensor:
            numel = 1
            for d in L.ll.shape:
                numel *= d
            _broadcast(em, name, "bool", f"{L.regs}u",
                       lambda r: f"{L.flat_fn}({r}, {LANE}, {WARP})", owner=guard, numel=numel)
        else:
            _broadcast(em, name, "bool", "1u", lambda r: "0")
    else:
        em.line(f"threadgroup_barrier({_DEVICE_FLAGS});  // the program waits for every poll")


@lowers("tt.histogram")
def histogram(em: Emitter, op: Op) -> None:
    # NVIDIA's lowering bins on the low log2(P) bits, P = max(num_bins, 32) (a power of two):
    # bin = x & (P - 1), and values landing in the padding bins >= num_bins are dropped.
    # We reproduce exactly that (docs/atomics.md), counting each owned element once.
    src = op.operands[0]
    mask = op.operands[1] if len(op.operands) > 1 else None
    out = op.results[0]
    if not em.is_tensor(src) or em.ctype(src) != "int" or len(em.layout(src).ll.shape) != 1:
        em.fail("tt.histogram of a non-1-D or non-int32 tensor")
    bins = em.layout(out).ll.shape[0]
    if bins & (bins - 1):
        em.fail(f"histogram with {bins} bins (not a power of two)")
    src_l, out_l = em.layout(src), em.layout(out)
    name = em.declare(out)
    guard = f"{src_l.owns_fn}({REG}, {LANE}, {WARP})" + (f" && {em.at(mask)}" if mask else "")
    threads = (1 << len(src_l.ll.lane)) << len(src_l.ll.warp)  # num_warps x 32
    em.render(
        "atomics.histogram", scratch=em.need_scratch(4 * bins), bins=bins, pmask=max(bins, 32) - 1,
        threads=threads, src_regs=src_l.regs, guard=guard, src=em.at(src), reg=REG,
        out=name, out_regs=out_l.regs, coord=f"{out_l.coord_fn(0)}({REG}, {LANE}, {WARP})",
        tid=TID)

