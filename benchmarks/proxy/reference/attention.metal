// Hand-written FlashAttention forward in the style of MLX's steel attention, the reference
// msltrans's attention kernels are timed against (benchmarks/proxy). fp16 Q, K, V, O of shape
// [batch*heads, N, HEAD_DIM], contiguous; fp32 accumulation; N a multiple of BQ and BK (the
// aligned fast path a hand-written library takes; ragged lengths are out of its scope).
//   O = softmax(Q K^T * sm_scale) V, computed in base 2: `scale` = sm_scale * log2(e), folded
//   on the host, multiplies the fp32 scores (exp(x*sm) = exp2(x*sm*log2 e)).
// Structure (MLX's choice of tiles: BQ = 32 query rows, 4 simdgroups of 8 rows each, BK = 32
// keys per step for head dim 64, 16 for 128):
//   - Q staged once through threadgroup memory (16-byte copies) into simdgroup fragments
//     that stay in registers for the whole key loop;
//   - K and V blocks staged together through padded threadgroup tiles (rows padded by 16
//     bytes: no bank conflicts on the fragment loads), 16-byte cooperative copies; exactly
//     2 barriers per key step (tiles free / tiles filled);
//   - S = Q K^T in simdgroup_float8x8 fragments (K read transposed by simdgroup_load);
//   - row max and sum in the fragments: a lane holds row 4*b4 + 2*b2 + b1 and columns
//     4*b3 + 2*b0 (+1) of each 8x8 fragment (lane bits b4..b0), so a row lives in the 4
//     lanes differing in bits 0 and 3: combine in-lane, then simd_shuffle_xor by 1 and 8;
//   - exp2 (fast::, as MLX), the O fragments rescaled in place, P rounded to half in
//     registers (as the Triton kernels' p.to(fp16)) and used as the A operand of P*V;
//   - fp16 fragments widened to fp32 in registers, fp32 multiply-accumulate (the same
//     rounding as msltrans's dot and the proxy's emulation); O stored from the fragments.
// CAUSAL=1: key blocks up to the query block's diagonal, masked (-inf) only where a block
// reaches past the block's first query. WRITE_LSE=1: also the row statistic
// m + log2(l) (base-2 log-sum-exp of the scaled scores) into LSE[bh * N + query], as the
// tutorial-06-shaped kernel does; with 0 the LSE buffer is never touched.
//
// Error bound against float64 attention (stated for |scores*scale| and |V| of order 1; the
// test in tests/e2e/test_attention_scope.py asserts it). With u = 2^-24 (fp32) and h = 2^-11
// (fp16), for each output element, relative to max|V| (the weights sum to 1):
//   - S: a D-term fp32 dot of exact fp16 products: |dS| <= D*u*sum|q*k|, then the scale
//     (1 u), so the exponent is off by <= (D + 2)*u*sum|q*k*scale| + u*|m| -> P relatively
//     (ln 2)*that;
//   - P rounded to fp16: relative h/2 per weight -> <= (h/2)*max|V| in O;
//   - P*V: an N-term fp32 accumulation (<= N*u relative, with the rescales folded in: <= 2
//     roundings per step) and l the same; 1/l and the product: 2 u;
//   - O rounded to fp16: (h/2)*|O|.
// So |O - O64| <= (h/2)(max|V| + |O|) + (N*u*(1 + 2/BK) + (ln 2)(D + 2)*u*max sum|q*k*scale|
// + 4u)*max|V|: with D <= 128, N <= 4096, unit-variance inputs and scale ~ 0.18, the fp32
// terms stay below 1e-3*max|V| (N*u = 2.4e-4 dominates); the test asserts
// h/2*(max|V| + max|O64|) + (N + (D + 2)*max sum|q*k*scale| + 8)*u*max|V|.
#include <metal_stdlib>
#include <metal_simdgroup_matrix>
using namespace metal;
#ifndef HEAD_DIM
#define HEAD_DIM 64
#endif
#ifndef CAUSAL
#define CAUSAL 0
#endif
#ifndef WRITE_LSE
#define WRITE_LSE 0
#endif
#ifndef KEYS_PER_STEP
#define KEYS_PER_STEP (HEAD_DIM < 128 ? 32 : 16)
#endif
#define UNROLL _Pragma("clang loop unroll(full)")

