// Hand-written GEMM in the style of MLX's steel kernels, the reference msltrans's tt.dot
// path is timed against (benchmarks/proxy). C (fp32) = A @ B, row major, M, N, K multiples
// of the tile (the aligned fast path a hand-written library takes), A/B of GEMM_T.
//   - 64 x 64 tile per threadgroup, BK = 32; 4 simdgroups in a 2 x 2 grid, each owning a
//     32 x 32 quadrant as 4 x 4 simdgroup matrices kept across the K loop;
//   - threadgroup tiles padded by 16 bytes per row; 16-byte cooperative copies from device
//     memory; two barriers per K step; every loop unrolled;
//   - fp16/bf16 fragments widened to fp32 in registers, fp32 multiply-accumulate in k order
//     (the same rounding as msltrans's dot, so the results are bit-identical);
//   - tiles visited in groups of GROUP tile rows (the same program order as the benchmark's
//     Triton kernel), the epilogue stores fragments straight to device memory.
#include <metal_stdlib>
#include <metal_simdgroup_matrix>
using namespace metal;
#ifndef GEMM_T
#define GEMM_T half
#endif
#define UNROLL _Pragma("clang loop unroll(full)")

constant constexpr int BM = 64, BN = 64, BK = 32, GROUP = 8, THREADS = 128;
constant constexpr int VEC = 16 / sizeof(GEMM_T);          // elements per 16-byte copy
constant constexpr int LDA = BK + VEC, LDB = BN + VEC;     // padded row lengths

kernel void gemm(device const GEMM_T* A [[buffer(0)]], device const GEMM_T* B [[buffer(1)]],
                 device float* C [[buffer(2)]], constant int& M [[buffer(3)]],
                 constant int& N [[buffer(4)]], constant int& K [[buffer(5)]],
                 uint3 tgid [[threadgroup_position_in_grid]],
                 uint tid [[thread_index_in_threadgroup]],
                 uint sg [[simdgroup_index_in_threadgroup]]) {
    // Declared as uint4 so that the 16-byte copies below are aligned (Metal aligns a
    // threadgroup array only to its element type).
    threadgroup uint4 a_words[BM * LDA / VEC];
    threadgroup uint4 b_words[BK * LDB / VEC];
    threadgroup GEMM_T* As = (threadgroup GEMM_T*)a_words;
    threadgroup GEMM_T* Bs = (threadgroup GEMM_T*)b_words;
    // grouped program order
    int pid = int(tgid.x);
    int tiles_m = M / BM, tiles_n = N / BN;
    int per_group = GROUP * tiles_n;
    int row0 = (pid / per_group) * GROUP;
    int rows_here = min(tiles_m - row0, GROUP);
    int tm = row0 + (pid % per_group) % rows_here;
    int tn = (pid % per_group) / rows_here;
    device const GEMM_T* a = A + long(tm) * BM * K;
    device const GEMM_T* b = B + long(tn) * BN;
    uint sm = sg / 2, sn = sg % 2;          // this simdgroup's quadrant
    simdgroup_float8x8 acc[4][4];
    UNROLL for (int i = 0; i < 4; ++i)
        UNROLL for (int j = 0; j < 4; ++j)
            acc[i][j] = make_filled_simdgroup_matrix<float, 8, 8>(0.0f);
    for (int k0 = 0; k0 < K; k0 += BK) {
        threadgroup_barrier(mem_flags::mem_threadgroup);
        UNROLL for (int i = 0; i < BM * BK / VEC / THREADS; ++i) {
            int v = int(tid) + i * THREADS;
            int r = v / (BK / VEC), c = (v % (BK / VEC)) * VEC;
            *(threadgroup uint4*)&As[r * LDA + c] = *(device const uint4*)&a[long(r) * K + k0 + c];
        }
        UNROLL for (int i = 0; i < BK * BN / VEC / THREADS; ++i) {
            int v = int(tid) + i * THREADS;
            int r = v / (BN / VEC), c = (v % (BN / VEC)) * VEC;
            *(threadgroup uint4*)&Bs[r * LDB + c] = *(device const uint4*)&b[long(k0 + r) * N + c];
        }
        threadgroup_barrier(mem_flags::mem_threadgroup);
        UNROLL for (int kk = 0; kk < BK; kk += 8) {
            simdgroup_float8x8 fa[4], fb[4];
            UNROLL for (int i = 0; i < 4; ++i) {
                simdgroup_matrix<GEMM_T, 8, 8> h;
                simdgroup_load(h, As, LDA, ulong2(kk, sm * 32 + i * 8));
                fa[i].thread_elements() = float2(h.thread_elements());
            }
            UNROLL for (int j = 0; j < 4; ++j) {
                simdgroup_matrix<GEMM_T, 8, 8> h;
                simdgroup_load(h, Bs, LDB, ulong2(sn * 32 + j * 8, kk));
                fb[j].thread_elements() = float2(h.thread_elements());
            }
            UNROLL for (int i = 0; i < 4; ++i)
                UNROLL for (int j = 0; j < 4; ++j)
                    simdgroup_multiply_accumulate(acc[i][j], fa[i], fb[j], acc[i][j]);
        }
    }
    device float* c = C + long(tm * BM + sm * 32) * N + tn * BN + sn * 32;
    UNROLL for (int i = 0; i < 4; ++i)
        UNROLL for (int j = 0; j < 4; ++j)
            simdgroup_store(acc[i][j], c, N, ulong2(j * 8, i * 8));
}
