// The contract between the metal_stdlib shim (headers, compiled into every kernel
// library) and the simulator runtime (libmslsim, compiled once per compiler).
// Plain C types only: this file is included by C (runtime) and C++-for-OpenCL (kernels).
#ifndef MSL_SIM_ABI_H
#define MSL_SIM_ABI_H

#define MSL_SIM_ABI_VERSION 10
#define MSL_SIM_SIMD_WIDTH 32
#define MSL_SIM_EXCHANGE_BYTES 128  /* largest payload one lane publishes per SIMD op */

#ifdef __cplusplus
extern "C" {
#endif

/* Where a rendezvous was called from: filled by the shim from __builtin_FILE/LINE/COLUMN
   default arguments, so the site is the user's call, not the header's. Two lanes are at
   the same rendezvous when kind, file (pointer or string), line and column match. */
typedef struct msl_sim_site {
    const char *file;
    unsigned line;
    unsigned column;
    unsigned kind;   /* MSL_SIM_KIND_* below: what the op is, for error messages */
} msl_sim_site;

#define MSL_SIM_KIND_THREADGROUP_BARRIER 1u
#define MSL_SIM_KIND_SIMDGROUP_BARRIER   2u
#define MSL_SIM_KIND_SIMD_OP             3u   /* simd_sum, simd_shuffle, ... */
#define MSL_SIM_KIND_SIMD_MATRIX         4u   /* simdgroup_multiply_accumulate (a rendezvous) */
#define MSL_SIM_KIND_MATRIX_LOAD         5u   /* simdgroup_load (no rendezvous: counted per lane) */
#define MSL_SIM_KIND_MATRIX_STORE        6u   /* simdgroup_store (likewise) */
#define MSL_SIM_KIND_MATRIX_FILL         7u   /* the diagonal constructor (likewise) */
#define MSL_SIM_KIND_MATRIX_READ         8u   /* thread_elements() of a pending result */
#define MSL_SIM_KIND_SIMD_SHUFFLE        9u   /* simd_shuffle*, simd_broadcast* */
#define MSL_SIM_KIND_SIMD_REDUCE        10u   /* simd_sum/min/max/..., simd_prefix_* */
#define MSL_SIM_KIND_CODEGEN_CHECK      11u   /* msl_assume_run / msl_assume_uniform / msl_assume_same */

/* Built-in kernel inputs of the calling thread ([[thread_position_in_grid]] etc.). */
typedef struct msl_sim_thread {
    unsigned thread_position_in_grid[3];
    unsigned threadgroup_position_in_grid[3];
    unsigned thread_position_in_threadgroup[3];
    unsigned threads_per_threadgroup[3];
    unsigned threadgroups_per_grid[3];
    unsigned threads_per_grid[3];
    unsigned thread_index_in_threadgroup;
    unsigned simdgroup_index_in_threadgroup;
    unsigned thread_index_in_simdgroup;
    unsigned threads_per_simdgroup;
    unsigned simdgroups_per_threadgroup;
} msl_sim_thread;

/* The generated per-kernel entry point: buffers[i] is the address bound to [[buffer(i)]]
   (scalars are passed by address too), tg[i] the address of [[threadgroup(i)]] memory. */
typedef void (*msl_sim_entry)(void *const *buffers, void *const *tg, const msl_sim_thread *t);

/* threadgroup_barrier / simdgroup_barrier: a rendezvous of all live threads of the
   threadgroup (resp. simdgroup) at the same site. flags are mem_flags bits (ignored for
   ordering: fibers share one address space and run one at a time). */
void msl_sim_threadgroup_barrier(const msl_sim_site *site, unsigned flags);
void msl_sim_simdgroup_barrier(const msl_sim_site *site, unsigned flags);

/* A SIMD-group op: the calling lane publishes `size` (<= MSL_SIM_EXCHANGE_BYTES) bytes and
   waits until every live lane of its simdgroup has reached the same site. Returns the base
   of MSL_SIM_SIMD_WIDTH slots of MSL_SIM_EXCHANGE_BYTES bytes each (slot l holds lane l's
   payload), followed by one more slot of that size shared by the lanes of this op
   (msl_sim_shared_result: its `ready` is 0 when the op is released, so that a result that
   is the same for every lane, like a reduction's, is computed by the first lane that needs
   it and copied by the others), all valid until the caller's next SIMD op; the mask of
   participating lanes (lanes that returned from the kernel are not active) and the
   caller's lane. The result comes back in registers (16 bytes): written through pointers
   just before the return, the caller's first read of both as one 8-byte load would wait
   on the store buffer at every SIMD op. */
typedef struct msl_sim_simd_result {
    const void *slots;
    unsigned active, lane;
} msl_sim_simd_result;
msl_sim_simd_result msl_sim_simd_exchange(const msl_sim_site *site, const void *data,
                                          unsigned size);
/* The shared slot after the lanes' slots: `key` says which result `value` holds (the
   shim's choice: the operation and type), valid once `ready` is nonzero. */
typedef struct msl_sim_shared_result {
    unsigned ready, key;
    unsigned long long pad;
    unsigned char value[MSL_SIM_EXCHANGE_BYTES - 16];
} msl_sim_shared_result;

/* simdgroup_multiply_accumulate without a rendezvous. Each lane records its operands (its
   two elements of a, b and c, or for an operand that is itself a pending result, that
   result) into the simdgroup's k-th multiply-accumulate, k counting the lane's own calls,
   and goes on holding a handle to it; the lane that records last computes the 64 results
   (`finish`, compiled with the kernel: the fp32 fma chain rounded to the destination type)
   and wakes lanes waiting for them. A lane needs the values only when it reads or stores
   the matrix: msl_sim_mma_wait then blocks until the result exists. Handles are counted
   references (the shim's copy constructor, assignment and destructor keep `refs`). */
typedef struct msl_sim_mma msl_sim_mma;
/* Computes op->d from the lanes' operands: lane l's a, b and c elements (2 each, as float)
   are lanes[l * stride + 0..5], except for an operand x with whole[x] set: every lane passed
   the same earlier result for it, whose 64 elements (row-major) whole[x] points to. */
typedef void (*msl_sim_mma_finish)(msl_sim_mma *op, const float *lanes, unsigned long stride,
                                   const float *const *whole);
/* One multiply-accumulate of a simdgroup (runtime mma.c makes and frees them; the shim
   reads the fields its inline path compares, see msl_sim_mma_lane). */
struct msl_sim_mma {
    /* First cache line: what every lane recording the op touches. */
    unsigned refs;               /* handles held by lanes and by pending operand slots */
    unsigned done;               /* d holds the result */
    unsigned short arrived, waiters;   /* lanes that recorded it; lanes waiting for it */
    unsigned site_line, site_column;   /* where the first lane recorded it */
    union {
        msl_sim_mma_finish finish;     /* while in use */
        msl_sim_mma *next_free;        /* while free */
    };
    const char *site_file;
    unsigned pending[3];         /* lanes whose operand x is a pending result */
    /* The first earlier result a lane passed as c (one reference) and the lanes that passed
       that same one: their c slots stay unwritten. When all 32 did (an accumulator chain),
       that result's 64 elements are c as they are (nothing gathered). */
    unsigned whole_mask;
    msl_sim_mma *whole;
    float d[64];                 /* the result, row-major, rounded to the destination type */
};
typedef struct msl_sim_mma_arg {
    msl_sim_mma *pending;        /* the operand is this pending result (its values: ignored) */
    float v[2];                  /* else the lane's two elements */
} msl_sim_mma_arg;
/* Where the running lane stands in its simdgroup's multiply-accumulates: the runtime keeps
   one per thread and points the second word of the worker's stack pool (the mapping
   aligned to MSL_SIM_POOL_ALIGN that holds every fiber stack) at the running thread's.
   The shim records the common case inline: the op exists (ops[seq]), its site and finish
   are the caller's, a and b are the lane's own elements and c is too or is the op's whole
   result; then it writes the lane's slots in blocks[seq / MSL_SIM_MMA_BLOCK] (floats
   ((lane * MSL_SIM_MMA_BLOCK + seq % MSL_SIM_MMA_BLOCK) * 3 + x) * 2, +1), counts the lane
   (refs, arrived, whole_mask) and calls msl_sim_mma_complete when it is the 32nd. Anything
   else goes through msl_sim_mma_record. `plain` is 0 where the inline path must not run
   (profiling, a partial simdgroup, lanes mode). */
typedef struct msl_sim_mma_lane {
    unsigned seq;                /* this lane's multiply-accumulates since the last restart */
    unsigned plain;
    unsigned lane, cap;          /* thread_index_in_simdgroup; entries of ops */
    msl_sim_mma **ops;           /* the simdgroup's ops by number, NULL where none yet */
    float **blocks;              /* its operand blocks */
} msl_sim_mma_lane;
#define MSL_SIM_MMA_BLOCK 16
#define MSL_SIM_POOL_ALIGN (1024ul << 20)
/* The 32nd lane's part of an inline record (seq already counts it). */
void msl_sim_mma_complete(msl_sim_mma *op);
/* Returns the op with one reference for the caller (which keeps it as the destination's
   handle, also when the result already exists). */
msl_sim_mma *msl_sim_mma_record(const msl_sim_site *site, const msl_sim_mma_arg *args,
                                msl_sim_mma_finish finish);
/* Blocks until op->done; returns the caller's element index as msl_sim_mma_record does. */
unsigned msl_sim_mma_wait(msl_sim_mma *op, const msl_sim_site *site);
/* refs reached 0 on a finished op: give it back. */
void msl_sim_mma_free(msl_sim_mma *op);

/* Lanes mode (docs/sim-execution.md, "Lanes mode"): the lanes pass replaces every call of
   msl_sim_lanes_mode by 1 inside a kernel's lanes entry and by 0 everywhere else, so the shim
   can give a simdgroup run as one function its own matrix path. The runtime's definition
   (0) serves libraries compiled without the pass. Const: the compiler may merge and move
   its calls before the pass runs. */
__attribute__((const)) int msl_sim_lanes_mode(void);
/* The simdgroup's multiply-accumulate d = a * b + c on the lanes' matrix objects: lane l's
   object of each operand at base + l * stride (simdgroup_matrix: its two elements first). */
typedef void (*msl_sim_lanes_mma_op)(char *d, unsigned long d_stride, const char *a,
                                     unsigned long a_stride, const char *b,
                                     unsigned long b_stride, const char *c,
                                     unsigned long c_stride);
/* A multiply-accumulate in lanes mode: the lanes pass makes it a rendezvous of the
   simdgroup (msl_sim_lanes_matrix) and calls `op` once for the 32 lanes. Byte k of `sizes`
   is the size of operand k's two elements (d, a, b, c: what the pass may split the objects
   holding them into). The runtime's definition fails: nothing else calls it. */
void msl_sim_lanes_mma(void *d, const void *a, const void *b, const void *c,
                       msl_sim_lanes_mma_op op, const char *file, unsigned line, unsigned column,
                       unsigned sizes);

/* simdgroup_load/store and the diagonal constructor: no rendezvous (each lane touches only
   its own elements). Checks that all 32 lanes are live, counts the op for the per-lane
   uniformity check made at every rendezvous and at the end of the threadgroup, and returns
   the caller's lane. */
unsigned msl_sim_matrix_arrive(const msl_sim_site *site);

/* Storage for a `threadgroup T x[N];` declaration in a kernel body. `key` is unique per
   declaration and per template instantiation (the address of a function-local static).
   All threads of one threadgroup get the same address; memory starts filled with 0xFF
   bytes (NaN for every float type) at each threadgroup start. */
void *msl_sim_threadgroup_static(const void *key, unsigned long size, unsigned long align);

/* Abort the current dispatch with a message (device-side error: divergence, an unmodelled
   feature, ...). Does not return. */
void msl_sim_fail(const msl_sim_site *site, const char *message) __attribute__((noreturn));

/* Asked by every weak compare-exchange: nonzero when this one must fail spuriously
   (MSLTRANS_SIM_CAS_SPURIOUS=N, read at each dispatch: every Nth call of the dispatch). */
int msl_sim_cas_spurious(void);

/* A checked build's device atomics (atomic.h): `size` bytes at `addr` were written by an
   atomic whose function returns to `pc` (msltrans/sim/runtime/coherence.c). */
void msl_sim_coherence_atomic(const void *addr, unsigned long size, const void *pc);

/* os_log-free printf stand-in used by the shim for debugging aids (optional). */
void msl_sim_print(const char *text);

#ifdef __cplusplus
}
#endif
#endif
