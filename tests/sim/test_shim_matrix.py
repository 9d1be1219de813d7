"""simdgroup_matrix: lane ownership, and a 64x64 matmul bit-identical to the sequential fma chain."""

# ruff: noqa: E501 -- embedded MSL sources keep their own line structure

import numpy as np
import pytest

from tests.support.shim import compile_shader
from tests.support.shim_ref import fma_f32, to_bf16

HEADER = "#include <metal_stdlib>\n#include <metal_simdgroup_matrix>\nusing namespace metal;\n"

MATMUL = (
    HEADER
    + """
template <typename T, typename Acc>
void mm(device const T* A, device const T* B, device Acc* C, uint n, uint2 tile) {
    simdgroup_matrix<Acc, 8, 8> acc = make_filled_simdgroup_matrix<Acc, 8, 8>(Acc(0));
    for (uint k = 0; k < n; k += 8) {
        simdgroup_matrix<T, 8, 8> a, b;
        simdgroup_load(a, A, n, ulong2(k, tile.y * 8));   // origin = (column, row)
        simdgroup_load(b, B, n, ulong2(tile.x * 8, k));
        simdgroup_multiply_accumulate(acc, a, b, acc);
    }
    simdgroup_store(acc, C, n, ulong2(tile.x * 8, tile.y * 8));
}
kernel void mm_f(device const float* A [[buffer(0)]], device const float* B [[buffer(1)]], device float* C [[buffer(2)]],
                 constant uint& n [[buffer(3)]], uint2 tile [[threadgroup_position_in_grid]]) { mm(A, B, C, n, tile); }
kernel void mm_h(device const half* A [[buffer(0)]], device const half* B [[buffer(1)]], device half* C [[buffer(2)]],
                 constant uint& n [[buffer(3)]], uint2 tile [[threadgroup_position_in_grid]]) { mm(A, B, C, n, tile); }
kernel void mm_b(device const bfloat* A [[buffer(0)]], device const bfloat* B [[buffer(1)]], device bfloat* C [[buffer(2)]],
                 constant uint& n [[buffer(3)]], uint2 tile [[threadgroup_position_in_grid]]) { mm(A, B, C, n, tile); }
kernel void mm_hf(device const half* A [[buffer(0)]], device const half* B [[buffer(1)]], device float* C [[buffer(2)]],
                  constant uint& n [[buffer(3)]], uint2 tile [[threadgroup_position_in_grid]]) { mm(A, B, C, n, tile); }
"""
)


@pytest.fixture(scope="module")
def lib():
    return compile_shader(MATMUL)


