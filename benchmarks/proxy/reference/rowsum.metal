// Hand-written row sum (fp32): one simdgroup per row, float4 loads striding the row,
// simd_sum at the end. COLS is a multiple of 128.
#include <metal_stdlib>
using namespace metal;
#ifndef COLS
#define COLS 4096
#endif
#define UNROLL _Pragma("clang loop unroll(full)")

kernel void rowsum(device const float* x [[buffer(0)]], device float* out [[buffer(1)]],
                   uint3 tgid [[threadgroup_position_in_grid]],
                   uint sg [[simdgroup_index_in_threadgroup]],
                   uint lane [[thread_index_in_simdgroup]]) {
    long row = long(tgid.x) * 4 + sg;   // 4 simdgroups, 4 rows per threadgroup
    device const float4* p = (device const float4*)(x + row * COLS);
    float4 acc = float4(0.0f);
    UNROLL for (int i = 0; i < COLS / 128; ++i) acc += p[i * 32 + int(lane)];
    float s = simd_sum((acc.x + acc.y) + (acc.z + acc.w));
    if (lane == 0) out[row] = s;
}
