/* A dispatch: its threadgroups spread over worker threads (the calling thread is worker 0;
   the others are a pool started on first use). Each worker takes the next threadgroup from
   a shared counter and runs it to the end on its own fibers and threadgroup memory, so a
   race-free kernel gives the same bytes for any worker count. MSLTRANS_SIM_THREADS pins the
   count (default: the CPUs this process may use); weak compare-exchange failure injection
   (MSLTRANS_SIM_CAS_SPURIOUS) counts calls in execution order, so it runs on one worker.

   The first error stops the dispatch: workers finish the group they are in and take no new
   one. Among the workers' errors the one of the lowest threadgroup is reported; the Python
   side re-runs a failed parallel dispatch on one worker (from the untouched host copies) so
   that the error is the one the sequential order meets first. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "profile.h"
#include "sched.h"

static msl_sim_worker *workers[MSL_SIM_MAX_WORKERS];
static pthread_t pool[MSL_SIM_MAX_WORKERS];
static unsigned pool_started = 1;           /* worker 0 is the caller: no thread */
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t wake = PTHREAD_COND_INITIALIZER, done = PTHREAD_COND_INITIALIZER;

static struct {
    const msl_sim_launch *launch;
    unsigned n_groups[3];
    unsigned long long total, next;
    unsigned long long deadline_ns;
    unsigned n_workers, finished;
    unsigned long long generation;
    int stop;
} job;

/* A child forked after the pool started has none of its threads: start again from one. */
static void forked_child(void) {
    pool_started = 1;
    pthread_mutex_init(&lock, NULL);
    pthread_cond_init(&wake, NULL);
    pthread_cond_init(&done, NULL);
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

/* One worker's share of the dispatch: threadgroups until none is left or one failed. */
static void run_share(msl_sim_worker *w) {
    const msl_sim_launch *l = job.launch;
    msl_sim_tls_worker = w;
    memset(&w->report, 0, sizeof w->report);
    w->launch = l;
    w->current = -1;
    w->n_statics = 0;
    w->static_bytes = 0;
    w->groups_run = 0;
    w->group_linear = ~0ull;
    w->arena_used = w->arena_base;
    w->expired = 0;
    int timed = job.deadline_ns && msl_sim_timer_arm(job.deadline_ns) == 0;
    if (sigsetjmp(w->fault_env, 1) == 0) {
        for (;;) {
            if (w->expired) {
                w->fault.signo = MSL_SIM_TIMER_SIGNAL;
                w->fault.addr = w->fault.pc = 0;
                w->fault.is_write = -1;
                classify_fault(w);
                __atomic_store_n(&job.stop, 1, __ATOMIC_RELEASE);
                break;
            }
            if (__atomic_load_n(&job.stop, __ATOMIC_ACQUIRE)) break;
            unsigned long long g = __atomic_fetch_add(&job.next, 1, __ATOMIC_ACQ_REL);
            if (g >= job.total) break;
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
                break;
            }
        }
    } else {
        w->in_kernel = 0;
        classify_fault(w);
        w->current = -1;
        __atomic_store_n(&job.stop, 1, __ATOMIC_RELEASE);
    }
    if (timed) msl_sim_timer_disarm();
    msl_sim_tls_worker = NULL;
}

static void *pool_main(void *arg) {
    msl_sim_worker *w = arg;
    msl_sim_worker_signals(w);
    unsigned long long seen = 0;
    for (;;) {
        pthread_mutex_lock(&lock);
        for (;;) {
            if (job.generation != seen) {
                seen = job.generation;
                if (w->index < job.n_workers) break;   /* else: a job without this worker */
            }
            pthread_cond_wait(&wake, &lock);
        }
        pthread_mutex_unlock(&lock);
        run_share(w);
        pthread_mutex_lock(&lock);
        if (++job.finished == job.n_workers) pthread_cond_signal(&done);
        pthread_mutex_unlock(&lock);
    }
    return NULL;
}

static void register_atfork(void) { pthread_atfork(NULL, NULL, forked_child); }

static unsigned cpu_count(void) {
    cpu_set_t set;
    if (sched_getaffinity(0, sizeof set, &set) == 0) {
        int n = CPU_COUNT(&set);
        if (n > 0) return (unsigned)n;
    }
    return 1;
}

/* MSLTRANS_SIM_THREADS: a positive integer, or unset/empty for every CPU. */
static int worker_count(char *message, unsigned long size, unsigned *count) {
    const char *text = getenv("MSLTRANS_SIM_THREADS");
    if (!text || !*text) {
        *count = cpu_count();
        return 0;
    }
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

int msl_sim_dispatch(const msl_sim_launch *launch, msl_sim_report *report) {
    memset(report, 0, sizeof *report);
    if (check_launch(launch, report)) return report->kind;
    unsigned n_workers;
    if (worker_count(report->message, sizeof report->message, &n_workers) ||
        msl_sim_cas_spurious_reset(report->message, sizeof report->message)) {
        report->kind = MSL_SIM_ERR_LAUNCH;
        return report->kind;
    }
    if (launch->workers) n_workers = launch->workers;
    if (msl_sim_cas_spurious_enabled() || launch->profile) n_workers = 1;
    unsigned long long total = 1;
    for (int d = 0; d < 3; d++) {
        job.n_groups[d] = (launch->threads[d] + launch->group_size[d] - 1) / launch->group_size[d];
        total *= job.n_groups[d];
    }
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
    static pthread_once_t atfork = PTHREAD_ONCE_INIT;
    pthread_once(&atfork, register_atfork);
    pthread_mutex_lock(&lock);
    while (pool_started < n_workers) {
        if (pthread_create(&pool[pool_started], NULL, pool_main, workers[pool_started])) break;
        pool_started++;
    }
    if (n_workers > pool_started) n_workers = pool_started;
    job.n_workers = n_workers;
    job.finished = 1;   /* worker 0 counts itself once it is done */
    job.generation++;
    if (n_workers > 1) pthread_cond_broadcast(&wake);
    pthread_mutex_unlock(&lock);
    run_share(workers[0]);
    pthread_mutex_lock(&lock);
    while (job.finished < n_workers) pthread_cond_wait(&done, &lock);
    pthread_mutex_unlock(&lock);
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
    report->workers = n_workers;
    return report->kind;
}

int msl_sim_abi_version(void) { return MSL_SIM_ABI_VERSION; }
