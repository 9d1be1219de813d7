"""A hand-written MSL softmax (one threadgroup of 128 threads per row: SIMD reductions, a
cross-simdgroup pass through threadgroup memory, exp, a division), shared by the simulator's
dispatch tests."""

SOFTMAX_MSL = """
kernel void softmax(device const float* x [[buffer(0)]], device float* y [[buffer(1)]],
                    constant uint& cols [[buffer(2)]], uint row [[threadgroup_position_in_grid]],
                    uint lid [[thread_position_in_threadgroup]],
                    uint lane [[thread_index_in_simdgroup]],
                    uint sg [[simdgroup_index_in_threadgroup]]) {
    threadgroup float partial[4];
    device const float* in = x + row * cols;
    float m = -INFINITY;
    for (uint c = lid; c < cols; c += 128) m = max(m, in[c]);
    m = simd_max(m);
    if (lane == 0) partial[sg] = m;
    threadgroup_barrier(mem_flags::mem_threadgroup);
    m = max(max(partial[0], partial[1]), max(partial[2], partial[3]));
    threadgroup_barrier(mem_flags::mem_threadgroup);
    float total = 0.0f;
    for (uint c = lid; c < cols; c += 128) total += exp(in[c] - m);
    total = simd_sum(total);
    if (lane == 0) partial[sg] = total;
    threadgroup_barrier(mem_flags::mem_threadgroup);
    total = partial[0] + partial[1] + partial[2] + partial[3];
    for (uint c = lid; c < cols; c += 128) y[row * cols + c] = exp(in[c] - m) / total;
}
"""
