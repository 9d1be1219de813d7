"""Vector types, constructors, conversions and as_type in the metal_stdlib shim."""

# ruff: noqa: E501 -- embedded MSL sources keep their own line structure

import numpy as np

from tests.support.shim import HEADER, compile_shader
from tests.support.shim_ref import bf16_bits


def test_vector_add_float_and_float4():
    lib = compile_shader(
        HEADER
        + """
kernel void add1(device const float* a [[buffer(0)]], device const float* b [[buffer(1)]],
                 device float* c [[buffer(2)]], constant uint& n [[buffer(3)]],
                 uint i [[thread_position_in_grid]]) {
    if (i < n) c[i] = a[i] + b[i];
}
kernel void add4(device const float4* a [[buffer(0)]], device const float4* b [[buffer(1)]],
                 device float4* c [[buffer(2)]], uint i [[thread_position_in_grid]]) {
    c[i] = a[i] + b[i];
}
"""
    )
    rng = np.random.default_rng(0)
    a = rng.standard_normal(1000).astype(np.float32)
    b = rng.standard_normal(1000).astype(np.float32)
    c = np.zeros_like(a)
    lib.add1(a, b, c, np.uint32(1000), threads=1000, group_size=64)
    assert np.array_equal(c, a + b)
    c4 = np.zeros_like(a)
    lib.add4(a, b, c4, threads=250, group_size=50)
    assert np.array_equal(c4, a + b)


def test_constructors_convert_element_wise():
    lib = compile_shader(
        HEADER
        + """
kernel void conv(device const int4* in [[buffer(0)]], device float4* f [[buffer(1)]],
                 device int4* back [[buffer(2)]], device float4* misc [[buffer(3)]],
                 device uint4* u [[buffer(4)]]) {
    int4 v = in[0];
    f[0] = float4(v);                       // element-wise, not a bit cast
    f[1] = static_cast<float4>(v);
    back[0] = int4(float4(v) * 0.5f);       // truncation toward zero
    back[1] = static_cast<int4>(f[0] * -1.5f);
    float4 a = float4(1.0f, 2.0f, 3.0f, 4.0f);
    misc[0] = float4(a.zw, 7, 8.5f);        // concatenation with mixed scalar types
    misc[1] = float4(2.5f);                 // splat
    misc[2] = float4(float2(1, 2), float2(a.wx));
    misc[3] = a.wzyx;                       // swizzle read
    float4 w = a; w.xz = float2(9.0f, 10.0f); misc[4] = w;   // swizzle write
    misc[5] = float4(half4(a) / half(3.0f));                 // half round-trip
    u[0] = uint4(v);                        // wraps like a C conversion
    u[1] = uint4(uchar4(v));                // narrowing conversion, element-wise
}
"""
    )
    v = np.array([3, -7, 100000, -2147483648], np.int32)
    f = np.zeros((2, 4), np.float32)
    back = np.zeros((2, 4), np.int32)
    misc = np.zeros((6, 4), np.float32)
    u = np.zeros((2, 4), np.uint32)
    lib.conv(v, f, back, misc, u, threads=1, group_size=1)
    assert np.array_equal(f[0], v.astype(np.float32)) and np.array_equal(f[1], f[0])
    assert np.array_equal(back[0], np.trunc(v.astype(np.float32) * 0.5).astype(np.int32))
    assert np.array_equal(back[1][:3], np.trunc(v[:3].astype(np.float32) * -1.5).astype(np.int32))
    assert misc[0].tolist() == [3, 4, 7, 8.5]
    assert misc[1].tolist() == [2.5] * 4
    assert misc[2].tolist() == [1, 2, 4, 1]
    assert misc[3].tolist() == [4, 3, 2, 1]
    assert misc[4].tolist() == [9, 2, 10, 4]
    expect = (np.array([1, 2, 3, 4], np.float16) / np.float16(3)).astype(np.float32)
    assert np.array_equal(misc[5], expect)
    assert np.array_equal(u[0], v.view(np.uint32))
    assert np.array_equal(u[1], v.astype(np.uint8).astype(np.uint32))