constant constexpr int D = HEAD_DIM, BK = KEYS_PER_STEP, SIMDGROUPS = 4, THREADS = 128;
constant constexpr int BQ = SIMDGROUPS * 8;         // 8 query rows (one fragment) each
constant constexpr int VEC = 8;                     // halves per 16-byte copy
constant constexpr int LD = D + VEC;                // padded tile rows
constant constexpr int TD = D / 8, TK = BK / 8;     // fragments along D and along the keys
static_assert(D % 8 == 0 && BK % 8 == 0 && BQ <= 2 * BK, "Q is staged in the K/V tiles");
static_assert((BK * D / VEC) % THREADS == 0 && (BQ * D / VEC) % THREADS == 0,
              "every thread copies the same number of 16-byte pieces");

kernel void attention(device const half* Q [[buffer(0)]], device const half* K [[buffer(1)]],
                      device const half* V [[buffer(2)]], device half* O [[buffer(3)]],
                      device float* LSE [[buffer(4)]], constant int& N [[buffer(5)]],
                      constant float& scale [[buffer(6)]],
                      uint3 tgid [[threadgroup_position_in_grid]],
                      uint tid [[thread_index_in_threadgroup]],
                      uint sg [[simdgroup_index_in_threadgroup]],
                      uint lane [[thread_index_in_simdgroup]]) {
    // K rows, then V rows; Q staged here once. Declared as uint4 so that the 16-byte copies
    // below are aligned (Metal aligns a threadgroup array only to its element type).
    threadgroup uint4 tile_words[2 * BK * LD / 8];
    threadgroup half* tiles = (threadgroup half*)tile_words;
    threadgroup half* Ks = tiles;
    threadgroup half* Vs = tiles + BK * LD;
    const int q0 = int(tgid.x) * BQ;
    const ulong head = ulong(tgid.y) * ulong(N) * D;
    device const half* k = K + head;
    device const half* v = V + head;
    // this lane's place in every 8x8 fragment: row fr, columns fc and fc + 1
    const int fr = int(((lane >> 4) & 1u) * 4u + ((lane >> 2) & 1u) * 2u + ((lane >> 1) & 1u));
    const int fc = int(((lane >> 3) & 1u) * 4u + (lane & 1u) * 2u);
    const int query = q0 + int(sg) * 8 + fr;        // the query row this lane works on

    // Q: staged once, then kept in fragments (fp16 values widened to fp32).
    device const half* q = Q + head + ulong(q0) * D;
    UNROLL for (int i = 0; i < BQ * D / VEC / THREADS; ++i) {
        int c = int(tid) + i * THREADS;
        int r = c / (D / VEC), col = (c % (D / VEC)) * VEC;
        *(threadgroup uint4*)&tiles[r * LD + col] = *(device const uint4*)&q[r * D + col];
    }
    threadgroup_barrier(mem_flags::mem_threadgroup);
    simdgroup_float8x8 qf[TD];
    UNROLL for (int d = 0; d < TD; ++d) {
        simdgroup_half8x8 h;
        simdgroup_load(h, tiles, LD, ulong2(d * 8, sg * 8));
        qf[d].thread_elements() = float2(h.thread_elements());
    }
    simdgroup_float8x8 of[TD];
    UNROLL for (int d = 0; d < TD; ++d) of[d] = make_filled_simdgroup_matrix<float, 8, 8>(0.0f);
    float m = -INFINITY, l = 0.0f;                  // running max (base 2) and sum of my row

    const int keys = CAUSAL ? q0 + BQ : N;
    for (int k0 = 0; k0 < keys; k0 += BK) {
        threadgroup_barrier(mem_flags::mem_threadgroup);   // every simdgroup is done with the tiles
        UNROLL for (int i = 0; i < BK * D / VEC / THREADS; ++i) {
            int c = int(tid) + i * THREADS;
            int r = c / (D / VEC), col = (c % (D / VEC)) * VEC;
            ulong at = ulong(k0 + r) * D + col;
            *(threadgroup uint4*)&Ks[r * LD + col] = *(device const uint4*)&k[at];
            *(threadgroup uint4*)&Vs[r * LD + col] = *(device const uint4*)&v[at];
        }
        threadgroup_barrier(mem_flags::mem_threadgroup);   // the tiles are filled

        // S = Q K^T: fragment j holds keys k0 + 8j .. k0 + 8j + 7
        simdgroup_float8x8 sf[TK];
        UNROLL for (int j = 0; j < TK; ++j) {
            sf[j] = make_filled_simdgroup_matrix<float, 8, 8>(0.0f);
            UNROLL for (int d = 0; d < TD; ++d) {
                simdgroup_half8x8 h;
                simdgroup_load(h, Ks, LD, ulong2(d * 8, j * 8), true);
                simdgroup_float8x8 kf;
                kf.thread_elements() = float2(h.thread_elements());
                simdgroup_multiply_accumulate(sf[j], qf[d], kf, sf[j]);
            }
        }
        // scale (base 2), causal mask, row max over my 2*TK elements and the row's 4 lanes
        float mx = m;
        const bool diagonal = CAUSAL && k0 + BK > q0;
        UNROLL for (int j = 0; j < TK; ++j) {
            float2 s = sf[j].thread_elements() * scale;
            if (diagonal) {
                int key = k0 + j * 8 + fc;
                s.x = key > query ? -INFINITY : s.x;
                s.y = key + 1 > query ? -INFINITY : s.y;
            }
            sf[j].thread_elements() = s;
            mx = max(mx, max(s.x, s.y));
        }
        mx = max(mx, simd_shuffle_xor(mx, ushort(1)));
        mx = max(mx, simd_shuffle_xor(mx, ushort(8)));
        // P = exp2(S - max) (finite: key 0 of the first block is visible to every query),
        // its row sum in fp32, P rounded to half for the second product
        const float alpha = fast::exp2(m - mx);
        float rs = 0.0f;
        simdgroup_float8x8 pf[TK];
        UNROLL for (int j = 0; j < TK; ++j) {
            float2 s = sf[j].thread_elements();
            float2 p = float2(fast::exp2(s.x - mx), fast::exp2(s.y - mx));
            rs += p.x + p.y;
            pf[j].thread_elements() = float2(half2(p));
        }
        rs += simd_shuffle_xor(rs, ushort(1));
        rs += simd_shuffle_xor(rs, ushort(8));
        l = l * alpha + rs;
        m = mx;
        // O = O * alpha + P V, the O fragments rescaled in place
        UNROLL for (int d = 0; d < TD; ++d) {
            of[d].thread_elements() = of[d].thread_elements() * alpha;
            UNROLL for (int j = 0; j < TK; ++j) {
                simdgroup_half8x8 h;
                simdgroup_load(h, Vs, LD, ulong2(d * 8, j * 8));
                simdgroup_float8x8 vf;
                vf.thread_elements() = float2(h.thread_elements());
                simdgroup_multiply_accumulate(of[d], pf[j], vf, of[d]);
            }
        }
    }
    // O / l, rounded to half, stored from the fragments (2 halves per lane and fragment)
    const float inv = 1.0f / l;
    device half* o = O + head + ulong(query) * D + fc;
    UNROLL for (int d = 0; d < TD; ++d)
        *(device half2*)&o[d * 8] = half2(of[d].thread_elements() * inv);
    if (WRITE_LSE && fc == 0)                       // one lane of the row's four
        LSE[ulong(tgid.y) * ulong(N) + ulong(query)] = m + log2(l);
}
