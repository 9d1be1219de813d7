// MSL's limit macros (metal_types) and metal::numeric_limits.
#ifndef MSL_SIM_LIMITS_H
#define MSL_SIM_LIMITS_H
#pragma clang system_header
#include "traits.h"

#define CHAR_BIT 8
#define SCHAR_MAX 127
#define SCHAR_MIN (-128)
#define UCHAR_MAX 255
#define CHAR_MAX SCHAR_MAX
#define CHAR_MIN SCHAR_MIN
#define USHRT_MAX 65535
#define SHRT_MAX 32767
#define SHRT_MIN (-32768)
#define UINT_MAX 0xffffffffu
#define INT_MAX 2147483647
#define INT_MIN (-2147483647 - 1)
#define ULONG_MAX 0xffffffffffffffffUL
#define LONG_MAX 0x7fffffffffffffffL
#define LONG_MIN (-0x7fffffffffffffffL - 1)
#define FLT_DIG 6
#define FLT_MANT_DIG 24
#define FLT_MAX_10_EXP 38
#define FLT_MAX_EXP 128
#define FLT_MIN_10_EXP (-37)
#define FLT_MIN_EXP (-125)
#define FLT_RADIX 2
#define FLT_MAX 0x1.fffffep127f
#define FLT_MIN 0x1p-126f
#define FLT_EPSILON 0x1p-23f
#define HALF_DIG 3
#define HALF_MANT_DIG 11
#define HALF_MAX ((half)0x1.ffcp15f)
#define HALF_MIN ((half)0x1p-14f)
#define HALF_EPSILON ((half)0x1p-10f)
#define BFLOAT_MAX ((bfloat)0x1.fep127f)
#define BFLOAT_MIN ((bfloat)0x1p-126f)
#define BFLOAT_EPSILON ((bfloat)0x1p-7f)
#define MAXFLOAT 0x1.fffffep127f
#define MAXHALF HALF_MAX
#define INFINITY __builtin_inff()
#define HUGE_VALF __builtin_huge_valf()
#define NAN __builtin_nanf("")
#define M_E_F 2.71828182845904523536f
#define M_LOG2E_F 1.44269504088896340736f
#define M_LOG10E_F 0.434294481903251827651f
#define M_LN2_F 0.693147180559945309417f
#define M_LN10_F 2.30258509299404568402f
#define M_PI_F 3.14159265358979323846f
#define M_PI_2_F 1.57079632679489661923f
#define M_PI_4_F 0.785398163397448309616f
#define M_1_PI_F 0.318309886183790671538f
#define M_2_PI_F 0.636619772367581343076f
#define M_2_SQRTPI_F 1.12837916709551257390f
#define M_SQRT2_F 1.41421356237309504880f
#define M_SQRT1_2_F 0.707106781186547524401f
#define M_E_H ((half)M_E_F)
#define M_PI_H ((half)M_PI_F)
#define M_SQRT2_H ((half)M_SQRT2_F)
#define M_LN2_H ((half)M_LN2_F)
#define M_LOG2E_H ((half)M_LOG2E_F)

namespace metal {
template <class T> struct numeric_limits { static constexpr bool is_specialized = false; };
#define MSL_SIM_ILIMITS(T, lo, hi, dig, sgn)                                              \
    template <> struct numeric_limits<T> {                                               \
        static constexpr bool is_specialized = true, is_signed = sgn, is_integer = true;  \
        static constexpr bool has_infinity = false, has_quiet_NaN = false;               \
        static constexpr int digits = dig;                                                \
        static constexpr T min() { return lo; }                                          \
        static constexpr T lowest() { return lo; }                                       \
        static constexpr T max() { return hi; }                                          \
        static constexpr T epsilon() { return 0; }                                       \
    };
MSL_SIM_ILIMITS(bool, false, true, 1, false)
MSL_SIM_ILIMITS(char, SCHAR_MIN, SCHAR_MAX, 7, true)
MSL_SIM_ILIMITS(uchar, 0, UCHAR_MAX, 8, false)
MSL_SIM_ILIMITS(short, SHRT_MIN, SHRT_MAX, 15, true)
MSL_SIM_ILIMITS(ushort, 0, USHRT_MAX, 16, false)
MSL_SIM_ILIMITS(int, INT_MIN, INT_MAX, 31, true)
MSL_SIM_ILIMITS(uint, 0, UINT_MAX, 32, false)
MSL_SIM_ILIMITS(long, LONG_MIN, LONG_MAX, 63, true)
MSL_SIM_ILIMITS(ulong, 0, ULONG_MAX, 64, false)
#undef MSL_SIM_ILIMITS
#define MSL_SIM_FLIMITS(T, mn, mx, eps, dn, dig)                                          \
    template <> struct numeric_limits<T> {                                               \
        static constexpr bool is_specialized = true, is_signed = true, is_integer = false;\
        static constexpr bool has_infinity = true, has_quiet_NaN = true;                 \
        static constexpr int digits = dig;                                                \
        static constexpr T min() { return (T)mn; }                                       \
        static constexpr T lowest() { return (T)-mx; }                                   \
        static constexpr T max() { return (T)mx; }                                       \
        static constexpr T epsilon() { return (T)eps; }                                  \
        static constexpr T denorm_min() { return (T)dn; }                                \
        static constexpr T infinity() { return (T)__builtin_inff(); }                    \
        static constexpr T quiet_NaN() { return (T)__builtin_nanf(""); }                 \
        static constexpr T signaling_NaN() { return (T)__builtin_nansf(""); }            \
    };
MSL_SIM_FLIMITS(float, 0x1p-126f, 0x1.fffffep127f, 0x1p-23f, 0x1p-149f, 24)
MSL_SIM_FLIMITS(half, 0x1p-14f, 0x1.ffcp15f, 0x1p-10f, 0x1p-24f, 11)
MSL_SIM_FLIMITS(bfloat, 0x1p-126f, 0x1.fep127f, 0x1p-7f, 0x1p-133f, 8)
#undef MSL_SIM_FLIMITS
template <class T> struct numeric_limits<const T> : numeric_limits<T> {};
}  // namespace metal
#endif
