// metal_atomic: atomic<T> in device and threadgroup memory. Threadgroups of a dispatch run
// on several OS threads at once, so device atomics are real (sequentially consistent)
// atomic instructions; a threadgroup runs on one OS thread and its fibers switch only at
// barriers/SIMD ops, so a plain read-modify-write on threadgroup memory is atomic. Metal's
// atomic functions take memory_order_relaxed only (MSL §6.15.4); any other order fails the
// dispatch (relaxed runs as seq_cst here). Weak compare-exchange fails only on a mismatch,
// unless MSLTRANS_SIM_CAS_SPURIOUS=N (read by the runtime at each dispatch) makes every Nth
// call of the dispatch fail spuriously. Metal has no strong compare-exchange.
// What Metal lacks fails to compile (MSL specification, sections 2.6 and 6.15.4): any
// operation on atomic_ulong but the void atomic_max/min_explicit on device memory (6.15.4.6,
// MSL 2.4 and later: MSL_SIM_HAS_atomic_ulong, from msltrans/msl_version.py); atomic_float
// min/max/bitwise; atomic types other than Metal's.
#ifndef MSL_SIM_ATOMIC_H
#define MSL_SIM_ATOMIC_H
#pragma clang system_header
#include "sync.h"

namespace metal {
template <class T> struct atomic {
    static_assert(is_same<T, int>::value || is_same<T, uint>::value || is_same<T, bool>::value ||
                  is_same<T, float>::value || is_same<T, ulong>::value,
                  "Metal atomics exist for int, uint, bool, float and (min/max only) ulong");
    static_assert(!is_same<T, ulong>::value || MSL_SIM_HAS_atomic_ulong,
                  "atomic_ulong needs MSL 2.4 (features.h, msltrans/msl_version.py)");
    typedef T value_type;
    T __v;
};
// C++ for OpenCL predeclares OpenCL 2.0's atomic_int, atomic_uint, atomic_float, ... in the
// global namespace; `using namespace metal;` would make the names ambiguous. So the names are
// macros for one typedef that exists both globally and in metal:: (same type: no ambiguity).
typedef atomic<int> __msl_atomic_int;
typedef atomic<uint> __msl_atomic_uint;
typedef atomic<bool> __msl_atomic_bool;
typedef atomic<float> __msl_atomic_float;
typedef atomic<ulong> __msl_atomic_ulong;

namespace __detail {
template <class T> constexpr bool is_int32 = is_same<T, int>::value || is_same<T, uint>::value;
[[noreturn]] inline void non_relaxed_order() {
    msl_sim_site s = site(__builtin_FILE(), __builtin_LINE(), 0, 0);
    fail(s, "a Metal atomic function was given a memory order other than memory_order_relaxed, "
            "the only one MSL 6.15.4 allows");
}
inline void relaxed_only(memory_order order) {
    if (order != memory_order_relaxed) non_relaxed_order();
}
}
#define MSL_SIM_NO64(T, what) static_assert(sizeof(T) == 4 || is_same<T, bool>::value, \
    what " on a 64-bit atomic: Metal has no 64-bit atomic " what \
    " (atomic_ulong has only the void atomic_max/min_explicit, MSL 6.15.4.6)")

// MSL 6.15.4.5: "Atomic add and sub support atomic_float only in device memory".
#define MSL_SIM_TG_FLOAT(T, what) static_assert(!is_same<T, float>::value, \
    "atomic_fetch_" what "_explicit on a threadgroup atomic_float: MSL 6.15.4.5 allows " \
    "atomic_float add and sub only in device memory")

