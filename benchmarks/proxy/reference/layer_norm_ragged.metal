// Hand-written layer norm forward over rows of `cols` elements (LN_T = half or float), one row
// per threadgroup of 256 threads, the same three passes as the benchmark's Triton kernel
// (mean, variance, normalise; x re-read each pass, statistics in fp32), written the MLX way
// for ragged rows: each thread owns PER runs of 16 bytes (8 halves / 4 floats); a run wholly
// inside the row is one 16-byte access, the run the bound cuts goes element by element.
// simd_sum then one threadgroup pass. Rows `cols` apart (cols a multiple of 16 / sizeof(LN_T),
// so every row starts 16-byte aligned); BLOCK: cols rounded up to a multiple of 256 runs.
#include <metal_stdlib>
using namespace metal;
#ifndef LN_T
#define LN_T half
#endif
#ifndef BLOCK
#define BLOCK 4096
#endif
#define UNROLL _Pragma("clang loop unroll(full)")
constant constexpr int THREADS = 256, VEC = 16 / int(sizeof(LN_T)), PER = BLOCK / VEC / THREADS;

// One 16-byte run as VEC floats, and back.
inline void unpack(uint4 u, thread float* f) {
    if (sizeof(LN_T) == 2) {
        half2 h0 = as_type<half2>(u.x), h1 = as_type<half2>(u.y);
        half2 h2 = as_type<half2>(u.z), h3 = as_type<half2>(u.w);
        f[0] = float(h0.x); f[1] = float(h0.y); f[2] = float(h1.x); f[3] = float(h1.y);
        f[4] = float(h2.x); f[5] = float(h2.y); f[6] = float(h3.x); f[7] = float(h3.y);
    } else {
        f[0] = as_type<float>(u.x); f[1] = as_type<float>(u.y);
        f[2] = as_type<float>(u.z); f[3] = as_type<float>(u.w);
    }
}

inline uint4 pack(thread const float* f) {
    if (sizeof(LN_T) == 2)
        return uint4(as_type<uint>(half2(half(f[0]), half(f[1]))),
                     as_type<uint>(half2(half(f[2]), half(f[3]))),
                     as_type<uint>(half2(half(f[4]), half(f[5]))),
                     as_type<uint>(half2(half(f[6]), half(f[7]))));
    return uint4(as_type<uint>(f[0]), as_type<uint>(f[1]), as_type<uint>(f[2]),
                 as_type<uint>(f[3]));
}

// Run i of this thread as floats: a 16-byte load where the run is inside the row.
inline void load_run(device const LN_T* row, int c, int cols, thread float* f) {
    if (c + VEC <= cols) {
        unpack(*(device const uint4*)(row + c), f);
    } else {
        UNROLL for (int j = 0; j < VEC; ++j) f[j] = c + j < cols ? float(row[c + j]) : 0.0f;
    }
}

inline float block_sum(float s, threadgroup float* part, uint sg, uint lane) {
    s = simd_sum(s);
    threadgroup_barrier(mem_flags::mem_threadgroup);
    if (lane == 0) part[sg] = s;
    threadgroup_barrier(mem_flags::mem_threadgroup);
    s = part[0];
    UNROLL for (int i = 1; i < THREADS / 32; ++i) s += part[i];
    return s;
}

kernel void layer_norm_ragged(device const LN_T* x [[buffer(0)]], device LN_T* y [[buffer(1)]],
                              device const LN_T* w [[buffer(2)]], device const LN_T* b [[buffer(3)]],
                              device float* mean [[buffer(4)]], device float* rstd [[buffer(5)]],
                              constant int& cols [[buffer(6)]], constant float& eps [[buffer(7)]],
                              uint3 tgid [[threadgroup_position_in_grid]],
                              uint tid [[thread_index_in_threadgroup]],
                              uint sg [[simdgroup_index_in_threadgroup]],
                              uint lane [[thread_index_in_simdgroup]]) {
    threadgroup float part[THREADS / 32];
    long r = long(tgid.x);
    device const LN_T* xr = x + r * cols;
    device LN_T* yr = y + r * cols;
    float f[VEC];
    float s = 0.0f;
    UNROLL for (int i = 0; i < PER; ++i) {
        load_run(xr, VEC * (i * THREADS + int(tid)), cols, f);
        UNROLL for (int j = 0; j < VEC; ++j) s += f[j];
    }
    float mu = block_sum(s, part, sg, lane) / float(cols);
    float q = 0.0f;
    UNROLL for (int i = 0; i < PER; ++i) {
        int c = VEC * (i * THREADS + int(tid));
        load_run(xr, c, cols, f);
        UNROLL for (int j = 0; j < VEC; ++j) {
            float d = c + j < cols ? f[j] - mu : 0.0f;
            q += d * d;
        }
    }
    float inv = 1.0f / sqrt(block_sum(q, part, sg, lane) / float(cols) + eps);
    if (tid == 0) {
        mean[r] = mu;
        rstd[r] = inv;
    }
    UNROLL for (int i = 0; i < PER; ++i) {
        int c = VEC * (i * THREADS + int(tid));
        float g[VEC], h[VEC];
        load_run(w, c, cols, g);
        load_run(b, c, cols, h);
        load_run(xr, c, cols, f);
        UNROLL for (int j = 0; j < VEC; ++j) f[j] = (f[j] - mu) * inv * g[j] + h[j];
        if (c + VEC <= cols) {
            *(device uint4*)(yr + c) = pack(f);
        } else {
            UNROLL for (int j = 0; j < VEC; ++j) if (c + j < cols) yr[c + j] = LN_T(f[j]);
        }
    }
}
