/* One fiber per simulated Metal thread: a stack and a saved stack pointer. */
#ifndef MSLSIM_FIBER_H
#define MSLSIM_FIBER_H

typedef void (*msl_sim_fiber_fn)(void *arg);

typedef struct msl_sim_context {
#if defined(__x86_64__)
    void *sp;
#else
    char uc[1024] __attribute__((aligned(16)));   /* ucontext_t storage */
#endif
} msl_sim_context;

/* Prepare `ctx` to run fn(arg) on [stack_lo, stack_hi) the first time it is switched to. */
void msl_sim_context_init(msl_sim_context *ctx, char *stack_lo, char *stack_hi,
                          msl_sim_fiber_fn fn, void *arg);
/* Save the running context into `from` and resume `to`. */
#if defined(__x86_64__)
void msl_sim_switch(void **save_sp, void *load_sp);
static inline void msl_sim_context_switch(msl_sim_context *from, msl_sim_context *to) {
    msl_sim_switch(&from->sp, to->sp);
}
#else
void msl_sim_context_switch(msl_sim_context *from, msl_sim_context *to);
#endif
#endif
