/* A dispatch: its threadgroups spread over worker threads. The calling thread is worker 0
   and always works; pool threads (started on first use) are workers 1.. and join while
   threadgroups are left. Threadgroups are handed out in claims of one or more consecutive
   groups from a shared counter; each worker runs a claimed group to the end on its own
   fibers and threadgroup memory, so a race-free kernel gives the same bytes whichever
   worker runs which group.

   Nothing waits for a worker that has not started: the launch is open while groups are
   left, a pool thread joins it only while it is open (a compare-exchange on `job_state`),
   and the caller, once no group is left, closes it and waits only for the workers that
   joined (each finishes its claim). A worker woken late finds the launch closed or no
   group left and goes back to sleep. Waiting is bounded spinning, then a futex sleep: a
   pool thread spins a short while after its work for the next launch, the caller a short
   while for the joined workers' last groups.

   How many workers: MSLTRANS_SIM_THREADS pins the count; by default the cores free now
   (cores.c), so a busy machine runs a dispatch on the calling thread alone; one worker for
   a single threadgroup, while MSLTRANS_SIM_CAS_SPURIOUS is set (its calls are counted in
   execution order) and for a profile.

   The first error stops the dispatch: workers finish the group they are in and take no new
   one. Among the workers' errors the one of the lowest threadgroup is reported; the Python
   side re-runs a failed dispatch that ran on several workers on one worker (from the
   untouched host copies) so that the error is the one the sequential order meets first. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <limits.h>
#include <linux/futex.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "profile.h"
#include "sched.h"

/* A pool thread spins this long after its work for the next launch before it sleeps; the
   caller this long for the joined workers' last groups. */
#define POOL_SPIN_NS 200000ull
#define END_SPIN_NS 50000ull
/* A pool thread woken ahead of a dispatch (msl_sim_prewake) spins this long for it: longer
   than the host's staging and argument work between the prewake and the dispatch. */
#define PREWAKE_SPIN_NS 2000000ull
/* Claims by default: about 1/CLAIM_SHARE of a worker's share of what is left, at most
   CLAIM_MAX groups (small claims near the end keep the workers finishing together). */
#define CLAIM_SHARE 16
#define CLAIM_MAX 8
/* msl_sim_copy: bytes a claim copies, and bytes a worker beyond the first needs. */
#define COPY_BLOCK (256ul << 10)
#define COPY_PER_WORKER (1ul << 20)

static msl_sim_worker *workers[MSL_SIM_MAX_WORKERS];
static pthread_t pool[MSL_SIM_MAX_WORKERS];
static int steered[MSL_SIM_MAX_WORKERS];   /* msl_sim_steer's CPU + 1 of each pool thread */
static unsigned pool_started = 1;           /* worker 0 is the caller: no thread */

static struct {
    const msl_sim_launch *launch;
    unsigned n_groups[3];
    unsigned long long total, next;
    unsigned long long deadline_ns;
    unsigned n_workers;                     /* workers 0..n-1 may take part (atomic) */
    msl_sim_dispatch_hook hook;
    int stop;
    /* A copy (msl_sim_copy) instead of a launch: `total` blocks of COPY_BLOCK bytes. */
    char *copy_dst;
    const char *copy_src;
    unsigned long copy_size;
} job;
/* One launch or copy at a time (the host may call from several threads). */
static pthread_mutex_t job_lock = PTHREAD_MUTEX_INITIALIZER;

/* generation << 32 | JOB_OPEN | pool workers inside the launch */
#define JOB_OPEN (1ull << 31)
#define JOB_COUNT (JOB_OPEN - 1)
static unsigned long long job_state;
static unsigned joined;                     /* pool workers that joined this launch */
static unsigned left_word;                  /* futex: the last joined worker left */
static unsigned wake_word[MSL_SIM_MAX_WORKERS];   /* futex of each pool thread */
static int asleep[MSL_SIM_MAX_WORKERS];
static unsigned spinning;                   /* pool threads spinning for a launch */
static unsigned long late_ms;               /* MSLTRANS_SIM_DISPATCH_TEST's late_ms */
static unsigned long long prewake_spin_ns;  /* pool threads' spinning after a prewake */

