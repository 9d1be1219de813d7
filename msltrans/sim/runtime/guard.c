/* Guard pages and fault capture: staging buffers whose end touches a PROT_NONE page, and
   SIGSEGV/SIGBUS/SIGFPE handlers (on an alternate stack, since a fiber that overflowed its
   stack cannot run a handler) that jump back to the worker's dispatch loop instead of
   killing Python. The dispatch time limit is a per-thread timer (timer_create with
   SIGEV_THREAD_ID), so each worker is interrupted on its own thread. */
#define _GNU_SOURCE
#include <setjmp.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <ucontext.h>
#include <unistd.h>

#include "sched.h"

#define ALT_STACK_SIZE (1ul << 16)

static struct sigaction saved_segv, saved_bus, saved_fpe, saved_timer;
static stack_t saved_altstack;
static char alt_stack[ALT_STACK_SIZE] __attribute__((aligned(64)));
static __thread timer_t thread_timer;
static __thread int thread_timer_made;

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

/* A fault outside kernel code (another thread of the host process, or the runtime itself)
   is not ours: hand it to whoever handled the signal before the dispatch. */
static void chain(int signo, siginfo_t *info, void *context) {
    const struct sigaction *old = signo == SIGSEGV ? &saved_segv : signo == SIGBUS ? &saved_bus
                                : signo == SIGFPE ? &saved_fpe : &saved_timer;
    if ((old->sa_flags & SA_SIGINFO) && old->sa_sigaction) {
        old->sa_sigaction(signo, info, context);
        return;
    }
    if (old->sa_handler == SIG_IGN) return;
    if (old->sa_handler != SIG_DFL && old->sa_handler) {
        old->sa_handler(signo);
        return;
    }
    signal(signo, SIG_DFL);   /* re-executing the instruction takes the default action */
}

static void on_fault(int signo, siginfo_t *info, void *context) {
    msl_sim_worker *w = msl_sim_tls_worker;
    if (!w || !w->in_kernel) {
        if (signo != MSL_SIM_TIMER_SIGNAL) chain(signo, info, context);
        else if (w) w->expired = 1;   /* between threadgroups: the worker stops at its check */
        return;
    }
    ucontext_t *uc = (ucontext_t *)context;
    w->fault.signo = signo;
    w->fault.addr = signo == MSL_SIM_TIMER_SIGNAL ? 0 : info->si_addr;
#if defined(__x86_64__)
    w->fault.pc = signo == MSL_SIM_TIMER_SIGNAL ? 0 : (void *)uc->uc_mcontext.gregs[REG_RIP];
    /* Page-fault error code bit 1: the access was a write. */
    w->fault.is_write = (uc->uc_mcontext.gregs[REG_ERR] & 2) ? 1 : 0;
#elif defined(__aarch64__)
    w->fault.pc = (void *)uc->uc_mcontext.pc;
    w->fault.is_write = -1;
#else
    (void)uc;
    w->fault.pc = 0;
    w->fault.is_write = -1;
#endif
    if (signo == MSL_SIM_TIMER_SIGNAL) w->fault.is_write = -1;
    siglongjmp(w->fault_env, signo);
}

static void set_altstack(void *stack, stack_t *old) {
    stack_t alt = {.ss_sp = stack, .ss_size = ALT_STACK_SIZE, .ss_flags = 0};
    sigaltstack(&alt, old);
}

/* A pool thread: its own alternate signal stack, kept for the thread's life. */
void msl_sim_worker_signals(msl_sim_worker *w) {
    (void)w;
    void *stack = malloc(ALT_STACK_SIZE);
    if (stack) set_altstack(stack, NULL);
}

void msl_sim_signals_enter(void) {
    set_altstack(alt_stack, &saved_altstack);
    struct sigaction action;
    memset(&action, 0, sizeof action);
    action.sa_sigaction = on_fault;
    action.sa_flags = SA_SIGINFO | SA_ONSTACK | SA_NODEFER;
    sigemptyset(&action.sa_mask);
    sigaction(SIGSEGV, &action, &saved_segv);
    sigaction(SIGBUS, &action, &saved_bus);
    sigaction(SIGFPE, &action, &saved_fpe);
    sigaction(MSL_SIM_TIMER_SIGNAL, &action, &saved_timer);
}

void msl_sim_signals_leave(void) {
    sigaction(SIGSEGV, &saved_segv, NULL);
    sigaction(SIGBUS, &saved_bus, NULL);
    sigaction(SIGFPE, &saved_fpe, NULL);
    sigaction(MSL_SIM_TIMER_SIGNAL, &saved_timer, NULL);
    sigaltstack(&saved_altstack, NULL);
}

unsigned long long msl_sim_now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (unsigned long long)ts.tv_sec * 1000000000ull + (unsigned long long)ts.tv_nsec;
}

/* Fire MSL_SIM_TIMER_SIGNAL on this thread at `deadline_ns` (CLOCK_MONOTONIC). */
int msl_sim_timer_arm(unsigned long long deadline_ns) {
    if (!thread_timer_made) {
        struct sigevent sev;
        memset(&sev, 0, sizeof sev);
        sev.sigev_notify = SIGEV_THREAD_ID;
        sev.sigev_signo = MSL_SIM_TIMER_SIGNAL;
        sev._sigev_un._tid = (pid_t)syscall(SYS_gettid);
        if (timer_create(CLOCK_MONOTONIC, &sev, &thread_timer)) return -1;
        thread_timer_made = 1;
    }
    struct itimerspec spec;
    memset(&spec, 0, sizeof spec);
    spec.it_value.tv_sec = (time_t)(deadline_ns / 1000000000ull);
    spec.it_value.tv_nsec = (long)(deadline_ns % 1000000000ull);
    return timer_settime(thread_timer, TIMER_ABSTIME, &spec, NULL);
}

/* After fork: the child has no timers (this thread's timer id is not valid there). */
void msl_sim_timer_forget(void) { thread_timer_made = 0; }

void msl_sim_timer_disarm(void) {
    struct itimerspec spec;
    memset(&spec, 0, sizeof spec);
    if (thread_timer_made) timer_settime(thread_timer, 0, &spec, NULL);
}
