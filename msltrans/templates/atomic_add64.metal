// 64-bit atomic add whose old value is unused: Metal has no 64-bit fetch-add, so the two
// 32-bit words are added by relaxed 32-bit atomics, the low word's carry going to the high
// word. The final value is exact whatever the interleaving (docs/atomics.md); in between,
// the two words may be seen half-updated. Apple GPUs are little-endian: w[0] is the low word.
inline uint msl_atomic_add64_low(device long* p, ulong v) {
    device atomic_uint* w = (device atomic_uint*)p;
    uint lo = uint(v);
    uint old = atomic_fetch_add_explicit(&w[0], lo, memory_order_relaxed);
    uint carry = (old + lo < old) ? 1u : 0u;  // the low word passed a multiple of 2^32
    return uint(v >> 32) + carry;              // what the high word gets (mod 2^32)
}
inline void msl_atomic_add64_high(device long* p, uint hi) {
    device atomic_uint* w = (device atomic_uint*)p;
    if (hi != 0u) atomic_fetch_add_explicit(&w[1], hi, memory_order_relaxed);
}
inline void msl_atomic_add64(device long* p, long v) {
    msl_atomic_add64_high(p, msl_atomic_add64_low(p, ulong(v)));
}
