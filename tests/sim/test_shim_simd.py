"""SIMD-group functions and barriers of the shim, run on the simulator's scheduler."""

# ruff: noqa: E501 -- embedded MSL sources keep their own line structure

import numpy as np

from tests.support.shim import HEADER, compile_shader


def lane_order_sum(v):
    """simd_sum's documented order: active lanes in increasing lane order, rounding each step."""
    return np.add.accumulate(v.astype(np.float32))[-1]


def test_threadgroup_reduction_simd_sum_and_barriers():
    lib = compile_shader(
        HEADER
        + """
kernel void reduce(device const float* x [[buffer(0)]], device float* out [[buffer(1)]],
                   threadgroup float* partial [[threadgroup(0)]],
                   uint gid [[thread_position_in_grid]], uint tid [[thread_index_in_threadgroup]],
                   uint lane [[thread_index_in_simdgroup]], uint sg [[simdgroup_index_in_threadgroup]],
                   uint nsg [[simdgroups_per_threadgroup]], uint group [[threadgroup_position_in_grid]]) {
    float s = simd_sum(x[gid]);
    if (lane == 0) partial[sg] = s;
    threadgroup_barrier(mem_flags::mem_threadgroup);
    if (sg == 0) {
        float v = lane < nsg ? partial[lane] : 0.0f;
        v = simd_sum(v);
        if (lane == 0) out[group] = v;
    }
}
"""
    )
    rng = np.random.default_rng(0)
    tg, groups = 256, 8
    x = rng.standard_normal(tg * groups).astype(np.float32)
    out = np.zeros(groups, np.float32)
    lib.reduce(x, out, threads=tg * groups, group_size=tg, threadgroup=[8 * 4])
    xs = x.reshape(groups, tg // 32, 32)
    for g in range(groups):
        partial = np.array(
            [lane_order_sum(xs[g, s]) for s in range(tg // 32)] + [0.0] * (32 - tg // 32),
            np.float32,
        )
        assert out[g] == lane_order_sum(partial)


def test_prefix_sums_products_and_partial_simdgroup():
    lib = compile_shader(
        HEADER
        + """
kernel void scan(device const int* x [[buffer(0)]], device int* inc [[buffer(1)]], device int* exc [[buffer(2)]],
                 device float* pin [[buffer(3)]], device float* pex [[buffer(4)]], device uint* act [[buffer(5)]],
                 uint gid [[thread_position_in_grid]]) {
    inc[gid] = simd_prefix_inclusive_sum(x[gid]);
    exc[gid] = simd_prefix_exclusive_sum(x[gid]);
    float f = 1.0f + float(x[gid]) / 8.0f;
    pin[gid] = simd_prefix_inclusive_product(f);
    pex[gid] = simd_prefix_exclusive_product(f);
    act[gid] = uint(static_cast<ulong>(simd_active_threads_mask()));
}
"""
    )
    n = 100  # last threadgroup partial (dispatchThreads), last simdgroup has 4 live lanes
    x = np.arange(n, dtype=np.int32) % 7 - 3
    inc, exc = np.zeros(n, np.int32), np.zeros(n, np.int32)
    pin, pex = np.zeros(n, np.float32), np.zeros(n, np.float32)
    act = np.zeros(n, np.uint32)
    lib.scan(x, inc, exc, pin, pex, act, threads=n, group_size=64)
    for start in range(0, n, 32):
        seg = x[start : start + 32]
        f = (1.0 + seg.astype(np.float32) / np.float32(8)).astype(np.float32)
        assert np.array_equal(inc[start : start + 32], np.cumsum(seg))
        assert np.array_equal(exc[start : start + 32], np.cumsum(seg) - seg)
        assert np.array_equal(pin[start : start + 32], np.multiply.accumulate(f))
        assert np.array_equal(
            pex[start : start + 32],
            np.concatenate([[1], np.multiply.accumulate(f)[:-1]]).astype(np.float32),
        )
        assert np.all(
            act[start : start + 32] == (1 << len(seg)) - 1 if len(seg) < 32 else 0xFFFFFFFF
        )


def test_shuffles_broadcast_ballot_and_types():
    lib = compile_shader(
        HEADER
        + """
kernel void mv(device const float* x [[buffer(0)]], device float4* o [[buffer(1)]], device long* l [[buffer(2)]],
               device half2* h [[buffer(3)]], device uint* v [[buffer(4)]], uint gid [[thread_position_in_grid]],
               ushort lane [[thread_index_in_simdgroup]]) {
    float a = x[gid];
    o[gid] = float4(simd_shuffle(a, ushort(31 - lane)), simd_shuffle_xor(a, ushort(1)),
                    simd_shuffle_down(a, ushort(3)), simd_shuffle_up(a, ushort(2)));
    long big = long(gid) << 40;
    uint2 halves = as_type<uint2>(big);   // MSL 6.9.2: no simd_broadcast on long
    l[2 * gid] = as_type<long>(uint2(simd_broadcast(halves.x, ushort(5)), simd_broadcast(halves.y, ushort(5))));
    l[2 * gid + 1] = simd_sum(big);
    half2 hv = half2(a, -a);
    h[2 * gid] = simd_max(hv);
    h[2 * gid + 1] = simd_shuffle_and_fill_down(hv, half2(7.0f), ushort(4));
    v[4 * gid] = uint(static_cast<ulong>(simd_ballot(a > 0.0f)));
    v[4 * gid + 1] = simd_all(a > -100.0f) + 2 * simd_any(a > 100.0f);
    v[4 * gid + 2] = simd_is_first();
    v[4 * gid + 3] = as_type<uint>(simd_broadcast_first(a)) == as_type<uint>(x[0]) ? 1u : 0u;
}
"""
    )
    n = 32
    rng = np.random.default_rng(5)
    x = rng.standard_normal(n).astype(np.float32)
    o = np.zeros((n, 4), np.float32)
    lo = np.zeros(2 * n, np.int64)
    h = np.zeros((2 * n, 2), np.float16)
    v = np.zeros(4 * n, np.uint32)
    lib.mv(x, o, lo, h, v, threads=n, group_size=32)
    lanes = np.arange(32)
    assert np.array_equal(o[:, 0], x[31 - lanes])
    assert np.array_equal(o[:, 1], x[lanes ^ 1])
    assert np.array_equal(
        o[:, 2], np.where(lanes + 3 < 32, x[np.minimum(lanes + 3, 31)], x)
    )  # upper lanes keep own
    assert np.array_equal(o[:, 3], np.where(lanes >= 2, x[np.maximum(lanes - 2, 0)], x))
    assert np.all(lo[0::2] == 5 << 40) and np.all(lo[1::2] == sum(g << 40 for g in range(32)))
    hx = x.astype(np.float16)
    assert np.all(h[0::2, 0] == hx.max()) and np.all(h[0::2, 1] == (-hx).max())
    assert np.array_equal(
        h[1::2, 0], np.where(lanes + 4 < 32, hx[np.minimum(lanes + 4, 31)], np.float16(7))
    )
    ballot = sum(1 << i for i in range(32) if x[i] > 0)
    assert np.all(v[0::4] == ballot) and np.all(v[1::4] == 1)
    assert v[2::4].tolist() == [1] + [0] * 31 and np.all(v[3::4] == 1)


def test_divergent_simd_op_is_reported():
    lib = compile_shader(
        HEADER
        + """
kernel void bad(device float* x [[buffer(0)]], uint lane [[thread_index_in_simdgroup]]) {
    if (lane < 16) x[lane] = simd_sum(x[lane]);
    else x[lane] = simd_max(x[lane]);
}
"""
    )
    import pytest

    with pytest.raises(RuntimeError, match=r"(?i)diverg|different|site|simd"):
        lib.bad(np.zeros(32, np.float32), threads=32, group_size=32)


def test_integer_reductions_wrap():
    lib = compile_shader(
        HEADER
        + """
kernel void w(device const int* x [[buffer(0)]], device int* o [[buffer(1)]], device short2* s [[buffer(2)]],
              uint gid [[thread_position_in_grid]]) {
    o[2 * gid] = simd_sum(x[gid]);
    o[2 * gid + 1] = simd_product(x[gid]);
    s[gid] = simd_prefix_inclusive_sum(short2(short(x[gid]), short(-x[gid])));
}
"""
    )
    x = np.full(32, 2**30 + 3, np.int32)
    o = np.zeros(64, np.int32)
    s = np.zeros((32, 2), np.int16)
    lib.w(x, o, s, threads=32, group_size=32)
    total = (32 * (2**30 + 3)) & 0xFFFFFFFF
    prod = pow(2**30 + 3, 32, 2**32)
    to_i32 = lambda v: v - 2**32 if v >= 2**31 else v  # noqa: E731
    assert np.all(o[0::2] == to_i32(total)) and np.all(o[1::2] == to_i32(prod))
    xs = x.astype(np.int16)
    assert np.array_equal(s[:, 0], np.cumsum(xs, dtype=np.int16))
    assert np.array_equal(s[:, 1], np.cumsum(-xs, dtype=np.int16))


def test_min_and_bitwise_reductions_with_partial_simdgroup():
    lib = compile_shader(
        HEADER
        + """
kernel void red(device const int* x [[buffer(0)]], device const float* f [[buffer(1)]],
                device int* imin [[buffer(2)]], device float* fmin_ [[buffer(3)]],
                device uint* bits [[buffer(4)]], device ushort2* v [[buffer(5)]],
                uint gid [[thread_position_in_grid]]) {
    imin[gid] = simd_min(x[gid]);
    fmin_[gid] = simd_min(f[gid]);
    uint u = uint(x[gid]);
    bits[3 * gid + 0] = simd_and(u);
    bits[3 * gid + 1] = simd_or(u);
    bits[3 * gid + 2] = simd_xor(u);
    v[gid] = simd_xor(ushort2(ushort(u), ushort(u >> 16)));
}
"""
    )
    n = 40   # one full simdgroup and one of 8 lanes: only active lanes take part
    rng = np.random.default_rng(3)
    x = rng.integers(-(2**31), 2**31, n, dtype=np.int64).astype(np.int32)
    f = rng.standard_normal(n).astype(np.float32)
    f[5] = np.nan   # NaN-ignoring min, as documented
    imin, fmin_ = np.zeros(n, np.int32), np.zeros(n, np.float32)
    bits, v = np.zeros((n, 3), np.uint32), np.zeros((n, 2), np.uint16)
    lib.red(x, f, imin, fmin_, bits, v, threads=n, group_size=n)
    u = x.view(np.uint32)
    for lo, hi in ((0, 32), (32, 40)):
        lanes = slice(lo, hi)
        assert np.all(imin[lanes] == x[lanes].min())
        assert np.all(fmin_[lanes] == np.nanmin(f[lanes]))
        assert np.all(bits[lanes, 0] == np.bitwise_and.reduce(u[lanes]))
        assert np.all(bits[lanes, 1] == np.bitwise_or.reduce(u[lanes]))
        assert np.all(bits[lanes, 2] == np.bitwise_xor.reduce(u[lanes]))
        assert np.all(v[lanes, 0] == np.bitwise_xor.reduce((u[lanes] & 0xFFFF).astype(np.uint16)))
        assert np.all(v[lanes, 1] == np.bitwise_xor.reduce((u[lanes] >> 16).astype(np.uint16)))


def test_reduction_result_shared_per_op_in_a_loop_with_inactive_lanes():
    """A reduction is computed by the first lane that needs it and copied by the others
    (abi.h's shared slot); each release starts it afresh. 64 reductions in a row whose
    inputs change every time, then lanes 20..31 return and 32 more run over the 20 left: a
    result kept from the previous op, or from the other generation's slot, is wrong."""
    lib = compile_shader(
        HEADER
        + """
kernel void chain(device const float* x [[buffer(0)]], device float* out [[buffer(1)]],
                  device float* late [[buffer(2)]],
                  uint gid [[thread_position_in_grid]], uint lane [[thread_index_in_simdgroup]]) {
    float v = x[gid];
    for (uint i = 0; i < 64u; ++i) v = simd_sum(v) * 0.03125f + float(lane) * 0.001f;
    out[gid] = v;
    if (lane >= 20u) return;
    float h = 0.0f;
    for (uint i = 0; i < 32u; ++i) h += simd_max(v * float(i + 1u) - h);
    late[gid] = h;
}
"""
    )
    rng = np.random.default_rng(3)
    x = rng.standard_normal(96).astype(np.float32)
    out = np.zeros(96, np.float32)
    late = np.full(96, -1.0, np.float32)
    lib.chain(x, out, late, threads=96, group_size=96)
    lanes = np.arange(32, dtype=np.float32)
    for s in range(3):
        v = x[32 * s:32 * s + 32].copy()
        for _ in range(64):
            v = (np.float32(lane_order_sum(v)) * np.float32(0.03125)
                 + lanes * np.float32(0.001)).astype(np.float32)
        np.testing.assert_array_equal(out[32 * s:32 * s + 32], v)
        h = np.zeros(20, np.float32)
        for i in range(32):
            h = h + (v[:20] * np.float32(i + 1) - h).max()
        np.testing.assert_array_equal(late[32 * s:32 * s + 20], h)
        assert (late[32 * s + 20:32 * s + 32] == -1.0).all()


def test_reductions_of_two_types_at_one_site_keep_their_own_results():
    """One simd_sum call in a function template, reached in the same rendezvous by lanes of
    two instantiations (float and int: the same source position, so one SIMD op): the
    shared slot's key keeps a lane from copying the other type's result. Float lanes fold
    the 32 payloads as floats, int lanes as ints (wrapping), as every lane did before the
    result was shared."""
    lib = compile_shader(
        HEADER
        + """
template <class T> T total(T v) { return simd_sum(v); }
kernel void mixed(device const int* k [[buffer(0)]], device float* fout [[buffer(1)]],
                  device int* iout [[buffer(2)]],
                  uint gid [[thread_position_in_grid]], uint lane [[thread_index_in_simdgroup]]) {
    if (lane % 3u == 0u) fout[gid] = total(as_type<float>(k[gid]));
    else iout[gid] = total(k[gid]);
}
"""
    )
    rng = np.random.default_rng(4)
    x = rng.standard_normal(32).astype(np.float32)
    k = x.view(np.int32).copy()
    fout = np.zeros(32, np.float32)
    iout = np.zeros(32, np.int32)
    lib.mixed(k, fout, iout, threads=32, group_size=32)
    lane = np.arange(32)
    isum = np.int32(np.int64(k.astype(np.int64).sum() + 2**31) % 2**32 - 2**31)
    np.testing.assert_array_equal(fout[lane % 3 == 0], np.float32(lane_order_sum(x)))
    np.testing.assert_array_equal(iout[lane % 3 != 0], isum)


def test_ballots_in_a_loop_each_see_their_own_votes():
    """simd_ballot's vote is shared by the lanes like a reduction's result: 40 ballots in a
    row whose predicates change every time (a stale shared vote would repeat), in a partial
    simdgroup of 24 lanes."""
    lib = compile_shader(
        HEADER
        + """
kernel void votes(device const uint* x [[buffer(0)]], device uint* out [[buffer(1)]],
                  uint gid [[thread_position_in_grid]], uint lane [[thread_index_in_simdgroup]]) {
    uint acc = 0u;
    for (uint i = 0; i < 40u; ++i) {
        uint v = uint(static_cast<ulong>(simd_ballot(((x[gid] >> (i % 32u)) & 1u) != 0u)));
        acc = (acc ^ v) * 3u + i;
    }
    out[gid] = acc;
}
"""
    )
    rng = np.random.default_rng(9)
    x = rng.integers(0, 2**32, 56, dtype=np.uint64).astype(np.uint32)
    out = np.zeros(56, np.uint32)
    lib.votes(x, out, threads=56, group_size=56)
    for first, lanes in ((0, 32), (32, 24)):
        acc = 0
        for i in range(40):
            vote = sum(1 << lane for lane in range(lanes) if (int(x[first + lane]) >> (i % 32)) & 1)
            acc = ((acc ^ vote) * 3 + i) & 0xFFFFFFFF
        assert (out[first:first + lanes] == acc).all(), (first, out[first:first + lanes], acc)
