// metal_math / metal_common / metal_geometric for float, half, bfloat scalars and vectors.
// Every function computes in float with clang builtins (libm's float functions, resolved at
// load time) and, for half/bfloat, rounds once to the element type. metal::, metal::precise::
// and metal::fast:: are the same functions (see docs/simulator.md "Math").
#ifndef MSL_SIM_MATH_H
#define MSL_SIM_MATH_H
#pragma clang system_header
#include "lanes.h"

namespace metal {
namespace __detail {
template <class S> inline S rnd(float v) { return (S)v; }
// fmin/fmax as Metal specifies them: a NaN operand yields the other operand. For two zeros of
// opposite sign Metal leaves the result's sign open; the simulator returns the one that an
// order with -0 below +0 would not (fmax -> -0, fmin -> +0), so that MSL relying on that sign
// gives a wrong answer here rather than on some Apple GPU (docs/simulator.md "Math").
inline float fmin_(float a, float b) {
    if (a != a) return b;
    if (b != b) return a;
    if (a == b) return __builtin_signbit(a) ? b : a;
    return a < b ? a : b;
}
inline float fmax_(float a, float b) {
    if (a != a) return b;
    if (b != b) return a;
    if (a == b) return __builtin_signbit(a) ? a : b;
    return a > b ? a : b;
}
}  // namespace __detail

// Each function is a template (half, bfloat, float and their vectors) plus a non-template
// float overload (same expression, so nothing is instantiated eagerly), so that mixed calls
// such as pow(2, x) resolve as they do in Metal.
#define MSL_SIM_F1(name, expr)                                                         \
    template <class T> inline __detail::if_fp<T> name(T x) {                           \
        typedef __detail::S_of<T> S;                                                   \
        return __detail::map1(x, [](S a) -> S { float v = (float)a; return __detail::rnd<S>(expr); }); \
    }                                                                                  \
    inline float name(float v) { return (expr); }
#define MSL_SIM_F2(name, expr)                                                         \
    template <class T> inline __detail::if_fp<T> name(T x, T y) {                      \
        typedef __detail::S_of<T> S;                                                   \
        return __detail::map2(x, y, [](S a, S b) -> S {                                \
            float v = (float)a, w = (float)b; return __detail::rnd<S>(expr); });       \
    }                                                                                  \
    inline float name(float v, float w) { return (expr); }
#define MSL_SIM_F3(name, expr)                                                         \
    template <class T> inline __detail::if_fp<T> name(T x, T y, T z) {                 \
        typedef __detail::S_of<T> S;                                                   \
        return __detail::map3(x, y, z, [](S a, S b, S c) -> S {                        \
            float v = (float)a, w = (float)b, u = (float)c; return __detail::rnd<S>(expr); }); \
    }                                                                                  \
    inline float name(float v, float w, float u) { return (expr); }

MSL_SIM_F1(acos, __builtin_acosf(v))
MSL_SIM_F1(acosh, __builtin_acoshf(v))
MSL_SIM_F1(asin, __builtin_asinf(v))
MSL_SIM_F1(asinh, __builtin_asinhf(v))
MSL_SIM_F1(atan, __builtin_atanf(v))
MSL_SIM_F1(atanh, __builtin_atanhf(v))
MSL_SIM_F1(cbrt, __builtin_cbrtf(v))
MSL_SIM_F1(ceil, __builtin_ceilf(v))
MSL_SIM_F1(cos, __builtin_cosf(v))
MSL_SIM_F1(cosh, __builtin_coshf(v))
MSL_SIM_F1(cospi, __builtin_cosf(v * 3.14159265358979f))
MSL_SIM_F1(exp, __builtin_expf(v))
MSL_SIM_F1(exp2, __builtin_exp2f(v))
MSL_SIM_F1(exp10, __builtin_exp10f(v))
MSL_SIM_F1(fabs, __builtin_fabsf(v))
MSL_SIM_F1(floor, __builtin_floorf(v))
// fract: x - floor(x), kept below 1 (Metal: min(x - floor(x), 0x1.fffffep-1f)); NaN stays NaN.
MSL_SIM_F1(fract, __detail::fmin_(v - __builtin_floorf(v), 0x1.fffffep-1f) + (v - v))
MSL_SIM_F1(log, __builtin_logf(v))
MSL_SIM_F1(log2, __builtin_log2f(v))
MSL_SIM_F1(log10, __builtin_log10f(v))
MSL_SIM_F1(rint, __builtin_rintf(v))
MSL_SIM_F1(round, __builtin_roundf(v))
MSL_SIM_F1(rsqrt, 1.0f / __builtin_sqrtf(v))
MSL_SIM_F1(sin, __builtin_sinf(v))
MSL_SIM_F1(sinh, __builtin_sinhf(v))
MSL_SIM_F1(sinpi, __builtin_sinf(v * 3.14159265358979f))
MSL_SIM_F1(sqrt, __builtin_sqrtf(v))
MSL_SIM_F1(tan, __builtin_tanf(v))
MSL_SIM_F1(tanh, __builtin_tanhf(v))
MSL_SIM_F1(tanpi, __builtin_tanf(v * 3.14159265358979f))
MSL_SIM_F1(trunc, __builtin_truncf(v))
MSL_SIM_F1(saturate, __detail::fmin_(__detail::fmax_(v, 0.0f), 1.0f))
MSL_SIM_F1(sign, v > 0.0f ? 1.0f : v < 0.0f ? -1.0f : v == v ? v * 0.0f : 0.0f)
MSL_SIM_F1(degrees, v * 57.2957795130823f)
MSL_SIM_F1(radians, v * 0.0174532925199433f)
MSL_SIM_F2(atan2, __builtin_atan2f(v, w))
MSL_SIM_F2(copysign, __builtin_copysignf(v, w))
MSL_SIM_F2(fdim, __builtin_fdimf(v, w))
// fmax/fmin/max/min: a NaN loses; opposite zeros give the unordered one (see fmin_ above).
MSL_SIM_F2(fmax, __detail::fmax_(v, w))
MSL_SIM_F2(fmin, __detail::fmin_(v, w))
MSL_SIM_F2(fmod, __builtin_fmodf(v, w))
MSL_SIM_F2(pow, __builtin_powf(v, w))
MSL_SIM_F2(powr, __builtin_powf(v, w))
MSL_SIM_F2(nextafter, __builtin_nextafterf(v, w))
MSL_SIM_F2(step, w < v ? 0.0f : 1.0f)
MSL_SIM_F2(divide, v / w)
MSL_SIM_F3(fmax3, __detail::fmax_(__detail::fmax_(v, w), u))
MSL_SIM_F3(fmin3, __detail::fmin_(__detail::fmin_(v, w), u))
MSL_SIM_F3(median3, __detail::fmax_(__detail::fmin_(v, w), __detail::fmin_(__detail::fmax_(v, w), u)))
// mix(x, y, a) = x + (y - x) * a, as Metal documents it.
MSL_SIM_F3(mix, v + (w - v) * u)
MSL_SIM_F3(smoothstep, ({ float t = __detail::fmin_(__detail::fmax_((u - v) / (w - v), 0.0f), 1.0f); t * t * (3.0f - 2.0f * t); }))
#undef MSL_SIM_F1
#undef MSL_SIM_F2
#undef MSL_SIM_F3

// fma rounds once (MSL Table 8.3: correctly rounded for float and half). For half an fmaf
// of the widened inputs rounded to half would round twice: the product (2x11 significant
// bits) is exact in float, the sum is not, and a float sum that lands on a half midpoint
// then rounds to even the wrong way. So the float sum is rounded to odd instead (TwoSum
// gives its exact error; an inexact sum with an even last bit steps one unit toward the
// exact value): rounding to odd at 24 bits, then to nearest at <= 11 bits, is one rounding
// of the exact value. bfloat takes the same path (its product is exact in float unless it
// falls below 2^-126).
namespace __detail {
template <class S> inline S fma_(S a, S b, S c) {
    if constexpr (sizeof(S) == 4) {
        return __builtin_fmaf(a, b, c);
    } else {
        float p = (float)a * (float)b, z = (float)c;
        float s = p + z;
        float back = s - p;
        float err = (p - (s - back)) + (z - back);
        unsigned int bits = __builtin_bit_cast(unsigned int, s);
        if (err != 0.0f && __builtin_isfinite(s) && (bits & 1u) == 0u)
            s = __builtin_bit_cast(float, (err > 0.0f) == (s > 0.0f) ? bits + 1u : bits - 1u);
        return (S)s;
    }
}
}  // namespace __detail
template <class T> inline __detail::if_fp<T> fma(T x, T y, T z) {
    typedef __detail::S_of<T> S;
    return __detail::map3(x, y, z, [](S a, S b, S c) -> S { return __detail::fma_<S>(a, b, c); });
}
inline float fma(float v, float w, float u) { return __builtin_fmaf(v, w, u); }

// Scalar-argument forms Metal also has (vector x, scalar bounds / weight / edge).
template <class T> inline __detail::if_fp<T> clamp(T x, T lo, T hi) { return fmin(fmax(x, lo), hi); }
template <class T> inline enable_if_t<is_floating_point<T>::value && is_vector<T>::value, T>
clamp(T x, __detail::S_of<T> lo, __detail::S_of<T> hi) { return clamp(x, (T)lo, (T)hi); }
template <class T> inline enable_if_t<is_floating_point<T>::value && is_vector<T>::value, T>
mix(T x, T y, __detail::S_of<T> a) { return mix(x, y, (T)a); }
template <class T> inline enable_if_t<is_floating_point<T>::value && is_vector<T>::value, T>
step(__detail::S_of<T> edge, T x) { return step((T)edge, x); }
template <class T> inline __detail::if_fp<T> ldexp(T x, int k) {
    typedef __detail::S_of<T> S;
    return __detail::map1(x, [k](S a) -> S { return (S)__builtin_ldexpf((float)a, k); });
}
template <class T> inline __detail::if_fp<T> modf(T x, thread __detail::same_t<T> &ip) { ip = trunc(x); return x - ip; }
template <class T> inline __detail::if_fp<T> sincos(T x, thread __detail::same_t<T> &c) { c = cos(x); return sin(x); }

// Relational: bool for scalars, boolN for vectors.
template <class T> inline __detail::if_fp<T, __detail::bool_of<T>> isnan(T x) {
    return __detail::test1(x, [](__detail::S_of<T> a) { return a != a; });
}
template <class T> inline __detail::if_fp<T, __detail::bool_of<T>> isinf(T x) {
    return __detail::test1(x, [](__detail::S_of<T> a) { return __builtin_isinf((float)a); });
}
template <class T> inline __detail::if_fp<T, __detail::bool_of<T>> isfinite(T x) {
    return __detail::test1(x, [](__detail::S_of<T> a) { return __builtin_isfinite((float)a); });
}
template <class T> inline __detail::if_fp<T, __detail::bool_of<T>> isnormal(T x) {
    typedef __detail::S_of<T> S;
    return __detail::test1(x, [](S a) {   // normal in T's own format, not in float
        float f = __builtin_fabsf((float)a);
        float least = is_same<S, half>::value ? 0x1p-14f : 0x1p-126f;
        return f >= least && __builtin_isfinite(f);
    });
}
template <class T> inline __detail::if_fp<T, __detail::bool_of<T>> signbit(T x) {
    return __detail::test1(x, [](__detail::S_of<T> a) { return __builtin_signbit((float)a) != 0; });
}
template <class T> inline __detail::if_fp<T, __detail::bool_of<T>> isunordered(T x, T y) {
    return __detail::test1(x != x || y != y, [](auto m) { return m != 0; });
}
template <class T> inline __detail::if_fp<T, __detail::bool_of<T>> isordered(T x, T y) {
    return __detail::test1(x == x && y == y, [](auto m) { return m != 0; });
}

// Geometric. dot is the lane-order sum of separately rounded products (no contraction);
// half/bfloat inputs are accumulated in float and rounded once.
template <class T> inline enable_if_t<is_floating_point<T>::value, __detail::S_of<T>> dot(T x, T y) {
    float acc = 0.0f;
    for (int i = 0; i < __detail::N_of<T>; ++i) acc += (float)__detail::lane(x, i) * (float)__detail::lane(y, i);
    return (__detail::S_of<T>)acc;
}
template <class T> inline enable_if_t<is_floating_point<T>::value, __detail::S_of<T>> length_squared(T x) { return dot(x, x); }
template <class T> inline enable_if_t<is_floating_point<T>::value, __detail::S_of<T>> length(T x) {
    float acc = 0.0f;
    for (int i = 0; i < __detail::N_of<T>; ++i) { float v = (float)__detail::lane(x, i); acc += v * v; }
    return (__detail::S_of<T>)__builtin_sqrtf(acc);
}
template <class T> inline enable_if_t<is_floating_point<T>::value, __detail::S_of<T>> distance(T x, T y) { return length(x - y); }
template <class T> inline __detail::if_fp<T> normalize(T x) {
    typedef __detail::S_of<T> S;
    float acc = 0.0f;
    for (int i = 0; i < __detail::N_of<T>; ++i) { float v = (float)__detail::lane(x, i); acc += v * v; }
    float inv = 1.0f / __builtin_sqrtf(acc);
    return __detail::map1(x, [inv](S a) -> S { return (S)((float)a * inv); });
}
template <class T> inline enable_if_t<is_floating_point<T>::value && __detail::N_of<T> == 3, T> cross(T a, T b) {
    return T{a.y * b.z - a.z * b.y, a.z * b.x - a.x * b.z, a.x * b.y - a.y * b.x};
}

}  // namespace metal

