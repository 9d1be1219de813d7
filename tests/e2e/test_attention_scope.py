"""Attention forward, the scope of issue 14, on the simulator against float64 attention.

Kernels:
- `plain_attention` (here): one `@triton.jit` with the online softmax written inline (no
  helpers, no descriptors), K loaded row-major and transposed with `tl.trans`, the rescaled
  accumulator passed as the dot's C operand; GQA (`kv_heads` < `heads`: query head h reads
  K/V head h // (heads // kv_heads) of its batch), an optional sliding window (WINDOW > 0:
  causal keeps q − WINDOW < key ≤ q, non-causal |q − key| < WINDOW), ragged sequence lengths
  (masked loads, -inf scores) and a guard for rows that have seen no key yet;
- `flash_attn_fwd` (msltrans/workloads/attention.py): tutorial 06's shape (device
  tensor descriptors, causal as two sweeps), fp16, lengths a multiple of BLOCK_M.
The hand-written reference of the GPU proxy (benchmarks/proxy/reference/attention.metal) is
checked here too, so the benchmark's yardstick cannot rot.

Reference: float64 torch on the same (already rounded) inputs, softmax(Q Kᵀ · sm_scale) V with
the kernel's mask. Error bound, derived per output element (u = 2⁻²⁴, fp32; h_t the unit
roundoff of the input/output type t: fp16 2⁻¹¹, bf16 2⁻⁸, fp32 2⁻²⁴; the softmax weights w
sum to 1, so every term that perturbs weights is bounded by a multiple of max|V|):
- scores: a D-term fp32 dot (exact products for fp16/bf16, fma-rounded for fp32) and the
  scale: |δs| ≤ E_s = (D + 2)·u·scale·max Σ_d |q_d·k_d| (base-2 units, from the data). A
  perturbation δ of every score moves each weight by a factor in [2^(−2E_s), 2^(2E_s)],
  the output by ≤ (2^(2E_s) − 1)·max|V| ≈ 2·ln2·E_s·max|V|;
- exp2: p and alpha each to ≤ 8u relative (4 ulp; the simulator's exp2f is within 1 ulp).
  p is used by both l and P·V (its error is a weight perturbation: ≤ 2·8u·max|V|); alpha
  scales acc and l alike, so its error cancels in acc / l up to the products' rounding;
- P rounded to the input type before P·V (l keeps fp32 p): ≤ h_in·max|V|; for fp16 also
  the subnormal floor: N·2⁻²⁵·max|V| (p < 2⁻¹⁴ is rounded absolutely, l ≥ 1);
- fp32 accumulation of N products into acc, of N terms into l, one rescale rounding per
  key block, the final division: ≤ (2N + N/BN + 4)·u·max|V|;
- the output rounded to its type: h_out·|O|.
Asserted: max|O − O₆₄| ≤ h_out·max|O₆₄| + (2·ln2·E_s + h_in + 16u + (2N + N/BN + 4)·u
+ [fp16] N·2⁻²⁵)·max|V|, plus 1.01× slack for the bound's own rounding. For fp16 with unit
normal inputs that is ~4e-3 at N = 100, while a wrong mask, a dropped rescale or a wrong
key block moves outputs by 1e-1 and more (the tests also check that causal, the window and
GQA change the output).

Head dim 256: the tiles may not fit Apple's 32 KB of threadgroup memory. Then msltrans must
refuse with a MetalNonRecoverableError that says so (the test accepts exactly that); if it
compiles, the output must be right.

Extending: every launch runs inside `path()` (the `path` fixture, parametrised over
`PATHS`): add an entry there (a context manager that makes the compiler take one lowering
path, e.g. the simdgroup-fragment path or the threadgroup fallback) and every case runs on
each path; `test_paths_agree` compares the paths with each other on the same inputs. Kernels
are compiled afresh for every launch (no Triton cache), so a path context only needs to be
active while `lower_module` runs.

The CI subset stays under ~90 s with `-n 1` on a cold simulator cache (each distinct kernel
is one clang compile); the rest of the matrix is `slow`.
"""

from __future__ import annotations

import contextlib
import math
import warnings
from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch
import triton
import triton.language as tl

