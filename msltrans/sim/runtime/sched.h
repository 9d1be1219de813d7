/* State of one worker (an OS thread running threadgroups one at a time), shared by the
   runtime's C files. A dispatch runs its threadgroups on one or more workers; everything a
   threadgroup touches (fibers, simdgroups, threadgroup memory) belongs to its worker. */
#ifndef MSLSIM_SCHED_H
#define MSLSIM_SCHED_H
#include <pthread.h>
#include <setjmp.h>
#include <stdint.h>

#include "fiber.h"
#include "mslsim.h"

/* 448 KB a thread: the register-path tt.dot keeps whole operand rows per thread (tutorial 06
   at 128x64 tiles on 4 warps and head dim 256: 73 KB of arrays, a 190 KB frame at -O2).
   Only the pages a thread touches are committed; kernels are compiled with stack-clash
   protection, so a larger frame probes into the guard instead of jumping it. */
#define MSL_SIM_STACK_SIZE (448ul * 1024)
/* 64 KB below each stack: a frame with a large local array still lands in a guard. */
#define MSL_SIM_STACK_GUARD (64ul * 1024)
/* 4 KB more than stack + guard (512 KB): stack tops of successive fibers fall 4 KB apart
   modulo the 128 KB period of the L2 set index (a 128 KB stride would put every fiber's hot frame in
   the same cache sets); within the page, tops are staggered by cache lines for L1. */
#define MSL_SIM_STACK_STRIDE (MSL_SIM_STACK_SIZE + MSL_SIM_STACK_GUARD + 4096ul)
/* A worker's stacks live in one mapping aligned to MSL_SIM_POOL_ALIGN, whose first page
   holds the owning worker: code running on a fiber finds its worker and fiber from its
   stack pointer alone (no thread-local lookup on the rendezvous paths). */
#define MSL_SIM_POOL_HEADER MSL_SIM_STACK_GUARD
#define MSL_SIM_POOL_LEN (MSL_SIM_POOL_HEADER + MSL_SIM_MAX_THREADS * MSL_SIM_STACK_STRIDE)
/* MSL_SIM_POOL_ALIGN (abi.h): a power of two >= MSL_SIM_POOL_LEN. The header's first word
   is the worker, its second the running thread's msl_sim_mma_lane (abi.h). */
_Static_assert(MSL_SIM_POOL_LEN <= MSL_SIM_POOL_ALIGN, "a pool fits its alignment");
#define MSL_SIM_MAX_SIMDGROUPS (MSL_SIM_MAX_THREADS / MSL_SIM_SIMD_WIDTH)
#define MSL_SIM_MAX_STATICS 256
#define MSL_SIM_MAX_WORKERS 64

enum { MSL_SIM_READY, MSL_SIM_RUNNING, MSL_SIM_WAIT_SIMD, MSL_SIM_WAIT_TG, MSL_SIM_WAIT_MMA,
       MSL_SIM_DONE };

typedef struct msl_sim_fiber {
    /* first cache line: what every rendezvous and matrix op touches */
    msl_sim_context ctx;
    unsigned lane, sg;                /* thread_index_in_simdgroup, simdgroup index */
    unsigned matrix_count;            /* simdgroup_matrix loads/stores since the last rendezvous */
    unsigned full_sg;                 /* the simdgroup has all 32 lanes */
    unsigned long long matrix_hash;   /* ... and a hash of their sites */
    msl_sim_mma *wait_op;             /* WAIT_MMA: the result waited for */
    const msl_sim_site *site;
    /* The last load/store's site as note() has it in registers (file, and line << 40 |
       column << 16 | kind): copying the caller's just-written 24-byte site struct whole
       stalled every matrix load on a failed store forwarding. */
    const char *matrix_file;
    unsigned long long matrix_lck;
    msl_sim_mma_lane mma;             /* its multiply-accumulates (mma.c; abi.h) */
    msl_sim_thread info;
} msl_sim_fiber;

typedef struct msl_sim_simdgroup {
    unsigned lanes;                   /* threads of the group in this simdgroup (<= 32) */
    unsigned live, waiting, gen;
    unsigned mask[2];                 /* lanes that took part, per payload generation */
    unsigned waiting_mask;            /* lanes waiting at the current SIMD op */
    unsigned site_mismatch;           /* ... not all at site0 (a divergence, reported at release) */
    unsigned matrix_used;             /* matrix ops since the last uniformity check */
    const msl_sim_site *site0;        /* where the first waiting lane waits */
    msl_sim_mma **ops;                /* mma.c: this simdgroup's records since the last restart */
    float **blocks;                   /* mma.c: their lanes' operands, 16 ops per block */
    unsigned n_ops, cap_ops;
} msl_sim_simdgroup;

