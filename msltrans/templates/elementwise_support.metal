// msltrans elementwise support: IEEE min/max and rounding helpers (docs/semantics.md).
// NaN tests and sign tests go through float, which holds every half and bfloat exactly.
// maxNum/minNum with -0 < +0: precise::fmax/fmin (IEEE: a NaN operand loses; MSL leaves
// the sign of an equal-zero result open), and for equal operands the AND (max) / OR (min)
// of the bits, which is the other operand unless they are zeros of opposite sign.
template <typename T> inline T msl_maxnum(T a, T b);
template <typename T> inline T msl_minnum(T a, T b);
template <> inline float msl_maxnum<float>(float a, float b) {
    return a == b ? as_type<float>(as_type<uint>(a) & as_type<uint>(b)) : precise::fmax(a, b);
}
template <> inline float msl_minnum<float>(float a, float b) {
    return a == b ? as_type<float>(as_type<uint>(a) | as_type<uint>(b)) : precise::fmin(a, b);
}
template <> inline half msl_maxnum<half>(half a, half b) {
    return half(msl_maxnum<float>(float(a), float(b)));  // exact: the result is an operand
}
template <> inline half msl_minnum<half>(half a, half b) {
    return half(msl_minnum<float>(float(a), float(b)));
}
template <> inline bfloat msl_maxnum<bfloat>(bfloat a, bfloat b) {
    return bfloat(msl_maxnum<float>(float(a), float(b)));
}
template <> inline bfloat msl_minnum<bfloat>(bfloat a, bfloat b) {
    return bfloat(msl_minnum<float>(float(a), float(b)));
}
template <typename T> inline T msl_maximum(T a, T b) {  // NaN wins; -0 < +0
    if (isnan(float(a))) return a;
    if (isnan(float(b))) return b;
    return msl_maxnum(a, b);
}
template <typename T> inline T msl_minimum(T a, T b) {
    if (isnan(float(a))) return a;
    if (isnan(float(b))) return b;
    return msl_minnum(a, b);
}
// float -> half/bfloat rounded toward zero: round to nearest, then step one unit toward
// zero if that went away from zero (the bit pattern of a 16-bit float orders magnitudes,
// and stepping from inf gives the largest finite value, as NVIDIA's cvt.rz does).
template <typename T> inline T msl_round_to_zero(float x) {
    T r = T(x);
    if (fabs(float(r)) > fabs(x)) r = as_type<T>(ushort(as_type<ushort>(r) - ushort(1)));
    return r;
}
// fma of bfloat with one rounding, as NVIDIA's fma.rn.bf16 (Metal has no bfloat fma; half
// uses Metal's fma, correctly rounded by MSL Table 8.3, the same bits as this template's half
// instance): the product is exact in float (2x11 or 2x8 significant bits; bfloat products
// below 2^-126 excepted), the sum is rounded to odd using the exact TwoSum error, and
// round-to-odd at 24 bits followed by rounding to <= 11 bits equals one rounding of the
// exact value.
template <typename T> inline T msl_fma16(T a, T b, T c) {
    float p = float(a) * float(b);
    float s = p + float(c);
    float bb = s - p;
    float err = (p - (s - bb)) + (float(c) - bb);
    uint bits = as_type<uint>(s);
    if (err != 0.0f && isfinite(s) && (bits & 1u) == 0u)
        s = as_type<float>((err > 0.0f) == (s > 0.0f) ? bits + 1u : bits - 1u);
    return T(s);
}
// erf (Metal has none): msltrans's own least-squares fits (scripts/fit_erf.py), evaluated
// with fma. |x| <= 0.875: x + x*p(x^2); 0.875 < |x| < 3.93: 1 - exp(q(|x|)), q fitting
// log(erfc); beyond, erf rounds to +/-1 in float. Accuracy: docs/semantics.md, "Math accuracy".
inline float msl_erf(float a) {
    float t = fabs(a);
    if (t >= 3.93f) {
        return copysign(1.0f, a);
    }
    if (t > 0.875f) {
        float q = -6.586609658e-08f;
        q = fma(q, t, 1.576855539e-06f);
        q = fma(q, t, -1.498113488e-05f);
        q = fma(q, t, 5.536597382e-05f);
        q = fma(q, t, 2.001881658e-04f);
        q = fma(q, t, -3.721994581e-03f);
        q = fma(q, t, 2.458296902e-02f);
        q = fma(q, t, -1.079032496e-01f);
        q = fma(q, t, -6.334752440e-01f);
        q = fma(q, t, -1.129511476e+00f);
        q = fma(q, t, 1.814178831e-04f);
        return copysign(1.0f - precise::exp(q), a);
    }
    float s = a * a;
    float p = 8.725163934e-05f;
    p = fma(p, s, -8.223034674e-04f);
    p = fma(p, s, 5.207833834e-03f);
    p = fma(p, s, -2.686204948e-02f);
    p = fma(p, s, 1.128374264e-01f);
    p = fma(p, s, -3.761263788e-01f);
    p = fma(p, s, 1.283791661e-01f);
    return fma(p, a, a);
}
// Integer magnitude -> bfloat with one rounding. bfloat(float(m)) would round twice (to 24
// bits, then to 8); rounding to odd at 24 bits first (truncate, set the last kept bit if
// anything was dropped) makes the float conversion exact and the final rounding correct.
inline bfloat msl_u64_to_bf16(ulong m) {
    uint width = 64u - uint(clz(m));
    if (width > 24u) {
        uint sh = width - 24u;
        ulong dropped = m & ((1ul << sh) - 1ul);
        m = ((m >> sh) << sh) | (dropped != 0ul ? (1ul << sh) : 0ul);
    }
    return bfloat(float(m));
}
inline bfloat msl_i64_to_bf16(long x) {
    bfloat r = msl_u64_to_bf16(x < 0l ? 0ul - ulong(x) : ulong(x));
    return x < 0l ? -r : r;
}
// clamp(x, -b, b) as NVIDIA's min.xorsign.abs (which Triton emits on sm90 for that
// pattern): min(|x|, |b|) with the sign sign(x) ^ sign(b); a NaN x gives |b|, signed by x.
template <typename T> inline T msl_clip_abs(T x, T b) {
    float m = float(msl_minnum(T(fabs(float(x))), T(fabs(float(b)))));
    return T(signbit(float(x)) != signbit(float(b)) ? -fabs(m) : fabs(m));
}
