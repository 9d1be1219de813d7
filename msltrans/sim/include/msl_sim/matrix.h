// simdgroup_matrix<T, 8, 8>: each of the 32 lanes holds 2 elements, with Apple's ownership
// (the one place it is encoded is lane_pos below). Loads and stores touch only the caller's
// own elements; multiply-accumulate gathers the operands of all 32 lanes through one
// rendezvous and computes each output element as the fp32 fma chain over k = 0..7 in
// increasing order, starting from c, rounded once to the destination type.
#ifndef MSL_SIM_MATRIX_H
#define MSL_SIM_MATRIX_H
#pragma clang system_header
#include "simd.h"

namespace metal {
template <class T, int Cols, int Rows> struct simdgroup_matrix {
    static_assert(Cols == 8 && Rows == 8, "the simulator models 8x8 simdgroup matrices only");
    static_assert(is_same<T, float>::value || is_same<T, half>::value || is_same<T, bfloat>::value,
                  "simdgroup_matrix element type must be float, half or bfloat");
    __detail::vec_t<T, 2> __e;
    simdgroup_matrix() = default;
    // Apple: a diagonal matrix with `d` on the diagonal.
    simdgroup_matrix(T d, MSL_SIM_SITE_ARGS);
    thread __detail::vec_t<T, 2> &thread_elements() { return __e; }
    __detail::vec_t<T, 2> thread_elements() const { return __e; }
};
typedef simdgroup_matrix<float, 8, 8> simdgroup_float8x8;
typedef simdgroup_matrix<half, 8, 8> simdgroup_half8x8;
typedef simdgroup_matrix<bfloat, 8, 8> simdgroup_bfloat8x8;

namespace __detail {
// Apple's lane ownership: lane owns (row, col0) and (row, col0 + 1).
inline void lane_pos(uint lane, thread uint &row, thread uint &col0) {
    uint q = lane / 4;
    row = (q & 4) + ((lane / 2) % 4);
    col0 = (q & 2) * 2 + (lane % 2) * 2;
}
// A matrix op: one rendezvous that gives the lane id (and checks all 32 lanes take part).
inline simd_view matrix_rendezvous(const void *payload, uint size, const msl_sim_site &s) {
    simd_view w;
    w.base = (const char *)msl_sim_simd_exchange(&s, payload, size, &w.active, &w.lane);
    if (w.active != 0xffffffffu)
        __detail::fail(s, "simdgroup_matrix operation with inactive lanes (all 32 lanes of the simdgroup must take part)");
    return w;
}
template <class T, class P> inline void mat_load(thread simdgroup_matrix<T, 8, 8> &d, P src, ulong epr, ulong2 org, bool tr, const msl_sim_site &s) {
    uint row, col0;
    lane_pos(matrix_rendezvous(0, 0, s).lane, row, col0);
    for (uint j = 0; j < 2; ++j) {
        ulong r = tr ? col0 + j : row, c = tr ? row : col0 + j;   // origin applies in memory coordinates
        d.__e[j] = src[(org.y + r) * epr + org.x + c];
    }
}
template <class T, class P> inline void mat_store(simdgroup_matrix<T, 8, 8> a, P dst, ulong epr, ulong2 org, bool tr, const msl_sim_site &s) {
    uint row, col0;
    lane_pos(matrix_rendezvous(0, 0, s).lane, row, col0);
    for (uint j = 0; j < 2; ++j) {
        ulong r = tr ? col0 + j : row, c = tr ? row : col0 + j;
        dst[(org.y + r) * epr + org.x + c] = a.__e[j];
    }
}
template <class TA, class TB, class TC> struct mma_payload { vec_t<TA, 2> a; vec_t<TB, 2> b; vec_t<TC, 2> c; };
}  // namespace __detail

#define MSL_SIM_MAT_SITE() msl_sim_site __s = MSL_SIM_SITE(MSL_SIM_KIND_SIMD_MATRIX)
template <class T> inline void simdgroup_load(thread simdgroup_matrix<T, 8, 8> &d, const device T *src, ulong elements_per_row = 8,
                                              ulong2 matrix_origin = ulong2{0, 0}, bool transpose_matrix = false, MSL_SIM_SITE_ARGS) {
    MSL_SIM_MAT_SITE();
    __detail::mat_load(d, src, elements_per_row, matrix_origin, transpose_matrix, __s);
}
template <class T> inline void simdgroup_load(thread simdgroup_matrix<T, 8, 8> &d, const threadgroup T *src, ulong elements_per_row = 8,
                                              ulong2 matrix_origin = ulong2{0, 0}, bool transpose_matrix = false, MSL_SIM_SITE_ARGS) {
    MSL_SIM_MAT_SITE();
    __detail::mat_load(d, src, elements_per_row, matrix_origin, transpose_matrix, __s);
}
template <class T> inline void simdgroup_store(simdgroup_matrix<T, 8, 8> a, device T *dst, ulong elements_per_row = 8,
                                               ulong2 matrix_origin = ulong2{0, 0}, bool transpose_matrix = false, MSL_SIM_SITE_ARGS) {
    MSL_SIM_MAT_SITE();
    __detail::mat_store(a, dst, elements_per_row, matrix_origin, transpose_matrix, __s);
}
template <class T> inline void simdgroup_store(simdgroup_matrix<T, 8, 8> a, threadgroup T *dst, ulong elements_per_row = 8,
                                               ulong2 matrix_origin = ulong2{0, 0}, bool transpose_matrix = false, MSL_SIM_SITE_ARGS) {
    MSL_SIM_MAT_SITE();
    __detail::mat_store(a, dst, elements_per_row, matrix_origin, transpose_matrix, __s);
}

template <class TD, class TA, class TB, class TC>
inline void simdgroup_multiply_accumulate(thread simdgroup_matrix<TD, 8, 8> &d, simdgroup_matrix<TA, 8, 8> a,
                                          simdgroup_matrix<TB, 8, 8> b, simdgroup_matrix<TC, 8, 8> c, MSL_SIM_SITE_ARGS) {
    MSL_SIM_MAT_SITE();
    __detail::mma_payload<TA, TB, TC> p = {a.__e, b.__e, c.__e};
    __detail::simd_view w = __detail::matrix_rendezvous(&p, sizeof(p), __s);
    float A[8][8], B[8][8], C[8][8];
    for (uint l = 0; l < MSL_SIM_SIMD_WIDTH; ++l) {
        __detail::mma_payload<TA, TB, TC> q;
        __builtin_memcpy(&q, w.base + l * MSL_SIM_EXCHANGE_BYTES, sizeof(q));
        uint r, c0;
        __detail::lane_pos(l, r, c0);
        for (uint j = 0; j < 2; ++j) {
            A[r][c0 + j] = (float)q.a[j];
            B[r][c0 + j] = (float)q.b[j];
            C[r][c0 + j] = (float)q.c[j];
        }
    }
    uint r, c0;
    __detail::lane_pos(w.lane, r, c0);
    for (uint j = 0; j < 2; ++j) {
        float acc = C[r][c0 + j];
        for (uint k = 0; k < 8; ++k) acc = __builtin_fmaf(A[r][k], B[k][c0 + j], acc);
        d.__e[j] = (TD)acc;
    }
}
template <class T, class TA, class TB>
inline void simdgroup_multiply(thread simdgroup_matrix<T, 8, 8> &d, simdgroup_matrix<TA, 8, 8> a, simdgroup_matrix<TB, 8, 8> b,
                               MSL_SIM_SITE_ARGS) {
    simdgroup_matrix<T, 8, 8> z;
    z.__e = (__detail::vec_t<T, 2>)(T)0;
    simdgroup_multiply_accumulate(d, a, b, z, __file, __line, __col);
}
template <class T, int Cols, int Rows> inline simdgroup_matrix<T, Cols, Rows> make_filled_simdgroup_matrix(T v) {
    simdgroup_matrix<T, Cols, Rows> m;
    m.__e = (__detail::vec_t<T, 2>)v;
    return m;
}
template <class T, int Cols, int Rows> simdgroup_matrix<T, Cols, Rows>::simdgroup_matrix(T d, const __constant char *__file, unsigned __line, unsigned __col) {
    MSL_SIM_MAT_SITE();
    uint r, c0;
    __detail::lane_pos(__detail::matrix_rendezvous(0, 0, __s).lane, r, c0);
    for (uint j = 0; j < 2; ++j) __e[j] = (r == c0 + j) ? d : (T)0;
}
#undef MSL_SIM_MAT_SITE
}  // namespace metal
#endif
