/* Context creation and switching: the hand-written x86-64 switch (fiber_x86_64.S, ~18 ns)
   where available, ucontext elsewhere (~15x slower, but portable). */
#include "fiber.h"

#include <string.h>

#if defined(__x86_64__)
void msl_sim_switch(void **save_sp, void *load_sp);
void msl_sim_fiber_start(void);

void msl_sim_context_init(msl_sim_context *ctx, char *stack_lo, char *stack_hi,
                          msl_sim_fiber_fn fn, void *arg) {
    (void)stack_lo;
    unsigned long top = (unsigned long)stack_hi & ~15ul;
    unsigned long *sp = (unsigned long *)(top - 8 * sizeof(unsigned long));
    unsigned mxcsr;
    unsigned short fpucw;
    __asm__ volatile("stmxcsr %0" : "=m"(mxcsr));
    __asm__ volatile("fnstcw %0" : "=m"(fpucw));
    /* Layout popped by msl_sim_switch: control words, r15, r14, r13, r12, rbx, rbp, ret. */
    sp[0] = (unsigned long)mxcsr | ((unsigned long)fpucw << 32);
    sp[1] = 0;                     /* r15 */
    sp[2] = 0;                     /* r14 */
    sp[3] = (unsigned long)fn;     /* r13 */
    sp[4] = (unsigned long)arg;    /* r12 */
    sp[5] = 0;                     /* rbx */
    sp[6] = 0;                     /* rbp */
    sp[7] = (unsigned long)msl_sim_fiber_start;
    ctx->sp = sp;
}

void msl_sim_context_switch(msl_sim_context *from, msl_sim_context *to) {
    msl_sim_switch(&from->sp, to->sp);
}
#else
#include <ucontext.h>
_Static_assert(sizeof(ucontext_t) <= sizeof(((msl_sim_context *)0)->uc), "ucontext size");

void msl_sim_context_init(msl_sim_context *ctx, char *stack_lo, char *stack_hi,
                          msl_sim_fiber_fn fn, void *arg) {
    ucontext_t *uc = (ucontext_t *)ctx->uc;
    getcontext(uc);
    uc->uc_stack.ss_sp = stack_lo;
    uc->uc_stack.ss_size = (size_t)(stack_hi - stack_lo);
    uc->uc_link = NULL;
    /* makecontext passes int arguments: split the pointer in two halves. */
    unsigned long bits = (unsigned long)arg;
    makecontext(uc, (void (*)(void))fn, 2, (int)(bits & 0xffffffffu), (int)(bits >> 32));
}

void msl_sim_context_switch(msl_sim_context *from, msl_sim_context *to) {
    swapcontext((ucontext_t *)from->uc, (ucontext_t *)to->uc);
}
#endif