/* SIMD payload slots of one simdgroup: two generations (lanes read generation g's slots
   after being released while faster lanes already publish generation g+1), each the 32
   lanes' slots and the shared result slot (abi.h). Apart from msl_sim_simdgroup, so that
   the simdgroups' bookkeeping stays in a few cache lines. */
typedef unsigned char msl_sim_slots[2][MSL_SIM_SIMD_WIDTH + 1][MSL_SIM_EXCHANGE_BYTES];
_Static_assert(sizeof(msl_sim_shared_result) == MSL_SIM_EXCHANGE_BYTES, "one slot");

typedef struct msl_sim_worker {
    unsigned index;
    const msl_sim_launch *launch;
    msl_sim_report report;            /* this worker's first error */
    int current;                      /* fiber running, -1 in the scheduler */
    unsigned n, live, tg_waiting, n_sg;
    unsigned tg_mismatch;             /* threads wait at different barriers */
    const msl_sim_site *tg_site0;
    unsigned pos, progress;           /* scan position in `order`; did this pass run a fiber */
    unsigned long long rng;
    unsigned long long group_linear;  /* linear index of the threadgroup being run */
    void *tg_ptrs[MSL_SIM_MAX_TG_ARGS];
    char *arena;
    unsigned long arena_base;         /* bytes of [[threadgroup(i)]] arguments */
    unsigned long arena_used, static_bytes;
    unsigned n_statics;
    struct { const void *key; unsigned long offset; } statics[MSL_SIM_MAX_STATICS];
    char *pool;                       /* fiber stacks (MSL_SIM_POOL_ALIGN-aligned) */
    msl_sim_context sched_ctx;
    sigjmp_buf fault_env;
    volatile int in_kernel;           /* fault handlers may jump to fault_env */
    msl_sim_fault fault;              /* what the fault handler saw */
    volatile int expired;             /* the time limit fired outside kernel code */
    unsigned long long groups_run;
    void *profile;                    /* profile.c's per-worker counters, when profiling */
    int coherence;                    /* coherence.c checks this dispatch's accesses */
    msl_sim_mma *mma_free;            /* mma.c: free records, their chunks, records in use */
    struct mma_chunk *mma_chunks;
    unsigned long mma_live;
    unsigned order[MSL_SIM_MAX_THREADS];
    /* Lanes mode (lanes.c): one function call runs a simdgroup's lanes; each simdgroup's
       lanes in schedule order, where its pass is, and the simdgroups in schedule order. */
    int lanes_mode;                   /* this group runs in lanes mode */
    int lanes_restart;                /* a threadgroup barrier was released: passes restart */
    unsigned cur_sg;                  /* the simdgroup whose function is running */
    unsigned char lane_order[MSL_SIM_MAX_SIMDGROUPS][MSL_SIM_SIMD_WIDTH];
    int lane_pos[MSL_SIM_MAX_SIMDGROUPS];
    unsigned char lane_progress[MSL_SIM_MAX_SIMDGROUPS];
    unsigned char sg_fresh[MSL_SIM_MAX_SIMDGROUPS];
    unsigned char sg_done[MSL_SIM_MAX_SIMDGROUPS];
    unsigned sg_order[MSL_SIM_MAX_SIMDGROUPS];
    void *lanes_frames[MSL_SIM_MAX_SIMDGROUPS];   /* msl_sim_lanes_frames */
    unsigned long lanes_frames_cap[MSL_SIM_MAX_SIMDGROUPS];
    /* What the lanes function's loop head reads to pick the next lane without a call
       (lanes.c, msl_sim_lanes_view), one per simdgroup. */
    struct msl_sim_lanes_view {
        unsigned char *state;         /* the simdgroup's lanes' states (w->state) */
        const unsigned char *order;   /* its lanes in schedule order (lane_order) */
        int *pos;                     /* where its pass is in `order` (lane_pos) */
        unsigned char *progress;      /* a lane ran in this pass (lane_progress) */
        int *current;                 /* w->current */
        const int *restart;           /* w->lanes_restart: nonzero, ask msl_sim_lanes_next */
        const int *error;             /* w->report.kind: likewise */
        unsigned first, lanes;        /* the simdgroup's first thread, its lane count */
        /* A released SIMD op's result (what msl_sim_lanes_exchange_result returns): the
           payload slots and mask of the lane's generation (buffers[lane]). */
        const void *gen_slots[2];
        const unsigned *masks;        /* sgs[s].mask */
        unsigned char *buffers;       /* lane_buffer[s] */
        /* A lane's publish at a SIMD op or simdgroup barrier done inline (what exchange() in
           rendezvous.c writes), where the lane neither starts nor releases the rendezvous
           and the rendezvous' first lane waits at the same site record (profiled builds
           have no lanes entry). */
        msl_sim_simdgroup *sg;        /* &sgs[s] */
        const msl_sim_site **sites;   /* &fibers[first].site: lane l's at + l * fiber_bytes */
        unsigned long fiber_bytes;    /* sizeof(msl_sim_fiber) */
    } lanes_views[MSL_SIM_MAX_SIMDGROUPS];
    /* The payload generation of each lane's last SIMD op: the slots it reads its result
       from (rendezvous.c, and lanes mode's loop head through lanes_views). */
    unsigned char lane_buffer[MSL_SIM_MAX_SIMDGROUPS][MSL_SIM_SIMD_WIDTH];
    /* Each fiber's state (MSL_SIM_READY, ...), apart from the fibers: scanning for the next
       ready one and releasing a barrier touch a few cache lines, not one per thread. */
    unsigned char state[MSL_SIM_MAX_THREADS];
    /* 1 while a thread has not run yet: its context is made when it is first switched to,
       and a thread that returns runs the next such thread itself, on its own stack (no
       context, no switch: a kernel without rendezvous runs its group as one loop). */
    unsigned char fresh[MSL_SIM_MAX_THREADS];
    msl_sim_fiber fibers[MSL_SIM_MAX_THREADS];
    msl_sim_mma_lane no_mma;          /* lanes mode's: the shim's inline matrix path is off */
    msl_sim_simdgroup sgs[MSL_SIM_MAX_SIMDGROUPS];
    msl_sim_slots slots[MSL_SIM_MAX_SIMDGROUPS] __attribute__((aligned(64)));
} msl_sim_worker;