from msltrans.errors import MetalNonRecoverableError, MetalPerformanceWarning
from msltrans.ir import read_module
from msltrans.lower import MslProgram, lower_module
from msltrans.toolchain import to_ttgir

LOG2E = 1.4426950408889634
U32 = 2.0**-24
UNIT = {torch.float16: 2.0**-11, torch.bfloat16: 2.0**-8, torch.float32: U32}
TRITON_PTR = {torch.float16: "*fp16", torch.bfloat16: "*bf16", torch.float32: "*fp32"}
HAND = Path(__file__).resolve().parents[2] / "benchmarks" / "proxy" / "reference" / \
    "attention.metal"

# name -> context manager factory: the compiler paths every case runs on (see the docstring)
@contextlib.contextmanager
def _fragments(on: bool) -> Iterator[None]:
    """The dot results in simdgroup fragments (the default) or every dot staged through
    threadgroup tiles (MSLTRANS_DOT_FRAGMENTS=0, read while `lower_module` runs)."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("MSLTRANS_DOT_FRAGMENTS", "1" if on else "0")
        yield


PATHS: dict[str, Callable[[], contextlib.AbstractContextManager[Any]]] = {
    "fragment": lambda: _fragments(True),
    "staged": lambda: _fragments(False),
}


@pytest.fixture(params=sorted(PATHS))
def path(request: pytest.FixtureRequest) -> Callable[[], contextlib.AbstractContextManager[Any]]:
    return PATHS[request.param]


@triton.jit
def plain_attention(q_ptr, k_ptr, v_ptr, o_ptr, n_ctx, qk_scale, heads, kv_heads,
                    HEAD: tl.constexpr, BM: tl.constexpr, BN: tl.constexpr,
                    CAUSAL: tl.constexpr, WINDOW: tl.constexpr):
    # q, o: [batch * heads, n_ctx, HEAD]; k, v: [batch * kv_heads, n_ctx, HEAD], contiguous.
    # qk_scale = sm_scale * log2(e): the softmax runs in base 2.
    bh = tl.program_id(1)
    kv = (bh // heads) * kv_heads + (bh % heads) // (heads // kv_heads)
    q0 = tl.program_id(0) * BM
    rows = q0 + tl.arange(0, BM)
    d = tl.arange(0, HEAD)
    q_at = bh.to(tl.int64) * n_ctx * HEAD
    kv_at = kv.to(tl.int64) * n_ctx * HEAD
    q = tl.load(q_ptr + q_at + rows[:, None] * HEAD + d[None, :], mask=rows[:, None] < n_ctx,
                other=0.0)
    m_i = tl.full([BM], float("-inf"), tl.float32)
    l_i = tl.zeros([BM], dtype=tl.float32)
    acc = tl.zeros([BM, HEAD], dtype=tl.float32)
    lo = 0
    hi = n_ctx
    if CAUSAL:
        hi = tl.minimum(q0 + BM, n_ctx)
    if WINDOW > 0:
        lo = tl.maximum(q0 - WINDOW + 1, 0) // BN * BN
        if not CAUSAL:
            hi = tl.minimum(q0 + BM + WINDOW - 1, n_ctx)
    for start in tl.range(lo, hi, BN):
        keys = start + tl.arange(0, BN)
        k = tl.load(k_ptr + kv_at + keys[:, None] * HEAD + d[None, :],
                    mask=keys[:, None] < n_ctx, other=0.0)
        s = tl.dot(q, tl.trans(k)) * qk_scale
        keep = keys[None, :] < n_ctx
        if CAUSAL:
            keep = keep & (keys[None, :] <= rows[:, None])
        if WINDOW > 0:
            keep = keep & (rows[:, None] - keys[None, :] < WINDOW)
            if not CAUSAL:
                keep = keep & (keys[None, :] - rows[:, None] < WINDOW)
        s = tl.where(keep, s, float("-inf"))
        m_new = tl.maximum(m_i, tl.max(s, axis=1))
        # a row whose keys so far are all masked: keep exp2 away from (-inf) - (-inf)
        m_use = tl.where(m_new == float("-inf"), 0.0, m_new)
        p = tl.math.exp2(s - m_use[:, None])
        alpha = tl.math.exp2(m_i - m_use)
        l_i = l_i * alpha + tl.sum(p, axis=1)
        v = tl.load(v_ptr + kv_at + keys[:, None] * HEAD + d[None, :],
                    mask=keys[:, None] < n_ctx, other=0.0)
        acc = tl.dot(p.to(v.dtype), v, acc * alpha[:, None])
        m_i = m_new
    out = acc / l_i[:, None]
    tl.store(o_ptr + q_at + rows[:, None] * HEAD + d[None, :], out.to(o_ptr.dtype.element_ty),
             mask=rows[:, None] < n_ctx)


# ---- compile and run (no Triton cache: every launch lowers afresh, inside `path()`) -------


def _triton_type(value: Any) -> str:
    if isinstance(value, torch.Tensor):
        return TRITON_PTR[value.dtype]
    if isinstance(value, bool):
        return "i1"
    if isinstance(value, int):
        return "i32"
    return "fp32"


def compile_attention(fn: Any, args: dict[str, Any], constexprs: dict[str, Any],
                      num_warps: int) -> MslProgram:
    """Lower `fn` with a launch's specialisation: tensors (16-byte aligned by torch) and
    integers that are multiples of 16 get tt.divisibility 16, integers equal to 1 become
    constants, as Triton's launcher does."""
    sig, cx, div = {}, dict(constexprs), []
    for name, value in args.items():
        if isinstance(value, int) and not isinstance(value, bool) and value == 1:
            cx[name] = 1
            continue
        sig[name] = _triton_type(value)
        if isinstance(value, torch.Tensor) or (isinstance(value, int) and value % 16 == 0):
            div.append(name)
    return lower_module(read_module(to_ttgir(fn, sig, cx, num_warps,
                                             divisible_by_16=tuple(div))))


