"""Where the atomics lowering puts its fences (docs/atomics.md, "Memory semantics and scope").

Metal's device atomics are relaxed; Triton's `sem` becomes `atomic_thread_fence`s in the
thread that performs each element's relaxed RMW, inside the same owner/mask guard where a
thread holds one element, around its element loop where it holds several ("Hoisted
fences"):
release → fence before, acquire → fence after, acq_rel → both, relaxed → none, at
`thread_scope_device` for scope="gpu" and `thread_scope_threadgroup` for scope="cta";
scope="sys" refuses. Scalar atomics (thread 0) add a program-wide barrier before a release
and, when the result is not broadcast, after an acquire. The simulator cannot observe
reordering, so these properties are checked on the generated MSL.
"""

from __future__ import annotations

import re

import pytest
import triton
import triton.language as tl

from msltrans.errors import MetalNonRecoverableError
from tests.e2e.test_atomic_poll import FENCE, SCOPES
from tests.support.diff import compile_typed
from tests.support.run_kernel import check_msl_compiles

SEMS = ("relaxed", "acquire", "release", "acq_rel")
BARRIER = "threadgroup_barrier(mem_flags::mem_device | mem_flags::mem_threadgroup);"


@triton.jit
def tensor_add(p, v, out, n, SEM: tl.constexpr, SCOPE: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    m = offs < n
    old = tl.atomic_add(p + offs, tl.load(v + offs, mask=m), mask=m, sem=SEM, scope=SCOPE)
    tl.store(out + offs, old, mask=m)


@triton.jit
def tensor_cas(p, c, v, out, SEM: tl.constexpr, SCOPE: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    old = tl.atomic_cas(p + offs, tl.load(c + offs), tl.load(v + offs), sem=SEM, scope=SCOPE)
    tl.store(out + offs, old)


@triton.jit
def tensor_unused(p, v, n, MAX: tl.constexpr, SEM: tl.constexpr, SCOPE: tl.constexpr,
                  BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    m = offs < n
    if MAX:
        tl.atomic_max(p + offs, tl.load(v + offs, mask=m), mask=m, sem=SEM, scope=SCOPE)
    else:
        tl.atomic_add(p + offs, tl.load(v + offs, mask=m), mask=m, sem=SEM, scope=SCOPE)


@triton.jit
def scalar_add(p, out, SEM: tl.constexpr, SCOPE: tl.constexpr):
    tl.store(out, tl.atomic_add(p, 1, sem=SEM, scope=SCOPE))


@triton.jit
def scalar_add_unused(p, SEM: tl.constexpr, SCOPE: tl.constexpr):
    tl.atomic_add(p, 1, sem=SEM, scope=SCOPE)


@triton.jit
def scalar_cas(p, out, SEM: tl.constexpr, SCOPE: tl.constexpr):
    tl.store(out, tl.atomic_cas(p, 0, 1, sem=SEM, scope=SCOPE))


@triton.jit
def default_sem(p, out):
    tl.store(out, tl.atomic_add(p, 1))


# (kernel, signature, extra constexprs, the op, text of the atomic call, scalar?)
CASES = {
    "tensor_add_i32": (tensor_add, {"p": "*i32", "v": "*i32", "out": "*i32", "n": "i32"},
                       {"BLOCK": 64}, "tt.atomic_rmw", "= atomic_fetch_add_explicit(", False),
    "tensor_add_f32": (tensor_add, {"p": "*fp32", "v": "*fp32", "out": "*fp32", "n": "i32"},
                       {"BLOCK": 64}, "tt.atomic_rmw", "= atomic_fetch_add_explicit(", False),
    "tensor_add_f16": (tensor_add, {"p": "*fp16", "v": "*fp16", "out": "*fp16", "n": "i32"},
                       {"BLOCK": 64}, "tt.atomic_rmw", "= msl_atomic16_fadd_half(", False),
    "tensor_cas_i32": (tensor_cas, {"p": "*i32", "c": "*i32", "v": "*i32", "out": "*i32"},
                       {"BLOCK": 64}, "tt.atomic_cas", "msl_cas32(", False),
    "tensor_cas_f16": (tensor_cas, {"p": "*fp16", "c": "*fp16", "v": "*fp16", "out": "*fp16"},
                       {"BLOCK": 64}, "tt.atomic_cas", "= msl_atomic16_cas_half(", False),
    "scalar_add": (scalar_add, {"p": "*i32", "out": "*i32"}, {}, "tt.atomic_rmw",
                   "= atomic_fetch_add_explicit(", True),
    "scalar_add_unused": (scalar_add_unused, {"p": "*i32"}, {}, "tt.atomic_rmw",
                          "= atomic_fetch_add_explicit(", True),
    "scalar_cas": (scalar_cas, {"p": "*i32", "out": "*i32"}, {}, "tt.atomic_cas", "msl_cas32(",
                   True),
    # 64-bit, old value unused: the fences go around the whole two-word update
    "tensor_add_i64": (tensor_unused, {"p": "*i64", "v": "*i64", "n": "i32"},
                       {"BLOCK": 64, "MAX": False}, "tt.atomic_rmw", "msl_atomic_add64(", False),
    "tensor_umax_u64": (tensor_unused, {"p": "*u64", "v": "*u64", "n": "i32"},
                        {"BLOCK": 64, "MAX": True}, "tt.atomic_rmw", "msl_atomic_umax64(", False),
    "scalar_add_unused_i64": (scalar_add_unused, {"p": "*i64"}, {}, "tt.atomic_rmw",
                              "msl_atomic_add64(", True),
}


def _section(source: str, op: str) -> list[str]:
    """The kernel-body lines the lowering emitted for the single `op` (to the next op)."""
    lines = source.split("\n")
    starts = [i for i, line in enumerate(lines) if line.strip().startswith(f"// {op} ")]
    assert len(starts) == 1, f"expected one {op} in the MSL"
    end = next(i for i in range(starts[0] + 1, len(lines))
               if re.match(r"\s*// (tt|arith|scf|ttg)\.", lines[i]))
    return [line.strip() for line in lines[starts[0] + 1:end]]


def _guarded(section: list[str], call: str) -> tuple[int, list[str]]:
    """(index of the guard's `if`, the statements inside the guard around the atomic call)."""
    at = [i for i, line in enumerate(section) if call in line]
    assert len(at) == 1, f"expected one `{call}` in {section}"
    start = max(i for i in range(at[0]) if section[i].startswith("if (")
                and section[i].endswith("{"))
    end = next(i for i in range(at[0], len(section)) if section[i] == "}")
    return start, section[start + 1:end]


def _fences(sem: str) -> tuple[int, int]:
    return int(sem in ("release", "acq_rel")), int(sem in ("acquire", "acq_rel"))


@pytest.mark.parametrize("scope", ["gpu", "cta"])
@pytest.mark.parametrize("sem", SEMS)
@pytest.mark.parametrize("case", sorted(CASES))
def test_fences_around_the_atomic(case: str, sem: str, scope: str) -> None:
    fn, sig, cx, op, call, scalar = CASES[case]
    source = compile_typed(fn, sig, {"SEM": sem, "SCOPE": scope, **cx}).source
    fence = FENCE.format(SCOPES[scope]) + ";"
    pre, post = _fences(sem)
    section = _section(source, op)
    start, body = _guarded(section, call)
    guard = section[start]
    # Inside the guard that makes one thread perform each element's RMW: the fences, in
    # this thread, immediately before / after the relaxed RMW and nowhere else.
    assert body[:pre] == [fence] * pre and body[len(body) - post:] == [fence] * post, body
    assert len(body) == pre + 1 + post and call in body[pre], body
    assert source.count("atomic_thread_fence(") == pre + post  # no other fence, any scope
    other = FENCE.format(SCOPES["cta" if scope == "gpu" else "gpu"])
    assert other not in source
    if "atomic_fetch" in call:
        assert "memory_order_relaxed" in body[pre]  # the RMW itself stays relaxed
    if scalar:
        assert guard.startswith("if (msl_tid == 0u")  # thread 0 (&& the mask)
        # release: the whole program's earlier writes are ordered before thread 0's release
        assert (section[start - 1] == BARRIER) == bool(pre)
        if case.startswith("scalar_add_unused"):  # acquire, no broadcast: a barrier after
            rest = section[start + len(body) + 2:]
            assert rest == ([BARRIER] if post else []), rest
        else:  # the broadcast's barriers follow (mem_device: it orders later reads)
            assert BARRIER in section[start + len(body) + 2:]
    else:
        assert guard.startswith("if (L") and "_owns(" in guard
        assert BARRIER not in section[:start]
    if case in ("tensor_add_i32", "tensor_add_i64", "tensor_umax_u64"):  # type-check it
        check_msl_compiles(source)


HOISTED = {  # tensor cases whose threads hold several elements (BLOCK 512 on 4 warps: 4)
    name: CASES[name] for name in ("tensor_add_i32", "tensor_add_f16", "tensor_cas_i32",
                                   "tensor_add_i64")}


@pytest.mark.parametrize("scope", ["gpu", "cta"])
@pytest.mark.parametrize("sem", SEMS)
@pytest.mark.parametrize("case", sorted(HOISTED))
def test_fences_hoisted_around_the_element_loop(case: str, sem: str, scope: str) -> None:
    """Several elements a thread: one release fence before the element loop and one acquire
    fence after it, each only in a thread that performs at least one of the loop's RMWs
    (docs/atomics.md, "Hoisted fences"); the RMWs inside stay relaxed and unfenced."""
    fn, sig, cx, op, call, _ = HOISTED[case]
    source = compile_typed(fn, sig, {"SEM": sem, "SCOPE": scope, **cx, "BLOCK": 512}).source
    fence = FENCE.format(SCOPES[scope]) + ";"
    pre, post = _fences(sem)
    section = _section(source, op)
    start, body = _guarded(section, call)
    assert len(body) == 1 and call in body[0], body   # no fence per element
    assert source.count("atomic_thread_fence(") == pre + post
    loop = max(i for i in range(start) if section[i].startswith("msl_unroll for"))
    close = next(i for i in range(start + len(body) + 2, len(section)) if section[i] == "}")
    if not (pre or post):
        assert not any("atomic_active" in line for line in section)
        return
    active = re.match(r"bool (atomic_active_\d+) = false;", section[loop - 2 - pre])
    assert active, section[:loop]
    flag = active.group(1)
    # the flag: any element this thread owns and the mask keeps
    guard = section[start][len("if ("):-len(") {")]
    assert section[loop - 1 - pre].endswith(f"{flag} = {flag} || ({guard});")
    if pre:
        assert section[loop - 1] == f"if ({flag}) {fence}"
    after = section[close + 1] if close + 1 < len(section) else ""
    assert (after == f"if ({flag}) {fence}") == bool(post)
    if case == "tensor_add_i32":
        check_msl_compiles(source)


def test_default_is_acq_rel_at_gpu_scope() -> None:
    source = compile_typed(default_sem, {"p": "*i32", "out": "*i32"}, {}).source
    fence = FENCE.format("device") + ";"
    _, body = _guarded(_section(source, "tt.atomic_rmw"), "= atomic_fetch_add_explicit(")
    assert body[0] == fence and body[-1] == fence and len(body) == 3


@pytest.mark.parametrize("sem", SEMS)
@pytest.mark.parametrize("case", ["tensor_add_i32", "tensor_cas_i32", "scalar_cas"])
def test_sys_scope_refused(case: str, sem: str) -> None:
    fn, sig, cx, op, _, _ = CASES[case]
    match = (rf"{re.escape(op)}.*atomic scope `sys`: Metal has no system-scope atomics.*"
             r"use scope='gpu' \(device\) or scope='cta' \(threadgroup\)")
    with pytest.raises(MetalNonRecoverableError, match=match):
        compile_typed(fn, sig, {"SEM": sem, "SCOPE": "sys", **cx})
