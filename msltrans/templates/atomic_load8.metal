// atomic 8-bit load: a relaxed atomic load of the containing aligned 32-bit word
inline uchar msl_atomic_load8(device char* p) {
    device atomic_uint* w = (device atomic_uint*)((ulong)p & ~3ul);
    uint shift = uint((ulong)p & 3ul) * 8u;
    return uchar(atomic_load_explicit(w, memory_order_relaxed) >> shift);
}