def test_as_type_and_bfloat_rounding():
    lib = compile_shader(
        HEADER
        + """
kernel void bits(device const float* x [[buffer(0)]], device uint* fb [[buffer(1)]],
                 device ushort* hb [[buffer(2)]], device ushort* bb [[buffer(3)]],
                 device float* back [[buffer(4)]], uint i [[thread_position_in_grid]]) {
    fb[i] = as_type<uint>(x[i]);
    hb[i] = as_type<ushort>(half(x[i]));
    bfloat b = bfloat(x[i]);
    bb[i] = as_type<ushort>(b);
    back[i] = float(b) + as_type<float>(as_type<int>(x[i])) * 0.0f;
}
kernel void vec_bits(device const float2* x [[buffer(0)]], device ulong* out [[buffer(1)]]) {
    out[0] = as_type<ulong>(x[0]);
    out[1] = as_type<ulong>(half4(x[0], x[0]));
}
"""
    )
    rng = np.random.default_rng(1)
    x = np.concatenate(
        [
            rng.standard_normal(200) * 100,
            [
                0.0,
                -0.0,
                np.inf,
                -np.inf,
                np.nan,
                1e-40,
                65504,
                65520,
                1.00390625,
                1.01171875,
                3.4e38,
            ],
        ]
    ).astype(np.float32)
    n = len(x)
    fb = np.zeros(n, np.uint32)
    hb = np.zeros(n, np.uint16)
    bb = np.zeros(n, np.uint16)
    back = np.zeros(n, np.float32)
    lib.bits(x, fb, hb, bb, back, threads=n, group_size=32)
    assert np.array_equal(fb, x.view(np.uint32))
    with np.errstate(over="ignore"):
        assert np.array_equal(hb, x.astype(np.float16).view(np.uint16))
    finite = ~np.isnan(x)
    assert np.array_equal(bb[finite], bf16_bits(x)[finite])
    assert np.all((bb[~finite] & 0x7FC0) == 0x7FC0)  # NaN stays a quiet NaN
    xs = np.array([1.5, -2.25], np.float32)
    out = np.zeros(2, np.uint64)
    lib.vec_bits(xs, out, threads=1, group_size=1)
    assert out[0] == xs.view(np.uint64)[0]
    assert out[1] == np.concatenate([xs, xs]).astype(np.float16).view(np.uint64)[0]


def test_bool_vectors_select_all_any():
    lib = compile_shader(
        HEADER
        + """
kernel void masks(device const float4* a [[buffer(0)]], device const float4* b [[buffer(1)]],
                  device float4* sel [[buffer(2)]], device int* flags [[buffer(3)]]) {
    bool4 m = a[0] < b[0];
    sel[0] = select(a[0], b[0], m);           // m ? b : a
    sel[1] = select(a[0], b[0], a[0] > b[0]); // a raw comparison result works too
    sel[2] = select(a[0], b[0], !m);
    sel[3] = select(a[0], b[0], isnan(a[0]));
    flags[0] = all(m); flags[1] = any(m); flags[2] = m.x; flags[3] = m[1];
    flags[4] = all(a[0] == a[0]); flags[5] = any(isinf(b[0]));
    flags[6] = sizeof(packed_float3); flags[7] = sizeof(float3); flags[8] = alignof(packed_float4);
    half2 h = half2(1.0f, 2.0f); flags[9] = all(h < half2(3.0f));
}
"""
    )
    a = np.array([1, 5, np.nan, 2], np.float32)
    b = np.array([2, 4, 1, np.inf], np.float32)
    sel = np.zeros((4, 4), np.float32)
    flags = np.zeros(10, np.int32)
    lib.masks(a, b, sel, flags, threads=1, group_size=1)
    m = a < b
    assert np.array_equal(sel[0], np.where(m, b, a), equal_nan=True)
    assert np.array_equal(sel[1], np.where(a > b, b, a), equal_nan=True)
    assert np.array_equal(sel[2], np.where(~m, b, a), equal_nan=True)
    assert np.array_equal(sel[3], np.where(np.isnan(a), b, a))
    assert flags.tolist() == [0, 1, 1, 0, 0, 1, 12, 16, 4, 1]


