// The MSL subset msltrans emits (and the hand-written references use), as CUDA: the GPU proxy's
// half of the statement-for-statement mapping (msl_to_cuda.py does the other half, the kernel
// signature and the address spaces). SPEED.md in the design notes describes the method.
//
//   Metal                          CUDA
//   simdgroup (32 lanes)           warp; lane = threadIdx.x & 31
//   threadgroup_barrier            __syncthreads
//   simd_shuffle*, simd_sum/max    __shfl_*_sync (butterflies for the reductions)
//   floatN / halfN / uintN         16/8/4-byte aligned structs, so a float4 access is one
//                                  16-byte instruction as on Apple's GPU
//   precise::f / fast::f           CUDA's accurate f / its intrinsic __f
//   simdgroup_matrix<T, 8, 8>      Apple's lane ownership (2 elements per lane); a multiply-
//                                  accumulate gathers its operands with 12 pair shuffles and
//                                  runs 16 fp32 fma per lane, in k order. With
//                                  -DMSL_PROXY_MMA_STANDIN it is 2 fma (the structure alone).
#pragma once
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <stdint.h>

typedef unsigned int uint;
typedef unsigned short ushort;
typedef unsigned char uchar;
typedef unsigned long ulong;
typedef __half half;
typedef __nv_bfloat16 bfloat;

#define MSL_D __device__ __forceinline__

// ---- vectors ---------------------------------------------------------------------------
template <class T, int N> struct msl_vec;
template <class T> struct alignas(2 * sizeof(T)) msl_vec<T, 2> {
    T x, y;
    MSL_D msl_vec() {}
    MSL_D explicit msl_vec(T s) : x(s), y(s) {}
    MSL_D msl_vec(T a, T b) : x(a), y(b) {}
    template <class U> MSL_D explicit msl_vec(msl_vec<U, 2> o) : x(T(float(o.x))), y(T(float(o.y))) {}
    MSL_D T &operator[](int i) { return (&x)[i]; }
    MSL_D T operator[](int i) const { return (&x)[i]; }
};
template <class T> struct alignas(4 * sizeof(T)) msl_vec<T, 3> {  // Metal: size and alignment of 4
    T x, y, z, pad_;
    MSL_D msl_vec() {}
    MSL_D explicit msl_vec(T s) : x(s), y(s), z(s) {}
    MSL_D msl_vec(T a, T b, T c) : x(a), y(b), z(c) {}
    MSL_D T &operator[](int i) { return (&x)[i]; }
    MSL_D T operator[](int i) const { return (&x)[i]; }
};
template <class T> struct alignas(4 * sizeof(T)) msl_vec<T, 4> {
    T x, y, z, w;
    MSL_D msl_vec() {}
    MSL_D explicit msl_vec(T s) : x(s), y(s), z(s), w(s) {}
    MSL_D msl_vec(T a, T b, T c, T d) : x(a), y(b), z(c), w(d) {}
    template <class U> MSL_D explicit msl_vec(msl_vec<U, 4> o)
        : x(T(float(o.x))), y(T(float(o.y))), z(T(float(o.z))), w(T(float(o.w))) {}
    MSL_D T &operator[](int i) { return (&x)[i]; }
    MSL_D T operator[](int i) const { return (&x)[i]; }
};
#define MSL_VEC_OP(op)                                                                     \
    template <class T, int N> MSL_D msl_vec<T, N> operator op(msl_vec<T, N> a, msl_vec<T, N> b) { \
        msl_vec<T, N> r;                                                                   \
        _Pragma("unroll") for (int i = 0; i < N; ++i) r[i] = a[i] op b[i];                 \
        return r;                                                                          \
    }                                                                                      \
    template <class T, int N> MSL_D msl_vec<T, N> operator op(msl_vec<T, N> a, T b) {      \
        msl_vec<T, N> r;                                                                   \
        _Pragma("unroll") for (int i = 0; i < N; ++i) r[i] = a[i] op b;                    \
        return r;                                                                          \
    }                                                                                      \
    template <class T, int N> MSL_D msl_vec<T, N> &operator op##=(msl_vec<T, N> &a, msl_vec<T, N> b) { \
        a = a op b;                                                                        \
        return a;                                                                          \
    }
