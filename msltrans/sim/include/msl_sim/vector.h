// Vector types: clang ext_vector_type (swizzles, swizzle writes, element-wise operators
// for free). What clang lacks and Metal has: functional constructors that CONVERT element
// by element (float4(int4) in clang would be a bitcast) and concatenate (float4(a.xy, b, c)),
// and boolN. The constructors are macros named like the types (see ctors.h), expanding to
// metal::__detail::make_vec<T, N>(args...); the type name without a following '(' is the
// plain typedef.
#ifndef MSL_SIM_VECTOR_H
#define MSL_SIM_VECTOR_H
#pragma clang system_header
#include "traits.h"

#define MSL_SIM_VEC(T, name)                                       \
    typedef T name##2 __attribute__((ext_vector_type(2)));         \
    typedef T name##3 __attribute__((ext_vector_type(3)));         \
    typedef T name##4 __attribute__((ext_vector_type(4)));         \
    typedef T packed_##name##2 __attribute__((ext_vector_type(2), aligned(sizeof(T)))); \
    typedef T packed_##name##4 __attribute__((ext_vector_type(4), aligned(sizeof(T))));
MSL_SIM_VEC(char, char)
MSL_SIM_VEC(uchar, uchar)
MSL_SIM_VEC(short, short)
MSL_SIM_VEC(ushort, ushort)
MSL_SIM_VEC(int, int)
MSL_SIM_VEC(uint, uint)
MSL_SIM_VEC(long, long)
MSL_SIM_VEC(ulong, ulong)
MSL_SIM_VEC(half, half)
MSL_SIM_VEC(bfloat, bfloat)
MSL_SIM_VEC(float, float)
#undef MSL_SIM_VEC

namespace metal {
namespace __detail {
// Scalar conversion as Metal does it; clang has no direct conversion between __bf16 and
// half, so those go through float (exact: both widen exactly to float).
template <class T, class S> constexpr T scalar_cast(S s) {
    if constexpr ((is_same<T, bfloat>::value && is_same<S, half>::value) ||
                  (is_same<T, half>::value && is_same<S, bfloat>::value))
        return (T)(float)s;
    else
        return (T)s;
}
}  // namespace __detail

// boolN: clang rejects ext_vector_type(bool) in OpenCL mode, so boolN is a small struct over
// a 0/1 char vector. It converts implicitly from any N-lane comparison result (clang's
// comparisons give -1/0 intN/shortN/longN/charN) so `bool4 m = a < b;` works; .x/.y/.z/.w,
// [] (read), !, &&, ||, ==, != are provided; swizzles are not.
template <int N> struct __boolvec_base;
#define MSL_SIM_BOOLVEC(N, ...)                                                        \
    template <> struct __boolvec_base<N> {                                             \
        typedef char cv __attribute__((ext_vector_type(N)));                           \
        union { cv v; struct { bool __VA_ARGS__; }; };                                \
    };
MSL_SIM_BOOLVEC(2, x, y)
MSL_SIM_BOOLVEC(3, x, y, z)
MSL_SIM_BOOLVEC(4, x, y, z, w)
#undef MSL_SIM_BOOLVEC

template <int N> struct boolvec : __boolvec_base<N> {
    typedef typename __boolvec_base<N>::cv cv;
    constexpr boolvec() { this->v = (cv)(char)0; }
    constexpr boolvec(bool b) { this->v = (cv)(char)(b ? 1 : 0); }
    template <class V, enable_if_t<vec_elements<V>::value == N, int> = 0>
    boolvec(V m) { this->v = __builtin_convertvector(m != 0, cv) & (cv)(char)1; }
    template <class... B, enable_if_t<sizeof...(B) == N && (N > 1), int> = 0>
    constexpr boolvec(B... b) { this->v = cv{(char)(b ? 1 : 0)...}; }
    bool operator[](int i) const { return this->v[i] != 0; }
    cv mask() const { return -this->v; }   // -1/0 lanes, the form clang's select wants
    boolvec operator!() const { boolvec r; r.v = this->v ^ (cv)(char)1; return r; }
    friend boolvec operator&&(boolvec a, boolvec b) { boolvec r; r.v = a.v & b.v; return r; }
    friend boolvec operator||(boolvec a, boolvec b) { boolvec r; r.v = a.v | b.v; return r; }
    friend boolvec operator&(boolvec a, boolvec b) { return a && b; }
    friend boolvec operator|(boolvec a, boolvec b) { return a || b; }
    friend boolvec operator^(boolvec a, boolvec b) { boolvec r; r.v = a.v ^ b.v; return r; }
    friend boolvec operator==(boolvec a, boolvec b) { return boolvec(a.v == b.v); }
    friend boolvec operator!=(boolvec a, boolvec b) { return boolvec(a.v != b.v); }
};
template <int N> struct vec_elements<boolvec<N>> : integral_constant<int, N> { typedef bool scalar; };

template <class T> struct packed3;   // packed_T3, defined below

namespace __detail {
template <class T, int N> using vec_t = T __attribute__((ext_vector_type(N)));

// Constructor arguments: packed_T3 (a struct) is taken as the T3 it converts to; everything
// else (packed_T2/packed_T4 are vectors already) as it is.
template <class A> constexpr A unpacked(A a) { return a; }
template <class T> constexpr vec_t<T, 3> unpacked(packed3<T> a) { return a; }
template <class A> using unpacked_t = decltype(unpacked(*(remove_cvref_t<A> *)0));

template <class A> constexpr int lanes_of() { return vec_elements<unpacked_t<A>>::value; }

template <class T, int N, class A> void put_lanes(vec_t<T, N> &out, int &i, A a_) {
    unpacked_t<A> a = unpacked(a_);
    if constexpr (lanes_of<A>() == 1) {
        out[i++] = scalar_cast<T>(a);
    } else {
        for (int k = 0; k < lanes_of<A>(); ++k) out[i++] = scalar_cast<T>(a[k]);
    }
}

template <class T, int N> struct make_vec {
    typedef vec_t<T, N> V;
    static constexpr V make() { return (V)(T)0; }
    template <class A> static constexpr V make(A a_) {
        typedef unpacked_t<A> S;
        S a = unpacked(a_);
        if constexpr (lanes_of<S>() == 1) {
            return (V)scalar_cast<T>(a);   // splat
        } else {
            static_assert(lanes_of<S>() == N, "vector constructor: the argument has a different number of elements");
            if constexpr (is_same<S, boolvec<N>>::value)
                return __builtin_convertvector(a.v, V);
            else if constexpr ((is_same<T, bfloat>::value && is_same<make_scalar_t<S>, half>::value) ||
                               (is_same<T, half>::value && is_same<make_scalar_t<S>, bfloat>::value))
                return __builtin_convertvector(__builtin_convertvector(a, vec_t<float, N>), V);
            else
                return __builtin_convertvector(a, V);   // element-wise conversion, as Metal
        }
    }
    template <class A, class B, class... R> static constexpr V make(A a, B b, R... r) {
        static_assert(lanes_of<A>() + lanes_of<B>() + (0 + ... + lanes_of<R>()) == N,
                      "vector constructor: the arguments do not add up to the vector's size");
        if constexpr (lanes_of<A>() == 1 && lanes_of<B>() == 1 && (... && (lanes_of<R>() == 1))) {
            return V{scalar_cast<T>(a), scalar_cast<T>(b), scalar_cast<T>(r)...};
        } else {
            V out = (V)(T)0;
            int i = 0;
            put_lanes<T, N>(out, i, a);
            put_lanes<T, N>(out, i, b);
            (put_lanes<T, N>(out, i, r), ...);
            return out;
        }
    }
};
}  // namespace __detail
}  // namespace metal