static void futex_wait(unsigned *word, unsigned value) {
    syscall(SYS_futex, word, FUTEX_WAIT_PRIVATE, value, NULL, NULL, 0);
}

static void futex_wake(unsigned *word) {
    syscall(SYS_futex, word, FUTEX_WAKE_PRIVATE, INT_MAX, NULL, NULL, 0);
}

static inline void cpu_relax(void) {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    __asm__ __volatile__("yield");
#endif
}

/* A child forked after the pool started has none of its threads: start again from one. */
static void forked_child(void) {
    pool_started = 1;
    pthread_mutex_init(&job_lock, NULL);
    job_state = 0;
    joined = 0;
    spinning = 0;
    memset(asleep, 0, sizeof asleep);
    memset(steered, 0, sizeof steered);
    msl_sim_timer_forget();
}

static msl_sim_worker *worker(unsigned i) {
    if (!workers[i]) {
        workers[i] = calloc(1, sizeof(msl_sim_worker));
        if (workers[i]) workers[i]->index = i;
    }
    return workers[i];
}

static void classify_fault(msl_sim_worker *w) {
    msl_sim_report *r = &w->report;
    r->signo = w->fault.signo;
    r->fault_addr = (unsigned long long)w->fault.addr;
    r->pc = (unsigned long long)w->fault.pc;
    r->is_write = w->fault.is_write;
    if (w->fault.signo == MSL_SIM_TIMER_SIGNAL) r->kind = MSL_SIM_ERR_TIMEOUT;
    else if (w->fault.signo == SIGFPE) r->kind = MSL_SIM_ERR_FPE;
    else if (w->fault.signo == SIGBUS) r->kind = MSL_SIM_ERR_BUS;
    else if (msl_sim_stack_guard_hit(w->fault.addr)) r->kind = MSL_SIM_ERR_STACK;
    else r->kind = MSL_SIM_ERR_SEGV;
    Dl_info info;
    if (w->fault.pc && dladdr(w->fault.pc, &info) && info.dli_fname) {
        r->pc_offset = (unsigned long long)((char *)w->fault.pc - (char *)info.dli_fbase);
        snprintf(r->object_path, sizeof r->object_path, "%s", info.dli_fname);
    }
    if (w->current >= 0) msl_sim_note_thread(w, &w->fibers[w->current]);
}

static void group_of(unsigned long long linear, const unsigned n[3], unsigned g[3]) {
    g[0] = (unsigned)(linear % n[0]);
    g[1] = (unsigned)((linear / n[0]) % n[1]);
    g[2] = (unsigned)(linear / ((unsigned long long)n[0] * n[1]));
}

/* The next claim: positions [*first, *first + count) of the claim order; 0 when none is
   left. */
static unsigned long long claim(unsigned long long *first) {
    unsigned long long next = __atomic_load_n(&job.next, __ATOMIC_RELAXED);
    for (;;) {
        if (next >= job.total) return 0;
        unsigned long long left = job.total - next, count = job.hook.chunk;
        if (!count) {
            unsigned n = __atomic_load_n(&job.n_workers, __ATOMIC_RELAXED);
            count = n <= 1 ? left : left / (CLAIM_SHARE * (unsigned long long)n);
            if (n > 1 && count > CLAIM_MAX) count = CLAIM_MAX;
            if (!count) count = 1;
        }
        if (count > left) count = left;
        if (__atomic_compare_exchange_n(&job.next, &next, next + count, 1, __ATOMIC_ACQ_REL,
                                        __ATOMIC_RELAXED)) {
            *first = next;
            return count;
        }
    }
}

static void reset_worker(msl_sim_worker *w) {
    memset(&w->report, 0, sizeof w->report);
    w->static_bytes = 0;
    w->groups_run = 0;
    w->group_linear = ~0ull;
}