#define MSL_SIM_ATOMICS(AS)                                                                                    \
    template <class T> inline T atomic_load_explicit(const volatile AS atomic<T> *o, memory_order __mo) {        \
        __detail::relaxed_only(__mo);                                                                        \
        MSL_SIM_NO64(T, "load");                                                                             \
        return o->__v;                                                                                       \
    }                                                                                                        \
    template <class T> inline void atomic_store_explicit(volatile AS atomic<T> *o, typename atomic<T>::value_type v, memory_order __mo) { \
        __detail::relaxed_only(__mo);                                                                        \
        MSL_SIM_NO64(T, "store");                                                                            \
        o->__v = v;                                                                                          \
    }                                                                                                        \
    template <class T> inline T atomic_exchange_explicit(volatile AS atomic<T> *o, typename atomic<T>::value_type v, memory_order __mo) { \
        __detail::relaxed_only(__mo);                                                                        \
        MSL_SIM_NO64(T, "exchange");                                                                         \
        T old = o->__v; o->__v = v; return old;                                                             \
    }                                                                                                        \
    template <class T> inline bool atomic_compare_exchange_weak_explicit(volatile AS atomic<T> *o, thread typename atomic<T>::value_type *expected, \
            typename atomic<T>::value_type desired, memory_order __mo, memory_order __mf) {                           \
        __detail::relaxed_only(__mo); __detail::relaxed_only(__mf);                                          \
        MSL_SIM_NO64(T, "compare_exchange");                                                                 \
        T cur = o->__v;                                                                                      \
        /* A spurious failure writes nothing and reports the current value, as a mismatch does. */          \
        if (!msl_sim_cas_spurious() && __builtin_memcmp(&cur, expected, sizeof(T)) == 0) {                   \
            o->__v = desired;                                                                                \
            return true;                                                                                     \
        }                                                                                                    \
        *expected = cur;                                                                                     \
        return false;                                                                                        \
    }                                                                                                        \
    /* MSL 6.15.4.4 lists only the weak form: the strong one is a compile error here. */          \
    template <class T> inline bool atomic_compare_exchange_strong_explicit(volatile AS atomic<T> *o, thread typename atomic<T>::value_type *expected, \
            typename atomic<T>::value_type desired, memory_order __mo, memory_order __mf) {                           \
        static_assert(sizeof(T) == 0, "Metal has no atomic_compare_exchange_strong_explicit (MSL 6.15.4.4): loop on the weak form"); \
        return false;                                                                                        \
    }                                                                                                        \
    template <class T> inline T atomic_fetch_add_explicit(volatile AS atomic<T> *o, typename atomic<T>::value_type v, memory_order __mo) { \
        __detail::relaxed_only(__mo);                                                                        \
        MSL_SIM_NO64(T, "add");                                                                              \
        static_assert(!is_same<T, bool>::value, "atomic_bool has no fetch_add");                             \
        MSL_SIM_TG_FLOAT(T, "add");                                                                       \
        T old = o->__v;                                                                                      \
        if constexpr (is_same<T, float>::value) o->__v = old + v;                                            \
        else o->__v = (T)((uint)old + (uint)v);                                                              \
        return old;                                                                                          \
    }                                                                                                        \
    template <class T> inline T atomic_fetch_sub_explicit(volatile AS atomic<T> *o, typename atomic<T>::value_type v, memory_order __mo) { \
        __detail::relaxed_only(__mo);                                                                        \
        MSL_SIM_NO64(T, "sub");                                                                              \
        static_assert(!is_same<T, bool>::value, "atomic_bool has no fetch_sub");                             \
        MSL_SIM_TG_FLOAT(T, "sub");                                                                       \
        T old = o->__v;                                                                                      \
        if constexpr (is_same<T, float>::value) o->__v = old - v;                                            \
        else o->__v = (T)((uint)old - (uint)v);                                                              \
        return old;                                                                                          \
    }                                                                                                        \
    MSL_SIM_ATOMIC_BITOP(AS, and, &)                                                                         \
    MSL_SIM_ATOMIC_BITOP(AS, or, |)                                                                          \
    MSL_SIM_ATOMIC_BITOP(AS, xor, ^)                                                                         \
    MSL_SIM_ATOMIC_MINMAX(AS, min, <)                                                                        \
    MSL_SIM_ATOMIC_MINMAX(AS, max, >)

