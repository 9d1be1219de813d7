// strong 32-bit compare-and-swap from Metal's weak one; returns the old value
inline uint msl_cas32(device atomic_uint* p, uint cmp, uint val) {
    uint expected = cmp;
    while (!atomic_compare_exchange_weak_explicit(p, &expected, val, memory_order_relaxed,
                                                  memory_order_relaxed)) {
        if (expected != cmp) return expected;
        expected = cmp;
    }
    return cmp;
}
