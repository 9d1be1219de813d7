// msltrans libdevice support (2 of 2): erfc, erfcx, erfinv, lgamma, cyl_bessel_i0/i1.
// Needs libdevice_basic.metal and msl_erf (elementwise_support.metal). Written for msltrans;
// coefficients from scripts/fit_libdevice.py. Accuracy (float32 ULP against float64,
// measured on the simulator): docs/semantics.md, "Math accuracy".
//
// erfcx(x) = exp(x^2) erfc(x) for x in [0.5, 10.06): on each piece [lo, hi) with midpoint m,
// K exp(Q(x - m)), K = erfcx(m); `shift` is subtracted inside the exponential (erfc passes
// the low part of x^2 there). Beyond 10.06: the asymptotic series (erfcx only).
constant float msl_erfcx_mid[4] = {1.25f, 3.0f, 5.25f, 8.28f};
constant float msl_erfcx_k[4] = {3.678229153e-01f, 1.790011525e-01f, 1.056127325e-01f,
                                 6.765239686e-02f};
constant float msl_erfcx_q[4][11] = {
    {3.090211420e-09f, -5.677239299e-01f, 1.291898340e-01f, -3.268701211e-02f,
     7.791961078e-03f, -1.606903854e-03f, 2.467878512e-04f, -1.023604636e-05f,
     -1.084244559e-05f, 5.523022992e-06f, -1.432799195e-06f},
    {-7.452213069e-09f, -3.037537038e-01f, 4.260578007e-02f, -7.411892060e-03f,
     1.353310770e-03f, -2.456907241e-04f, 4.308049029e-05f, -7.118530903e-06f,
     1.071845418e-06f, -1.334497739e-07f, 9.366404541e-09f},
    {2.839472835e-08f, -1.841202676e-01f, 1.641848125e-02f, -1.893418957e-03f,
     2.384379331e-04f, -3.109388126e-05f, 4.098664249e-06f, -5.377170851e-07f,
     6.977608535e-08f, -9.461387229e-09f, 1.166617913e-09f},
    {-4.751888127e-08f, -1.190723330e-01f, 6.991969422e-03f, -5.400721566e-04f,
     4.630767580e-05f, -4.179450116e-06f, 3.877155734e-07f, -3.641071800e-08f,
     3.449451613e-09f, -3.552255712e-10f, 3.384200212e-11f}};
