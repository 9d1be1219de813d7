// simdgroup_matrix<T, 8, 8>: each of the 32 lanes holds 2 elements, with Apple's ownership
// (encoded in lane_row/lane_col0 below for the shim; the runtime's mma.c has the same map
// as its LANE_INDEX table, which must agree). No matrix op is a rendezvous:
// - loads and stores touch only the caller's own elements;
// - a multiply-accumulate records the lane's operands into the simdgroup's shared record of
//   that op (abi.h, runtime mma.c; a c that every lane passes as the same earlier result
//   is taken whole; the common case is recorded inline, mma_record_inline, the rest by
//   the runtime) and leaves a counted handle in the destination; the lane
//   recording last computes every output element once, as the fp32 fma chain over
//   k = 0..7 in increasing order starting from c, rounded once to the destination type;
// - a lane reading a pending matrix (thread_elements(), a store) waits for that result.
// The runtime checks that all 32 lanes take part and run the same matrix ops (at every
// rendezvous and at the end of the threadgroup).
// In lanes mode (msl_sim_lanes_mode(), a constant the lanes pass puts in) there are no
// handles: a multiply-accumulate is msl_sim_lanes_mma, which the pass turns into a
// rendezvous of the simdgroup that computes the op once from the 32 lanes' objects
// (msl_sim_nan_raw_lanes_mma below, the same arithmetic as the finish).
#ifndef MSL_SIM_MATRIX_H
#define MSL_SIM_MATRIX_H
#pragma clang system_header
#include "simd.h"

