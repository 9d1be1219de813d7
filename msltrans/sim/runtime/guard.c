/* Guard pages and fault capture: staging buffers whose end touches a PROT_NONE page, and
   SIGSEGV/SIGBUS/SIGFPE handlers (on an alternate stack, since a fiber that overflowed its
   stack cannot run a handler) that jump back to the dispatcher instead of killing Python. */
#define _GNU_SOURCE
#include <setjmp.h>
#include <signal.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/time.h>
#include <ucontext.h>
#include <unistd.h>

#include "mslsim.h"

__thread msl_sim_fault msl_sim_last_fault;
extern sigjmp_buf msl_sim_fault_env;

static struct sigaction saved_segv, saved_bus, saved_fpe, saved_alarm;
static stack_t saved_altstack;
static char alt_stack[1 << 16] __attribute__((aligned(64)));

static unsigned long page_size(void) {
    static unsigned long size;
    if (!size) size = (unsigned long)sysconf(_SC_PAGESIZE);
    return size;
}

void *msl_sim_map_guarded(unsigned long size, unsigned long align, void **map_base,
                          unsigned long *map_len) {
    unsigned long page = page_size();
    if (align == 0) align = 1;
    unsigned long padded = (size + align - 1) / align * align;
    unsigned long data_pages = (padded + page - 1) / page * page;
    /* [guard][padding + data][guard]: the front guard catches negative offsets that leave
       the first page, the back guard anything past the end. */
    unsigned long total = page + data_pages + page;
    char *base = mmap(NULL, total, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (base == MAP_FAILED) return NULL;
    if (mprotect(base, page, PROT_NONE) != 0 ||
        mprotect(base + page + data_pages, page, PROT_NONE) != 0) {
        munmap(base, total);
        return NULL;
    }
    *map_base = base;
    *map_len = total;
    /* The data ends exactly `padded` bytes before the back guard: one element past the end
       of a buffer whose size is a multiple of `align` faults. */
    return base + page + data_pages - padded;
}

void msl_sim_unmap(void *map_base, unsigned long map_len) { munmap(map_base, map_len); }

static void on_fault(int signo, siginfo_t *info, void *context) {
    ucontext_t *uc = (ucontext_t *)context;
    msl_sim_last_fault.signo = signo;
    msl_sim_last_fault.addr = info->si_addr;
#if defined(__x86_64__)
    msl_sim_last_fault.pc = (void *)uc->uc_mcontext.gregs[REG_RIP];
    /* Page-fault error code bit 1: the access was a write. */
    msl_sim_last_fault.is_write = (uc->uc_mcontext.gregs[REG_ERR] & 2) ? 1 : 0;
#elif defined(__aarch64__)
    msl_sim_last_fault.pc = (void *)uc->uc_mcontext.pc;
    msl_sim_last_fault.is_write = -1;
#else
    (void)uc;
    msl_sim_last_fault.pc = 0;
    msl_sim_last_fault.is_write = -1;
#endif
    siglongjmp(msl_sim_fault_env, signo);
}

/* Fibers are cooperative: a thread spinning on another thread's store never yields, so a
   wall-clock limit is the only way out. Jumping out is safe: the dispatch abandons every
   fiber, and the runtime holds no locks or heap state while kernel code runs. */
static void on_alarm(int signo, siginfo_t *info, void *context) {
    (void)info;
    (void)context;
    msl_sim_last_fault.signo = signo;
    msl_sim_last_fault.addr = 0;
    msl_sim_last_fault.pc = 0;
    msl_sim_last_fault.is_write = -1;
    siglongjmp(msl_sim_fault_env, signo);
}

/* A timer the host had armed (pytest-timeout uses SIGALRM too) is put back afterwards. */
static struct itimerval saved_timer;

static void set_timer(unsigned timeout_ms, struct itimerval *old) {
    struct itimerval timer;
    memset(&timer, 0, sizeof timer);
    timer.it_value.tv_sec = timeout_ms / 1000;
    timer.it_value.tv_usec = (timeout_ms % 1000) * 1000;
    setitimer(ITIMER_REAL, &timer, old);
}

void msl_sim_signals_enter(unsigned timeout_ms) {
    stack_t alt = {.ss_sp = alt_stack, .ss_size = sizeof alt_stack, .ss_flags = 0};
    sigaltstack(&alt, &saved_altstack);
    struct sigaction action;
    memset(&action, 0, sizeof action);
    action.sa_sigaction = on_fault;
    action.sa_flags = SA_SIGINFO | SA_ONSTACK | SA_NODEFER;
    sigemptyset(&action.sa_mask);
    sigaction(SIGSEGV, &action, &saved_segv);
    sigaction(SIGBUS, &action, &saved_bus);
    sigaction(SIGFPE, &action, &saved_fpe);
    if (timeout_ms) {
        struct sigaction alarm_action = action;
        alarm_action.sa_sigaction = on_alarm;
        sigaction(SIGALRM, &alarm_action, &saved_alarm);
        set_timer(timeout_ms, &saved_timer);
    }
}

void msl_sim_signals_leave(unsigned timeout_ms) {
    if (timeout_ms) {
        set_timer(0, NULL);
        sigaction(SIGALRM, &saved_alarm, NULL);
        if (saved_timer.it_value.tv_sec || saved_timer.it_value.tv_usec)
            setitimer(ITIMER_REAL, &saved_timer, NULL);
    }
    sigaction(SIGSEGV, &saved_segv, NULL);
    sigaction(SIGBUS, &saved_bus, NULL);
    sigaction(SIGFPE, &saved_fpe, NULL);
    sigaltstack(&saved_altstack, NULL);
}