#define MSL_SIM_ATOMIC_BITOP(AS, name, op)                                                                     \
    template <class T> inline T atomic_fetch_##name##_explicit(volatile AS atomic<T> *o, typename atomic<T>::value_type v, memory_order __mo) { \
        __detail::relaxed_only(__mo);                                                                        \
        MSL_SIM_NO64(T, #name);                                                                              \
        static_assert(__detail::is_int32<T>, "atomic_fetch_" #name "_explicit needs atomic_int or atomic_uint"); \
        T old = o->__v; o->__v = old op v; return old;                                                       \
    }
#define MSL_SIM_ATOMIC_MINMAX(AS, name, cmp)                                                                   \
    template <class T> inline T atomic_fetch_##name##_explicit(volatile AS atomic<T> *o, typename atomic<T>::value_type v, memory_order __mo) { \
        __detail::relaxed_only(__mo);                                                                        \
        static_assert(__detail::is_int32<T>, "atomic_fetch_" #name "_explicit needs atomic_int or atomic_uint" \
                      " (atomic_ulong has only the void atomic_" #name "_explicit, MSL 6.15.4.6)");          \
        T old = o->__v; if (v cmp old) o->__v = v; return old;                                               \
    }


// A checked build (-DMSL_SIM_COHERENCE, msltrans/sim/coherence.py) instruments every plain
// load and store; device atomics are left out (no_sanitize keeps them out of line and
// uninstrumented) and say which bytes they write instead (msl_sim_coherence_atomic, abi.h).
#ifdef MSL_SIM_COHERENCE
#define MSL_SIM_DEV_ATOMIC __attribute__((no_sanitize("address"))) inline
#define MSL_SIM_NOTE_WRITE(o) msl_sim_coherence_atomic((const void *)(unsigned long)&(o)->__v, \
                                                       sizeof((o)->__v), __builtin_return_address(0))
