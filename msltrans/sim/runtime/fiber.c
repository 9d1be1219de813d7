/* Context creation and switching: the hand-written x86-64 switch (fiber_x86_64.S, a few ns)
   where available, ucontext elsewhere (~15x slower, but portable). */
#include "fiber.h"

#include <string.h>

#if defined(__x86_64__)
void msl_sim_fiber_start(void);

void msl_sim_context_init(msl_sim_context *ctx, char *stack_lo, char *stack_hi,
                          msl_sim_fiber_fn fn, void *arg) {
    (void)stack_lo;
    unsigned long top = (unsigned long)stack_hi & ~15ul;
    unsigned long *sp = (unsigned long *)(top - 8 * sizeof(unsigned long));
    /* Layout popped by msl_sim_switch: r15, r14, r13, r12, rbx, rbp, return address. */
    sp[0] = 0;                     /* r15 */
    sp[1] = 0;                     /* r14 */
    sp[2] = (unsigned long)fn;     /* r13 */
    sp[3] = (unsigned long)arg;    /* r12 */
    sp[4] = 0;                     /* rbx */
    sp[5] = 0;                     /* rbp */
    sp[6] = (unsigned long)msl_sim_fiber_start;
    sp[7] = 0;
    ctx->sp = sp;
}
#else
#include <ucontext.h>
_Static_assert(sizeof(ucontext_t) <= sizeof(((msl_sim_context *)0)->uc), "ucontext size");

/* makecontext passes int arguments: the function and its argument travel as 32-bit halves. */
static void trampoline(unsigned fn_lo, unsigned fn_hi, unsigned arg_lo, unsigned arg_hi) {
    msl_sim_fiber_fn fn = (msl_sim_fiber_fn)(((unsigned long)fn_hi << 32) | fn_lo);
    fn((void *)(((unsigned long)arg_hi << 32) | arg_lo));
}

void msl_sim_context_init(msl_sim_context *ctx, char *stack_lo, char *stack_hi,
                          msl_sim_fiber_fn fn, void *arg) {
    ucontext_t *uc = (ucontext_t *)ctx->uc;
    getcontext(uc);
    uc->uc_stack.ss_sp = stack_lo;
    uc->uc_stack.ss_size = (size_t)(stack_hi - stack_lo);
    uc->uc_link = NULL;
    unsigned long f = (unsigned long)fn, a = (unsigned long)arg;
    makecontext(uc, (void (*)(void))trampoline, 4, (unsigned)f, (unsigned)(f >> 32),
                (unsigned)a, (unsigned)(a >> 32));
}

void msl_sim_context_switch(msl_sim_context *from, msl_sim_context *to) {
    swapcontext((ucontext_t *)from->uc, (ucontext_t *)to->uc);
}
#endif