def run_program(program: MslProgram, grid: tuple[int, int], args: dict[str, Any],
                races: bool = False) -> None:
    from msltrans import sim

    kernel = getattr(sim.compile_shader(program.source), program.kernel_name)
    values = [args[p.name] for p in program.params]
    t = program.threads_per_group
    launch = dict(threads=(grid[0] * t, grid[1], 1), group_size=(t, 1, 1),
                  arg_casts=program.arg_casts, buffer_alignment=program.sim_alignment)
    if races:  # forward, reverse and shuffled schedules must give the same bytes
        sim.check_races(kernel, *program.engine_args(values), **launch)
    kernel(*program.engine_args(values), **launch)


# ---- cases ----------------------------------------------------------------------------


@dataclass(frozen=True)
class Attn:
    dtype: torch.dtype
    head: int
    n: int
    causal: bool
    warps: int = 4
    bm: int = 64
    bn: int = 32
    heads: int = 2
    kv_heads: int = 2
    window: int = 0
    batch: int = 1
    kernel: str = "plain"  # "plain" | "tutorial"

    def __str__(self) -> str:
        t = {torch.float16: "fp16", torch.bfloat16: "bf16", torch.float32: "fp32"}[self.dtype]
        extra = (" causal" if self.causal else "") + \
            (f" gqa{self.heads}:{self.kv_heads}" if self.kv_heads != self.heads else "") + \
            (f" window{self.window}" if self.window else "")
        return (f"{self.kernel}-{t}-d{self.head}-n{self.n}-{self.bm}x{self.bn}"
                f"-w{self.warps}{extra}").replace(" ", "-")


def make_inputs(c: Attn, seed: int = 0) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    g = torch.Generator().manual_seed(seed)
    q = torch.randn((c.batch * c.heads, c.n, c.head), generator=g).to(c.dtype)
    k = torch.randn((c.batch * c.kv_heads, c.n, c.head), generator=g).to(c.dtype)
    v = torch.randn((c.batch * c.kv_heads, c.n, c.head), generator=g).to(c.dtype)
    return q, k, v


def visible(c: Attn) -> torch.Tensor:
    """[n, n] bool: may query i see key j."""
    i = torch.arange(c.n)[:, None]
    j = torch.arange(c.n)[None, :]
    keep = torch.ones(c.n, c.n, dtype=torch.bool)
    if c.causal:
        keep &= j <= i
    if c.window:
        keep &= (i - j < c.window) if c.causal else ((i - j).abs() < c.window)
    return keep