/* One worker's share of the dispatch: claims until none is left or a group failed. */
static void run_share(msl_sim_worker *w) {
    const msl_sim_launch *l = job.launch;
    msl_sim_tls_worker = w;
    reset_worker(w);
    w->launch = l;
    w->current = -1;
    w->n_statics = 0;
    w->arena_used = w->arena_base;
    w->expired = 0;
    int timed = job.deadline_ns && msl_sim_timer_arm(job.deadline_ns) == 0;
    if (sigsetjmp(w->fault_env, 1) == 0) {
        unsigned long long first, count;
        while ((count = claim(&first))) {
            for (unsigned long long k = first; k < first + count; k++) {
                if (w->expired) {
                    w->fault.signo = MSL_SIM_TIMER_SIGNAL;
                    w->fault.addr = w->fault.pc = 0;
                    w->fault.is_write = -1;
                    classify_fault(w);
                    __atomic_store_n(&job.stop, 1, __ATOMIC_RELEASE);
                    goto out;
                }
                if (__atomic_load_n(&job.stop, __ATOMIC_ACQUIRE)) goto out;
                unsigned long long g = job.hook.reverse ? job.total - 1 - k : k;
                unsigned group[3], dims[3];
                group_of(g, job.n_groups, group);
                for (int d = 0; d < 3; d++) {
                    unsigned rest = l->threads[d] - group[d] * l->group_size[d];
                    dims[d] = rest < l->group_size[d] ? rest : l->group_size[d];
                }
                w->group_linear = g;
                w->groups_run++;
                if (w->profile) msl_sim_profile_group(w);
                if (msl_sim_run_group(w, group, dims, job.n_groups)) {
                    __atomic_store_n(&job.stop, 1, __ATOMIC_RELEASE);
                    goto out;
                }
            }
        }
    } else {
        w->in_kernel = 0;
        classify_fault(w);
        w->current = -1;
        __atomic_store_n(&job.stop, 1, __ATOMIC_RELEASE);
    }
out:
    if (timed) msl_sim_timer_disarm();
    msl_sim_tls_worker = NULL;
}

static void leave(void) {
    unsigned long long state = __atomic_sub_fetch(&job_state, 1, __ATOMIC_ACQ_REL);
    if (!(state & JOB_OPEN) && (state & JOB_COUNT) == 0) {
        __atomic_add_fetch(&left_word, 1, __ATOMIC_RELEASE);
        futex_wake(&left_word);
    }
}

/* One worker's share of a copy: blocks until none is left. */
static void copy_share(void) {
    unsigned long long first, count;
    while ((count = claim(&first))) {
        unsigned long start = (unsigned long)first * COPY_BLOCK;
        unsigned long end = (unsigned long)(first + count) * COPY_BLOCK;
        if (end > job.copy_size) end = job.copy_size;
        memcpy(job.copy_dst + start, job.copy_src + start, end - start);
    }
}

/* Joins the launch of `state` if it is open, has groups left and takes this worker. */
static int try_join(msl_sim_worker *w, unsigned long long state) {
    unsigned long long gen = state >> 32;
    for (;;) {
        if (state >> 32 != gen || !(state & JOB_OPEN)) return 0;
        if (w->index >= __atomic_load_n(&job.n_workers, __ATOMIC_RELAXED)) return 0;
        if (__atomic_compare_exchange_n(&job_state, &state, state + 1, 0, __ATOMIC_ACQ_REL,
                                        __ATOMIC_ACQUIRE))
            break;
    }
    /* Inside: the launch's fields stay until this worker leaves. */
    if (__atomic_load_n(&job.next, __ATOMIC_RELAXED) >= job.total) {
        leave();
        return 0;
    }
    __atomic_add_fetch(&joined, 1, __ATOMIC_RELAXED);
    return 1;
}

/* Spins up to `ns` for a launch newer than generation `seen` (counted in `spinning`, which
   the free-core estimate leaves out); 1 with its state in *state when one came. */
