"""tt.reduce combines in the documented order (docs/reductions.md), bit for bit.

sum/max/min are commutative, so they cannot see which operand of a combine is the left one
or how the combines are bracketed. These tests reduce with combines that are neither
commutative nor associative but exactly defined:

- fp32 `a * 0.5 + b` (the product is exact, so each combine rounds once, fused or not),
- int32 `a * 3 + b` (wrapping),
- the 2-operand tuple of both (one tt.reduce with two operands),

over 2-D tiles on axis 0 and 1 and 1-D tiles, num_warps 1, 4 and 16, with tiles chosen so
the reduced axis lives in registers (contiguous `sizePerThread` and register repeats above
the lanes), across lanes and across simdgroups. The reference is a numpy model of the
documented order, driven by the linear layout of the tt.reduce operand as Triton's passes
chose it (each axis bit is a register, lane or warp bit); every case pins which kinds hold
which axis bits, so a Triton upgrade that changes the layouts shows up here rather than
silently dropping a stage from the test.
"""

from __future__ import annotations

import re
from collections.abc import Callable

import numpy as np
import pytest
import triton
import triton.language as tl

from msltrans.ir import read_module
from msltrans.layout import decode_layout
from msltrans.lower import lower_module
from msltrans.toolchain import to_ttgir
from tests.support.run_kernel import dispatch, signature_of


@triton.jit
def half_add(a, b):
    return a * 0.5 + b


@triton.jit
def triple_add(a, b):
    return a * 3 + b


@triton.jit
def pair_combine(a0, a1, b0, b1):
    return a0 * 0.5 + b0, a1 * 3 + b1


@triton.jit
def order_2d(xf_ptr, xi_ptr, rf_ptr, ri_ptr, pf_ptr, pi_ptr, M: tl.constexpr, N: tl.constexpr,
             AXIS: tl.constexpr):
    rm = tl.arange(0, M)
    rn = tl.arange(0, N)
    offs = rm[:, None] * N + rn[None, :]
    xf = tl.load(xf_ptr + offs)
    xi = tl.load(xi_ptr + offs)
    rf = tl.reduce(xf, AXIS, half_add)
    ri = tl.reduce(xi, AXIS, triple_add)
    pf, pi = tl.reduce((xf, xi), AXIS, pair_combine)
    if AXIS == 0:
        o = rn
    else:
        o = rm
    tl.store(rf_ptr + o, rf)
    tl.store(ri_ptr + o, ri)
    tl.store(pf_ptr + o, pf)
    tl.store(pi_ptr + o, pi)


@triton.jit
def order_1d(xf_ptr, xi_ptr, rf_ptr, ri_ptr, pf_ptr, pi_ptr, N: tl.constexpr):
    offs = tl.arange(0, N)
    xf = tl.load(xf_ptr + offs)
    xi = tl.load(xi_ptr + offs)
    tl.store(rf_ptr, tl.reduce(xf, 0, half_add))
    tl.store(ri_ptr, tl.reduce(xi, 0, triple_add))
    pf, pi = tl.reduce((xf, xi), 0, pair_combine)
    tl.store(pf_ptr, pf)
    tl.store(pi_ptr, pi)


# ---- the model (docs/reductions.md, "The combine order") ---------------------------------

Fn = Callable[[np.ndarray, np.ndarray], np.ndarray]


