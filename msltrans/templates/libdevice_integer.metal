// msltrans libdevice support (integer intrinsics): CUDA's __mul24, __sad, __hadd, __rhadd,
// __byte_perm and their unsigned forms, exact, with libdevice's semantics
// (msltrans/lower/libdevice_int.py). Arithmetic is done on unsigned words, so it wraps
// modulo 2^32 as PTX does; `>>` on a signed int is arithmetic in Metal.
inline int msl_mul24(int x, int y) {  // low 24 bits, sign-extended from bit 23
    int sx = int(uint(x) << 8) >> 8;
    int sy = int(uint(y) << 8) >> 8;
    return int(uint(sx) * uint(sy));
}
inline int msl_umul24(int x, int y) {  // low 24 bits, zero-extended
    return int((uint(x) & 0xffffffu) * (uint(y) & 0xffffffu));
}
inline int msl_sad(int x, int y, int z) {  // |x - y| + z, x and y compared signed
    uint d = x < y ? uint(y) - uint(x) : uint(x) - uint(y);
    return int(d + uint(z));
}
inline int msl_usad(int x, int y, int z) {  // |x - y| + z, x and y compared unsigned
    uint a = uint(x);
    uint b = uint(y);
    return int((a < b ? b - a : a - b) + uint(z));
}
inline int msl_hadd(int x, int y) {  // (x + y) >> 1 without overflow
    return int(uint(x & y) + uint((x ^ y) >> 1));
}
inline int msl_uhadd(int x, int y) {
    return int((uint(x) & uint(y)) + ((uint(x) ^ uint(y)) >> 1));
}
inline int msl_rhadd(int x, int y) {  // (x + y + 1) >> 1 without overflow
    return int(uint(x | y) - uint((x ^ y) >> 1));
}
inline int msl_urhadd(int x, int y) {
    return int((uint(x) | uint(y)) - ((uint(x) ^ uint(y)) >> 1));
}
// Byte i of the result is byte (s >> 4i) & 7 of the eight bytes y:x (x the low word).
inline int msl_byte_perm(int x, int y, int s) {
    ulong bytes = (ulong(uint(y)) << 32) | ulong(uint(x));
    uint r = 0u;
    for (uint i = 0u; i < 4u; ++i) {
        uint pick = (uint(s) >> (4u * i)) & 7u;
        r |= uint((bytes >> (8u * pick)) & 0xfful) << (8u * i);
    }
    return int(r);
}