// Not in Metal (MSL has no erf/erfc; PyTorch's c10/metal brings its own): a simulator
// extension, kept out of metal:: so that code relying on it cannot pass for portable MSL.
namespace msl_sim {
template <class T> inline metal::__detail::if_fp<T> erf(T x) {
    typedef metal::__detail::S_of<T> S;
    return metal::__detail::map1(x, [](S a) -> S { return (S)__builtin_erff((float)a); });
}
template <class T> inline metal::__detail::if_fp<T> erfc(T x) {
    typedef metal::__detail::S_of<T> S;
    return metal::__detail::map1(x, [](S a) -> S { return (S)__builtin_erfcf((float)a); });
}
}  // namespace msl_sim

namespace metal {
namespace precise {
using metal::acos; using metal::acosh; using metal::asin; using metal::asinh; using metal::atan;
using metal::atanh; using metal::atan2; using metal::cbrt; using metal::ceil; using metal::cos;
using metal::cosh; using metal::cospi; using metal::exp; using metal::exp2; using metal::exp10;
using metal::fabs; using metal::floor; using metal::fract; using metal::log; using metal::log2;
using metal::log10; using metal::rint; using metal::round; using metal::rsqrt; using metal::sin;
using metal::sinh; using metal::sinpi; using metal::sqrt; using metal::tan; using metal::tanh;
using metal::tanpi; using metal::trunc; using metal::copysign; using metal::fdim; using metal::fmax;
using metal::fmin; using metal::fmod; using metal::pow; using metal::powr; using metal::fma;
using metal::clamp; using metal::saturate; using metal::divide; using metal::ldexp; using metal::modf;
using metal::sincos; using metal::normalize; using metal::length; using metal::distance;
using metal::fmax3; using metal::fmin3; using metal::median3; using metal::nextafter;
}  // namespace precise
}  // namespace metal
#endif