MSL_VEC_OP(+)
MSL_VEC_OP(-)
MSL_VEC_OP(*)
MSL_VEC_OP(/)
#undef MSL_VEC_OP

#define MSL_VEC_NAMES(T, name)                                                             \
    typedef msl_vec<T, 2> name##2_t;                                                       \
    typedef msl_vec<T, 3> name##3_t;                                                       \
    typedef msl_vec<T, 4> name##4_t;
MSL_VEC_NAMES(float, float)
MSL_VEC_NAMES(half, half)
MSL_VEC_NAMES(bfloat, bfloat)
MSL_VEC_NAMES(int, int)
MSL_VEC_NAMES(uint, uint)
MSL_VEC_NAMES(short, short)
MSL_VEC_NAMES(ushort, ushort)
MSL_VEC_NAMES(char, char)
MSL_VEC_NAMES(uchar, uchar)
MSL_VEC_NAMES(long, long)
MSL_VEC_NAMES(ulong, ulong)
#undef MSL_VEC_NAMES
// CUDA's own float4 & co. live in the global namespace: the MSL names become macros for ours
// (after every CUDA header is in).
#define float2 float2_t
#define float3 float3_t
#define float4 float4_t
#define half2 half2_t
#define half3 half3_t
#define half4 half4_t
#define bfloat2 bfloat2_t
#define bfloat4 bfloat4_t
#define int2 int2_t
#define int3 int3_t
#define int4 int4_t
#define uint2 uint2_t
#define uint3 uint3_t
#define uint4 uint4_t
#define short2 short2_t
#define short4 short4_t
#define ushort2 ushort2_t
#define ushort4 ushort4_t
#define char2 char2_t
#define char4 char4_t
#define uchar2 uchar2_t
#define uchar4 uchar4_t
#define long2 long2_t
#define ulong2 ulong2_t

// ---- reinterpretation, selection, integer and float helpers -----------------------------
template <class To, class From> MSL_D To as_type(From f) {
    static_assert(sizeof(To) == sizeof(From), "as_type needs equal sizes");
    To t;
    memcpy(&t, &f, sizeof(To));
    return t;
}
template <class T> MSL_D T select(T a, T b, bool c) { return c ? b : a; }
MSL_D float fabs(half x) { return fabsf(float(x)); }
MSL_D half fma(half a, half b, half c) { return __hfma(a, b, c); }   // one rounding, as Metal's
MSL_D bool isnan(half x) { return __hisnan(x); }
MSL_D bool isinf(half x) { return __hisinf(x) != 0; }
MSL_D bool signbit(half x) { return signbit(float(x)); }
MSL_D bool isnan(bfloat x) { return isnan(float(x)); }
MSL_D bool signbit(bfloat x) { return signbit(float(x)); }
template <class T> MSL_D T clamp(T x, T lo, T hi) { return min(max(x, lo), hi); }
MSL_D uint clz(uint x) { return __clz(int(x)); }
MSL_D ulong clz(ulong x) { return __clzll((long long)x); }
MSL_D uint popcount(uint x) { return __popc(x); }
MSL_D uint mulhi(uint a, uint b) { return __umulhi(a, b); }
MSL_D int mulhi(int a, int b) { return __mulhi(a, b); }

namespace precise {
MSL_D float fmax(float x, float y) { return fmaxf(x, y); }
MSL_D float fmin(float x, float y) { return fminf(x, y); }
MSL_D float exp(float x) { return expf(x); }
MSL_D float exp2(float x) { return exp2f(x); }
MSL_D float log(float x) { return logf(x); }
MSL_D float log2(float x) { return log2f(x); }
MSL_D float sqrt(float x) { return __fsqrt_rn(x); }
MSL_D float rsqrt(float x) { return 1.0f / __fsqrt_rn(x); }
MSL_D float divide(float x, float y) { return __fdiv_rn(x, y); }
MSL_D float fmod(float x, float y) { return fmodf(x, y); }
MSL_D float sin(float x) { return sinf(x); }
MSL_D float cos(float x) { return cosf(x); }
MSL_D float tanh(float x) { return tanhf(x); }
MSL_D float pow(float x, float y) { return powf(x, y); }
}  // namespace precise
namespace fast {
MSL_D float exp(float x) { return __expf(x); }
// the hardware approximation, as Triton's CUDA backend issues for tl.math.exp2 (and as
// Apple's fast::exp2 stands for: MSL Table 8.2 bounds it, not its implementation)
MSL_D float exp2(float x) {
    float y;
    asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
    return y;
}
MSL_D float log(float x) { return __logf(x); }
MSL_D float log2(float x) { return __log2f(x); }
MSL_D float rsqrt(float x) { return rsqrtf(x); }
// Metal: "implemented as x * rsqrt(x) with special cases handled correctly"
MSL_D float sqrt(float x) { return (x == 0.0f || isinf(x)) ? x : x * rsqrtf(x); }
MSL_D float divide(float x, float y) { return __fdividef(x, y); }
MSL_D float sin(float x) { return __sinf(x); }
MSL_D float cos(float x) { return __cosf(x); }
MSL_D float tanh(float x) { return tanhf(x); }
}  // namespace fast