/* The worker of code running on a fiber stack, and the thread it runs (not the owner of
   the stack: a thread that starts when another returns runs on that one's stack). */
static inline msl_sim_worker *msl_sim_self(void) {
    uintptr_t sp = (uintptr_t)__builtin_frame_address(0);
    return *(msl_sim_worker **)(sp & ~(MSL_SIM_POOL_ALIGN - 1));
}
static inline msl_sim_fiber *msl_sim_self_fiber(msl_sim_worker *w) {
    return &w->fibers[w->current];
}

/* sched.c */
void msl_sim_make_order(msl_sim_worker *w);
int msl_sim_worker_init(msl_sim_worker *w);
int msl_sim_run_group(msl_sim_worker *w, const unsigned group[3], const unsigned dims[3],
                      const unsigned n_groups[3]);
void msl_sim_abort_group(msl_sim_worker *w) __attribute__((noreturn));
void msl_sim_note_thread(msl_sim_worker *w, const msl_sim_fiber *f);
void msl_sim_set_error(msl_sim_worker *w, int kind, const char *message);
int msl_sim_stack_guard_hit(const void *addr);
extern __thread msl_sim_worker *msl_sim_tls_worker;

/* The next ready fiber of the current pass (starting new passes while fibers make
   progress), or -1 when every fiber is blocked or done. */
static inline int msl_sim_next_ready(msl_sim_worker *w) {
    for (;;) {
        while (++w->pos < w->n) {
            unsigned i = w->order[w->pos];
            if (w->state[i] == MSL_SIM_READY) {
                w->progress = 1;
                return (int)i;
            }
        }
        if (!w->progress) return -1;
        w->progress = 0;
        w->pos = (unsigned)-1;
        if (w->launch->schedule == MSL_SIM_SHUFFLE) msl_sim_make_order(w);
    }
}

/* sched.c: make the context of thread i, which has not run yet. */
void msl_sim_start_fiber(msl_sim_worker *w, unsigned i);

