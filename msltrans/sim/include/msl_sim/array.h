// metal::array<T, N> (metal_array): a fixed-size aggregate usable in every address space.
#ifndef MSL_SIM_ARRAY_H
#define MSL_SIM_ARRAY_H
#pragma clang system_header
#include "types.h"

namespace metal {
template <class T, size_t N> struct array {
    T __elems[N > 0 ? N : 1];
    typedef T value_type;
    constexpr size_t size() const { return N; }
    constexpr bool empty() const { return N == 0; }
    T &operator[](size_t i) { return __elems[i]; }
    constexpr const T &operator[](size_t i) const { return __elems[i]; }
    // program-scope `constant array<T, N>` objects live in __constant, which the generic
    // `this` of the members above cannot point to.
    constexpr const __constant T &operator[](size_t i) const __constant { return __elems[i]; }
    constexpr size_t size() const __constant { return N; }
    T &front() { return __elems[0]; }
    T &back() { return __elems[N - 1]; }
    T *data() { return __elems; }
    T *begin() { return __elems; }
    T *end() { return __elems + N; }
    const T *begin() const { return __elems; }
    const T *end() const { return __elems + N; }
};
}  // namespace metal
#endif