// ---- synchronisation --------------------------------------------------------------------
enum class mem_flags { mem_none = 0, mem_device = 1, mem_threadgroup = 2, mem_texture = 4 };
MSL_D mem_flags operator|(mem_flags a, mem_flags b) { return mem_flags(int(a) | int(b)); }
MSL_D void threadgroup_barrier(mem_flags) { __syncthreads(); }
MSL_D void simdgroup_barrier(mem_flags) { __syncwarp(); }

// ---- SIMD-group functions ---------------------------------------------------------------
#define MSL_FULL 0xffffffffu
template <class T> MSL_D T simd_shuffle_xor(T x, ushort m) { return __shfl_xor_sync(MSL_FULL, x, m); }
template <class T> MSL_D T simd_shuffle(T x, ushort l) { return __shfl_sync(MSL_FULL, x, l); }
template <class T> MSL_D T simd_shuffle_down(T x, ushort d) { return __shfl_down_sync(MSL_FULL, x, d); }
template <class T> MSL_D T simd_shuffle_up(T x, ushort d) { return __shfl_up_sync(MSL_FULL, x, d); }
MSL_D half simd_shuffle_xor(half x, ushort m) { return __shfl_xor_sync(MSL_FULL, x, m); }
template <class T> MSL_D T simd_sum(T x) {
#pragma unroll
    for (int m = 16; m >= 1; m >>= 1) x += __shfl_xor_sync(MSL_FULL, x, m);
    return x;
}
template <class T> MSL_D T simd_max(T x) {
#pragma unroll
    for (int m = 16; m >= 1; m >>= 1) x = max(x, __shfl_xor_sync(MSL_FULL, x, m));
    return x;
}
template <class T> MSL_D T simd_min(T x) {
#pragma unroll
    for (int m = 16; m >= 1; m >>= 1) x = min(x, __shfl_xor_sync(MSL_FULL, x, m));
    return x;
}

// ---- simdgroup_matrix<T, 8, 8> in Apple's lane layout -----------------------------------
// Lane bits b4..b0 hold row 4*b4 + 2*b2 + b1 and columns 4*b3 + 2*b0 (+1).
template <class T, int C, int R> struct simdgroup_matrix {
    msl_vec<T, 2> e;
    MSL_D simdgroup_matrix() {}
    MSL_D explicit simdgroup_matrix(T d) {
        uint lane = threadIdx.x & 31u;
        uint row = ((lane >> 4) & 1u) * 4u + ((lane >> 2) & 1u) * 2u + ((lane >> 1) & 1u);
        uint col = ((lane >> 3) & 1u) * 4u + (lane & 1u) * 2u;
        e.x = row == col ? d : T(0.0f);
        e.y = row == col + 1u ? d : T(0.0f);
    }
    MSL_D msl_vec<T, 2> &thread_elements() { return e; }
};
typedef simdgroup_matrix<float, 8, 8> simdgroup_float8x8;
typedef simdgroup_matrix<half, 8, 8> simdgroup_half8x8;
typedef simdgroup_matrix<bfloat, 8, 8> simdgroup_bfloat8x8;