static int spin_for_launch(unsigned long long seen, unsigned long long ns,
                           unsigned long long *state) {
    __atomic_add_fetch(&spinning, 1, __ATOMIC_RELAXED);
    unsigned long long until = msl_sim_now_ns() + ns;
    for (unsigned i = 1;; i++) {
        *state = __atomic_load_n(&job_state, __ATOMIC_ACQUIRE);
        if (*state >> 32 != seen || ((i & 63) == 0 && msl_sim_now_ns() > until)) break;
        if ((i & 63) == 0) sched_yield();
        cpu_relax();
    }
    __atomic_sub_fetch(&spinning, 1, __ATOMIC_RELAXED);
    return *state >> 32 != seen;
}

/* The state of a launch newer than generation `seen`: spin a while if `spin`, then sleep
   until the caller wakes this thread. Woken ahead of a launch (msl_sim_prewake), the thread
   spins PREWAKE_SPIN_NS for it before it sleeps again. */
static unsigned long long wait_for_launch(unsigned index, unsigned long long seen, int spin) {
    unsigned long long state;
    if (spin && spin_for_launch(seen, POOL_SPIN_NS, &state)) return state;
    for (;;) {
        unsigned value = __atomic_load_n(&wake_word[index], __ATOMIC_ACQUIRE);
        __atomic_store_n(&asleep[index], 1, __ATOMIC_SEQ_CST);
        state = __atomic_load_n(&job_state, __ATOMIC_SEQ_CST);
        if (state >> 32 != seen) break;
        futex_wait(&wake_word[index], value);
        if (__atomic_load_n(&wake_word[index], __ATOMIC_ACQUIRE) != value) {
            __atomic_store_n(&asleep[index], 0, __ATOMIC_SEQ_CST);
            state = __atomic_load_n(&job_state, __ATOMIC_ACQUIRE);
            if (state >> 32 != seen && (state & JOB_OPEN)) return state;
            seen = state >> 32;   /* the launches it slept through (one worker) are over */
            unsigned long long start = msl_sim_now_ns();
            int came = spin_for_launch(seen, PREWAKE_SPIN_NS, &state);
            __atomic_add_fetch(&prewake_spin_ns, msl_sim_now_ns() - start, __ATOMIC_RELAXED);
            if (came) return state;
        }
    }
    __atomic_store_n(&asleep[index], 0, __ATOMIC_RELAXED);
    return state;
}

static void sleep_ms(unsigned long ms) {
    struct timespec ts = {(time_t)(ms / 1000), (long)(ms % 1000) * 1000000l};
    nanosleep(&ts, NULL);
}

static void *pool_main(void *arg) {
    msl_sim_worker *w = arg;
    msl_sim_worker_signals(w);
    pthread_setname_np(pthread_self(), "mslsim-worker");   /* as top and /proc show it */
    unsigned long long seen = 0;
    int worked = 0;
    for (;;) {
        unsigned long long state = wait_for_launch(w->index, seen, worked);
        seen = state >> 32;
        worked = 0;
        unsigned long delay = __atomic_load_n(&late_ms, __ATOMIC_RELAXED);
        if (delay) {
            sleep_ms(delay);
            state = __atomic_load_n(&job_state, __ATOMIC_ACQUIRE);
            seen = state >> 32;   /* a worker joins a launch once */
        }
        if (try_join(w, state)) {
            if (job.copy_size) copy_share();
            else run_share(w);
            leave();
            worked = 1;
        }
    }
    return NULL;
}

static void register_atfork(void) { pthread_atfork(NULL, NULL, forked_child); }