def test_functional_constructors_from_packed_vectors():
    lib = compile_shader(
        HEADER
        + """
struct Particle { packed_float3 pos; float mass; };   // 16 bytes, as on Apple GPUs
kernel void unpack(device const packed_float3* p [[buffer(0)]], device float4* f [[buffer(1)]],
                   device int4* i [[buffer(2)]], device const packed_half4* h [[buffer(3)]],
                   device const packed_uint2* u [[buffer(4)]], device const Particle* q [[buffer(5)]],
                   device packed_float3* out3 [[buffer(6)]], constant packed_float3* c [[buffer(7)]],
                   device float4* fc [[buffer(8)]], uint t [[thread_position_in_grid]]) {
    float3 a = float3(p[t]);                     // explicit functional constructor
    f[5 * t + 0] = float4(a, 1.0f);
    f[5 * t + 1] = float4(p[t], 2.0f);           // packed vector inside a concatenation
    f[5 * t + 2] = float4(2.0f, float3(p[t]).zy, float(p[t][0]));
    f[5 * t + 3] = float4(h[t]);                 // packed_half4 -> float4, element-wise
    f[5 * t + 4] = float4(float2(u[t]), float2(packed_float2(float2(1.5f, -2.5f))));
    i[2 * t + 0] = int4(int3(p[t]), 9);          // float -> int conversion, truncating
    i[2 * t + 1] = int4(half4(h[t]));
    float3 s = static_cast<float3>(p[t]) + float3(q[t].pos) * q[t].mass;
    out3[t] = packed_float3(s);
    float3 from_constant = c[t];                 // packed_float3 in a constant buffer
    fc[3 * t + 0] = float4(from_constant, 3.0f);
    fc[3 * t + 1] = float4(c[t], c[t][1]);
    fc[3 * t + 2] = float4(float3(c[t]) + p[t], as_type<float>(0x40800000u));
}
static_assert(__is_trivially_copyable(packed_float3), "packed_T3 stays trivially copyable");
"""
    )
    p = np.array([[1.5, -2.75, 3.25], [-4.5, 5.0, 7.875]], np.float32)   # 12-byte stride
    h = np.array([[0.5, 1.0, -1.5, 2.0], [3.0, -4.0, 5.5, 6.0]], np.float16)
    u = np.array([[7, 8], [9, 10]], np.uint32)
    q = np.zeros((2, 4), np.float32)
    q[:, :3], q[:, 3] = p[::-1], [2.0, -1.0]
    f = np.zeros((10, 4), np.float32)
    i = np.zeros((4, 4), np.int32)
    out3 = np.zeros((2, 3), np.float32)
    c = (p * -2).astype(np.float32)
    fc = np.zeros((6, 4), np.float32)
    lib.unpack(p, f, i, h, u, q, out3, c, fc, threads=2, group_size=2)
    for t in range(2):
        x, y, z = p[t]
        assert f[5 * t + 0].tolist() == [x, y, z, 1.0]
        assert f[5 * t + 1].tolist() == [x, y, z, 2.0]
        assert f[5 * t + 2].tolist() == [2.0, z, y, x]
        assert f[5 * t + 3].tolist() == h[t].astype(np.float32).tolist()
        assert f[5 * t + 4].tolist() == [*u[t].astype(np.float32), 1.5, -2.5]
        assert i[2 * t + 0].tolist() == [*np.trunc(p[t]).astype(np.int32), 9]
        assert i[2 * t + 1].tolist() == np.trunc(h[t].astype(np.float32)).astype(np.int32).tolist()
        np.testing.assert_array_equal(out3[t], p[t] + p[1 - t] * q[t, 3])
        assert fc[3 * t + 0].tolist() == [*c[t], 3.0]
        assert fc[3 * t + 1].tolist() == [*c[t], c[t, 1]]
        assert fc[3 * t + 2].tolist() == [*(c[t] + p[t]), 4.0]