MSL_D void msl_mat_pos(uint &row, uint &col) {
    uint lane = threadIdx.x & 31u;
    row = ((lane >> 4) & 1u) * 4u + ((lane >> 2) & 1u) * 2u + ((lane >> 1) & 1u);
    col = ((lane >> 3) & 1u) * 4u + (lane & 1u) * 2u;
}
template <class T, int C, int R> MSL_D simdgroup_matrix<T, C, R> make_filled_simdgroup_matrix(T v) {
    simdgroup_matrix<T, C, R> m;
    m.e = msl_vec<T, 2>(v, v);
    return m;
}
template <class T, class P>
MSL_D void simdgroup_load(simdgroup_matrix<T, 8, 8> &d, P src, ulong epr = 8,
                          ulong2 org = ulong2(0, 0), bool transpose = false) {
    uint row, col;
    msl_mat_pos(row, col);
    if (!transpose) {
        d.e = *(const msl_vec<T, 2> *)&src[(org.y + row) * epr + org.x + col];
    } else {
        d.e.x = src[(org.y + col) * epr + org.x + row];
        d.e.y = src[(org.y + col + 1) * epr + org.x + row];
    }
}
template <class T, class P>
MSL_D void simdgroup_store(simdgroup_matrix<T, 8, 8> a, P dst, ulong epr = 8,
                           ulong2 org = ulong2(0, 0), bool transpose = false) {
    uint row, col;
    msl_mat_pos(row, col);
    if (!transpose) {
        *(msl_vec<T, 2> *)&dst[(org.y + row) * epr + org.x + col] = a.e;
    } else {
        dst[(org.y + col) * epr + org.x + row] = a.e.x;
        dst[(org.y + col + 1) * epr + org.x + row] = a.e.y;
    }
}
template <class T> MSL_D unsigned long long msl_pair_bits(msl_vec<T, 2> v) {
    if constexpr (sizeof(T) == 4) return as_type<unsigned long long>(v);
    else return (unsigned long long)as_type<uint>(v);
}
template <class T> MSL_D msl_vec<T, 2> msl_pair_from(unsigned long long b) {
    if constexpr (sizeof(T) == 4) return as_type<msl_vec<T, 2>>(b);
    else return as_type<msl_vec<T, 2>>(uint(b));
}
template <class TD, class TA, class TB, class TC>
MSL_D void simdgroup_multiply_accumulate(simdgroup_matrix<TD, 8, 8> &d, simdgroup_matrix<TA, 8, 8> a,
                                         simdgroup_matrix<TB, 8, 8> b, simdgroup_matrix<TC, 8, 8> c) {
#ifdef MSL_PROXY_MMA_STANDIN
    d.e.x = TD(fmaf(float(a.e.x), float(b.e.x), float(c.e.x)));
    d.e.y = TD(fmaf(float(a.e.y), float(b.e.y), float(c.e.y)));
#else
    uint lane = threadIdx.x & 31u;
    uint rowbits = lane & 0x16u;   // b4, b2, b1: this lane's row
    uint colbits = lane & 0x09u;   // b3, b0: this lane's column pair
    float ak[8], bk0[8], bk1[8];
    unsigned long long abits = msl_pair_bits(a.e), bbits = msl_pair_bits(b.e);
#pragma unroll
    for (uint q = 0; q < 4u; ++q) {  // A[row][4*b3 + 2*b0 + {0,1}] from the lanes of my row
        uint src = rowbits | ((q >> 1) << 3) | (q & 1u);
        msl_vec<TA, 2> p = msl_pair_from<TA>(__shfl_sync(MSL_FULL, abits, src));
        ak[q * 2] = float(p.x);
        ak[q * 2 + 1] = float(p.y);
    }
#pragma unroll
    for (uint k = 0; k < 8u; ++k) {  // B[k][my columns] from the lane holding row k of them
        uint src = colbits | ((k >> 2) << 4) | (((k >> 1) & 1u) << 2) | ((k & 1u) << 1);
        msl_vec<TB, 2> p = msl_pair_from<TB>(__shfl_sync(MSL_FULL, bbits, src));
        bk0[k] = float(p.x);
        bk1[k] = float(p.y);
    }
    float r0 = float(c.e.x), r1 = float(c.e.y);
#pragma unroll
    for (uint k = 0; k < 8u; ++k) {
        r0 = fmaf(ak[k], bk0[k], r0);
        r1 = fmaf(ak[k], bk1[k], r1);
    }
    d.e.x = TD(r0);
    d.e.y = TD(r1);
#endif
}
