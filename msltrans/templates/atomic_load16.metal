// atomic 16-bit load: a relaxed atomic load of the containing aligned 32-bit word
inline ushort msl_atomic_load16(device short* p) {
    device atomic_uint* w = (device atomic_uint*)((ulong)p & ~3ul);
    uint shift = ((ulong)p & 2ul) != 0ul ? 16u : 0u;
    return ushort(atomic_load_explicit(w, memory_order_relaxed) >> shift);
}