namespace metal {
namespace __detail {
// Only for a handle that is held, never in lanes mode (every caller has checked __held, or
// returned for lanes mode, before): a second msl_sim_lanes_mode() test here, folded by GVN
// on the path of the first, left thousands of dead branches whose removal split as many
// critical edges (attention backward: 11 s of its -O2).
inline void mma_retain(msl_sim_mma *h) {
    h->refs++;
}
inline void mma_release(msl_sim_mma *h) {
    if (--h->refs == 0 && h->done) msl_sim_mma_free(h);
}
}  // namespace __detail

template <class T, int Cols, int Rows> struct simdgroup_matrix {
    static_assert(Cols == 8 && Rows == 8, "the simulator models 8x8 simdgroup matrices only");
    static_assert(is_same<T, float>::value || is_same<T, half>::value || is_same<T, bfloat>::value,
                  "simdgroup_matrix element type must be float, half or bfloat");
    // The lane's two elements, unless __h is set: then they are the lane's part of that
    // multiply-accumulate result (materialized on first read, waiting while it is pending).
    mutable __detail::vec_t<T, 2> __e = (__detail::vec_t<T, 2>)(T)0;
    mutable msl_sim_mma *__h = nullptr;
    simdgroup_matrix() = default;
    // Apple: a diagonal matrix with `d` on the diagonal.
    simdgroup_matrix(T d, MSL_SIM_SITE_ARGS);
    // A matrix's handle as copies take it: none in lanes mode, where no code reads a
    // handle (so that the lanes pass finds them write-only and drops them).
    static msl_sim_mma *__held(const simdgroup_matrix &o) {
        return msl_sim_lanes_mode() ? nullptr : o.__h;
    }
    simdgroup_matrix(const simdgroup_matrix &o) : __e(o.__e), __h(__held(o)) {
        if (__h) __detail::mma_retain(__h);
    }
    simdgroup_matrix(simdgroup_matrix &&o) : __e(o.__e), __h(__held(o)) { o.__h = nullptr; }
    simdgroup_matrix &operator=(const simdgroup_matrix &o) {
        if (__held(o)) __detail::mma_retain(o.__h);
        if (__held(*this)) __detail::mma_release(__h);
        __e = o.__e;
        __h = __held(o);
        return *this;
    }
    simdgroup_matrix &operator=(simdgroup_matrix &&o) {
        if (this != &o) {
            if (__held(*this)) __detail::mma_release(__h);
            __e = o.__e;
            __h = __held(o);
            o.__h = nullptr;
        }
        return *this;
    }
    ~simdgroup_matrix() {
        if (__held(*this)) __detail::mma_release(__h);
    }
    // Wait for a pending result and keep the lane's two elements of it.
    void __materialize(const msl_sim_site &s) const {
        if (msl_sim_lanes_mode() || !__h) return;
        uint pos = msl_sim_mma_wait(__h, &s);
        __e = __detail::vec_t<T, 2>{(T)__h->d[pos], (T)__h->d[pos + 1]};
        __detail::mma_release(__h);
        __h = nullptr;
    }
    thread __detail::vec_t<T, 2> &thread_elements(MSL_SIM_SITE_ARGS) {
        __materialize(MSL_SIM_SITE(MSL_SIM_KIND_MATRIX_READ));
        return __e;
    }
    __detail::vec_t<T, 2> thread_elements(MSL_SIM_SITE_ARGS) const {
        __materialize(MSL_SIM_SITE(MSL_SIM_KIND_MATRIX_READ));
        return __e;
    }
};
typedef simdgroup_matrix<float, 8, 8> simdgroup_float8x8;
typedef simdgroup_matrix<half, 8, 8> simdgroup_half8x8;
typedef simdgroup_matrix<bfloat, 8, 8> simdgroup_bfloat8x8;

namespace __detail {
// Apple's lane ownership: lane owns (row, col0) and (row, col0 + 1).
constexpr uint lane_row(uint lane) { return (lane / 4 & 4) + ((lane / 2) % 4); }
constexpr uint lane_col0(uint lane) { return (lane / 4 & 2) * 2 + (lane % 2) * 2; }
inline void lane_pos(uint lane, thread uint &row, thread uint &col0) {
    row = lane_row(lane);
    col0 = lane_col0(lane);
}
// Each lane's first element as a row-major index.
struct lane_index_table {
    unsigned char at[MSL_SIM_SIMD_WIDTH];
    constexpr lane_index_table() : at() {
        for (uint l = 0; l < MSL_SIM_SIMD_WIDTH; ++l) at[l] = (unsigned char)(lane_row(l) * 8 + lane_col0(l));
    }
};
constexpr lane_index_table lane_first_element{};
template <class T, class P> inline void mat_load(thread simdgroup_matrix<T, 8, 8> &d, P src, ulong epr, ulong2 org, bool tr, const msl_sim_site &s) {
    uint row, col0;
    lane_pos(msl_sim_matrix_arrive(&s), row, col0);
    if (simdgroup_matrix<T, 8, 8>::__held(d)) {
        mma_release(d.__h);
        d.__h = nullptr;
    }
    for (uint j = 0; j < 2; ++j) {
        ulong r = tr ? col0 + j : row, c = tr ? row : col0 + j;   // origin applies in memory coordinates
        d.__e[j] = src[(org.y + r) * epr + org.x + c];
    }
}
template <class T, class P> inline void mat_store(const thread simdgroup_matrix<T, 8, 8> &a, P dst, ulong epr, ulong2 org, bool tr, const msl_sim_site &s) {
    a.__materialize(s);
    uint row, col0;
    lane_pos(msl_sim_matrix_arrive(&s), row, col0);
    for (uint j = 0; j < 2; ++j) {
        ulong r = tr ? col0 + j : row, c = tr ? row : col0 + j;
        dst[(org.y + r) * epr + org.x + c] = a.__e[j];
    }
}
template <class T> inline msl_sim_mma_arg mma_arg(const thread simdgroup_matrix<T, 8, 8> &m) {
    msl_sim_mma_arg arg;
    arg.pending = m.__h;
    arg.v[0] = (float)m.__e[0];
    arg.v[1] = (float)m.__e[1];
    return arg;
}
// Runs once per multiply-accumulate, in the lane that records it last. An operand every
// lane passed as the same earlier result comes whole (row-major), the others per lane.
// Its name keeps the simulator's NaN canonicalisation (sim/nan_canon.py) out of the fma
// chains: each result is canonicalised once, before its rounding to TD.
template <class TD> void msl_sim_nan_raw_mma_finish(msl_sim_mma *op, const float *lanes,
                                                    unsigned long stride,
                                                    const float *const *whole) {
    float gathered[3][64];
    const float *m[3];
    for (uint x = 0; x < 3; ++x) {
        m[x] = whole[x];
        if (m[x]) continue;
        for (uint l = 0; l < MSL_SIM_SIMD_WIDTH; ++l) {
            uint at = lane_first_element.at[l];
            const float *q = lanes + l * stride + 2 * x;
            gathered[x][at] = q[0];
            gathered[x][at + 1] = q[1];
        }
        m[x] = gathered[x];
    }
    const float *A = m[0], *B = m[1], *C = m[2];
    for (uint i = 0; i < 8; ++i) {
        float acc[8];
        for (uint j = 0; j < 8; ++j) acc[j] = C[i * 8 + j];
        for (uint k = 0; k < 8; ++k) {
            float a = A[i * 8 + k];
            for (uint j = 0; j < 8; ++j) acc[j] = __builtin_fmaf(a, B[k * 8 + j], acc[j]);
        }
        for (uint j = 0; j < 8; ++j) {
            float r = acc[j] != acc[j] ? __builtin_nanf("") : acc[j];
            op->d[i * 8 + j] = (float)(TD)r;
        }
    }
}
// Lanes mode's multiply-accumulate, once for the simdgroup: lane l's object of each operand
// at base + l * stride. The same arithmetic, NaN handling and rounding as the finish above,
// a row at a time in 8-wide vectors: row r of an operand is the two elements of the four
// lanes that own it (row_lanes), row r of the result goes back to the same four lanes, so
// the destination may be any of the operands (b is read whole first; a row of a or c is
// read before the same row of d is written, and no other row shares its lanes).
struct row_lane_table {
    unsigned char at[8][4];   // the lane holding columns 2c, 2c + 1 of row r
    constexpr row_lane_table() : at() {
        for (uint l = 0; l < MSL_SIM_SIMD_WIDTH; ++l) at[lane_row(l)][lane_col0(l) / 2] = (unsigned char)l;
    }
};
constexpr row_lane_table row_lanes{};
typedef float lanes_f8 __attribute__((ext_vector_type(8)));
typedef float lanes_f4 __attribute__((ext_vector_type(4)));
typedef float lanes_f2 __attribute__((ext_vector_type(2)));
template <class T>
__attribute__((always_inline)) inline lanes_f8 lanes_row(const char *m, unsigned long stride, uint r) {
    lanes_f2 part[4];
#pragma unroll
    for (uint c = 0; c < 4; ++c) {
        vec_t<T, 2> e = ((const thread simdgroup_matrix<T, 8, 8> *)(m + row_lanes.at[r][c] * stride))->__e;
        part[c] = lanes_f2{(float)e[0], (float)e[1]};
    }
    lanes_f4 lo = __builtin_shufflevector(part[0], part[1], 0, 1, 2, 3);
    lanes_f4 hi = __builtin_shufflevector(part[2], part[3], 0, 1, 2, 3);
    return __builtin_shufflevector(lo, hi, 0, 1, 2, 3, 4, 5, 6, 7);
}
// Packed operands (each lane's two elements right after the previous lane's: the lanes pass
// splits arrays of matrices so): row r is lanes a, a + 1 (columns 0-3) and a + 8, a + 9
// (columns 4-7), a = row_lanes.at[r][0], so two runs of four elements.
constexpr bool rows_in_two_runs() {
    for (uint r = 0; r < 8; ++r) {
        uint a = row_lanes.at[r][0];
        if (row_lanes.at[r][1] != a + 1 || row_lanes.at[r][2] != a + 8 || row_lanes.at[r][3] != a + 9)
            return false;
    }
    return true;
}
static_assert(rows_in_two_runs(), "the packed multiply-accumulate's row layout");
template <class T>
__attribute__((always_inline)) inline lanes_f8 packed_row(const char *m, uint r) {
    const T *e = (const T *)m + 2 * row_lanes.at[r][0];
    lanes_f8 row;
#pragma unroll
    for (uint j = 0; j < 4; ++j) {
        row[j] = (float)e[j];
        row[4 + j] = (float)e[16 + j];
    }
    return row;
}
template <class TD, class TA, class TB, class TC>
void msl_sim_nan_raw_packed_mma(char *d, const char *a, const char *b, const char *c) {
    lanes_f8 B[8];
#pragma unroll
    for (uint k = 0; k < 8; ++k) B[k] = packed_row<TB>(b, k);
#pragma unroll
    for (uint i = 0; i < 8; ++i) {
        const TA *ai = (const TA *)a + 2 * row_lanes.at[i][0];
        lanes_f8 acc = packed_row<TC>(c, i);
#pragma unroll
        for (uint k = 0; k < 8; ++k)   // a[i][k]: lane at[i][k / 2], element k % 2
            acc = __builtin_elementwise_fma((lanes_f8)(float)ai[(k / 4) * 16 + k % 4], B[k], acc);
        lanes_f8 canon = acc != acc ? (lanes_f8)__builtin_nanf("") : acc;
        vec_t<TD, 8> r = __builtin_convertvector(canon, vec_t<TD, 8>);
        TD *o = (TD *)d + 2 * row_lanes.at[i][0];
#pragma unroll
        for (uint j = 0; j < 4; ++j) {
            o[j] = r[j];
            o[16 + j] = r[4 + j];
        }
    }
}
template <class TD, class TA, class TB, class TC>
__attribute__((visibility("hidden"))) void msl_sim_nan_raw_lanes_mma(
        char *d, unsigned long sd, const char *a, unsigned long sa, const char *b, unsigned long sb,
        const char *c, unsigned long sc) {
    if (sd == sizeof(vec_t<TD, 2>) && sa == sizeof(vec_t<TA, 2>) && sb == sizeof(vec_t<TB, 2>) &&
        sc == sizeof(vec_t<TC, 2>))
        return msl_sim_nan_raw_packed_mma<TD, TA, TB, TC>(d, a, b, c);
    lanes_f8 B[8];
#pragma unroll
    for (uint k = 0; k < 8; ++k) B[k] = lanes_row<TB>(b, sb, k);
#pragma unroll
    for (uint i = 0; i < 8; ++i) {
        lanes_f8 A = lanes_row<TA>(a, sa, i), acc = lanes_row<TC>(c, sc, i);
#pragma unroll
        for (uint k = 0; k < 8; ++k) acc = __builtin_elementwise_fma((lanes_f8)A[k], B[k], acc);
        // The row's NaNs canonicalised and the row rounded to TD as one vector each.
        lanes_f8 canon = acc != acc ? (lanes_f8)__builtin_nanf("") : acc;
        vec_t<TD, 8> r = __builtin_convertvector(canon, vec_t<TD, 8>);
#pragma unroll
        for (uint q = 0; q < 4; ++q) {
            thread simdgroup_matrix<TD, 8, 8> *m =
                (thread simdgroup_matrix<TD, 8, 8> *)(d + row_lanes.at[i][q] * sd);
            m->__e = vec_t<TD, 2>{r[2 * q], r[2 * q + 1]};
        }
    }
}
}  // namespace __detail

#define MSL_SIM_MAT_SITE() msl_sim_site __s = MSL_SIM_SITE(MSL_SIM_KIND_SIMD_MATRIX)
#define MSL_SIM_LOAD_SITE() msl_sim_site __s = MSL_SIM_SITE(MSL_SIM_KIND_MATRIX_LOAD)
#define MSL_SIM_STORE_SITE() msl_sim_site __s = MSL_SIM_SITE(MSL_SIM_KIND_MATRIX_STORE)
template <class T> inline void simdgroup_load(thread simdgroup_matrix<T, 8, 8> &d, const device T *src, ulong elements_per_row = 8,
                                              ulong2 matrix_origin = ulong2{0, 0}, bool transpose_matrix = false, MSL_SIM_SITE_ARGS) {
    MSL_SIM_LOAD_SITE();
    __detail::mat_load(d, src, elements_per_row, matrix_origin, transpose_matrix, __s);
}
template <class T> inline void simdgroup_load(thread simdgroup_matrix<T, 8, 8> &d, const threadgroup T *src, ulong elements_per_row = 8,
                                              ulong2 matrix_origin = ulong2{0, 0}, bool transpose_matrix = false, MSL_SIM_SITE_ARGS) {
    MSL_SIM_LOAD_SITE();
    __detail::mat_load(d, src, elements_per_row, matrix_origin, transpose_matrix, __s);
}
template <class T> inline void simdgroup_store(const thread simdgroup_matrix<T, 8, 8> &a, device T *dst, ulong elements_per_row = 8,
                                               ulong2 matrix_origin = ulong2{0, 0}, bool transpose_matrix = false, MSL_SIM_SITE_ARGS) {
    MSL_SIM_STORE_SITE();
    __detail::mat_store(a, dst, elements_per_row, matrix_origin, transpose_matrix, __s);
}
template <class T> inline void simdgroup_store(const thread simdgroup_matrix<T, 8, 8> &a, threadgroup T *dst, ulong elements_per_row = 8,
                                               ulong2 matrix_origin = ulong2{0, 0}, bool transpose_matrix = false, MSL_SIM_SITE_ARGS) {
    MSL_SIM_STORE_SITE();
    __detail::mat_store(a, dst, elements_per_row, matrix_origin, transpose_matrix, __s);
}

namespace __detail {
// The common case of msl_sim_mma_record, without the call (abi.h, msl_sim_mma_lane): the
// op exists, its site and finish are this call's, a and b are the lane's own elements and
// c is too or is the op's whole result. Returns the op (one reference for the caller), or
// nullptr for anything else, having changed nothing. Always inlined: left a function
// (clang's choice in large kernels) it keeps most of the call it is there to save.
template <class TA, class TB, class TC>
__attribute__((always_inline)) inline msl_sim_mma *
mma_record_inline(const thread simdgroup_matrix<TA, 8, 8> &a, const thread simdgroup_matrix<TB, 8, 8> &b,
                  const thread simdgroup_matrix<TC, 8, 8> &c, msl_sim_mma_finish finish,
                  const __constant char *file, unsigned line, unsigned col) {
    ulong pool = (ulong)__builtin_frame_address(0) & ~(MSL_SIM_POOL_ALIGN - 1);
    msl_sim_mma_lane *view = ((msl_sim_mma_lane *const *)pool)[1];   // the running lane's
    uint k = view->seq;
    if (!view->plain || k >= view->cap) return nullptr;
    msl_sim_mma *op = view->ops[k];
    if (!op || op->finish != finish || op->site_line != line || op->site_column != col ||
        op->site_file != (const char *)(ulong)file || a.__h || b.__h || (c.__h && c.__h != op->whole))
        return nullptr;
    view->seq = k + 1;
    float *slot = view->blocks[k / MSL_SIM_MMA_BLOCK] +
                  (view->lane * MSL_SIM_MMA_BLOCK + k % MSL_SIM_MMA_BLOCK) * 6;
    slot[0] = (float)a.__e[0];
    slot[1] = (float)a.__e[1];
    slot[2] = (float)b.__e[0];
    slot[3] = (float)b.__e[1];
    if (c.__h) {
        op->whole_mask |= 1u << view->lane;
    } else {
        slot[4] = (float)c.__e[0];
        slot[5] = (float)c.__e[1];
    }
    op->refs++;
    if (++op->arrived == MSL_SIM_SIMD_WIDTH) msl_sim_mma_complete(op);
    return op;
}
}  // namespace __detail

template <class TD, class TA, class TB, class TC>
inline void simdgroup_multiply_accumulate(thread simdgroup_matrix<TD, 8, 8> &d, const thread simdgroup_matrix<TA, 8, 8> &a,
                                          const thread simdgroup_matrix<TB, 8, 8> &b, const thread simdgroup_matrix<TC, 8, 8> &c,
                                          MSL_SIM_SITE_ARGS) {
    if (msl_sim_lanes_mode()) {
        constexpr uint sizes = sizeof(d.__e) | sizeof(a.__e) << 8 | sizeof(b.__e) << 16 |
                               sizeof(c.__e) << 24;
        msl_sim_lanes_mma(&d, &a, &b, &c, &__detail::msl_sim_nan_raw_lanes_mma<TD, TA, TB, TC>,
                          (const char *)(ulong)__file, __line, __col, sizes);
        return;
    }
    msl_sim_mma_finish finish = &__detail::msl_sim_nan_raw_mma_finish<TD>;
    msl_sim_mma *h = __detail::mma_record_inline(a, b, c, finish, __file, __line, __col);
    if (!h) {
        MSL_SIM_MAT_SITE();
        msl_sim_mma_arg args[3] = {__detail::mma_arg(a), __detail::mma_arg(b), __detail::mma_arg(c)};
        h = msl_sim_mma_record(&__s, args, finish);
    }
    if (d.__h) __detail::mma_release(d.__h);   // after reading the operands: d may alias one
    // Even where this lane recorded last and the result exists: a lane holding the handle
    // passes it whole to the next multiply-accumulate (an accumulator chain gathers nothing).
    d.__h = h;
}
template <class T, class TA, class TB>
inline void simdgroup_multiply(thread simdgroup_matrix<T, 8, 8> &d, const thread simdgroup_matrix<TA, 8, 8> &a,
                               const thread simdgroup_matrix<TB, 8, 8> &b, MSL_SIM_SITE_ARGS) {
    simdgroup_matrix<T, 8, 8> z;   // +0 elements, no handle
    simdgroup_multiply_accumulate(d, a, b, z, __file, __line, __col);
}
template <class T, int Cols, int Rows> inline simdgroup_matrix<T, Cols, Rows> make_filled_simdgroup_matrix(T v) {
    simdgroup_matrix<T, Cols, Rows> m;
    m.__e = (__detail::vec_t<T, 2>)v;
    return m;
}
template <class T, int Cols, int Rows> simdgroup_matrix<T, Cols, Rows>::simdgroup_matrix(T d, const __constant char *__file, unsigned __line, unsigned __col) {
    msl_sim_site __s = MSL_SIM_SITE(MSL_SIM_KIND_MATRIX_FILL);
    uint r, c0;
    __detail::lane_pos(msl_sim_matrix_arrive(&__s), r, c0);
    for (uint j = 0; j < 2; ++j) __e[j] = (r == c0 + j) ? d : (T)0;
}
#undef MSL_SIM_MAT_SITE
#undef MSL_SIM_LOAD_SITE
#undef MSL_SIM_STORE_SITE
}  // namespace metal
#endif
