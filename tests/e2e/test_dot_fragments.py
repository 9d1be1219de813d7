"""tt.dot results kept in simdgroup fragments (msltrans/lower/dot/fragments.py,
fragment_mma.py, fragment_loop.py).

- The fragment layout is Apple's lane ownership, checked element by element against the
  formula SPEED.md documents (MLX's BaseMMAFrag::get_coord; the simulator's matrix.h).
- Which encodings the kernel lays out as fragments, and the code an attention step gets:
  both dots on the fragment path, P·V's A and the accumulator in registers, Q staged once
  before the KV loop, 2 barriers per step.
- Values: a dot chain without reductions gives the same bits on the fragment path and the
  staged path as the in-order fp32 fma chain (tests/support/fma.py); attention is within
  its float64 bound on both paths (the row sums' combine order follows the layout, so the
  paths differ in the last bits there); the race check passes on the pinned, barrier-elided
  attention code.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from benchmarks.codegen_stats import k_step_text
from msltrans.ir import read_module
from msltrans.layout import decode_layout
from msltrans.lower import lower_module
from msltrans.lower.dot.choose import force_path
from msltrans.lower.dot.fragments import fragment_encoding, fragment_layout
from msltrans.options import MetalOptions
from msltrans.toolchain import to_ttgir
from tests.e2e.dot_support import dot_stats, same_bits
from tests.e2e.fragment_kernels import attention_kernel, dot_chain_kernel
from tests.support.fma import fma_chain_matmul
from tests.support.run_kernel import compile_kernel, dispatch, divisible_by_16, signature_of

LOG2E = 1.4426950408889634


@pytest.mark.parametrize(("m", "n", "warps"), [(8, 8, 1), (32, 64, 4), (64, 32, 4),
                                                (64, 64, 8), (128, 16, 2)])
def test_fragment_layout_is_apples_lane_ownership(m: int, n: int, warps: int) -> None:
    ll = fragment_layout(m, n, warps)
    assert decode_layout(fragment_encoding(m, n, warps), (m, n)) == ll
    tm, tn = m // (8 * warps), n // 8
    seen = set()
    for w in range(warps):
        for lane in range(32):
            q = lane // 4
            row, col0 = (q & 4) + (lane // 2) % 4, (q & 2) * 2 + (lane % 2) * 2
            for r in range(ll.num_regs):
                e, tile = r & 1, r >> 1
                i, j = tile // tn, tile % tn
                want = (w * 8 * tm + 8 * i + row, 8 * j + col0 + e)
                assert ll.coord(r, lane, w) == want
                seen.add(want)
    assert len(seen) == m * n  # every element once: no replicas


def test_a_row_vector_lives_in_the_rows_four_lanes() -> None:
    enc = fragment_encoding(64, 32, 4)
    rows = decode_layout(f"#ttg.slice<{{dim = 1, parent = {enc}}}>", (64,))
    # lane bits 0 and 3 pick the column inside a tile: replicated for a row vector
    assert [b == (0,) for b in rows.lane] == [True, False, False, True, False]


def _attention_inputs(n: int, head: int, heads: int, dtype: type, seed: int
                      ) -> tuple[np.ndarray, ...]:
    rng = np.random.default_rng(seed)
    q, k, v = (rng.standard_normal((heads, n, head)).astype(dtype) for _ in range(3))
    return q, k, v


def _attention_ref(q: np.ndarray, k: np.ndarray, v: np.ndarray, causal: bool) -> np.ndarray:
    q, k, v = (x.astype(np.float64) for x in (q, k, v))
    s = q @ k.transpose(0, 2, 1) / math.sqrt(q.shape[-1])
    if causal:
        n = q.shape[1]
        s = np.where(np.triu(np.ones((n, n), bool), 1), -np.inf, s)
    p = np.exp(s - s.max(-1, keepdims=True))
    return (p / p.sum(-1, keepdims=True)) @ v


def _compile(fn: object, args: tuple, warps: int, fragments: bool, **constexprs: object):
    """compile_kernel, with the dot_fragments option (off: the paths chosen without it)."""
    sig = signature_of(fn, args, constexprs)
    div = divisible_by_16(fn, args, constexprs)
    return lower_module(read_module(to_ttgir(fn, sig, constexprs, warps, divisible_by_16=div)),
                        dot_fragments=fragments)


def _run_attention(q: np.ndarray, k: np.ndarray, v: np.ndarray, bm: int, bn: int,
                   warps: int, causal: bool, fragments: bool = True):
    heads, n, head = q.shape
    o = np.full_like(q, np.nan)
    args = (q, k, v, o, n, LOG2E / math.sqrt(head))
    program = _compile(attention_kernel, args, warps, fragments, HEAD=head, BM=bm, BN=bn,
                       CAUSAL=causal)
    dispatch(program, (-(-n // bm), heads), args)
    return program, o


@pytest.mark.parametrize("causal", [False, True])
def test_attention_step_structure(causal: bool) -> None:
    q, k, v = _attention_inputs(64, 64, 1, np.float16, 0)
    o = np.zeros_like(q)
    args = (q, k, v, o, 64, 0.18)
    program = compile_kernel(attention_kernel, args, 4, HEAD=64, BM=64, BN=32, CAUSAL=causal)
    qk, pv = dot_stats(program)
    assert (qk["path"], pv["path"]) == ("fragment", "fragment")
    assert qk["hoisted"] == "sa" and qk["c"] == "zero" and qk["b"] == "staged_t"
    assert (pv["a"], pv["c"], pv["d"]) == ("regs", "regs", "regs")
    assert qk["pad"] == pv["pad"] == "yes"
    step = k_step_text(program.source)
    assert step.count("threadgroup_barrier(") == 2
    assert "msl_scratch" not in step and "simdgroup_store" not in step
    # Q's copies are written before the loop, once
    before = program.source[:program.source.index(step)]
    assert "hoisted tiles written" in before


@pytest.mark.parametrize(("n", "head", "bm", "bn", "warps", "causal", "dtype"), [
    (100, 64, 64, 32, 4, False, np.float16),
    (70, 64, 64, 32, 4, True, np.float16),
    (64, 32, 32, 32, 4, False, np.float32),
    (64, 128, 64, 32, 4, False, np.float16),  # tiles too big to pin apart: one shared region
    (96, 64, 64, 64, 8, True, np.float16),
])
def test_attention_matches_float64_on_both_paths(n: int, head: int, bm: int, bn: int,
                                                 warps: int, causal: bool,
                                                 dtype: type) -> None:
    q, k, v = _attention_inputs(n, head, 2, dtype, 1)
    ref = _attention_ref(q, k, v, causal)
    # P is rounded to the input type before P·V (relative u per term: u·max|V| after
    # normalising) and O to the output type (u·max|O|); fp32 exp2 and sums add ~1e-6.
    u = 2.0 ** -11 if dtype == np.float16 else 2.0 ** -24
    bound = u * (np.abs(v).max() + np.abs(ref).max()) + 2e-6
    program, o = _run_attention(q, k, v, bm, bn, warps, causal)
    assert [s["path"] for s in dot_stats(program)] == ["fragment", "fragment"]
    staged, o_staged = _run_attention(q, k, v, bm, bn, warps, causal, fragments=False)
    assert "fragment" not in {s["path"] for s in dot_stats(staged)}
    for out in (o, o_staged):
        assert np.abs(out.astype(np.float64) - ref).max() <= bound
    assert np.abs(o.astype(np.float64) - o_staged.astype(np.float64)).max() <= bound
    if head == 128:
        step = k_step_text(program.source)
        assert step.count("threadgroup_barrier(") == 4  # K and V share one region


def test_attention_has_no_race_on_the_fragment_path() -> None:
    from msltrans.sim import check_races, compile_shader

    q, k, v = _attention_inputs(96, 64, 1, np.float16, 2)
    o = np.zeros_like(q)
    args = (q, k, v, o, 96, LOG2E / 8.0)
    program = compile_kernel(attention_kernel, args, 4, HEAD=64, BM=64, BN=32, CAUSAL=True)
    assert dot_stats(program)[0]["tiles_at"] == "pinned"
    kernel = getattr(compile_shader(program.source), program.kernel_name)
    t = program.threads_per_group
    check_races(kernel, *program.engine_args(args), threads=(2 * t, 1, 1),
                group_size=(t, 1, 1), arg_casts=program.arg_casts,
                buffer_alignment=program.sim_alignment)


@pytest.mark.parametrize("dtype", [np.float16, np.float32])
def test_dot_chain_bits_on_every_path(dtype: type) -> None:
    m, n, kdim, p = 32, 32, 16, 16
    rng = np.random.default_rng(3)
    a = rng.standard_normal((m, kdim)).astype(dtype)
    b = rng.standard_normal((kdim, n)).astype(dtype)
    c = rng.standard_normal((n, p)).astype(dtype)
    bias = rng.standard_normal(n).astype(np.float32)
    d0 = rng.standard_normal((m, p)).astype(np.float32)
    s_ref = fma_chain_matmul(a.astype(np.float32), b.astype(np.float32))
    t_ref = (s_ref * np.float32(0.5) + bias[None, :]).astype(dtype)  # exact halving
    o_ref = fma_chain_matmul(t_ref.astype(np.float32), c.astype(np.float32), d0)
    for path, want in (("auto", "fragment"), ("simdgroup", "simdgroup")):
        s, o = np.full((m, n), np.nan, np.float32), np.full((m, p), np.nan, np.float32)
        args = (a, b, c, bias, d0, s, o)
        with force_path(path):
            program = compile_kernel(dot_chain_kernel, args, 4, M=m, N=n, K=kdim, P=p)
        stats = dot_stats(program)
        assert [x["path"] for x in stats] == [want, want]
        if want == "fragment":
            assert (stats[1]["a"], stats[1]["c"]) == ("regs", "regs")
        dispatch(program, (1,), args)
        assert same_bits(s, s_ref) and same_bits(o, o_ref), path


def test_dot_fragments_option(monkeypatch: pytest.MonkeyPatch) -> None:
    assert MetalOptions().dot_fragments is True
    monkeypatch.setenv("MSLTRANS_DOT_FRAGMENTS", "0")
    assert MetalOptions().dot_fragments is False
    assert "dot_fragments-False" in MetalOptions().hash() or \
        MetalOptions().hash() != MetalOptions(dot_fragments=True).hash()
    monkeypatch.delenv("MSLTRANS_DOT_FRAGMENTS")
    sig = {"q_ptr": "*fp16", "k_ptr": "*fp16", "v_ptr": "*fp16", "o_ptr": "*fp16",
           "n_ctx": "i32", "scale": "fp32"}
    module = read_module(to_ttgir(attention_kernel, sig, dict(HEAD=32, BM=32, BN=32,
                                                              CAUSAL=False), 4))
    on, off = lower_module(module), lower_module(module, dot_fragments=False)
    assert {s["path"] for s in dot_stats(on)} == {"fragment"}
    assert "fragment" not in {s["path"] for s in dot_stats(off)}
