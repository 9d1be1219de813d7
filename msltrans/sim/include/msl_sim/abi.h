// The contract between the metal_stdlib shim (headers, compiled into every kernel
// library) and the simulator runtime (libmslsim, compiled once per compiler).
// Plain C types only: this file is included by C (runtime) and C++-for-OpenCL (kernels).
#ifndef MSL_SIM_ABI_H
#define MSL_SIM_ABI_H

#define MSL_SIM_ABI_VERSION 1
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
#define MSL_SIM_KIND_SIMD_MATRIX         4u   /* simdgroup_multiply_accumulate, ... */
#define MSL_SIM_KIND_CODEGEN_CHECK       5u   /* msl_assume_run / msl_assume_uniform */

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
   payload) that stays valid until the caller's next SIMD op; *active receives the mask of
   participating lanes (lanes that returned from the kernel are not active) and *lane the
   caller's lane. */
const void *msl_sim_simd_exchange(const msl_sim_site *site, const void *data, unsigned size,
                                  unsigned *active, unsigned *lane);

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

/* os_log-free printf stand-in used by the shim for debugging aids (optional). */
void msl_sim_print(const char *text);

#ifdef __cplusplus
}
#endif
#endif