/* Thread i runs now on fibers: the shim's inline matrix path finds its msl_sim_mma_lane. */
static inline void msl_sim_set_current(msl_sim_worker *w, int i) {
    w->current = i;
    ((msl_sim_mma_lane **)w->pool)[1] = &w->fibers[i].mma;
}

/* From the running fiber `self` to thread `next` (-1: back to the scheduler). */
static inline void msl_sim_switch_to(msl_sim_worker *w, msl_sim_fiber *self, int next) {
    msl_sim_context *to = &w->sched_ctx;
    if (next >= 0) {
        msl_sim_set_current(w, next);
        w->state[next] = MSL_SIM_RUNNING;
        if (w->fresh[next]) msl_sim_start_fiber(w, (unsigned)next);
        to = &w->fibers[next].ctx;
    }
    msl_sim_context_switch(&self->ctx, to);
}

/* Called on a fiber whose state is no longer RUNNING: run the next ready fiber (one
   context switch), or go back to the scheduler (all returned, or nothing can move). */
static inline void msl_sim_block(msl_sim_worker *w) {
    msl_sim_fiber *self = &w->fibers[w->current];
    int next = w->report.kind ? -1 : msl_sim_next_ready(w);
    if (next == w->current) {
        w->state[w->current] = MSL_SIM_RUNNING;
        return;
    }
    msl_sim_switch_to(w, self, next);
}

/* rendezvous.c */
void msl_sim_release_simd(msl_sim_worker *w, msl_sim_simdgroup *sg, unsigned index);
void msl_sim_matrix_note(msl_sim_worker *w, msl_sim_fiber *f, const msl_sim_site *site);
int msl_sim_report_deadlock(msl_sim_worker *w);
int msl_sim_matrix_check_end(msl_sim_worker *w);

/* lanes.c */
void msl_sim_lanes_run(msl_sim_worker *w);

/* mma.c */
void msl_sim_mma_reset(msl_sim_worker *w);
void msl_sim_mma_restart(msl_sim_worker *w, unsigned index);
void msl_sim_mma_clear(msl_sim_simdgroup *sg);
void msl_sim_mma_lane_init(msl_sim_worker *w, msl_sim_fiber *f);
int msl_sim_mma_describe(const msl_sim_mma *h, char *out, unsigned long cap);

/* guard.c */
void msl_sim_signals_enter(void);
void msl_sim_signals_leave(void);
void msl_sim_worker_signals(msl_sim_worker *w);
int msl_sim_timer_arm(unsigned long long deadline_ns);
void msl_sim_timer_disarm(void);
void msl_sim_timer_forget(void);
unsigned long long msl_sim_now_ns(void);

/* coherence.c */
int msl_sim_coherence_begin(const msl_sim_launch *launch, msl_sim_worker **workers, unsigned n,
                            unsigned long long groups, msl_sim_report *report);
void msl_sim_coherence_end(msl_sim_worker **workers, unsigned n);
void msl_sim_coherence_access(msl_sim_worker *w, uintptr_t addr, unsigned long size, int write,
                              uintptr_t pc);

/* cores.c */
typedef struct msl_sim_dispatch_hook {
    unsigned long chunk;              /* threadgroups a claim takes (0: the dispatch's choice) */
    unsigned long late_ms;            /* pool workers wait this long after being woken */
    unsigned long caller_late_ms;     /* the caller waits this long after opening a launch */
    unsigned long running;            /* runnable threads to assume (0: /proc/loadavg's) */
    int reverse;                      /* claims run from the last threadgroup down */
    int no_prewake;                   /* msl_sim_prewake wakes no pool thread */
} msl_sim_dispatch_hook;
unsigned msl_sim_cores(void);
unsigned msl_sim_free_cores(unsigned spinning, const msl_sim_dispatch_hook *hook);
void msl_sim_steer(pthread_t thread, int *steered);
int msl_sim_dispatch_test(msl_sim_dispatch_hook *hook, char *message, unsigned long size);

/* cas_spurious.c */
int msl_sim_cas_spurious_enabled(void);
/* Lanes mode: a multiply-accumulate that lanes of its simdgroup will not reach (they
   returned): the error (rendezvous.c). */
void msl_sim_matrix_returned(msl_sim_worker *w, msl_sim_fiber *f, const msl_sim_site *site,
                             unsigned reached) __attribute__((noreturn, noinline));
#endif
