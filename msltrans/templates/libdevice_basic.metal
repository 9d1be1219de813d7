// msltrans libdevice support (1 of 2): ilogb, ldexp, nextafter (exact, bit operations),
// expm1, log1p, hypot. Written for msltrans; polynomial coefficients from
// scripts/fit_libdevice.py. Accuracy (float32 ULP against float64, measured on the
// simulator): docs/semantics.md, "Math accuracy".
inline float msl_pow2(int k) {  // 2^k, exact, for k in [-126, 127]
    return as_type<float>(uint(k + 127) << 23);
}
// CUDA's ilogbf: the unbiased exponent; INT_MIN for zero and NaN, INT_MAX for infinity.
inline int msl_ilogb(float x) {
    uint b = as_type<uint>(x) & 0x7fffffffu;
    if (b == 0u || b > 0x7f800000u) return -2147483647 - 1;  // INT_MIN
    if (b == 0x7f800000u) return 2147483647;  // INT_MAX
    int e = int(b >> 23);
    return e != 0 ? e - 127 : -118 - int(clz(b));  // subnormal: 2^-149 * b
}
// x * 2^n with a single rounding (only a subnormal result rounds), as IEEE scalbn.
inline float msl_ldexp(float x, int n) {
    uint b = as_type<uint>(x);
    uint e = (b >> 23) & 0xffu;
    if (e == 0xffu || (b << 1) == 0u) return x;  // NaN, infinities, signed zeros
    n = clamp(n, -400, 400);  // beyond, every float gives zero or infinity anyway
    if (e == 0u) {  // subnormal x: normalise exactly first
        x = x * msl_pow2(25);
        n -= 25;
        b = as_type<uint>(x);
        e = (b >> 23) & 0xffu;
    }
    int ne = int(e) + n;
    uint sign_mantissa = b & 0x807fffffu;
    if (ne >= 255) return copysign(INFINITY, x);
    if (ne > 0) return as_type<float>(sign_mantissa | (uint(ne) << 23));
    if (ne < -24) return copysign(0.0f, x);  // below half the smallest subnormal
    return as_type<float>(sign_mantissa | (uint(ne + 64) << 23)) * msl_pow2(-64);
}
// The float next to x in the direction of y (y itself when x == y; NaN if either is NaN).
inline float msl_nextafter(float x, float y) {
    if (isnan(x) || isnan(y)) return x + y;
    if (x == y) return y;
    if (x == 0.0f) return copysign(as_type<float>(1u), y);
    uint b = as_type<uint>(x);
    return as_type<float>((x < y) == (x > 0.0f) ? b + 1u : b - 1u);
}
// expm1 on |r| <= 1/2: r + r^2 q(r).
inline float msl_expm1_core(float r) {
    float q = 2.493975444e-05f;
    q = fma(q, r, 1.996219798e-04f);
    q = fma(q, r, 1.388867269e-03f);
    q = fma(q, r, 8.333181962e-03f);
    q = fma(q, r, 4.166666791e-02f);
    q = fma(q, r, 1.666666716e-01f);
    q = fma(q, r, 5.000000000e-01f);
    return fma(r * r, q, r);
}
// expm1(x) = 2^k (expm1(r) + 1) - 1 with x = k ln2 + r (Cody-Waite, ln2 in two parts)
// beyond |x| < 1/2.
inline float msl_expm1(float x) {
    if (isnan(x)) return x;
    if (x > 89.0f) return INFINITY;
    if (x < -17.5f) return -1.0f;  // e^x < 2^-25: expm1 rounds to -1
    if (fabs(x) < 0.5f) return msl_expm1_core(x);
    float k = rint(x * 1.442695041f);
    float r = fma(k, -6.931457519e-01f, x);  // exact: k * ln2_hi has <= 23 bits
    r = fma(k, -1.428606765e-06f, r);
    float p = msl_expm1_core(r);
    int ki = int(k);
    if (ki == 0) return p;
    if (ki > 127) {
        float t = msl_pow2(127);
        return fma(t, p, t) * 2.0f;
    }
    float t = msl_pow2(ki);
    if (ki < -24) return fma(t, p, t) - 1.0f;  // e^x is below half an ulp of -1
    if (ki > 24) return fma(t, p, -1.0f) + t;  // t p - 1 rounds at most at half t's ulp
    return fma(t, p, t - 1.0f);  // t - 1 is exact for |k| <= 24
}
// log1p(x) = k ln2 + log(1 + f) + c: 1 + x = 2^k (1 + f) with 1 + f in [sqrt(2)/2, sqrt(2)),
// c the rounding error of 1 + x (Fast2Sum) divided by it; log(1 + f) = f - (hfsq - s (hfsq + R(s^2))),
// s = f / (2 + f), hfsq = f^2 / 2. ln2 = 6.9313812256e-01 + 9.0580006145e-06.
inline float msl_log1p(float x) {
    if (!(x >= -1.0f)) return NAN;  // x < -1 or NaN
    if (x == -1.0f) return -INFINITY;
    if (isinf(x)) return x;
    float f = x;
    float c = 0.0f;
    int k = 0;
    if (!(x > -0.2928932188f && x < 0.4142135624f)) {
        float u = 1.0f + x;
        uint b = as_type<uint>(u);
        k = int(b >> 23) - 127;
        uint m = b & 0x007fffffu;
        if (m > 0x3504f3u) {  // mantissa above sqrt(2): take 1 + f in [sqrt(2)/2, 1)
            m |= 0x3f000000u;
            k += 1;
        } else {
            m |= 0x3f800000u;
        }
        f = as_type<float>(m) - 1.0f;  // exact
        if (k < 25) c = (x < 1.0f ? x - (u - 1.0f) : 1.0f - (u - x)) / u;  // exact error of 1 + x
    }
    float s = f / (2.0f + f);
    float z = s * s;
    float r = 2.331527919e-01f;
    r = fma(r, z, 2.855153680e-01f);
    r = fma(r, z, 4.000011384e-01f);
    r = fma(r, z, 6.666666865e-01f);
    r = r * z;
    float hfsq = 0.5f * f * f;
    float kf = float(k);
    return fma(kf, 6.9313812256e-01f,
               f - (hfsq - (s * (hfsq + r) + fma(kf, 9.0580006145e-06f, c))));
}
// sqrt(x^2 + y^2) without overflow or underflow: both scaled by the same power of two, the
// square root corrected by one Newton step on the exactly computed residual h^2 - a^2 - b^2.
inline float msl_hypot(float x, float y) {
    float a = fabs(x);
    float b = fabs(y);
    if (isinf(a) || isinf(b)) return INFINITY;  // even if the other one is NaN (C99)
    if (isnan(a) || isnan(b)) return a + b;
    float hi = fmax(a, b);
    float lo = fmin(a, b);
    if (lo == 0.0f) return hi;
    int e = msl_ilogb(hi);
    hi = msl_ldexp(hi, -e);  // in [1, 2)
    lo = msl_ldexp(lo, -e);
    float h = precise::sqrt(fma(hi, hi, lo * lo));
    float h2 = h * h;
    float hi2 = hi * hi;
    float t = fma(-lo, lo, h2 - hi2);  // h2 - hi2 is exact (Sterbenz)
    float residual = t + fma(h, h, -h2) - fma(hi, hi, -hi2);
    h = h - residual / (2.0f * h);
    return msl_ldexp(h, e);
}
