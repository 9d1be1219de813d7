// Hand-written row softmax over the first `cols` of each row (fp32), rows `stride` elements
// apart: the MLX way for ragged rows. Each thread owns PER runs of 4 columns; a run wholly
// inside the row is one float4 load and store, the run the bound cuts (and runs past it)
// element by element with -inf / no store. One threadgroup of 256 threads per row step,
// programs striding over the rows; simd_max/simd_sum then one threadgroup pass, precise exp,
// fast division (the math msltrans emits for tl.exp and fp32 /). The host passes rows whose
// start is 16-byte aligned (stride a multiple of 4, as MLX checks before its vector path);
// BLOCK is cols rounded up to a multiple of 1024.
#include <metal_stdlib>
using namespace metal;
#ifndef BLOCK
#define BLOCK 1024
#endif
#define UNROLL _Pragma("clang loop unroll(full)")
constant constexpr int THREADS = 256, PER = BLOCK / 4 / THREADS;

kernel void softmax_ragged(device float* out [[buffer(0)]], device const float* in [[buffer(1)]],
                           constant int& rows [[buffer(2)]], constant int& cols [[buffer(3)]],
                           constant int& stride [[buffer(4)]],
                           uint3 tgid [[threadgroup_position_in_grid]],
                           uint3 ngroups [[threadgroups_per_grid]],
                           uint tid [[thread_index_in_threadgroup]],
                           uint sg [[simdgroup_index_in_threadgroup]],
                           uint lane [[thread_index_in_simdgroup]]) {
    threadgroup float part[THREADS / 32];
    for (int r = int(tgid.x); r < rows; r += int(ngroups.x)) {
        device const float* x = in + long(r) * stride;
        float4 v[PER];
        UNROLL for (int i = 0; i < PER; ++i) {
            int c = 4 * (i * THREADS + int(tid));
            if (c + 4 <= cols) {
                v[i] = *(device const float4*)(x + c);
            } else {
                v[i] = float4(-INFINITY);
                if (c < cols) v[i].x = x[c];
                if (c + 1 < cols) v[i].y = x[c + 1];
                if (c + 2 < cols) v[i].z = x[c + 2];
            }
        }
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
        device float* y = out + long(r) * stride;
        UNROLL for (int i = 0; i < PER; ++i) {
            int c = 4 * (i * THREADS + int(tid));
            float4 q = float4(fast::divide(v[i].x, s), fast::divide(v[i].y, s),
                              fast::divide(v[i].z, s), fast::divide(v[i].w, s));
            if (c + 4 <= cols) {
                *(device float4*)(y + c) = q;
            } else {
                if (c < cols) y[c] = q.x;
                if (c + 1 < cols) y[c + 1] = q.y;
                if (c + 2 < cols) y[c + 2] = q.z;
            }
        }
    }
}