/* MSLTRANS_SIM_THREADS: a positive integer, or unset/empty (0: the dispatch chooses). */
static int worker_count(char *message, unsigned long size, unsigned *count) {
    const char *text = getenv("MSLTRANS_SIM_THREADS");
    *count = 0;
    if (!text || !*text) return 0;
    unsigned long n = 0;
    const char *p = text;
    for (; *p >= '0' && *p <= '9' && n < 100000; p++) n = n * 10 + (unsigned)(*p - '0');
    if (*p || n == 0) {
        snprintf(message, size, "MSLTRANS_SIM_THREADS must be a positive integer (worker "
                 "threads for the threadgroups of a dispatch), not '%s'", text);
        return -1;
    }
    *count = (unsigned)n;
    return 0;
}

static int prepare(msl_sim_worker *w, const msl_sim_launch *l) {
    if (msl_sim_worker_init(w)) return -1;
    w->arena_base = 0;
    for (unsigned i = 0; i < l->n_tg; i++) {
        w->tg_ptrs[i] = w->arena + w->arena_base;
        w->arena_base += (l->tg_lengths[i] + 15) / 16 * 16;
    }
    return 0;
}

static int check_launch(const msl_sim_launch *l, msl_sim_report *r) {
    unsigned long per_group = 1;
    for (int d = 0; d < 3; d++) {
        if (l->threads[d] == 0 || l->group_size[d] == 0) {
            r->kind = MSL_SIM_ERR_LAUNCH;
            snprintf(r->message, sizeof r->message, "threads and group_size must be positive");
            return -1;
        }
        per_group *= l->group_size[d];
    }
    if (per_group > MSL_SIM_MAX_THREADS) {
        r->kind = MSL_SIM_ERR_LAUNCH;
        snprintf(r->message, sizeof r->message, "%lu threads per threadgroup exceed Metal's "
                 "limit of %d", per_group, MSL_SIM_MAX_THREADS);
        return -1;
    }
    if (l->n_tg > MSL_SIM_MAX_TG_ARGS) {
        r->kind = MSL_SIM_ERR_LAUNCH;
        snprintf(r->message, sizeof r->message, "too many [[threadgroup(i)]] arguments");
        return -1;
    }
    unsigned long total = 0;
    for (unsigned i = 0; i < l->n_tg; i++) total += (l->tg_lengths[i] + 15) / 16 * 16;
    if (total > MSL_SIM_TG_LIMIT) {
        r->kind = MSL_SIM_ERR_TG_MEMORY;
        snprintf(r->message, sizeof r->message, "[[threadgroup(i)]] arguments need %lu bytes, "
                 "over the %u-byte limit", total, MSL_SIM_TG_LIMIT);
        return -1;
    }
    return 0;
}

/* Wakes pool workers 1..n-1 that sleep. */
static void wake_sleepers(unsigned n_workers) {
    for (unsigned i = 1; i < n_workers; i++)
        if (__atomic_load_n(&asleep[i], __ATOMIC_SEQ_CST)) {
            msl_sim_steer(pool[i], &steered[i]);
            __atomic_add_fetch(&wake_word[i], 1, __ATOMIC_RELEASE);
            futex_wake(&wake_word[i]);
        }
}

/* Opens the launch to workers 1..n-1 and wakes those that sleep. */
static void open_launch(unsigned n_workers) {
    unsigned long long gen = (__atomic_load_n(&job_state, __ATOMIC_RELAXED) >> 32) + 1;
    __atomic_store_n(&joined, 0, __ATOMIC_RELAXED);
    __atomic_store_n(&late_ms, job.hook.late_ms, __ATOMIC_RELAXED);
    __atomic_store_n(&job.n_workers, n_workers, __ATOMIC_RELAXED);
    __atomic_store_n(&job_state, gen << 32 | JOB_OPEN, __ATOMIC_SEQ_CST);
    wake_sleepers(n_workers);
}

