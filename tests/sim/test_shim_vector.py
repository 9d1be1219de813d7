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