def kv_heads_of(c: Attn, grouped: bool = True) -> torch.Tensor:
    """The K/V head each query head reads: grouped (GQA), or interleaved (a plausible bug)."""
    group = c.heads // c.kv_heads
    return torch.tensor([(bh // c.heads) * c.kv_heads
                         + ((bh % c.heads) // group if grouped else (bh % c.heads) % c.kv_heads)
                         for bh in range(c.batch * c.heads)])


def reference(c: Attn, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor,
              qk_scale: float, grouped: bool = True) -> tuple[torch.Tensor, float]:
    """float64 O, and E_s of the bound (the scores' fp32 error, base-2 units)."""
    kv = kv_heads_of(c, grouped)
    q64, k64, v64 = q.double(), k.double()[kv], v.double()[kv]
    s = q64 @ k64.transpose(1, 2) * qk_scale  # base 2
    s = s.masked_fill(~visible(c), float("-inf"))
    w = torch.softmax(s * math.log(2.0), dim=-1)
    err_s = (c.head + 2) * U32 * qk_scale * (q64.abs() @ k64.abs().transpose(1, 2)).max().item()
    return w @ v64, err_s


def bound(c: Attn, o_ref: torch.Tensor, v: torch.Tensor, err_s: float) -> float:
    vmax = v.double().abs().max().item()
    h = UNIT[c.dtype]
    subnormal = c.n * 2.0**-25 if c.dtype == torch.float16 else 0.0
    steps = math.ceil(c.n / c.bn)
    weights = (2 * math.log(2.0) * err_s + h + 16 * U32 + (2 * c.n + steps + 4) * U32
               + subnormal)
    return 1.01 * (h * o_ref.abs().max().item() + weights * vmax)


def compile_case(c: Attn, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor,
                 o: torch.Tensor) -> tuple[MslProgram, dict[str, Any], float]:
    """Lower case `c`'s kernel for these tensors: (program, its arguments, qk_scale used)."""
    sm_scale = c.head ** -0.5
    if c.kernel == "plain":
        qk_scale = float(np.float32(sm_scale * LOG2E))
        args: dict[str, Any] = dict(q_ptr=q, k_ptr=k, v_ptr=v, o_ptr=o, n_ctx=c.n,
                                    qk_scale=qk_scale, heads=c.heads, kv_heads=c.kv_heads)
        cx = dict(HEAD=c.head, BM=c.bm, BN=c.bn, CAUSAL=c.causal, WINDOW=c.window)
        return compile_attention(plain_attention, args, cx, c.warps), args, qk_scale
    from msltrans.workloads.attention import flash_attn_fwd

    # the kernel folds sm_scale * 1.44269504 in fp32
    qk_scale = float(np.float32(np.float32(sm_scale) * np.float32(1.44269504)))
    lse = torch.full((c.batch * c.heads, c.n), float("nan"))
    args = dict(sm_scale=float(np.float32(sm_scale)), lse_ptr=lse, Z=c.batch, H=c.heads,
                q=q, k=k, v=v, o=o, N_CTX=c.n)
    cx = dict(HEAD_DIM=c.head, BLOCK_M=c.bm, BLOCK_N=c.bn, FP8=False, CAUSAL=c.causal)
    return compile_attention(flash_attn_fwd, args, cx, c.warps), args, qk_scale


def launch(c: Attn, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor,
           races: bool = False) -> tuple[torch.Tensor, float, MslProgram]:
    """Run case `c` on the simulator: (O, qk_scale used, program)."""
    o = torch.full_like(q, float("nan"))
    program, args, qk_scale = compile_case(c, q, k, v, o)
    run_program(program, (triton.cdiv(c.n, c.bm), c.batch * c.heads), args, races)
    return o, qk_scale, program


def check(c: Attn, path: Callable[[], contextlib.AbstractContextManager[Any]],
          races: bool = False) -> torch.Tensor:
    q, k, v = make_inputs(c)
    with path():
        o, qk_scale, _ = launch(c, q, k, v, races)
    o_ref, err_s = reference(c, q, k, v, qk_scale)
    assert o.dtype == c.dtype and torch.isfinite(o).all(), f"{c}: non-finite output"
    err = (o.double() - o_ref).abs().max().item()
    limit = bound(c, o_ref, v, err_s)
    assert err <= limit, f"{c}: max |O - O64| = {err:.3g} > bound {limit:.3g}"
    # not vacuous: a kernel that dropped a feature of the case would fail the bound
    for label, other in _without_features(c, q, k, v, qk_scale):
        apart = (other - o_ref).abs().max().item()
        assert apart > 10 * limit, f"{c}: {label} is only {apart:.3g} away"
    return o


def _without_features(c: Attn, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor,
                      qk_scale: float) -> Iterator[tuple[str, torch.Tensor]]:
    if c.causal:
        yield "the non-causal result", reference(replace(c, causal=False), q, k, v, qk_scale)[0]
    if c.window:
        yield "the result without window", reference(replace(c, window=0), q, k, v, qk_scale)[0]
    if c.kv_heads not in (1, c.heads):
        yield "interleaved K/V heads", reference(c, q, k, v, qk_scale, grouped=False)[0]


def _cases(ci: list[Attn], slow: list[Attn]) -> list[Any]:
    return ([pytest.param(c, id=str(c)) for c in ci]
            + [pytest.param(c, id=str(c), marks=pytest.mark.slow) for c in slow])


F16, B16, F32 = torch.float16, torch.bfloat16, torch.float32
# CI: each line one distinct kernel (one simulator compile), chosen to cover every axis once.
PLAIN_CI = [
    Attn(F16, 64, 100, True, heads=4, kv_heads=2),             # ragged, causal, GQA
    Attn(B16, 32, 72, False, warps=8, window=24),              # bf16, window, 8 warps
]
PLAIN_SLOW = [
    Attn(dt, hd, n, causal, warps=w, heads=4, kv_heads=kvh, window=win)
    for dt in (F16, B16, F32)
    for hd in (32, 64, 128)
    for n, causal, w, kvh, win in ((128, False, 4, 4, 0), (100, True, 8, 1, 0),
                                   (80, True, 4, 2, 17), (96, False, 8, 2, 40))
]
TUTORIAL_CI = [Attn(F16, 64, 256, True, bm=128, bn=64, kernel="tutorial")]
TUTORIAL_SLOW = [
    Attn(F16, hd, 256, causal, warps=w, bm=bm, bn=bn, kernel="tutorial")
    for hd, bm, bn in ((32, 64, 32), (64, 128, 64), (128, 128, 64))
    for causal in (False, True)
    for w in (4, 8)
]


@pytest.mark.parametrize("case", _cases(PLAIN_CI, PLAIN_SLOW))
def test_plain_attention(case: Attn, path: Any) -> None:
    check(case, path)


@pytest.mark.parametrize("case", _cases(TUTORIAL_CI, TUTORIAL_SLOW))
def test_tutorial_attention(case: Attn, path: Any) -> None:
    check(case, path)


# ---- head dim 256: fits Apple's 32 KB of threadgroup memory, or is refused saying so ------


@pytest.mark.parametrize("case", _cases(
    [Attn(F16, 256, 64, False)],
    [Attn(B16, 256, 96, True, warps=8, heads=2, kv_heads=1),
     Attn(F16, 256, 128, True, bm=128, bn=64, kernel="tutorial")]))
def test_head_dim_256_runs_or_refuses(case: Attn, path: Any) -> None:
    try:
        check(case, path)
    except MetalNonRecoverableError as exc:
        assert "threadgroup memory" in str(exc) and "32 KB" in str(exc), str(exc)


# ---- tiles that no simdgroup path takes: correct (above), and said to be slow --------------


def _lower_tutorial(c: Attn) -> tuple[MslProgram, list[warnings.WarningMessage]]:
    q = torch.zeros(c.batch * c.heads, c.n, c.head, dtype=c.dtype)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        program, _, _ = compile_case(c, q, q, q, q)
    return program, [w for w in caught if issubclass(w.category, MetalPerformanceWarning)]


def test_register_path_tiles_warn() -> None:
    """Tutorial 06 at 128x64 tiles on 4 warps and head dim 128: the accumulator rows of a
    simdgroup (32 x 128 = 64 tiles) are over the fragment path's 32, Q + K exceed 32 KB of
    staging, so both dots take the register path (2048 Q elements a thread). The slow cases
    above run it and check it against float64; the compiler says it is slow, once per dot,
    naming the dot and what to change. 64x32 tiles on 4 warps take simdgroup matrices and say
    nothing; 128x64 on 8 warps keeps 3 KB of operands a thread on the register path for QKᵀ,
    under the 4 KB the warning starts at."""
    slow = Attn(F16, 128, 128, False, warps=4, bm=128, bn=64, kernel="tutorial")
    program, said = _lower_tutorial(slow)
    assert program.source.count("path=registers") == 2
    assert len(said) == 2, [str(w.message) for w in said]
    first = str(said[0].message)
    assert "tt.dot 128x64x128" in first and " at attention.py:" in first
    assert "bytes of operands a thread" in first and "More warps" in first
    program, said = _lower_tutorial(replace(slow, bm=64, bn=32))
    assert "path=registers" not in program.source and not said
    program, said = _lower_tutorial(replace(slow, warps=8))
    assert "regs_a=1024 regs_b=512" in program.source and not said


# ---- races: every schedule of the simulator gives the same bytes --------------------------


@pytest.mark.parametrize("case", [
    # the specialisation of the first CI cases (same MSL, one compile), fewer heads
    pytest.param(replace(PLAIN_CI[0], heads=2, kv_heads=2), id="plain"),
    pytest.param(replace(TUTORIAL_CI[0], n=128), id="tutorial"),
])
def test_no_races(case: Attn, path: Any) -> None:
    q, k, v = make_inputs(case)
    with path():
        launch(case, q, k, v, races=True)


# ---- compiler paths against each other --------------------------------------------------


@pytest.mark.skipif(len(PATHS) < 2, reason="one compiler path so far (PATHS)")
@pytest.mark.parametrize("case", _cases(PLAIN_CI + TUTORIAL_CI, PLAIN_SLOW + TUTORIAL_SLOW))
def test_paths_agree(case: Attn) -> None:
    q, k, v = make_inputs(case)
    outs = {}
    for name, path in PATHS.items():
        with path():
            outs[name], qk_scale, _ = launch(case, q, k, v)
    o_ref, err_s = reference(case, q, k, v, qk_scale)
    limit = 2 * bound(case, o_ref, v, err_s)
    first = next(iter(outs))
    for name, o in outs.items():
        apart = (o.double() - outs[first].double()).abs().max().item()
        assert apart <= limit, f"{case}: paths {first} and {name} are {apart:.3g} apart"


# ---- the GPU proxy's hand-written reference kernel ----------------------------------------


@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("head", [64, 128])
def test_hand_reference_kernel(head: int, causal: bool) -> None:
    """benchmarks/proxy/reference/attention.metal (MLX-style, 32 queries and 32 / 16 keys per
    step) within the same bound, and its row statistic (base-2 log-sum-exp) within fp32
    exp2/log2 accuracy."""
    from msltrans import sim

    keys = 32 if head < 128 else 16
    c = Attn(F16, head, 128, causal, bm=32, bn=keys, heads=2)
    defines = f"#define HEAD_DIM {head}\n#define CAUSAL {int(causal)}\n#define WRITE_LSE 1\n"
    kernel = sim.compile_shader(defines + HAND.read_text(), name="attention.metal").attention
    q, k, v = make_inputs(c)
    o = torch.full_like(q, float("nan"))
    lse = torch.full((c.heads, c.n), float("nan"))
    qk_scale = float(np.float32(head ** -0.5 * LOG2E))
    args = (q, k, v, o, lse, c.n, qk_scale)
    launch_ = dict(threads=(c.n // 32 * 128, c.heads, 1), group_size=(128, 1, 1),
                   arg_casts={5: "int32"})
    if head == 64 and causal:
        sim.check_races(kernel, *args, **launch_)
    kernel(*args, **launch_)
    o_ref, err_s = reference(c, q, k, v, qk_scale)
    err = (o.double() - o_ref).abs().max().item()
    assert err <= bound(c, o_ref, v, err_s), err
    s = q.double() @ k.double().transpose(1, 2) * qk_scale
    s = s.masked_fill(~visible(c), float("-inf"))
    lse_ref = torch.logsumexp(s * math.log(2.0), dim=-1) / math.log(2.0)
    assert ((lse.double() - lse_ref).abs() / (1 + lse_ref.abs())).max().item() <= 2e-6
