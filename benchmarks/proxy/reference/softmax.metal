// Hand-written row softmax (fp32): one threadgroup of 256 threads per row step, programs
// striding over the rows as the benchmark's Triton kernel does; float4 loads kept in
// registers, simd_max/simd_sum then one threadgroup pass, precise exp and fast division
// (the same math msltrans emits for tl.exp and fp32 /). COLS is a multiple of 1024.
#include <metal_stdlib>
using namespace metal;
#ifndef COLS
#define COLS 4096
#endif
#define UNROLL _Pragma("clang loop unroll(full)")
constant constexpr int THREADS = 256, PER = COLS / 4 / THREADS;

kernel void softmax(device float* out [[buffer(0)]], device const float* in [[buffer(1)]],
                    constant int& rows [[buffer(2)]],
                    uint3 tgid [[threadgroup_position_in_grid]],
                    uint3 ngroups [[threadgroups_per_grid]],
                    uint tid [[thread_index_in_threadgroup]],
                    uint sg [[simdgroup_index_in_threadgroup]],
                    uint lane [[thread_index_in_simdgroup]]) {
    threadgroup float part[THREADS / 32];
    for (int r = int(tgid.x); r < rows; r += int(ngroups.x)) {
        device const float4* x = (device const float4*)(in + long(r) * COLS);
        float4 v[PER];
        UNROLL for (int i = 0; i < PER; ++i) v[i] = x[i * THREADS + int(tid)];
        float m = v[0].x;
        UNROLL for (int i = 0; i < PER; ++i)
            m = max(max(m, max(v[i].x, v[i].y)), max(v[i].z, v[i].w));
        m = simd_max(m);
        threadgroup_barrier(mem_flags::mem_threadgroup);
        if (lane == 0) part[sg] = m;
        threadgroup_barrier(mem_flags::mem_threadgroup);
        m = part[0];
        UNROLL for (int i = 1; i < THREADS / 32; ++i) m = max(m, part[i]);
        float s = 0.0f;
        UNROLL for (int i = 0; i < PER; ++i) {
            v[i] = float4(precise::exp(v[i].x - m), precise::exp(v[i].y - m),
                          precise::exp(v[i].z - m), precise::exp(v[i].w - m));
            s += (v[i].x + v[i].y) + (v[i].z + v[i].w);
        }
        s = simd_sum(s);
        threadgroup_barrier(mem_flags::mem_threadgroup);
        if (lane == 0) part[sg] = s;
        threadgroup_barrier(mem_flags::mem_threadgroup);
        s = part[0];
        UNROLL for (int i = 1; i < THREADS / 32; ++i) s += part[i];
        device float4* y = (device float4*)(out + long(r) * COLS);
        UNROLL for (int i = 0; i < PER; ++i)
            y[i * THREADS + int(tid)] = float4(fast::divide(v[i].x, s), fast::divide(v[i].y, s),
                                               fast::divide(v[i].z, s), fast::divide(v[i].w, s));
    }
}