def f32_half_add(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return a * np.float32(0.5) + b


def i32_triple_add(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    v = a.astype(np.int64) * 3 + b.astype(np.int64)
    return ((v + 2**31) % 2**32 - 2**31).astype(np.int32)


def _spread(value: int, bits: list[int]) -> int:
    return sum(1 << b for i, b in enumerate(bits) if value >> i & 1)


def model_reduce(x: np.ndarray, kinds: str, f: Fn, swap: str = "") -> np.ndarray:
    """Reduce the last axis of `x` in the documented order. `kinds[j]` says what holds bit j
    of the axis coordinate: 'r' register, 'l' lane, 'w' warp (simdgroup). `swap` names stages
    ('r', 'l', 'w') whose combines take their operands the other way round: a wrong order
    the test data must be able to tell apart from the right one."""
    assert x.shape[-1] == 1 << len(kinds)
    bits = {k: [j for j, c in enumerate(kinds) if c == k] for k in "rlw"}

    def comb(stage: str, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        return f(b, a) if stage in swap else f(a, b)

    lanes, warps = 1 << len(bits["l"]), 1 << len(bits["w"])
    part = {}
    for w in range(warps):
        for lane in range(lanes):
            base = _spread(lane, bits["l"]) | _spread(w, bits["w"])
            # 1. in the thread: the thread's registers along the axis, increasing position
            #    (they may be strided: register repeats above the lanes).
            acc = x[..., base]
            for r in range(1, 1 << len(bits["r"])):
                acc = comb("r", acc, x[..., base | _spread(r, bits["r"])])
            part[lane, w] = acc
    # 2. across lanes: one butterfly step per lane bit, in increasing significance along the
    #    axis; the partner whose bit is clear (lower positions) is the left operand.
    for i in range(len(bits["l"])):
        for w in range(warps):
            for lane in range(lanes):
                if not lane >> i & 1:
                    hi = lane | 1 << i
                    part[lane, w] = part[hi, w] = comb("l", part[lane, w], part[hi, w])
    # 3. across simdgroups: a left fold over the warps' partials, increasing position.
    acc = part[0, 0]
    for w in range(1, warps):
        acc = comb("w", acc, part[0, w])
    return acc


# ---- the cases ---------------------------------------------------------------------------

_ALIAS = re.compile(r"^(#[\w.]+) = (#ttg\..*)$", re.M)
_REDUCE = re.compile(r'"tt\.reduce"\(.*?\}\) : \(tensor<[^,>]*, (#[^>]*?)>', re.S)


def reduce_layouts(ttgir: str) -> list[str]:
    """The encoding (aliases resolved) of the first operand of every tt.reduce, in order."""
    aliases = dict(_ALIAS.findall(ttgir))
    return [aliases.get(e, e).strip() for e in (m.group(1) for m in _REDUCE.finditer(ttgir))]


def axis_kinds(encoding: str, shape: tuple[int, ...], axis: int) -> str:
    """For each bit of the axis coordinate (LSB first): 'r', 'l' or 'w'."""
    ll = decode_layout(encoding, shape)
    held: dict[int, str] = {}
    for kind, bases in (("r", ll.reg), ("l", ll.lane), ("w", ll.warp)):
        for basis in bases:
            if basis[axis]:
                assert not any(c for d, c in enumerate(basis) if d != axis), basis
                pos = basis[axis].bit_length() - 1
                assert basis[axis] == 1 << pos and pos not in held, basis
                held[pos] = kind
    assert sorted(held) == list(range(shape[axis].bit_length() - 1)), (held, shape)
    return "".join(held[p] for p in sorted(held))


# (shape, axis, num_warps, 16-byte-divisible pointers, the axis bits LSB first). Divisible
# pointers give contiguous registers at the bottom of the contiguous dim (sizePerThread > 1);
# registers above the lanes/warps are repeats of the layout over a larger tile.
CASES = [
    ((32, 32), 0, 1, False, "rrrrr"),  # all in the thread
    ((32, 32), 0, 1, True, "llrrr"),  # lanes, then strided registers
    ((32, 32), 1, 1, True, "rrlll"),  # contiguous registers, then lanes
    ((16, 256), 1, 1, True, "rrlllllr"),  # registers below and above the lanes
    ((64, 64), 0, 4, True, "lwwrrr"),
    ((8, 64), 0, 4, True, "lww"),
    ((16, 256), 1, 4, True, "rrlllllw"),
    ((128, 16), 1, 4, True, "rrll"),
    ((64, 64), 0, 16, True, "lwwwwr"),
    ((8, 64), 0, 16, True, "www"),  # simdgroups only
    ((16, 256), 0, 16, True, "wwwr"),
    ((2, 512), 1, 16, True, "rlllllwww"),
    ((4, 128), 1, 16, True, "lllllww"),
    ((8,), 0, 1, True, "lll"),  # lanes 8..31 broadcast
    ((64,), 0, 1, True, "rlllll"),
    ((2048,), 0, 1, False, "lllllrrrrrr"),
    ((2048,), 0, 1, True, "rrlllllrrrr"),
    ((64,), 0, 4, False, "lllllw"),
    ((512,), 0, 4, True, "rrlllllww"),
    ((2048,), 0, 16, False, "lllllwwwwrr"),
    ((2048,), 0, 16, True, "rrlllllwwww"),
]


def _case_id(case: tuple) -> str:
    shape, axis, nw, div, kinds = case
    return f"{'x'.join(map(str, shape))}-ax{axis}-w{nw}-{'div' if div else 'any'}-{kinds}"


def _inputs(shape: tuple[int, ...], seed: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    xf = rng.uniform(-1.0, 1.0, shape).astype(np.float32)
    xi = rng.integers(-(2**31), 2**31, shape, dtype=np.int64).astype(np.int32)
    return xf, xi


@pytest.mark.parametrize(("shape", "axis", "num_warps", "div16", "kinds"), CASES,
                         ids=[_case_id(c) for c in CASES])
def test_reduce_combine_order(shape: tuple[int, ...], axis: int, num_warps: int, div16: bool,
                              kinds: str) -> None:
    xf, xi = _inputs(shape, seed=len(kinds) * 31 + num_warps)
    n_out = 1 if len(shape) == 1 else shape[1 - axis]
    outs = (np.zeros(n_out, np.float32), np.zeros(n_out, np.int32),
            np.zeros(n_out, np.float32), np.zeros(n_out, np.int32))
    args = (xf, xi, *outs)
    if len(shape) == 1:
        fn, cx = order_1d, {"N": shape[0]}
    else:
        fn, cx = order_2d, {"M": shape[0], "N": shape[1], "AXIS": axis}
    ptrs = ("xf_ptr", "xi_ptr", "rf_ptr", "ri_ptr", "pf_ptr", "pi_ptr") if div16 else ()
    mod = to_ttgir(fn, signature_of(fn, args, cx), cx, num_warps, divisible_by_16=ptrs)
    layouts = reduce_layouts(str(mod))
    assert len(layouts) == 3 and len(set(layouts)) == 1, layouts
    got_kinds = axis_kinds(layouts[0], shape, axis)
    assert got_kinds == kinds, (f"Triton's layout changed: {layouts[0]} holds the axis as "
                                f"{got_kinds!r}, the case was written for {kinds!r}")
    dispatch(lower_module(read_module(mod)), (1,), args)

    # The reduced axis last: rows of the model are the outputs.
    mf = np.moveaxis(xf, axis, -1).reshape(n_out, -1)
    mi = np.moveaxis(xi, axis, -1).reshape(n_out, -1)
    want_f = model_reduce(mf, kinds, f32_half_add)
    want_i = model_reduce(mi, kinds, i32_triple_add)
    # bit-exact: compare the bit patterns
    np.testing.assert_array_equal(outs[0].view(np.uint32), want_f.view(np.uint32),
                                  "fp32 a*0.5+b")
    np.testing.assert_array_equal(outs[1], want_i, "int32 a*3+b")
    np.testing.assert_array_equal(outs[2].view(np.uint32), want_f.view(np.uint32),
                                  "tuple combine, fp32 operand")
    np.testing.assert_array_equal(outs[3], want_i, "tuple combine, int32 operand")

    # The data can tell every stage's operand order apart (else this case pins nothing).
    for stage in sorted(set(kinds)):
        wrong_f = model_reduce(mf, kinds, f32_half_add, swap=stage)
        wrong_i = model_reduce(mi, kinds, i32_triple_add, swap=stage)
        assert (wrong_f != want_f).any() and (wrong_i != want_i).any(), stage


def test_model_on_a_small_example() -> None:
    """The model spelled out by hand for 8 positions held as (reg, lane, warp) bits."""
    x = np.arange(8, dtype=np.int32)[None, :] + 1  # x[p] = p + 1

    f = i32_triple_add

    def g(a: int, b: int) -> int:
        return a * 3 + b

    # bit 0 register, bit 1 lane, bit 2 warp: thread (l, w) holds p = 4w + 2l + {0, 1}.
    t = {(lane, w): g(4 * w + 2 * lane + 1, 4 * w + 2 * lane + 2)
         for lane in (0, 1) for w in (0, 1)}
    s = {w: g(t[0, w], t[1, w]) for w in (0, 1)}
    assert model_reduce(x, "rlw", f)[0] == g(s[0], s[1])
    # bit 0 lane, bits 1 and 2 registers: the thread folds p = l, l+2, l+4, l+6 first.
    t2 = {}
    for lane in (0, 1):
        acc = lane + 1
        for r in (1, 2, 3):
            acc = g(acc, lane + 2 * r + 1)
        t2[lane] = acc
    assert model_reduce(x, "lrr", f)[0] == g(t2[0], t2[1])