def _run(lib, name, a, b, out_dtype, n=64):
    c = np.zeros((n, n), out_dtype)
    getattr(lib, name)(a, b, c, np.uint32(n), threads=(n // 8 * 32, n // 8), group_size=(32, 1))
    return c


def _chain(a, b, round_tile=lambda v: v):
    """Per element: acc = fma(a[i,k], b[k,j], acc) for k in order; round_tile after every 8 k."""
    a, b = a.astype(np.float32), b.astype(np.float32)
    acc = np.zeros((a.shape[0], b.shape[1]), np.float32)
    for k0 in range(0, a.shape[1], 8):
        acc = acc.astype(np.float32)
        for k in range(k0, k0 + 8):
            acc = fma_f32(a[:, k : k + 1], b[k : k + 1, :], acc)
        acc = round_tile(acc)
    return acc


def test_lane_ownership_thread_elements():
    lib = compile_shader(
        HEADER
        + """
kernel void own(device const float* m [[buffer(0)]], device float* out [[buffer(1)]], device float* back [[buffer(2)]],
                ushort lane [[thread_index_in_simdgroup]]) {
    simdgroup_float8x8 a;
    simdgroup_load(a, m);
    float2 e = a.thread_elements();
    out[2 * lane] = e.x; out[2 * lane + 1] = e.y;
    a.thread_elements() = e * 2.0f;
    simdgroup_store(a, back, 8, ulong2(0, 0), true);   // transposed store
}
"""
    )
    m = np.arange(64, dtype=np.float32).reshape(8, 8)
    out = np.zeros(64, np.float32)
    back = np.zeros((8, 8), np.float32)
    lib.own(m, out, back, threads=32, group_size=32)
    for lane in range(32):
        q = lane // 4
        row = (q & 4) + (lane // 2) % 4
        col = (q & 2) * 2 + (lane % 2) * 2
        assert out[2 * lane] == m[row, col] and out[2 * lane + 1] == m[row, col + 1]
    assert np.array_equal(back, 2 * m.T)


def test_matmul_float_bit_identical(lib):
    rng = np.random.default_rng(11)
    a = rng.standard_normal((64, 64)).astype(np.float32)
    b = rng.standard_normal((64, 64)).astype(np.float32)
    c = _run(lib, "mm_f", a, b, np.float32)
    ref = _chain(a, b)
    assert np.array_equal(c.view(np.uint32), ref.view(np.uint32))
    # and the float64 product rounded once differs from the chain somewhere: the test can
    # tell roundings apart (numpy's own float32 product is no witness: an OpenBLAS kernel
    # that runs the fma chain in k order equals it bit for bit)
    assert not np.array_equal(c, (a.astype(np.float64) @ b.astype(np.float64)).astype(np.float32))


def test_matmul_half_and_bfloat(lib):
    rng = np.random.default_rng(12)
    a = rng.standard_normal((64, 64)).astype(np.float16)
    b = rng.standard_normal((64, 64)).astype(np.float16)
    exact = a.astype(np.float64) @ b.astype(np.float64)
    # half accumulator: fp32 chain per 8x8 step, rounded to half after each step
    c = _run(lib, "mm_h", a, b, np.float16)
    assert np.array_equal(c, _chain(a, b, lambda v: v.astype(np.float16)).astype(np.float16))
    assert np.max(np.abs(c - exact)) <= 64 * 2.0**-10 * np.max(np.abs(exact))  # stated tolerance
    # half inputs, float accumulator: the fp32 chain itself
    cf = _run(lib, "mm_hf", a, b, np.float32)
    assert np.array_equal(cf, _chain(a, b))
    # bfloat: stored as uint16 bit patterns
    af = to_bf16(rng.standard_normal((64, 64)).astype(np.float32))
    bf = to_bf16(rng.standard_normal((64, 64)).astype(np.float32))
    a16 = (af.view(np.uint32) >> 16).astype(np.uint16)
    b16 = (bf.view(np.uint32) >> 16).astype(np.uint16)
    c16 = _run(lib, "mm_b", a16, b16, np.uint16)
    got = (c16.astype(np.uint32) << 16).view(np.float32)
    assert np.array_equal(got, _chain(af, bf, to_bf16))
    exact = af.astype(np.float64) @ bf.astype(np.float64)
    assert np.max(np.abs(got - exact)) <= 64 * 2.0**-7 * np.max(np.abs(exact))


def test_matrix_op_needs_all_lanes():
    lib = compile_shader(
        HEADER
        + """
kernel void partial(device float* m [[buffer(0)]]) {
    simdgroup_float8x8 a;
    simdgroup_load(a, m);
}
"""
    )
    with pytest.raises(RuntimeError, match="inactive lanes"):
        lib.partial(np.zeros(64, np.float32), threads=20, group_size=20)


def test_threadgroup_load_store_and_diagonal():
    lib = compile_shader(
        HEADER
        + """
kernel void tgm(device const float* m [[buffer(0)]], device float* out [[buffer(1)]],
                threadgroup float* scratch [[threadgroup(0)]]) {
    simdgroup_float8x8 a, d = simdgroup_float8x8(3.0f), r;
    simdgroup_load(a, m, 16, ulong2(8, 0));          // right half of a 8x16 block
    simdgroup_store(a, scratch, 8);
    simdgroup_barrier(mem_flags::mem_threadgroup);
    simdgroup_float8x8 b;
    simdgroup_load(b, scratch, 8, ulong2(0, 0), true);
    simdgroup_multiply(r, b, d);                     // b^T * 3I
    simdgroup_store(r, out, 8);
}
"""
    )
    m = np.arange(128, dtype=np.float32).reshape(8, 16)
    out = np.zeros((8, 8), np.float32)
    lib.tgm(m, out, threads=32, group_size=32, threadgroup=[256])
    assert np.array_equal(out, 3 * m[:, 8:].T)


MISUSE = (
    HEADER
    + """
kernel void skip_load(device float* m [[buffer(0)]], ushort lane [[thread_index_in_simdgroup]]) {
    simdgroup_float8x8 a;
    if (lane != 5) simdgroup_load(a, m);
    m[64 + lane] = simd_sum(1.0f);
}
kernel void split_mma(device float* m [[buffer(0)]], ushort lane [[thread_index_in_simdgroup]]) {
    simdgroup_float8x8 a, d;
    simdgroup_load(a, m);
    if (lane < 16) simdgroup_multiply(d, a, a);
    else simdgroup_multiply(d, a, a);
    simdgroup_store(d, m);
}
kernel void half_mma(device float* m [[buffer(0)]], ushort lane [[thread_index_in_simdgroup]]) {
    simdgroup_float8x8 a, d;
    simdgroup_load(a, m);
    if (lane >= 16) return;
    simdgroup_multiply(d, a, a);
    simdgroup_store(d, m + 64);
}
kernel void pending_elements(device const float* m [[buffer(0)]], device float* out [[buffer(1)]],
                             ushort lane [[thread_index_in_simdgroup]]) {
    simdgroup_float8x8 a, b, d;
    simdgroup_load(a, m);
    simdgroup_load(b, m + 64);
    simdgroup_multiply(d, a, b);              // pending in every lane but the last to record it
    simdgroup_float8x8 e = d;                 // copies share the pending result
    simdgroup_multiply_accumulate(d, a, b, d);
    float2 x = e.thread_elements(), y = d.thread_elements();
    out[2 * lane] = x.x; out[2 * lane + 1] = x.y;
    out[64 + 2 * lane] = y.x; out[64 + 2 * lane + 1] = y.y;
}
"""
)


def test_lane_skipping_a_load_is_a_divergence():
    lib = compile_shader(MISUSE)
    with pytest.raises(RuntimeError, match="divergent simdgroup_matrix ops in simdgroup 0.*lane 5 executed 0"):
        lib.skip_load(np.zeros(128, np.float32), threads=32, group_size=32)


# Lanes mode makes a multiply-accumulate a rendezvous of the simdgroup; fibers record it per
# lane: each reports these misuses in its own words.
@pytest.mark.parametrize("mode, message", [
    ("lanes", "divergent SIMD op in simdgroup 0: lanes wait at simdgroup_multiply_accumulate at "
              r"shader.metal:13:20 and lane 16 at simdgroup_multiply_accumulate at shader.metal:14:10"),
    ("fibers", "divergent simdgroup_matrix ops in simdgroup 0: lane 16"),
])
def test_multiply_accumulates_at_different_sites_are_a_divergence(monkeypatch, mode, message):
    monkeypatch.setenv("MSLTRANS_SIM_LANES", mode)
    lib = compile_shader(MISUSE)
    with pytest.raises(RuntimeError, match=message):
        lib.split_mma(np.zeros(128, np.float32), threads=32, group_size=32)


@pytest.mark.parametrize("mode, message", [
    ("lanes", r"simdgroup_multiply_accumulate at shader.metal:21:5 executed by 16 of 32 lanes: "
              r"the others returned .*thread \(16, 0, 0\)"),
    ("fibers", "simdgroup_multiply_accumulate at .*which 16 of 32 lanes"),
])
def test_waiting_for_a_result_half_the_lanes_never_compute(monkeypatch, mode, message):
    monkeypatch.setenv("MSLTRANS_SIM_LANES", mode)
    lib = compile_shader(MISUSE)
    with pytest.raises(RuntimeError, match=message):
        lib.half_mma(np.zeros(128, np.float32), threads=32, group_size=32)


def test_thread_elements_of_pending_results_and_their_copies():
    lib = compile_shader(MISUSE)
    rng = np.random.default_rng(5)
    m = rng.standard_normal(128).astype(np.float32)
    out = np.zeros(128, np.float32)
    lib.pending_elements(m, out, threads=32, group_size=32)
    a, b = m[:64].reshape(8, 8), m[64:].reshape(8, 8)
    first = _chain(a, b)
    second = np.zeros((8, 8), np.float32)
    for k in range(8):   # d = a @ b + d, the chain starting from the first product
        second = fma_f32(a[:, k : k + 1], b[k : k + 1, :], first if k == 0 else second)
    for lane in range(32):
        q = lane // 4
        row, col = (q & 4) + (lane // 2) % 4, (q & 2) * 2 + (lane % 2) * 2
        assert list(out[2 * lane : 2 * lane + 2]) == list(first[row, col : col + 2])
        assert list(out[64 + 2 * lane : 64 + 2 * lane + 2]) == list(second[row, col : col + 2])


def _owned(lane: int) -> tuple[int, int]:
    q = lane // 4
    return (q & 4) + (lane // 2) % 4, (q & 2) * 2 + (lane % 2) * 2


MIXED = (
    HEADER
    + """
// The c operand of the last multiply-accumulate: per lane, from one of two pending results
// (e in even lanes, d in odd ones), or in lanes 8..11 values the lane wrote itself.
kernel void mixed_c(device const float* m [[buffer(0)]], device float* out [[buffer(1)]],
                    ushort lane [[thread_index_in_simdgroup]]) {
    simdgroup_float8x8 a, b, d, e, r;
    simdgroup_load(a, m);
    simdgroup_load(b, m + 64);
    simdgroup_multiply(d, a, b);
    simdgroup_multiply(e, b, a);
    simdgroup_float8x8 c = (lane & 1) ? d : e;
    if (lane >= 8 && lane < 12) c.thread_elements() = c.thread_elements() * 2.0f;
    simdgroup_multiply_accumulate(r, a, a, c);
    simdgroup_store(r, out, 8);
}
"""
)


def _mixed_reference(m: np.ndarray) -> np.ndarray:
    """mixed_c's output: c per lane from d or e (doubled in lanes 8..11), then the chain a @ a + c."""
    a, b = m[:64].reshape(8, 8), m[64:].reshape(8, 8)
    d, e = _chain(a, b), _chain(b, a)
    c = np.zeros((8, 8), np.float32)
    for lane in range(32):
        row, col = _owned(lane)
        c[row, col : col + 2] = (d if lane & 1 else e)[row, col : col + 2]
        if 8 <= lane < 12:
            c[row, col : col + 2] *= np.float32(2)
    for k in range(8):
        c = fma_f32(a[:, k : k + 1], a[k : k + 1, :], c)
    return c


def test_accumulator_from_different_results_per_lane():
    """The whole-operand path (every lane passes the same earlier result) beside lanes that
    pass another pending result or their own values: each lane's elements come from its own."""
    lib = compile_shader(MIXED)
    rng = np.random.default_rng(8)
    m = rng.standard_normal(128).astype(np.float32)
    out = np.zeros((8, 8), np.float32)
    lib.mixed_c(m, out, threads=32, group_size=32)
    assert np.array_equal(out.view(np.uint32), _mixed_reference(m).view(np.uint32))


@pytest.mark.parametrize("schedule, seed", [("reverse", 0), ("shuffle", 3), ("shuffle", 4)])
def test_results_do_not_depend_on_which_lane_records_first(sim, schedule, seed):
    """The first lane to reach a multiply-accumulate makes its record (the runtime's path);
    the others record inline (matrix.h, mma_record_inline) when their operands allow it.
    Other schedules change which lane that is, and when lanes pass handles, their own
    values or another result (the mixed kernel): the bits stay the fma chain's."""
    lib = sim.compile_shader(MATMUL)
    rng = np.random.default_rng(13)
    a = rng.standard_normal((64, 64)).astype(np.float32)
    b = rng.standard_normal((64, 64)).astype(np.float32)
    c = np.zeros((64, 64), np.float32)
    lib.mm_f(a, b, c, np.uint32(64), threads=(256, 8), group_size=(32, 1), schedule=schedule,
             seed=seed)
    assert np.array_equal(c.view(np.uint32), _chain(a, b).view(np.uint32))
    mixed = sim.compile_shader(MIXED)
    m = rng.standard_normal(128).astype(np.float32)
    out = np.zeros((8, 8), np.float32)
    mixed.mixed_c(m, out, threads=32, group_size=32, schedule=schedule, seed=seed)
    want = np.zeros((8, 8), np.float32)
    mixed.mixed_c(m, want, threads=32, group_size=32)
    assert np.array_equal(out.view(np.uint32), want.view(np.uint32))
    assert np.array_equal(want.view(np.uint32), _mixed_reference(m).view(np.uint32))


@pytest.mark.parametrize("name, dtype, canon", [("mm_f", np.float32, 0x7FC00000),
                                                ("mm_h", np.float16, 0x7E00)])
def test_multiply_accumulate_nans_are_apples(lib, name, dtype, canon):
    """NaNs made inside the fma chains (inf * 0) and NaN operands with the sign bit and a
    payload come out as Apple's positive quiet NaN (sim/nan_canon.py), though the chains run
    uncanonicalised; the other elements are the chain's."""
    rng = np.random.default_rng(9)
    a = rng.standard_normal((64, 64)).astype(dtype)
    b = rng.standard_normal((64, 64)).astype(dtype)
    a[3, 5], b[5, 7] = np.inf, 0                 # inf * 0 in (3, 7)
    a[20, 40], b[40, 9] = -np.inf, 1             # -inf + inf in (20, 9)
    a[20, 41], b[41, 9] = np.inf, 1
    bits = np.dtype(f"u{np.dtype(dtype).itemsize}")
    neg_nan = np.array([0xFFC00001 if dtype == np.float32 else 0xFE01], bits).view(dtype)[0]
    b[60, 33] = neg_nan    # a negative NaN operand: column 33 is NaN in every row
    c = _run(lib, name, a, b, dtype)
    rounding = (lambda v: v.astype(np.float16)) if dtype == np.float16 else (lambda v: v)
    with np.errstate(invalid="ignore", over="ignore"):
        want = _chain(a, b, rounding).astype(dtype)
    nan = np.isnan(want)
    assert nan[3, 7] and nan[20, 9] and nan[:, 33].all()
    assert np.array_equal(np.isnan(c), nan)
    assert (c.view(bits)[nan] == canon).all()
    assert np.array_equal(c[~nan].view(bits), want[~nan].view(bits))
