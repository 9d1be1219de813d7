// SIMD-group functions. Each call is one rendezvous (msl_sim_simd_exchange): every active
// lane publishes its value, then computes its own result from all slots. Reductions and
// scans combine the active lanes in increasing lane order (a fixed order, so results are
// deterministic; float sums round after every addition, in T's own precision). A
// reduction's result is the same for every lane: the first lane to read it computes it into
// the op's shared slot (abi.h) and the others copy it.
#ifndef MSL_SIM_SIMD_H
#define MSL_SIM_SIMD_H
#pragma clang system_header
#include "integer.h"
#include "sync.h"

namespace metal {
typedef ulong vote_t;
// simd_vote: the ballot of the active lanes (bit l = lane l).
struct simd_vote {
    vote_t __v;
    constexpr simd_vote() : __v(0) {}
    constexpr explicit simd_vote(vote_t v) : __v(v) {}
    constexpr explicit operator vote_t() const { return __v; }
    constexpr bool all() const { return __v == 0xffffffffu; }
    constexpr bool any() const { return __v != 0; }
};

namespace __detail {
struct simd_view {
    const char *base;
    uint active, lane;
    template <class T> T get(uint l, uint off = 0) const {
        T r;
        if (l >= MSL_SIM_SIMD_WIDTH || !((active >> l) & 1u)) {
            // An inactive or out-of-range source lane: undefined on Apple. The simulator
            // returns all-0xFF bytes (NaN / -1), the pattern of uninitialised memory.
            __builtin_memset(&r, 0xff, sizeof(T));
        } else {
            __builtin_memcpy(&r, base + l * MSL_SIM_EXCHANGE_BYTES + off, sizeof(T));
        }
        return r;
    }
    bool on(uint l) const { return l < MSL_SIM_SIMD_WIDTH && ((active >> l) & 1u); }
};
template <class T> inline simd_view exchange(const T &v, const msl_sim_site &s) {
    static_assert(sizeof(T) <= MSL_SIM_EXCHANGE_BYTES, "SIMD payload too large");
    simd_view w;
    msl_sim_simd_result r = msl_sim_simd_exchange(&s, &v, sizeof(T));
    w.base = (const char *)r.slots;
    w.active = r.active;
    w.lane = r.lane;
    return w;
}
// Lane-order fold over the active lanes l with from <= l < to.
template <class T, class F> inline T fold(const simd_view &w, uint to, T init, F f) {
    T acc = init;
    bool first = true;
    for (uint l = 0; l < to; ++l) {
        if (!w.on(l)) continue;
        acc = first ? w.get<T>(l) : f(acc, w.get<T>(l));
        first = false;
    }
    return acc;
}
// A result that is the same for every lane of the op, computed once: the first lane that
// needs it runs `compute` into the op's shared slot (abi.h), the others copy it. `key` names
// what the value is, so lanes that disagree (instantiations of one template for different
// types, reaching one call site together) each compute their own.
template <class T, class C> inline T shared_result(const simd_view &w, uint key, C compute) {
    static_assert(sizeof(T) <= sizeof(((msl_sim_shared_result *)0)->value), "result too large");
    msl_sim_shared_result *shared =
        (msl_sim_shared_result *)(w.base + MSL_SIM_SIMD_WIDTH * MSL_SIM_EXCHANGE_BYTES);
    T r;
    if (shared->ready && shared->key == key) {
        __builtin_memcpy(&r, shared->value, sizeof(T));
        return r;
    }
    r = compute();
    if (!shared->ready) {
        __builtin_memcpy(shared->value, &r, sizeof(T));
        shared->key = key;
        shared->ready = 1;
    }
    return r;
}
// A reduction over all active lanes; its key: the operation (op_id 1..7) and T.
template <class T, class F> inline T shared_fold(const simd_view &w, T x, F f, uint op_id) {
    const uint key = op_id | (uint)sizeof(T) << 8 | (uint)is_floating_point<T>::value << 16
                     | (uint)is_signed<T>::value << 17 | (uint)is_same<S_of<T>, bfloat>::value << 18;
    return shared_result<T>(w, key, [&] { return fold<T>(w, MSL_SIM_SIMD_WIDTH, x, f); });
}
// Integer sums and products wrap (two's complement, as the GPU does): computed on the
// unsigned type so that signed overflow is never undefined behaviour in the host compiler.
template <class T> using wrap_scalar = conditional_t<is_integral_scalar<T>::value && !is_same<T, bool>::value,
                                                     typename make_unsigned_scalar<T>::type, T>;
template <class T> using wrap_t = conditional_t<(N_of<T> > 1), vec_t<wrap_scalar<S_of<T>>, N_of<T>>, wrap_scalar<T>>;
template <class T> inline T op_add(T a, T b) {
    if constexpr (is_integral<T>::value && !is_same<S_of<T>, bool>::value)
        return __builtin_bit_cast(T, (wrap_t<T>)(__builtin_bit_cast(wrap_t<T>, a) + __builtin_bit_cast(wrap_t<T>, b)));
    else return a + b;
}
template <class T> inline T op_mul(T a, T b) {
    if constexpr (is_integral<T>::value && !is_same<S_of<T>, bool>::value)
        return __builtin_bit_cast(T, (wrap_t<T>)(__builtin_bit_cast(wrap_t<T>, a) * __builtin_bit_cast(wrap_t<T>, b)));
    else return a * b;
}
template <class T> inline T op_min(T a, T b) { return metal::min(a, b); }
template <class T> inline T op_max(T a, T b) { return metal::max(a, b); }
template <class T> inline T op_and(T a, T b) { return a & b; }
template <class T> inline T op_or(T a, T b) { return a | b; }
template <class T> inline T op_xor(T a, T b) { return a ^ b; }
}  // namespace __detail

#define MSL_SIM_SIMD_SITE() msl_sim_site __s = MSL_SIM_SITE(MSL_SIM_KIND_SIMD_OP)
#define MSL_SIM_SHUFFLE_SITE() msl_sim_site __s = MSL_SIM_SITE(MSL_SIM_KIND_SIMD_SHUFFLE)
#define MSL_SIM_REDUCE_SITE() msl_sim_site __s = MSL_SIM_SITE(MSL_SIM_KIND_SIMD_REDUCE)
#define MSL_SIM_SIMD_REDUCE(name, op, cond, id)                                              \
    template <class T> inline enable_if_t<cond, T> name(T x, MSL_SIM_SITE_ARGS) {            \
        MSL_SIM_REDUCE_SITE();                                                               \
        __detail::simd_view w = __detail::exchange(x, __s);                                  \
        return __detail::shared_fold<T>(w, x, __detail::op<T>, id);                          \
    }
MSL_SIM_SIMD_REDUCE(simd_sum, op_add, is_arithmetic<T>::value, 1u)
MSL_SIM_SIMD_REDUCE(simd_product, op_mul, is_arithmetic<T>::value, 2u)
MSL_SIM_SIMD_REDUCE(simd_min, op_min, is_arithmetic<T>::value, 3u)
MSL_SIM_SIMD_REDUCE(simd_max, op_max, is_arithmetic<T>::value, 4u)
MSL_SIM_SIMD_REDUCE(simd_and, op_and, is_integral<T>::value, 5u)
MSL_SIM_SIMD_REDUCE(simd_or, op_or, is_integral<T>::value, 6u)
MSL_SIM_SIMD_REDUCE(simd_xor, op_xor, is_integral<T>::value, 7u)
#undef MSL_SIM_SIMD_REDUCE

// Scans: inclusive covers active lanes <= own lane, exclusive those < own lane (identity
// 0 or 1 for the first active lane).
#define MSL_SIM_SIMD_SCAN(name, op, incl, ident)                                             \
    template <class T> inline __detail::if_arith<T> name(T x, MSL_SIM_SITE_ARGS) {           \
        MSL_SIM_REDUCE_SITE();                                                               \
        __detail::simd_view w = __detail::exchange(x, __s);                                  \
        return __detail::fold<T>(w, w.lane + (incl), (T)(ident), __detail::op<T>);           \
    }
MSL_SIM_SIMD_SCAN(simd_prefix_inclusive_sum, op_add, 1, 0)
MSL_SIM_SIMD_SCAN(simd_prefix_exclusive_sum, op_add, 0, 0)
MSL_SIM_SIMD_SCAN(simd_prefix_inclusive_product, op_mul, 1, 1)
MSL_SIM_SIMD_SCAN(simd_prefix_exclusive_product, op_mul, 0, 1)
#undef MSL_SIM_SIMD_SCAN

// Data movement. The source lane index is computed per lane; an out-of-range index in the
// _up/_down forms keeps the caller's own value (Apple: "the lower/upper delta lanes are
// unchanged"); reading an inactive lane yields the 0xFF pattern (see simd_view::get).
// MSL 6.9.2: Table 6.14's T is "a scalar or vector of any integer or floating-point type,
// except bool, long, ulong, void, size_t, ptrdiff_t" (size_t/ptrdiff_t are ulong/long here).
#define MSL_SIM_PERMUTE_TYPE(T, name) static_assert(                                       \
    !is_same<__detail::S_of<T>, bool>::value && sizeof(__detail::S_of<T>) <= 4,                \
    name " on bool, long or ulong: MSL 6.9.2 (Table 6.14) excludes bool, long, ulong, "    \
    "size_t and ptrdiff_t; shuffle the 32-bit halves (as_type<uint2>) instead")
