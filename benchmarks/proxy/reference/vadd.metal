// Hand-written vector add: one float4 (16-byte) access per thread and operand.
#include <metal_stdlib>
using namespace metal;

kernel void vadd(device const float4* a [[buffer(0)]], device const float4* b [[buffer(1)]],
                 device float4* out [[buffer(2)]], constant int& n4 [[buffer(3)]],
                 uint3 tgid [[threadgroup_position_in_grid]],
                 uint tid [[thread_index_in_threadgroup]]) {
    // 256 threads x 4 float4 per threadgroup, consecutive threads on consecutive vectors
    for (int i = 0; i < 4; ++i) {
        int v = int(tgid.x) * 1024 + i * 256 + int(tid);
        if (v < n4) out[v] = a[v] + b[v];
    }
}
