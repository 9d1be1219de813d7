// msltrans fp8 support: fp8 values are bytes (uchar); these helpers decode and encode them
// (docs/semantics.md, "fp8"). Decoding is exact. Encoding rounds like Triton's NVIDIA
// backend (cvt.rn.satfinite): RTNE, finite overflow and +/-inf to +/-max, NaN to 0x7f.
// specials: 0 none (e2m1), 1 IEEE inf/NaN at the top exponent (e5m2), 2 only S.1111.111 is NaN
// (e4m3fn).
inline float msl_f8_decode(uchar b, uint mbits, uint bias, uint specials) {
    // Without branches: a dot's operands decode element by element in straight-line code.
    uint s = (uint(b) & 0x80u) << 24;
    uint e = (uint(b) & 0x7fu) >> mbits;
    uint m = uint(b) & ((1u << mbits) - 1u);
    uint emax = 0x7fu >> mbits;
    uint normal = s | ((e + 127u - bias) << 23) | (m << (23u - mbits));
    // subnormal: m * 2^(1 - bias - mbits), exact in float
    uint sub = s | as_type<uint>(float(m) * as_type<float>((128u - bias - mbits) << 23));
    uint bits = e == 0u ? sub : normal;
    if (specials == 2u)  // e4m3fn: S.1111.111 is NaN
        bits = (e == emax && m == (1u << mbits) - 1u) ? 0x7fffffffu : bits;
    if (specials == 1u)  // e5m2: inf and NaN
        bits = e == emax ? (m == 0u ? (s | 0x7f800000u) : 0x7fffffffu) : bits;
    return as_type<float>(bits);
}
inline float msl_f8e4m3_to_float(uchar b) { return msl_f8_decode(b, 3u, 7u, 2u); }
inline float msl_f8e5m2_to_float(uchar b) { return msl_f8_decode(b, 2u, 15u, 1u); }
// e2m1 (fp4): S.EE.M, bias 1, no inf/NaN; `nib` is the low 4 bits.
inline float msl_e2m1_to_float(uchar nib) { return msl_f8_decode(uchar(((nib & 0x8u) << 4) | (nib & 0x7u)), 1u, 1u, 0u); }
// Widening to half / bfloat is exact; NaN becomes the canonical 0x7fff, as on NVIDIA.
inline half msl_float_to_half_canon(float f) { return isnan(f) ? as_type<half>(ushort(0x7fffu)) : half(f); }
inline bfloat msl_float_to_bfloat_canon(float f) { return isnan(f) ? as_type<bfloat>(ushort(0x7fffu)) : bfloat(f); }
inline half msl_f8e4m3_to_half(uchar b) { return msl_float_to_half_canon(msl_f8e4m3_to_float(b)); }
inline half msl_f8e5m2_to_half(uchar b) { return msl_float_to_half_canon(msl_f8e5m2_to_float(b)); }

// float -> fp8 bits. rtz: truncate instead of RTNE (then +/-inf stays +/-inf when the format has
// one, as NVIDIA's f32 -> e5m2 rtz path does).
inline uchar msl_f8_encode(float x, uint mbits, uint bias, uint max_code, bool rtz, bool has_inf) {
    uint bits = as_type<uint>(x);
    uint s = (bits >> 24) & 0x80u;
    if (isnan(x)) return uchar(0x7fu);
    uint a = bits & 0x7fffffffu;
    if (rtz && has_inf && a == 0x7f800000u) return uchar(s | (max_code + 1u));
    float maxv = fabs(msl_f8_decode(uchar(max_code), mbits, bias, has_inf ? 1u : 2u));
    if (as_type<float>(a) >= maxv) return uchar(s | max_code);
    int e = int(a >> 23) - 127;
    if (e < -126) return uchar(s);  // float subnormals are far below the fp8 range
    int emin = 1 - int(bias);
    int eu = e > emin ? e : emin;
    uint shift = uint(23 - int(mbits) + (eu - e));
    if (shift > 25u) return uchar(s);  // below half the smallest fp8 subnormal
    uint mant = (a & 0x7fffffu) | 0x800000u;
    uint q = mant >> shift;
    uint rem = mant & ((1u << shift) - 1u);
    uint halfway = 1u << (shift - 1u);
    if (!rtz && (rem > halfway || (rem == halfway && (q & 1u) != 0u))) q += 1u;
    return uchar(s | ((uint(eu + int(bias) - 1) << mbits) + q));
}
inline uchar msl_float_to_f8e4m3(float x) { return msl_f8_encode(x, 3u, 7u, 0x7eu, false, false); }
inline uchar msl_float_to_f8e5m2(float x) { return msl_f8_encode(x, 2u, 15u, 0x7bu, false, true); }
inline uchar msl_float_to_f8e5m2_rtz(float x) { return msl_f8_encode(x, 2u, 15u, 0x7bu, true, true); }

// tt.dot_scaled operands (Triton's DecomposeScaledBlocked): the decoded value `v` (exact, as
// float) in the compute type, times the e8m0 scale 2^(s - 127) built as Triton builds it
// (s << 23 as fp32, so s = 0 gives 0, and for fp16 rounded RTNE to half), the product rounded
// once to the compute type; scale 0xff gives NaN.
inline bfloat msl_mx_bf16(float v) { return bfloat(v); }
inline half msl_mx_f16(float v) { return half(v); }
inline bfloat msl_mx_scaled_bf16(float v, uchar s) {
    if (s == uchar(0xffu)) return as_type<bfloat>(ushort(0x7fc0u));
    return bfloat(float(bfloat(v)) * as_type<float>(uint(s) << 23));
}
inline half msl_mx_scaled_f16(float v, uchar s) {
    if (s == uchar(0xffu)) return as_type<half>(ushort(0x7e00u));
    return half(float(half(v)) * float(half(as_type<float>(uint(s) << 23))));
}
inline bfloat msl_mx_scaled_bf16_fast(float v, uchar s) {  // fastMath: no NaN for 0xff
    return bfloat(float(bfloat(v)) * as_type<float>(uint(s) << 23));
}
inline half msl_mx_scaled_f16_fast(float v, uchar s) {
    return half(float(half(v)) * float(half(as_type<float>(uint(s) << 23))));
}
// fp8e4m3 scales (nvfp4): Triton converts the scale to the compute type (exact: every e4m3
// value is a bf16 and a half), the product rounded once; a NaN scale (0x7f / 0xff) gives the
// compute type's NaN unless fastMath.
inline bfloat msl_mx_scaled_e4m3_bf16(float v, uchar s) {
    if ((s & uchar(0x7fu)) == uchar(0x7fu)) return as_type<bfloat>(ushort(0x7fc0u));
    return bfloat(float(bfloat(v)) * msl_f8e4m3_to_float(s));
}
inline half msl_mx_scaled_e4m3_f16(float v, uchar s) {
    if ((s & uchar(0x7fu)) == uchar(0x7fu)) return as_type<half>(ushort(0x7e00u));
    return half(float(half(v)) * msl_f8e4m3_to_float(s));
}
inline bfloat msl_mx_scaled_e4m3_bf16_fast(float v, uchar s) {
    return bfloat(float(bfloat(v)) * msl_f8e4m3_to_float(s));
}
inline half msl_mx_scaled_e4m3_f16_fast(float v, uchar s) {
    return half(float(half(v)) * msl_f8e4m3_to_float(s));
}