inline float msl_erfcx_tail(float x, float shift) {  // x in [0.5, 10.06)
    int i = x < 2.0f ? 0 : (x < 4.0f ? 1 : (x < 6.5f ? 2 : 3));
    float t = x - msl_erfcx_mid[i];
    float q = msl_erfcx_q[i][10];
    for (int j = 9; j >= 0; --j) {
        q = fma(q, t, msl_erfcx_q[i][j]);
    }
    return msl_erfcx_k[i] * precise::exp(q - shift);
}
inline float msl_erfcx_asymptotic(float x) {  // x >= 10.06: (1 - 1/(2x^2) + 3/(4x^4) ...) / (x sqrt(pi))
    float r = 1.0f / (x * x);
    float s = fma(r, -29.53125f, 6.5625f);
    s = fma(r, s, -1.875f);
    s = fma(r, s, 0.75f);
    s = fma(r, s, -0.5f);
    s = fma(r, s, 1.0f);
    // 1/sqrt(pi) = 5.641896129e-01 - 2.931769139e-08 (hi + lo): the constant adds no error
    return fma(s, 5.641896129e-01f, s * -2.931769139e-08f) / x;
}
// exp(x^2) with x^2 split into a rounded part and its exact error (the error of a rounded
// x^2 would be amplified by up to 88x through the exponential).
inline float msl_exp_square(float x) {
    float hi = x * x;
    float lo = fma(x, x, -hi);
    float e = precise::exp(hi);
    return fma(e, lo, e);
}
inline float msl_erfc(float x) {
    if (isnan(x)) return x;
    float a = fabs(x);
    if (a < 0.5f) return 1.0f - msl_erf(x);
    float tail = 0.0f;  // erfc(a), a >= 0.5; 0 past 10.06 (below half the least subnormal)
    if (a < 10.06f) {
        float hi = a * a;
        float lo = fma(a, a, -hi);
        tail = precise::exp(-hi) * msl_erfcx_tail(a, lo);
    }
    return x > 0.0f ? tail : 2.0f - tail;
}
inline float msl_erfcx(float x) {
    if (isnan(x)) return x;
    if (x >= 10.06f) return msl_erfcx_asymptotic(x);
    if (x >= 0.5f) return msl_erfcx_tail(x, 0.0f);
    if (x < -9.4f) return INFINITY;  // 2 exp(x^2) overflows
    float e = msl_exp_square(x);
    if (x > -0.5f) return e * (1.0f - msl_erf(x));
    return fma(2.0f, e, -msl_erfcx_tail(-x, 0.0f));
}
// erfinv(x) = x P(w), w = -log(1 - x^2), for |x| <= 0.99; beyond, x T(sqrt(w) - 3).
inline float msl_erfinv(float x) {
    float a = fabs(x);
    if (!(a <= 1.0f)) return NAN;
    if (a == 1.0f) return copysign(INFINITY, x);
    float w;
    if (a < 0.5f) {
        w = -msl_log1p(-(x * x));
    } else {  // 1 - a^2 = (1 - a)(1 + a): 1 - a is exact; keep the rounding errors of the rest
        float b = 1.0f - a;
        float c = 1.0f + a;
        float c_err = a - (c - 1.0f);  // exact (Fast2Sum)
        float p = b * c;
        float p_err = fma(b, c, -p);
        w = -(precise::log(p) + fma(b, c_err, p_err) / p);
    }
    if (a <= 0.99f) {
        float p = -6.993973178e-10f;
        p = fma(p, w, 3.781890356e-09f);
        p = fma(p, w, 1.299353158e-07f);
        p = fma(p, w, -1.644708050e-06f);
        p = fma(p, w, 3.398512490e-06f);
        p = fma(p, w, 4.477440598e-05f);
        p = fma(p, w, -1.265644387e-04f);
        p = fma(p, w, -2.335777041e-03f);
        p = fma(p, w, 1.154949423e-02f);
        p = fma(p, w, 2.320136577e-01f);
        p = fma(p, w, 8.862269521e-01f);
        return x * p;
    }
    float s = precise::sqrt(w) - 3.0f;
    float p = 1.017474005e-05f;
    p = fma(p, s, 1.243266015e-04f);
    p = fma(p, s, -3.460774606e-04f);
    p = fma(p, s, -6.204980309e-05f);
    p = fma(p, s, 1.517441240e-03f);
    p = fma(p, s, -3.598320996e-03f);
    p = fma(p, s, 5.676874891e-03f);
    p = fma(p, s, -7.636518683e-03f);
    p = fma(p, s, 9.446277283e-03f);
    p = fma(p, s, 1.001674891e+00f);
    p = fma(p, s, 2.832976818e+00f);
    return x * p;
}
inline float msl_lgamma_near1(float t) {  // lgamma(1 + t), |t| <= 1/4
    float p = -1.069967225e-01f;
    p = fma(p, t, 1.159041896e-01f);
    p = fma(p, t, -1.101666540e-01f);
    p = fma(p, t, 1.244897619e-01f);
    p = fma(p, t, -1.440883875e-01f);
    p = fma(p, t, 1.695855111e-01f);
    p = fma(p, t, -2.073849887e-01f);
    p = fma(p, t, 2.705805004e-01f);
    p = fma(p, t, -4.006856382e-01f);
    p = fma(p, t, 8.224670291e-01f);
    p = fma(p, t, -5.772156715e-01f);
    return t * p;
}
inline float msl_lgamma_near2(float t) {  // lgamma(2 + t), t in [-3/4, 1/2]
    float p = -2.918534301e-05f;
    p = fma(p, t, 1.395222262e-05f);
    p = fma(p, t, -3.164223381e-05f);
    p = fma(p, t, 1.058306807e-04f);
    p = fma(p, t, -2.266238298e-04f);
    p = fma(p, t, 5.078204558e-04f);
    p = fma(p, t, -1.192324562e-03f);
    p = fma(p, t, 2.890736796e-03f);
    p = fma(p, t, -7.385576610e-03f);
    p = fma(p, t, 2.058079652e-02f);
    p = fma(p, t, -6.735230237e-02f);
    p = fma(p, t, 3.224670291e-01f);
    p = fma(p, t, 4.227843285e-01f);
    return t * p;
}
inline float msl_sinpi_abs(float x) {  // |sin(pi x)| for finite x
    float r = fabs(x - rint(x));  // exact, in [0, 1/2]
    float z = r * r;
    float p = 4.477674374e-04f;
    p = fma(p, z, -7.364221383e-03f);
    p = fma(p, z, 8.214485645e-02f);
    p = fma(p, z, -5.992644429e-01f);
    p = fma(p, z, 2.550163984e+00f);
    p = fma(p, z, -5.167712688e+00f);
    p = fma(p, z, 3.141592741e+00f);
    return r * p;
}
inline float msl_lgamma_positive(float x) {  // finite x > 0
    if (x < 0.25f) return msl_lgamma_near1(x) - precise::log(x);
    if (x < 0.75f) return msl_lgamma_near2(x - 1.0f) - precise::log(x);
    if (x <= 1.25f) return msl_lgamma_near1(x - 1.0f);
    if (x <= 2.5f) return msl_lgamma_near2(x - 2.0f);
    if (x < 10.0f) {  // lgamma(x) = lgamma(y) + log((x-1)(x-2)...y), y in (1.5, 2.5]
        float y = x;
        float prod = 1.0f;
        while (y > 2.5f) {
            y -= 1.0f;
            prod *= y;
        }
        return msl_lgamma_near2(y - 2.0f) + precise::log(prod);
    }
    // Stirling: (x - 1/2)(log x - 1) + (log(2 pi) - 1)/2 + 1/(12x) - 1/(360x^3) + ...
    float r = 1.0f / x;
    float r2 = r * r;
    float s = fma(r2, -5.952380952e-04f, 7.936507937e-04f);
    s = fma(r2, s, -2.777777778e-03f);
    s = fma(r2, s, 8.333333333e-02f);
    return fma(x - 0.5f, precise::log(x) - 1.0f, fma(r, s, 4.189385332e-01f));
}
// log|Gamma(x)|. Poles (0, negative integers) give +inf. Below -2.5 the reflection formula
// log(pi / |x sin(pi x)|) - lgamma(-x) is used; near lgamma's zeros there (one or two in
// every unit interval) the result is accurate in absolute terms, not relative ones.
inline float msl_lgamma(float x) {
    if (isnan(x)) return x;
    if (isinf(x)) return INFINITY;
    if (x > 0.0f) return msl_lgamma_positive(x);
    if (x == rint(x)) return INFINITY;
    if (x > -0.25f) return msl_lgamma_near1(x) - precise::log(-x);
    if (x > -0.75f) return msl_lgamma_near2(x) - msl_log1p(x) - precise::log(-x);
    if (x > -2.5f) {  // lgamma(x) = lgamma(y) - log|x (x+1) ... (y-1)|, y in [1/4, 5/4)
        float y = x;
        float prod = 1.0f;
        while (y < 0.25f) {
            prod *= y;
            y += 1.0f;  // exact for |x| < 2.5
        }
        return msl_lgamma_positive(y) - precise::log(fabs(prod));
    }
    float q = -x;
    return precise::log(3.141592654f / (msl_sinpi_abs(q) * q)) - msl_lgamma_positive(q);
}
// Modified Bessel functions of the first kind: the Taylor series in (x/2)^2 for |x| <= 8,
// exp(|x|) / sqrt(|x|) Q(8/|x|) beyond (exp(|x|/2) twice: no early overflow).
inline float msl_bessel_i_large(float a, float q) {
    float scaled = q / precise::sqrt(a);
    if (a < 88.0f) return precise::exp(a) * scaled;
    float e = precise::exp(0.5f * a);
    return (e * scaled) * e;
}
// sum_k c[k] y^k and its derivative at y = (x/2)^2 with y's rounding error (x^2 is split in
// a rounded part and its exact error): near |x| = 8 the series amplifies y's error 4x.
inline float msl_bessel_i_series(float a, constant float* c) {
    float hi = a * a;
    float lo = fma(a, a, -hi);
    float y = 0.25f * hi;
    float p = c[14];
    float dp = 0.0f;
    for (int k = 13; k >= 0; --k) {
        dp = fma(dp, y, p);
        p = fma(p, y, c[k]);
    }
    return fma(dp, 0.25f * lo, p);
}
constant float msl_i0_series[15] = {
    1.000000000e+00f, 1.000000000e+00f, 2.500000000e-01f, 2.777777798e-02f, 1.736111124e-03f,
    6.944444613e-05f, 1.929012342e-06f, 3.936759896e-08f, 6.151187337e-10f, 7.594058195e-12f,
    7.594058303e-14f, 6.276081094e-16f, 4.358389832e-18f, 2.578928945e-20f, 1.315780105e-22f};