/* No group is left for anyone: close the launch, wait for the workers inside. */
static void close_launch(void) {
    unsigned long long state = __atomic_and_fetch(&job_state, ~JOB_OPEN, __ATOMIC_ACQ_REL);
    if (!(state & JOB_COUNT)) return;
    unsigned long long until = msl_sim_now_ns() + END_SPIN_NS;
    for (unsigned i = 1; __atomic_load_n(&job_state, __ATOMIC_ACQUIRE) & JOB_COUNT; i++) {
        if ((i & 63) == 0 && msl_sim_now_ns() > until) break;
        cpu_relax();
    }
    for (;;) {
        unsigned value = __atomic_load_n(&left_word, __ATOMIC_ACQUIRE);
        if (!(__atomic_load_n(&job_state, __ATOMIC_ACQUIRE) & JOB_COUNT)) break;
        futex_wait(&left_word, value);
    }
}

/* Starts the pool threads up to n_workers; returns how many workers there are. */
static unsigned start_pool(unsigned n_workers) {
    static pthread_once_t atfork = PTHREAD_ONCE_INIT;
    pthread_once(&atfork, register_atfork);
    while (pool_started < n_workers) {
        if (!worker(pool_started) ||
            pthread_create(&pool[pool_started], NULL, pool_main, workers[pool_started]))
            break;
        pool_started++;
    }
    return n_workers > pool_started ? pool_started : n_workers;
}

static int dispatch(const msl_sim_launch *launch, msl_sim_report *report) {
    job.copy_size = 0;
    if (check_launch(launch, report)) return report->kind;
    unsigned n_workers;
    if (worker_count(report->message, sizeof report->message, &n_workers) ||
        msl_sim_cas_spurious_reset(report->message, sizeof report->message) ||
        msl_sim_dispatch_test(&job.hook, report->message, sizeof report->message)) {
        report->kind = MSL_SIM_ERR_LAUNCH;
        return report->kind;
    }
    if (launch->workers) n_workers = launch->workers;
    unsigned long long total = 1;
    for (int d = 0; d < 3; d++) {
        job.n_groups[d] = (launch->threads[d] + launch->group_size[d] - 1) / launch->group_size[d];
        total *= job.n_groups[d];
    }
    if (msl_sim_cas_spurious_enabled() || launch->profile || total == 1) n_workers = 1;
    if (!n_workers)
        n_workers = msl_sim_free_cores(__atomic_load_n(&spinning, __ATOMIC_RELAXED), &job.hook);
    if (n_workers > total) n_workers = (unsigned)total;
    if (n_workers > MSL_SIM_MAX_WORKERS) n_workers = MSL_SIM_MAX_WORKERS;
    for (unsigned i = 0; i < n_workers; i++) {
        msl_sim_worker *w = worker(i);
        if (!w || prepare(w, launch)) {
            if (i == 0) {
                report->kind = MSL_SIM_ERR_LAUNCH;
                snprintf(report->message, sizeof report->message,
                         "cannot map fiber stacks / threadgroup memory");
                return report->kind;
            }
            n_workers = i;   /* run on fewer workers */
            break;
        }
        reset_worker(w);
    }
    if (msl_sim_profile_begin(launch, workers, n_workers)) {
        report->kind = MSL_SIM_ERR_LAUNCH;
        snprintf(report->message, sizeof report->message, "cannot allocate profile counters");
        return report->kind;
    }
    if (msl_sim_coherence_begin(launch, workers, n_workers, total, report)) {
        msl_sim_profile_end(workers, n_workers);
        report->kind = MSL_SIM_ERR_LAUNCH;
        return report->kind;
    }
    job.launch = launch;
    job.total = total;
    job.next = 0;
    job.stop = 0;
    job.deadline_ns = launch->timeout_ms ? msl_sim_now_ns() + launch->timeout_ms * 1000000ull : 0;
    msl_sim_signals_enter();
    n_workers = start_pool(n_workers);
    open_launch(n_workers);
    if (job.hook.caller_late_ms) sleep_ms(job.hook.caller_late_ms);
    run_share(workers[0]);
    close_launch();
    msl_sim_signals_leave();
    msl_sim_profile_end(workers, n_workers);
    msl_sim_coherence_end(workers, n_workers);

    const msl_sim_worker *failed = NULL;
    for (unsigned i = 0; i < n_workers; i++) {
        const msl_sim_worker *w = workers[i];
        report->groups_run += w->groups_run;
        if (w->static_bytes > report->tg_static_bytes) report->tg_static_bytes = w->static_bytes;
        if (w->report.kind && (!failed || w->group_linear < failed->group_linear)) failed = w;
    }
    if (failed) {
        unsigned long long groups_run = report->groups_run;
        unsigned long tg_static = report->tg_static_bytes;
        *report = failed->report;
        report->groups_run = groups_run;
        report->tg_static_bytes = tg_static;
    }
    report->workers = 1 + __atomic_load_n(&joined, __ATOMIC_RELAXED);
    return report->kind;
}