namespace metal {
template <class T, int N> using vec = __detail::vec_t<T, N>;   // metal::vec<float, 4> == float4
}
typedef metal::boolvec<2> bool2;
typedef metal::boolvec<3> bool3;
typedef metal::boolvec<4> bool4;

// packed_T3: 3 elements, no padding (12 bytes for float), element alignment. Converts to and
// from T3 implicitly; arithmetic happens on the T3.
namespace metal {
template <class T> struct packed3 {
    T x, y, z;
    packed3() = default;
    constexpr packed3(T a, T b, T c) : x(a), y(b), z(c) {}
    packed3(__detail::vec_t<T, 3> v) : x(v.x), y(v.y), z(v.z) {}
    // From `constant` memory (a constant buffer of packed_T3): the implicit members take
    // generic references / a generic `this`, which __constant does not convert to. A
    // template, so it is no copy constructor and packed3 stays trivially copyable.
    template <class P, enable_if_t<is_same<P, packed3>::value, int> = 0>
    packed3(const __constant P &o) : x(o.x), y(o.y), z(o.z) {}
    operator __detail::vec_t<T, 3>() const { return __detail::vec_t<T, 3>{x, y, z}; }
    operator __detail::vec_t<T, 3>() const __constant { return __detail::vec_t<T, 3>{x, y, z}; }
    T &operator[](int i) { return (&x)[i]; }
    T operator[](int i) const { return (&x)[i]; }
    T operator[](int i) const __constant { return (&x)[i]; }
};
}  // namespace metal
#define MSL_SIM_PACKED3(T) typedef metal::packed3<T> packed_##T##3;
MSL_SIM_PACKED3(char) MSL_SIM_PACKED3(uchar) MSL_SIM_PACKED3(short) MSL_SIM_PACKED3(ushort)
MSL_SIM_PACKED3(int) MSL_SIM_PACKED3(uint) MSL_SIM_PACKED3(long) MSL_SIM_PACKED3(ulong)
MSL_SIM_PACKED3(half) MSL_SIM_PACKED3(bfloat) MSL_SIM_PACKED3(float)
#undef MSL_SIM_PACKED3

#endif
