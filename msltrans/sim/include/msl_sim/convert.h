// as_type<T>(x) and element-wise static_cast between vector types.
// Clang's casts between ext_vector types are bit casts (and static_cast<float4>(int4) is an
// error); Metal converts element by element. `static_cast` is therefore a macro over a
// function template that sends vector targets through the vector constructors and
// everything else (pointers, references, scalars, enums, classes) to the real static_cast.
// Included after every other shim header: the shim itself never sees the macro.
#ifndef MSL_SIM_CONVERT_H
#define MSL_SIM_CONVERT_H
#pragma clang system_header
#include "vector.h"

template <class T, class U> inline constexpr T as_type(U x) {
    static_assert(sizeof(T) == sizeof(U), "as_type: source and destination must have the same size");
    return __builtin_bit_cast(T, x);
}
namespace metal {
using ::as_type;
namespace __detail {
template <class T> struct is_ref : false_type {};
template <class T> struct is_ref<T &> : true_type {};
template <class T> struct is_ref<T &&> : true_type {};
// Value targets take the operand by value (a vector element or an lvalue in any address space
// can initialise a by-value parameter; it cannot bind a reference); reference targets forward.
template <class T, class U> inline constexpr enable_if_t<!is_ref<T>::value, T> msl_static_cast(U u) {
    typedef remove_cv_t<U> S;
    typedef remove_cv_t<T> D;
    if constexpr (is_same<D, boolvec<vec_elements<D>::value>>::value) {
        return D(u);
    } else if constexpr (is_vector<D>::value) {
        return make_vec<make_scalar_t<D>, vec_elements<D>::value>::make(u);
    } else if constexpr (is_floating_scalar<D>::value && is_floating_scalar<S>::value) {
        return scalar_cast<D>(u);   // half <-> bfloat go through float
    } else {
        return static_cast<T>(u);
    }
}
template <class T, class U> inline constexpr enable_if_t<is_ref<T>::value, T> msl_static_cast(U &&u) {
    return static_cast<T>(u);
}
}  // namespace __detail
}  // namespace metal
#define static_cast ::metal::__detail::msl_static_cast
#endif