int msl_sim_dispatch(const msl_sim_launch *launch, msl_sim_report *report) {
    memset(report, 0, sizeof *report);
    pthread_mutex_lock(&job_lock);
    int kind = dispatch(launch, report);
    pthread_mutex_unlock(&job_lock);
    return kind;
}

/* Called by the host when it begins a launch of `groups` threadgroups, before it stages
   the arguments: wakes the sleeping pool threads the dispatch would use now, so that they
   spin for it instead of waking at the dispatch (a sleeping thread took up to a millisecond
   to start on a virtual machine, a large share of a 5 ms launch). Nothing when the
   dispatch would run on one worker (a busy machine, one threadgroup) or another host
   thread holds the dispatch. */
void msl_sim_prewake(unsigned long long groups) {
    if (groups <= 1 || __atomic_load_n(&pool_started, __ATOMIC_ACQUIRE) <= 1) return;
    if (pthread_mutex_trylock(&job_lock)) return;
    msl_sim_dispatch_hook hook;
    char message[200];
    unsigned n_workers = 0;
    if (!msl_sim_dispatch_test(&hook, message, sizeof message) && !hook.no_prewake &&
        !worker_count(message, sizeof message, &n_workers) &&
        !msl_sim_cas_spurious_enabled()) {
        if (!n_workers)
            n_workers = msl_sim_free_cores(__atomic_load_n(&spinning, __ATOMIC_RELAXED), &hook);
        if (n_workers > groups) n_workers = (unsigned)groups;
        if (n_workers > pool_started) n_workers = pool_started;
        wake_sleepers(n_workers);
    }
    pthread_mutex_unlock(&job_lock);
}

/* Nanoseconds pool threads have spun after being woken ahead of a dispatch (a test aid). */
unsigned long long msl_sim_prewake_spin_ns(void) {
    return __atomic_load_n(&prewake_spin_ns, __ATOMIC_RELAXED);
}

void msl_sim_copy(void *dst, const void *src, unsigned long size) {
    char message[200];
    unsigned n_workers;
    pthread_mutex_lock(&job_lock);
    if (msl_sim_dispatch_test(&job.hook, message, sizeof message))
        memset(&job.hook, 0, sizeof job.hook);
    if (worker_count(message, sizeof message, &n_workers)) n_workers = 1;
    if (!n_workers)
        n_workers = msl_sim_free_cores(__atomic_load_n(&spinning, __ATOMIC_RELAXED), &job.hook);
    if (n_workers > size / COPY_PER_WORKER) n_workers = (unsigned)(size / COPY_PER_WORKER);
    if (n_workers > MSL_SIM_MAX_WORKERS) n_workers = MSL_SIM_MAX_WORKERS;
    if (n_workers <= 1) {
        pthread_mutex_unlock(&job_lock);
        memcpy(dst, src, size);
        return;
    }
    job.hook.chunk = 1;
    job.hook.reverse = 0;
    job.copy_dst = dst;
    job.copy_src = src;
    job.copy_size = size;
    job.total = (size + COPY_BLOCK - 1) / COPY_BLOCK;
    job.next = 0;
    open_launch(start_pool(n_workers));
    copy_share();
    close_launch();
    job.copy_size = 0;
    pthread_mutex_unlock(&job_lock);
}

int msl_sim_abi_version(void) { return MSL_SIM_ABI_VERSION; }