#else
#define MSL_SIM_DEV_ATOMIC inline
#define MSL_SIM_NOTE_WRITE(o) ((void)0)
#endif
// Device memory: real atomics (other threadgroups run concurrently on other OS threads).
// Values move as their bit patterns (compare-exchange compares bits, as Metal does).
#define MSL_SIM_BITS(T) conditional_t<sizeof(T) == 8, ulong, conditional_t<sizeof(T) == 4, uint, uchar>>
#define MSL_SIM_DEV_PTR(o) ((volatile __global MSL_SIM_BITS(T) *)&(o)->__v)
#define MSL_SIM_AS_BITS(v) __builtin_bit_cast(MSL_SIM_BITS(T), (T)(v))
#define MSL_SIM_FROM_BITS(b) __builtin_bit_cast(T, (MSL_SIM_BITS(T))(b))
template <class T> MSL_SIM_DEV_ATOMIC T atomic_load_explicit(const volatile __global atomic<T> *o, memory_order __mo) {
    __detail::relaxed_only(__mo);
    MSL_SIM_NO64(T, "load");
    return MSL_SIM_FROM_BITS(__atomic_load_n((const volatile __global MSL_SIM_BITS(T) *)&o->__v, __ATOMIC_SEQ_CST));
}
template <class T> MSL_SIM_DEV_ATOMIC void atomic_store_explicit(volatile __global atomic<T> *o, typename atomic<T>::value_type v, memory_order __mo) {
    __detail::relaxed_only(__mo);
    MSL_SIM_NO64(T, "store");
    MSL_SIM_NOTE_WRITE(o);
    __atomic_store_n(MSL_SIM_DEV_PTR(o), MSL_SIM_AS_BITS(v), __ATOMIC_SEQ_CST);
}
template <class T> MSL_SIM_DEV_ATOMIC T atomic_exchange_explicit(volatile __global atomic<T> *o, typename atomic<T>::value_type v, memory_order __mo) {
    __detail::relaxed_only(__mo);
    MSL_SIM_NO64(T, "exchange");
    MSL_SIM_NOTE_WRITE(o);
    return MSL_SIM_FROM_BITS(__atomic_exchange_n(MSL_SIM_DEV_PTR(o), MSL_SIM_AS_BITS(v), __ATOMIC_SEQ_CST));
}
template <class T> MSL_SIM_DEV_ATOMIC bool atomic_compare_exchange_weak_explicit(volatile __global atomic<T> *o, thread typename atomic<T>::value_type *expected,
        typename atomic<T>::value_type desired, memory_order __mo, memory_order __mf) {
    __detail::relaxed_only(__mo); __detail::relaxed_only(__mf);
    MSL_SIM_NO64(T, "compare_exchange");
    MSL_SIM_BITS(T) want = MSL_SIM_AS_BITS(*expected);
    /* A spurious failure writes nothing and reports the current value, as a mismatch does. */
    if (msl_sim_cas_spurious()) {
        *expected = MSL_SIM_FROM_BITS(__atomic_load_n(MSL_SIM_DEV_PTR(o), __ATOMIC_SEQ_CST));
        return false;
    }
    bool ok = __atomic_compare_exchange_n(MSL_SIM_DEV_PTR(o), &want, MSL_SIM_AS_BITS(desired), false,
                                          __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);
    if (!ok) *expected = MSL_SIM_FROM_BITS(want);
    else MSL_SIM_NOTE_WRITE(o);
    return ok;
}
/* MSL 6.15.4.4 lists only the weak form: the strong one is a compile error here. */
template <class T> MSL_SIM_DEV_ATOMIC bool atomic_compare_exchange_strong_explicit(volatile __global atomic<T> *o, thread typename atomic<T>::value_type *expected,
        typename atomic<T>::value_type desired, memory_order __mo, memory_order __mf) {
    static_assert(sizeof(T) == 0, "Metal has no atomic_compare_exchange_strong_explicit (MSL 6.15.4.4): loop on the weak form");
    return false;
}
// float add/sub: a compare-exchange loop on the bit pattern (no native float RMW on the host).
#define MSL_SIM_DEV_ADDSUB(name, op)                                                                           \
    template <class T> MSL_SIM_DEV_ATOMIC T atomic_fetch_##name##_explicit(volatile __global atomic<T> *o, typename atomic<T>::value_type v, memory_order __mo) { \
        __detail::relaxed_only(__mo);                                                                        \
        MSL_SIM_NO64(T, #name);                                                                              \
        static_assert(!is_same<T, bool>::value, "atomic_bool has no fetch_" #name);                          \
        MSL_SIM_NOTE_WRITE(o);                                                                               \
        if constexpr (is_same<T, float>::value) {                                                            \
            uint old = __atomic_load_n(MSL_SIM_DEV_PTR(o), __ATOMIC_SEQ_CST);                                \
            while (!__atomic_compare_exchange_n(MSL_SIM_DEV_PTR(o), &old,                                    \
                                                __builtin_bit_cast(uint, __builtin_bit_cast(float, old) op v), \
                                                false, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST)) {                \
            }                                                                                                \
            return __builtin_bit_cast(float, old);                                                           \
        } else {                                                                                             \
            return (T)__atomic_fetch_##name(MSL_SIM_DEV_PTR(o), (uint)v, __ATOMIC_SEQ_CST);                  \
        }                                                                                                    \
    }
MSL_SIM_DEV_ADDSUB(add, +)
MSL_SIM_DEV_ADDSUB(sub, -)
#undef MSL_SIM_DEV_ADDSUB
#define MSL_SIM_DEV_BITOP(name)                                                                                \
    template <class T> MSL_SIM_DEV_ATOMIC T atomic_fetch_##name##_explicit(volatile __global atomic<T> *o, typename atomic<T>::value_type v, memory_order __mo) { \
        __detail::relaxed_only(__mo);                                                                        \
        MSL_SIM_NO64(T, #name);                                                                              \
        static_assert(__detail::is_int32<T>, "atomic_fetch_" #name "_explicit needs atomic_int or atomic_uint"); \
        MSL_SIM_NOTE_WRITE(o);                                                                               \
        return __atomic_fetch_##name((volatile __global T *)&o->__v, v, __ATOMIC_SEQ_CST);                    \
    }
#define MSL_SIM_DEV_MINMAX(name)                                                                               \
    template <class T> MSL_SIM_DEV_ATOMIC T atomic_fetch_##name##_explicit(volatile __global atomic<T> *o, typename atomic<T>::value_type v, memory_order __mo) { \
        __detail::relaxed_only(__mo);                                                                        \
        static_assert(__detail::is_int32<T>, "atomic_fetch_" #name "_explicit needs atomic_int or atomic_uint" \
                      " (atomic_ulong has only the void atomic_" #name "_explicit, MSL 6.15.4.6)");          \
        MSL_SIM_NOTE_WRITE(o);                                                                               \
        return __atomic_fetch_##name((volatile __global T *)&o->__v, v, __ATOMIC_SEQ_CST);                    \
    }
MSL_SIM_DEV_BITOP(and)
MSL_SIM_DEV_BITOP(or)
MSL_SIM_DEV_BITOP(xor)
MSL_SIM_DEV_MINMAX(min)
MSL_SIM_DEV_MINMAX(max)
#undef MSL_SIM_DEV_BITOP
#undef MSL_SIM_DEV_MINMAX
#if MSL_SIM_HAS_atomic_ulong
// MSL 6.15.4.6, Atomic Modify Functions (64 Bits): void max/min on device atomic_ulong, relaxed
// order only; Apple silicon (GPU families: the Metal Feature Set Tables), MSL 2.4 and later.
// No threadgroup overloads: Metal has none.
#define MSL_SIM_ATOMIC_ULONG_MINMAX(name)                                                                      \
    MSL_SIM_DEV_ATOMIC void atomic_##name##_explicit(volatile __global atomic<ulong> *o, ulong v, memory_order __mo) { \
        __detail::relaxed_only(__mo);                                                                        \
        MSL_SIM_NOTE_WRITE(o);                                                                               \
        __atomic_fetch_##name((volatile __global ulong *)&o->__v, v, __ATOMIC_SEQ_CST);                      \
    }
MSL_SIM_ATOMIC_ULONG_MINMAX(min)
MSL_SIM_ATOMIC_ULONG_MINMAX(max)
#undef MSL_SIM_ATOMIC_ULONG_MINMAX
#endif
#undef MSL_SIM_BITS
#undef MSL_SIM_DEV_PTR
#undef MSL_SIM_AS_BITS
#undef MSL_SIM_FROM_BITS

// Threadgroup memory: one OS thread runs all fibers of a threadgroup, one at a time.
MSL_SIM_ATOMICS(__local)
#undef MSL_SIM_ATOMICS
#undef MSL_SIM_DEV_ATOMIC
#undef MSL_SIM_NOTE_WRITE
#undef MSL_SIM_ATOMIC_BITOP
#undef MSL_SIM_ATOMIC_MINMAX
#undef MSL_SIM_NO64
#undef MSL_SIM_TG_FLOAT
}  // namespace metal
using metal::__msl_atomic_int;
using metal::__msl_atomic_uint;
using metal::__msl_atomic_bool;
using metal::__msl_atomic_float;
using metal::__msl_atomic_ulong;
#define atomic_int __msl_atomic_int
#define atomic_uint __msl_atomic_uint
#define atomic_bool __msl_atomic_bool
#define atomic_float __msl_atomic_float
#define atomic_ulong __msl_atomic_ulong
#endif
