// metal_type_traits: the <type_traits> subset MSL code uses, plus Metal's vector traits
// (is_vector, vec_elements, make_scalar). Self-contained: no C++ standard library here.
#ifndef MSL_SIM_TRAITS_H
#define MSL_SIM_TRAITS_H
#pragma clang system_header
#include "types.h"

namespace metal {
template <class T, T V> struct integral_constant {
    static constexpr T value = V;
    typedef T value_type;
    constexpr operator T() const { return V; }
};
template <bool B> using bool_constant = integral_constant<bool, B>;
typedef bool_constant<true> true_type;
typedef bool_constant<false> false_type;

template <bool B, class T = void> struct enable_if {};
template <class T> struct enable_if<true, T> { typedef T type; };
template <bool B, class T = void> using enable_if_t = typename enable_if<B, T>::type;
template <bool B, class T, class F> struct conditional { typedef T type; };
template <class T, class F> struct conditional<false, T, F> { typedef F type; };
template <bool B, class T, class F> using conditional_t = typename conditional<B, T, F>::type;

template <class A, class B> struct is_same : false_type {};
template <class A> struct is_same<A, A> : true_type {};
template <class T> struct remove_const { typedef T type; };
template <class T> struct remove_const<const T> { typedef T type; };
template <class T> struct remove_volatile { typedef T type; };
template <class T> struct remove_volatile<volatile T> { typedef T type; };
template <class T> struct remove_cv { typedef typename remove_volatile<typename remove_const<T>::type>::type type; };
template <class T> struct remove_reference { typedef T type; };
template <class T> struct remove_reference<T &> { typedef T type; };
template <class T> struct remove_reference<T &&> { typedef T type; };
template <class T> using remove_cv_t = typename remove_cv<T>::type;
template <class T> using remove_reference_t = typename remove_reference<T>::type;
template <class T> using remove_cvref_t = remove_cv_t<remove_reference_t<T>>;
template <class T> T &&declval() noexcept;
template <class T> constexpr T &&forward(remove_reference_t<T> &t) noexcept { return (T &&)t; }
template <class T> constexpr remove_reference_t<T> &&move(T &&t) noexcept { return (remove_reference_t<T> &&)t; }

// Vectors: clang ext_vector_type; N deduced by partial specialisation.
template <class T> struct vec_elements : integral_constant<int, 1> { typedef T scalar; };
template <class T, int N> struct vec_elements<T __attribute__((ext_vector_type(N)))>
    : integral_constant<int, N> { typedef T scalar; };
template <class T> struct vec_elements<const T> : vec_elements<T> {};
template <class T> struct is_vector : bool_constant<(vec_elements<T>::value > 1)> {};
template <class T> using make_scalar_t = typename vec_elements<remove_cv_t<T>>::scalar;
template <class T> struct make_scalar { typedef make_scalar_t<T> type; };

#define MSL_SIM_TRAIT(name, T, v) template <> struct name<T> : bool_constant<v> {};
template <class T> struct is_integral_scalar : false_type {};
template <class T> struct is_floating_scalar : false_type {};
template <class T> struct is_signed_scalar : false_type {};
MSL_SIM_TRAIT(is_integral_scalar, bool, true)
MSL_SIM_TRAIT(is_integral_scalar, char, true)
MSL_SIM_TRAIT(is_integral_scalar, signed char, true)
MSL_SIM_TRAIT(is_integral_scalar, uchar, true)
MSL_SIM_TRAIT(is_integral_scalar, short, true)
MSL_SIM_TRAIT(is_integral_scalar, ushort, true)
MSL_SIM_TRAIT(is_integral_scalar, int, true)
MSL_SIM_TRAIT(is_integral_scalar, uint, true)
MSL_SIM_TRAIT(is_integral_scalar, long, true)
MSL_SIM_TRAIT(is_integral_scalar, ulong, true)
MSL_SIM_TRAIT(is_integral_scalar, long long, true)
MSL_SIM_TRAIT(is_integral_scalar, unsigned long long, true)
MSL_SIM_TRAIT(is_floating_scalar, half, true)
MSL_SIM_TRAIT(is_floating_scalar, bfloat, true)
MSL_SIM_TRAIT(is_floating_scalar, float, true)
MSL_SIM_TRAIT(is_signed_scalar, char, true)
MSL_SIM_TRAIT(is_signed_scalar, signed char, true)
MSL_SIM_TRAIT(is_signed_scalar, short, true)
MSL_SIM_TRAIT(is_signed_scalar, int, true)
MSL_SIM_TRAIT(is_signed_scalar, long, true)
MSL_SIM_TRAIT(is_signed_scalar, long long, true)
MSL_SIM_TRAIT(is_signed_scalar, half, true)
MSL_SIM_TRAIT(is_signed_scalar, bfloat, true)
MSL_SIM_TRAIT(is_signed_scalar, float, true)
#undef MSL_SIM_TRAIT

// As in Metal, is_integral / is_floating_point / is_signed hold for vectors of such scalars
// too; is_scalar separates the two.
template <class T> struct is_integral : is_integral_scalar<make_scalar_t<T>> {};
template <class T> struct is_floating_point : is_floating_scalar<make_scalar_t<T>> {};
template <class T> struct is_signed : is_signed_scalar<make_scalar_t<T>> {};
template <class T> struct is_unsigned
    : bool_constant<is_integral<T>::value && !is_signed<T>::value && !is_same<make_scalar_t<T>, bool>::value> {};
template <class T> struct is_arithmetic : bool_constant<is_integral<T>::value || is_floating_point<T>::value> {};
template <class T> struct is_scalar : bool_constant<is_arithmetic<T>::value && !is_vector<T>::value> {};
template <class T> struct is_pointer : false_type {};
template <class T> struct is_pointer<T *> : true_type {};
template <class T> struct is_pointer<T *const> : true_type {};

template <class A, class B> constexpr __constant bool is_same_v = is_same<A, B>::value;
template <class T> constexpr __constant bool is_integral_v = is_integral<remove_cv_t<T>>::value;
template <class T> constexpr __constant bool is_floating_point_v = is_floating_point<remove_cv_t<T>>::value;
template <class T> constexpr __constant bool is_signed_v = is_signed<remove_cv_t<T>>::value;
template <class T> constexpr __constant bool is_unsigned_v = is_unsigned<remove_cv_t<T>>::value;
template <class T> constexpr __constant bool is_arithmetic_v = is_arithmetic<remove_cv_t<T>>::value;
template <class T> constexpr __constant bool is_scalar_v = is_scalar<remove_cv_t<T>>::value;
template <class T> constexpr __constant bool is_vector_v = is_vector<remove_cv_t<T>>::value;
template <class T> constexpr __constant bool is_pointer_v = is_pointer<T>::value;
template <class T> constexpr __constant int vec_elements_v = vec_elements<remove_cv_t<T>>::value;

template <class T> struct make_unsigned_scalar { typedef T type; };
template <> struct make_unsigned_scalar<char> { typedef uchar type; };
template <> struct make_unsigned_scalar<short> { typedef ushort type; };
template <> struct make_unsigned_scalar<int> { typedef uint type; };
template <> struct make_unsigned_scalar<long> { typedef ulong type; };
template <class T> struct make_signed_scalar { typedef T type; };
template <> struct make_signed_scalar<uchar> { typedef char type; };
template <> struct make_signed_scalar<ushort> { typedef short type; };
template <> struct make_signed_scalar<uint> { typedef int type; };
template <> struct make_signed_scalar<ulong> { typedef long type; };
template <class T> struct make_unsigned { typedef typename make_unsigned_scalar<T>::type type; };
template <class T> struct make_signed { typedef typename make_signed_scalar<T>::type type; };
template <class T> using make_unsigned_t = typename make_unsigned<T>::type;
template <class T> using make_signed_t = typename make_signed<T>::type;
}  // namespace metal
#endif