constant float msl_i1_series[15] = {
    5.000000000e-01f, 2.500000000e-01f, 4.166666791e-02f, 3.472222248e-03f, 1.736111153e-04f,
    5.787037026e-06f, 1.377865999e-07f, 2.460474935e-09f, 3.417326144e-11f, 3.797029152e-13f,
    3.451844760e-15f, 2.615033899e-17f, 1.676303742e-19f, 9.210460231e-22f, 4.385933316e-24f};
inline float msl_i0(float x) {
    float a = fabs(x);
    if (a <= 8.0f) return msl_bessel_i_series(a, msl_i0_series);
    if (isinf(a)) return INFINITY;
    float t = 8.0f / a;
    float q = 3.893112250e-07f;
    q = fma(q, t, 2.489917051e-06f);
    q = fma(q, t, -4.679077847e-06f);
    q = fma(q, t, 8.074690413e-06f);
    q = fma(q, t, 8.411463568e-06f);
    q = fma(q, t, 5.767857147e-05f);
    q = fma(q, t, 4.382210318e-04f);
    q = fma(q, t, 6.233476102e-03f);
    q = fma(q, t, 3.989422917e-01f);
    return msl_bessel_i_large(a, q);
}
inline float msl_i1(float x) {
    float a = fabs(x);
    float r;
    if (a <= 8.0f) {
        r = a * msl_bessel_i_series(a, msl_i1_series);
    } else if (isinf(a)) {
        r = INFINITY;
    } else {
        float t = 8.0f / a;
        float q = -6.214797850e-07f;
        q = fma(q, t, -2.093012426e-06f);
        q = fma(q, t, 4.131801234e-06f);
        q = fma(q, t, -8.526555575e-06f);
        q = fma(q, t, -1.156157123e-05f);
        q = fma(q, t, -8.050605538e-05f);
        q = fma(q, t, -7.304145838e-04f);
        q = fma(q, t, -1.870042272e-02f);
        q = fma(q, t, 3.989422917e-01f);
        r = msl_bessel_i_large(a, q);
    }
    return copysign(r, x);
}
