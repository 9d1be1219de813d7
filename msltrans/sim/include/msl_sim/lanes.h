// Lane-wise helpers shared by math.h, integer.h and relational.h: one generic path for
// scalars and 2/3/4-vectors of every element type, so each function is written once.
#ifndef MSL_SIM_LANES_H
#define MSL_SIM_LANES_H
#pragma clang system_header
#include "vector.h"

namespace metal {
namespace __detail {
template <class T> struct same { typedef T type; };
template <class T> using same_t = typename same<T>::type;   // blocks deduction
template <class T> constexpr int N_of = vec_elements<T>::value;
template <class T> using S_of = make_scalar_t<T>;
template <class T, class R = T> using if_fp = enable_if_t<is_floating_point<T>::value, R>;
template <class T, class R = T> using if_int = enable_if_t<is_integral<T>::value, R>;
template <class T, class R = T> using if_arith = enable_if_t<is_arithmetic<T>::value, R>;
// The result of a relational function: bool for a scalar, boolN for a vector.
template <class T> using bool_of = conditional_t<(N_of<T> > 1), boolvec<N_of<T>>, bool>;

template <class T> inline T lane(T x, int) { return x; }
template <class T, int N> inline T lane(vec_t<T, N> x, int i) { return x[i]; }

// r = f(x[i]...) lane by lane; F works on the scalar type S (half/bfloat math converts to
// float inside F and rounds once on return).
template <class T, class F> inline T map1(T x, F f) {
    if constexpr (N_of<T> == 1) return f(x);
    else { T r; for (int i = 0; i < N_of<T>; ++i) r[i] = f(x[i]); return r; }
}
template <class T, class F> inline T map2(T x, T y, F f) {
    if constexpr (N_of<T> == 1) return f(x, y);
    else { T r; for (int i = 0; i < N_of<T>; ++i) r[i] = f(x[i], y[i]); return r; }
}
template <class T, class F> inline T map3(T x, T y, T z, F f) {
    if constexpr (N_of<T> == 1) return f(x, y, z);
    else { T r; for (int i = 0; i < N_of<T>; ++i) r[i] = f(x[i], y[i], z[i]); return r; }
}
template <class T, class F> inline bool_of<T> test1(T x, F f) {
    if constexpr (N_of<T> == 1) return f(x);
    else { bool_of<T> r; for (int i = 0; i < N_of<T>; ++i) r.v[i] = f(x[i]) ? 1 : 0; return r; }
}
// Truth of lane i of a mask: boolN, a clang comparison result (-1/0), or a scalar bool.
template <class M> inline bool truth(M m, int i) {
    if constexpr (N_of<M> == 1) return (bool)m;
    else return m[i] != 0;
}
}  // namespace __detail
}  // namespace metal
#endif