template <class T> inline __detail::if_arith<T> simd_shuffle(T x, ushort lane, MSL_SIM_SITE_ARGS) {
    MSL_SIM_PERMUTE_TYPE(T, "simd_shuffle");
    MSL_SIM_SHUFFLE_SITE();
    return __detail::exchange(x, __s).template get<T>(lane);
}
template <class T> inline __detail::if_arith<T> simd_broadcast(T x, ushort lane, MSL_SIM_SITE_ARGS) {
    MSL_SIM_PERMUTE_TYPE(T, "simd_broadcast");
    MSL_SIM_SHUFFLE_SITE();
    return __detail::exchange(x, __s).template get<T>(lane);
}
template <class T> inline __detail::if_arith<T> simd_broadcast_first(T x, MSL_SIM_SITE_ARGS) {
    MSL_SIM_PERMUTE_TYPE(T, "simd_broadcast_first");
    MSL_SIM_SHUFFLE_SITE();
    __detail::simd_view w = __detail::exchange(x, __s);
    return w.get<T>((uint)__builtin_ctz(w.active));
}
template <class T> inline __detail::if_arith<T> simd_shuffle_xor(T x, ushort mask, MSL_SIM_SITE_ARGS) {
    MSL_SIM_PERMUTE_TYPE(T, "simd_shuffle_xor");
    MSL_SIM_SHUFFLE_SITE();
    __detail::simd_view w = __detail::exchange(x, __s);
    uint src = w.lane ^ mask;
    return src < MSL_SIM_SIMD_WIDTH ? w.get<T>(src) : x;
}
template <class T> inline __detail::if_arith<T> simd_shuffle_down(T x, ushort delta, MSL_SIM_SITE_ARGS) {
    MSL_SIM_PERMUTE_TYPE(T, "simd_shuffle_down");
    MSL_SIM_SHUFFLE_SITE();
    __detail::simd_view w = __detail::exchange(x, __s);
    uint src = w.lane + delta;
    return src < MSL_SIM_SIMD_WIDTH ? w.get<T>(src) : x;
}
template <class T> inline __detail::if_arith<T> simd_shuffle_up(T x, ushort delta, MSL_SIM_SITE_ARGS) {
    MSL_SIM_PERMUTE_TYPE(T, "simd_shuffle_up");
    MSL_SIM_SHUFFLE_SITE();
    __detail::simd_view w = __detail::exchange(x, __s);
    return w.lane >= delta ? w.get<T>(w.lane - delta) : x;
}
template <class T> inline __detail::if_arith<T> simd_shuffle_rotate_down(T x, ushort delta, MSL_SIM_SITE_ARGS) {
    MSL_SIM_PERMUTE_TYPE(T, "simd_shuffle_rotate_down");
    MSL_SIM_SHUFFLE_SITE();
    __detail::simd_view w = __detail::exchange(x, __s);
    return w.get<T>((w.lane + delta) % MSL_SIM_SIMD_WIDTH);
}
template <class T> inline __detail::if_arith<T> simd_shuffle_rotate_up(T x, ushort delta, MSL_SIM_SITE_ARGS) {
    MSL_SIM_PERMUTE_TYPE(T, "simd_shuffle_rotate_up");
    MSL_SIM_SHUFFLE_SITE();
    __detail::simd_view w = __detail::exchange(x, __s);
    return w.get<T>((w.lane + MSL_SIM_SIMD_WIDTH - delta % MSL_SIM_SIMD_WIDTH) % MSL_SIM_SIMD_WIDTH);
}
namespace __detail {
template <class T> struct data_fill { T data, fill; };
}
// _and_fill: lanes whose source falls off the end take `filling` from the wrapped-around
// lane (Apple: the lower delta lanes of filling_data fill the upper delta lanes).
template <class T> inline __detail::if_arith<T> simd_shuffle_and_fill_down(T x, T filling, ushort delta, MSL_SIM_SITE_ARGS) {
    MSL_SIM_PERMUTE_TYPE(T, "simd_shuffle_and_fill_down");
    MSL_SIM_SHUFFLE_SITE();
    __detail::data_fill<T> p = {x, filling};
    __detail::simd_view w = __detail::exchange(p, __s);
    uint src = w.lane + delta;
    return src < MSL_SIM_SIMD_WIDTH ? w.get<T>(src) : w.get<T>(src - MSL_SIM_SIMD_WIDTH, sizeof(T));
}
template <class T> inline __detail::if_arith<T> simd_shuffle_and_fill_up(T x, T filling, ushort delta, MSL_SIM_SITE_ARGS) {
    MSL_SIM_PERMUTE_TYPE(T, "simd_shuffle_and_fill_up");
    MSL_SIM_SHUFFLE_SITE();
    __detail::data_fill<T> p = {x, filling};
    __detail::simd_view w = __detail::exchange(p, __s);
    return w.lane >= delta ? w.get<T>(w.lane - delta) : w.get<T>(w.lane + MSL_SIM_SIMD_WIDTH - delta, sizeof(T));
}

