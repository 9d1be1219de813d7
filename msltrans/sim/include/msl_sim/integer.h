// metal_integer plus the functions shared by integer and float types (min, max, abs, clamp,
// select, all, any). Signed overflow never happens inside these helpers: they compute in the
// unsigned type and convert back (two's complement wrap, as the GPU does).
#ifndef MSL_SIM_INTEGER_H
#define MSL_SIM_INTEGER_H
#pragma clang system_header
#include "math.h"

namespace metal {
namespace __detail {
template <class S> using U_of = typename make_unsigned_scalar<S>::type;
template <class S> constexpr int bits_of = (int)sizeof(S) * 8;
template <class S> constexpr S max_of = is_signed_scalar<S>::value ? (S)((U_of<S>)~(U_of<S>)0 >> 1) : (S)~(U_of<S>)0;
template <class S> constexpr S min_of = is_signed_scalar<S>::value ? (S)(((U_of<S>)~(U_of<S>)0 >> 1) + 1) : (S)0;
// Saturating add/sub in the scalar type S.
template <class S> inline S sat_add(S a, S b) {
    S r;
    if (!__builtin_add_overflow(a, b, &r)) return r;
    return (!is_signed_scalar<S>::value || b > 0) ? max_of<S> : min_of<S>;
}
template <class S> inline S sat_sub(S a, S b) {
    S r;
    if (!__builtin_sub_overflow(a, b, &r)) return r;
    return (is_signed_scalar<S>::value && b < 0) ? max_of<S> : min_of<S>;
}
template <class S> inline S mul_hi(S a, S b) {
    if constexpr (sizeof(S) == 8) {
        typedef conditional_t<is_signed_scalar<S>::value, __int128, unsigned __int128> W;
        return (S)(((W)a * (W)b) >> 64);
    } else {
        typedef conditional_t<is_signed_scalar<S>::value, long, ulong> W;
        return (S)(((W)a * (W)b) >> bits_of<S>);
    }
}
}  // namespace __detail

template <class T> inline __detail::if_arith<T> min(T a, T b) {
    if constexpr (is_floating_point<T>::value) return fmin(a, b);
    else return __detail::map2(a, b, [](__detail::S_of<T> x, __detail::S_of<T> y) { return y < x ? y : x; });
}
template <class T> inline __detail::if_arith<T> max(T a, T b) {
    if constexpr (is_floating_point<T>::value) return fmax(a, b);
    else return __detail::map2(a, b, [](__detail::S_of<T> x, __detail::S_of<T> y) { return x < y ? y : x; });
}
// Non-template float forms, as for the math functions: max(x, 0) with a float x works.
inline float min(float a, float b) { return __detail::fmin_(a, b); }
inline float max(float a, float b) { return __detail::fmax_(a, b); }
template <class T> inline __detail::if_arith<T> min3(T a, T b, T c) { return min(min(a, b), c); }
template <class T> inline __detail::if_arith<T> max3(T a, T b, T c) { return max(max(a, b), c); }
template <class T> inline __detail::if_int<T> clamp(T x, T lo, T hi) { return min(max(x, lo), hi); }
template <class T> inline enable_if_t<is_integral<T>::value && is_vector<T>::value, T>
clamp(T x, __detail::S_of<T> lo, __detail::S_of<T> hi) { return clamp(x, (T)lo, (T)hi); }
template <class T> inline __detail::if_int<T> median3(T a, T b, T c) { return max(min(a, b), min(max(a, b), c)); }

template <class T> inline __detail::if_arith<T> abs(T x) {
    typedef __detail::S_of<T> S;
    if constexpr (is_floating_point<T>::value) return fabs(x);
    else if constexpr (is_signed_scalar<S>::value)
        return __detail::map1(x, [](S a) { return a < 0 ? (S)(0u - (__detail::U_of<S>)a) : a; });
    else return x;
}
template <class T> inline __detail::if_int<T> absdiff(T x, T y) {
    typedef __detail::S_of<T> S;
    return __detail::map2(x, y, [](S a, S b) {
        typedef __detail::U_of<S> U;
        return (S)(a > b ? (U)a - (U)b : (U)b - (U)a);
    });
}
template <class T> inline __detail::if_int<T> addsat(T x, T y) { return __detail::map2(x, y, __detail::sat_add<__detail::S_of<T>>); }
template <class T> inline __detail::if_int<T> subsat(T x, T y) { return __detail::map2(x, y, __detail::sat_sub<__detail::S_of<T>>); }
template <class T> inline __detail::if_int<T> mulhi(T x, T y) { return __detail::map2(x, y, __detail::mul_hi<__detail::S_of<T>>); }
template <class T> inline __detail::if_int<T> madhi(T x, T y, T z) { return mulhi(x, y) + z; }
template <class T> inline __detail::if_int<T> madsat(T x, T y, T z) {
    typedef __detail::S_of<T> S;
    return __detail::map3(x, y, z, [](S a, S b, S c) {
        S p;
        if (__builtin_mul_overflow(a, b, &p))   // saturate the product, then add
            p = (is_signed_scalar<S>::value && ((a < 0) != (b < 0))) ? __detail::min_of<S> : __detail::max_of<S>;
        return __detail::sat_add<S>(p, c);
    });
}
template <class T> inline __detail::if_int<T> hadd(T x, T y) {   // (x + y) >> 1 without overflow
    typedef __detail::S_of<T> S;
    return __detail::map2(x, y, [](S a, S b) { return (S)((a >> 1) + (b >> 1) + (a & b & 1)); });
}
template <class T> inline __detail::if_int<T> rhadd(T x, T y) {  // (x + y + 1) >> 1 without overflow
    typedef __detail::S_of<T> S;
    return __detail::map2(x, y, [](S a, S b) { return (S)((a >> 1) + (b >> 1) + ((a | b) & 1)); });
}
template <class T> inline __detail::if_int<T> mul24(T x, T y) { return x * y; }
template <class T> inline __detail::if_int<T> mad24(T x, T y, T z) { return x * y + z; }

template <class T> inline __detail::if_int<T> popcount(T x) {
    typedef __detail::S_of<T> S;
    return __detail::map1(x, [](S a) { return (S)__builtin_popcountg((__detail::U_of<S>)a); });
}
template <class T> inline __detail::if_int<T> clz(T x) {   // clz(0) = bit width
    typedef __detail::S_of<T> S;
    return __detail::map1(x, [](S a) { return (S)__builtin_clzg((__detail::U_of<S>)a, __detail::bits_of<S>); });
}
template <class T> inline __detail::if_int<T> ctz(T x) {   // ctz(0) = bit width
    typedef __detail::S_of<T> S;
    return __detail::map1(x, [](S a) { return (S)__builtin_ctzg((__detail::U_of<S>)a, __detail::bits_of<S>); });
}
template <class T> inline __detail::if_int<T> reverse_bits(T x) {
    typedef __detail::S_of<T> S;
    return __detail::map1(x, [](S a) {
        typedef __detail::U_of<S> U;
        U u = (U)a, r = 0;
        for (int i = 0; i < __detail::bits_of<S>; ++i) r = (U)((r << 1) | ((u >> i) & 1u));
        return (S)r;
    });
}
// rotate(x, n): rotate left by n modulo the bit width.
template <class T> inline __detail::if_int<T> rotate(T x, T n) {
    typedef __detail::S_of<T> S;
    return __detail::map2(x, n, [](S a, S b) {
        typedef __detail::U_of<S> U;
        unsigned k = (unsigned)((U)b % (U)__detail::bits_of<S>);
        U u = (U)a;
        return (S)(k == 0 ? u : (U)((u << k) | (u >> (__detail::bits_of<S> - k))));
    });
}
// extract_bits(x, offset, bits): the field, sign-extended for signed T; bits == 0 gives 0.
template <class T> inline __detail::if_int<T> extract_bits(T x, uint offset, uint bits) {
    typedef __detail::S_of<T> S;
    return __detail::map1(x, [offset, bits](S a) {
        typedef __detail::U_of<S> U;
        if (bits == 0) return (S)0;
        const int w = __detail::bits_of<S>;
        U u = (U)((U)a << (w - offset - bits));
        if constexpr (is_signed_scalar<S>::value) return (S)((S)u >> (w - bits));
        else return (S)(u >> (w - bits));
    });
}
template <class T> inline __detail::if_int<T> insert_bits(T base, T insert, uint offset, uint bits) {
    typedef __detail::S_of<T> S;
    return __detail::map2(base, insert, [offset, bits](S b, S i) {
        typedef __detail::U_of<S> U;
        if (bits == 0) return b;
        U mask = (U)((bits >= (uint)__detail::bits_of<S> ? (U)~(U)0 : (U)(((U)1 << bits) - 1)) << offset);
        return (S)(((U)b & (U)~mask) | (((U)i << offset) & mask));
    });
}

// select(a, b, c): c ? b : a lane-wise. c is a bool, a boolN, or a clang comparison result.
template <class T, class M> inline __detail::if_arith<T> select(T a, T b, M c) {
    if constexpr (__detail::N_of<T> == 1) {
        return __detail::truth(c, 0) ? b : a;
    } else {
        T r;
        for (int i = 0; i < __detail::N_of<T>; ++i)
            r[i] = __detail::truth(c, __detail::N_of<M> == 1 ? 0 : i) ? b[i] : a[i];
        return r;
    }
}
template <class M> inline bool all(M m) {
    for (int i = 0; i < __detail::N_of<M>; ++i) if (!__detail::truth(m, i)) return false;
    return true;
}
template <class M> inline bool any(M m) {
    for (int i = 0; i < __detail::N_of<M>; ++i) if (__detail::truth(m, i)) return true;
    return false;
}

namespace precise {
using metal::min; using metal::max; using metal::abs; using metal::select;
}
// fast:: is precise:: (fast min/max return the non-NaN operand, like precise).
namespace fast {
using namespace metal::precise;
}
}  // namespace metal
#endif
