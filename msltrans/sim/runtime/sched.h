/* State of the dispatch in progress, shared by sched.c and rendezvous.c. */
#ifndef MSLSIM_SCHED_H
#define MSLSIM_SCHED_H
#include "fiber.h"
#include "mslsim.h"

#define MSL_SIM_STACK_SIZE (64ul * 1024)
/* 64 KB below each stack: a frame with a large local array still lands in a guard. */
#define MSL_SIM_STACK_GUARD (64ul * 1024)
#define MSL_SIM_STACK_STRIDE (MSL_SIM_STACK_SIZE + MSL_SIM_STACK_GUARD)
#define MSL_SIM_MAX_SIMDGROUPS (MSL_SIM_MAX_THREADS / MSL_SIM_SIMD_WIDTH)
#define MSL_SIM_MAX_STATICS 256

enum { MSL_SIM_READY, MSL_SIM_RUNNING, MSL_SIM_WAIT_SIMD, MSL_SIM_WAIT_TG, MSL_SIM_DONE };

typedef struct msl_sim_fiber {
    msl_sim_context ctx;
    unsigned state;
    const msl_sim_site *site;
    msl_sim_thread info;
} msl_sim_fiber;

typedef struct msl_sim_simdgroup {
    unsigned live, waiting, gen;
    /* Two generations of payload slots: lanes read generation g's slots after being
       released while faster lanes already publish generation g+1. */
    unsigned mask[2];
    unsigned char slots[2][MSL_SIM_SIMD_WIDTH][MSL_SIM_EXCHANGE_BYTES] __attribute__((aligned(16)));
} msl_sim_simdgroup;

struct msl_sim_state {
    const msl_sim_launch *launch;
    msl_sim_report *report;
    int current;
    unsigned n, live, tg_waiting;
    void *tg_ptrs[MSL_SIM_MAX_TG_ARGS];
    char *arena;
    unsigned long arena_used, static_bytes;
    unsigned n_statics;
    struct { const void *key; unsigned long offset; } statics[MSL_SIM_MAX_STATICS];
    msl_sim_context sched_ctx;
    unsigned order[MSL_SIM_MAX_THREADS];
    msl_sim_fiber fibers[MSL_SIM_MAX_THREADS];
    msl_sim_simdgroup sgs[MSL_SIM_MAX_SIMDGROUPS];
};
extern struct msl_sim_state msl_sim_g;

void msl_sim_yield(void);
void msl_sim_release_simd(msl_sim_simdgroup *sg, unsigned index);
int msl_sim_report_deadlock(void);
void msl_sim_note_thread(const msl_sim_fiber *f);
#endif