inline simd_vote simd_ballot(bool b, MSL_SIM_SITE_ARGS) {
    MSL_SIM_SIMD_SITE();
    __detail::simd_view w = __detail::exchange(b, __s);
    // The same vote for every lane (key 8: no reduction's key is below 0x100).
    return simd_vote(__detail::shared_result<vote_t>(w, 8u, [&] {
        vote_t v = 0;
        for (uint l = 0; l < MSL_SIM_SIMD_WIDTH; ++l)
            if (w.on(l) && w.get<bool>(l)) v |= (vote_t)1 << l;
        return v;
    }));
}
inline simd_vote simd_active_threads_mask(MSL_SIM_SITE_ARGS) {
    MSL_SIM_SIMD_SITE();
    return simd_vote(__detail::exchange(true, __s).active);
}
inline bool simd_all(bool b, MSL_SIM_SITE_ARGS) {
    MSL_SIM_SIMD_SITE();
    __detail::simd_view w = __detail::exchange(b, __s);
    for (uint l = 0; l < MSL_SIM_SIMD_WIDTH; ++l) if (w.on(l) && !w.get<bool>(l)) return false;
    return true;
}
inline bool simd_any(bool b, MSL_SIM_SITE_ARGS) {
    MSL_SIM_SIMD_SITE();
    __detail::simd_view w = __detail::exchange(b, __s);
    for (uint l = 0; l < MSL_SIM_SIMD_WIDTH; ++l) if (w.on(l) && w.get<bool>(l)) return true;
    return false;
}
inline bool simd_is_first(MSL_SIM_SITE_ARGS) {
    MSL_SIM_SIMD_SITE();
    __detail::simd_view w = __detail::exchange(true, __s);
    return w.lane == (uint)__builtin_ctz(w.active);
}
inline bool simd_is_helper_thread() { return false; }
#undef MSL_SIM_SIMD_SITE
#undef MSL_SIM_SHUFFLE_SITE
#undef MSL_SIM_REDUCE_SITE
#undef MSL_SIM_PERMUTE_TYPE
}  // namespace metal
#endif
