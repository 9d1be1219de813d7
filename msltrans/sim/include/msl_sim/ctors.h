// Metal-style vector constructors, included LAST by metal_stdlib so the shim's own code never
// goes through them. `float4(...)` converts element-wise / splats / concatenates; `float4`
// not followed by '(' is the plain type. Limitation: `T(a, b)` with T a template parameter
// naming a vector is not covered (clang parses it as a scalar initializer).
#ifndef MSL_SIM_CTORS_H
#define MSL_SIM_CTORS_H
#pragma clang system_header
#define MSL_SIM_CTOR(T, N) ::metal::__detail::make_vec<T, N>::make
#define char2(...) MSL_SIM_CTOR(char, 2)(__VA_ARGS__)
#define char3(...) MSL_SIM_CTOR(char, 3)(__VA_ARGS__)
#define char4(...) MSL_SIM_CTOR(char, 4)(__VA_ARGS__)
#define uchar2(...) MSL_SIM_CTOR(uchar, 2)(__VA_ARGS__)
#define uchar3(...) MSL_SIM_CTOR(uchar, 3)(__VA_ARGS__)
#define uchar4(...) MSL_SIM_CTOR(uchar, 4)(__VA_ARGS__)
#define short2(...) MSL_SIM_CTOR(short, 2)(__VA_ARGS__)
#define short3(...) MSL_SIM_CTOR(short, 3)(__VA_ARGS__)
#define short4(...) MSL_SIM_CTOR(short, 4)(__VA_ARGS__)
#define ushort2(...) MSL_SIM_CTOR(ushort, 2)(__VA_ARGS__)
#define ushort3(...) MSL_SIM_CTOR(ushort, 3)(__VA_ARGS__)
#define ushort4(...) MSL_SIM_CTOR(ushort, 4)(__VA_ARGS__)
#define int2(...) MSL_SIM_CTOR(int, 2)(__VA_ARGS__)
#define int3(...) MSL_SIM_CTOR(int, 3)(__VA_ARGS__)
#define int4(...) MSL_SIM_CTOR(int, 4)(__VA_ARGS__)
#define uint2(...) MSL_SIM_CTOR(uint, 2)(__VA_ARGS__)
#define uint3(...) MSL_SIM_CTOR(uint, 3)(__VA_ARGS__)
#define uint4(...) MSL_SIM_CTOR(uint, 4)(__VA_ARGS__)
#define long2(...) MSL_SIM_CTOR(long, 2)(__VA_ARGS__)
#define long3(...) MSL_SIM_CTOR(long, 3)(__VA_ARGS__)
#define long4(...) MSL_SIM_CTOR(long, 4)(__VA_ARGS__)
#define ulong2(...) MSL_SIM_CTOR(ulong, 2)(__VA_ARGS__)
#define ulong3(...) MSL_SIM_CTOR(ulong, 3)(__VA_ARGS__)
#define ulong4(...) MSL_SIM_CTOR(ulong, 4)(__VA_ARGS__)
#define half2(...) MSL_SIM_CTOR(half, 2)(__VA_ARGS__)
#define half3(...) MSL_SIM_CTOR(half, 3)(__VA_ARGS__)
#define half4(...) MSL_SIM_CTOR(half, 4)(__VA_ARGS__)
#define bfloat2(...) MSL_SIM_CTOR(bfloat, 2)(__VA_ARGS__)
#define bfloat3(...) MSL_SIM_CTOR(bfloat, 3)(__VA_ARGS__)
#define bfloat4(...) MSL_SIM_CTOR(bfloat, 4)(__VA_ARGS__)
#define float2(...) MSL_SIM_CTOR(float, 2)(__VA_ARGS__)
#define float3(...) MSL_SIM_CTOR(float, 3)(__VA_ARGS__)
#define float4(...) MSL_SIM_CTOR(float, 4)(__VA_ARGS__)
#endif
