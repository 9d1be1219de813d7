/* Cooperative context switch for the simulator's fibers (System V x86-64).
   Saves only what the ABI says a callee must preserve: rbx, rbp, r12-r15 and the stack
   pointer. The MXCSR and x87 control words are not switched: MSL cannot change rounding
   modes, so every fiber of a worker thread runs with that thread's (default) ones. */
    .text
    .globl  msl_sim_switch
    .hidden msl_sim_switch
    .type   msl_sim_switch,@function
/* void msl_sim_switch(void **save_sp, void *load_sp) */
msl_sim_switch:
    pushq   %rbp
    pushq   %rbx
    pushq   %r12
    pushq   %r13
    pushq   %r14
    pushq   %r15
    movq    %rsp, (%rdi)
    movq    %rsi, %rsp
    popq    %r15
    popq    %r14
    popq    %r13
    popq    %r12
    popq    %rbx
    popq    %rbp
    ret
    .size   msl_sim_switch, .-msl_sim_switch

/* First "return address" of a new fiber: r13 holds the function, r12 its argument. */
    .globl  msl_sim_fiber_start
    .hidden msl_sim_fiber_start
    .type   msl_sim_fiber_start,@function
msl_sim_fiber_start:
    movq    %r12, %rdi
    andq    $-16, %rsp
    callq   *%r13
    ud2
    .size   msl_sim_fiber_start, .-msl_sim_fiber_start
    .section .note.GNU-stack,"",@progbits
