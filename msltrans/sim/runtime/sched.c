/* The dispatcher: runs every threadgroup of a launch as one fiber per Metal thread,
   one threadgroup at a time, and implements the rendezvous entry points of abi.h
   (threadgroup barrier, simdgroup barrier, SIMD exchange) plus threadgroup memory. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <setjmp.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "fiber.h"
#include "mslsim.h"
#include "sched.h"

sigjmp_buf msl_sim_fault_env;
struct msl_sim_state msl_sim_g;

#define G msl_sim_g

static char *stack_pool;
static unsigned long stack_pool_len;

static int ensure_stacks(void) {
    if (stack_pool) return 0;
    unsigned long len = (unsigned long)MSL_SIM_MAX_THREADS * MSL_SIM_STACK_STRIDE;
    char *pool = mmap(NULL, len, PROT_READ | PROT_WRITE,
                      MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (pool == MAP_FAILED) return -1;
    /* The guard sits below each stack: stacks grow down into it. */
    for (unsigned i = 0; i < MSL_SIM_MAX_THREADS; i++)
        mprotect(pool + (unsigned long)i * MSL_SIM_STACK_STRIDE, MSL_SIM_STACK_GUARD, PROT_NONE);
    stack_pool = pool;
    stack_pool_len = len;
    return 0;
}

int msl_sim_stack_guard_hit(const void *addr) {
    const char *p = addr;
    if (!stack_pool || p < stack_pool || p >= stack_pool + stack_pool_len) return 0;
    return (unsigned long)(p - stack_pool) % MSL_SIM_STACK_STRIDE < MSL_SIM_STACK_GUARD;
}

static int ensure_arena(void) {
    if (G.arena) return 0;
    long page = sysconf(_SC_PAGESIZE);
    unsigned long len = MSL_SIM_TG_LIMIT + (unsigned long)page;
    char *base = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (base == MAP_FAILED) return -1;
    /* Accesses past the 32 KB a Metal threadgroup may have fault. */
    mprotect(base + MSL_SIM_TG_LIMIT, (unsigned long)page, PROT_NONE);
    G.arena = base;
    return 0;
}

void msl_sim_yield(void) {
    msl_sim_fiber *f = &G.fibers[G.current];
    msl_sim_context_switch(&f->ctx, &G.sched_ctx);
}

static void fiber_main(void *unused) {
    (void)unused;
    msl_sim_fiber *f = &G.fibers[G.current];
    G.launch->entry(G.launch->buffers, G.tg_ptrs, &f->info);
    f->state = MSL_SIM_DONE;
    G.live--;
    msl_sim_simdgroup *sg = &G.sgs[f->info.simdgroup_index_in_threadgroup];
    sg->live--;
    /* A lane that returns no longer takes part in SIMD ops: the others may go on. */
    if (sg->live && sg->waiting == sg->live) msl_sim_release_simd(sg, f->info.simdgroup_index_in_threadgroup);
    msl_sim_context_switch(&f->ctx, &G.sched_ctx);
    __builtin_unreachable();
}

static unsigned long long splitmix(unsigned long long *state) {
    unsigned long long z = (*state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

static void make_order(unsigned n, unsigned long long *rng) {
    for (unsigned i = 0; i < n; i++)
        G.order[i] = G.launch->schedule == MSL_SIM_REVERSE ? n - 1 - i : i;
    if (G.launch->schedule != MSL_SIM_SHUFFLE) return;
    for (unsigned i = n - 1; i > 0; i--) {
        unsigned j = (unsigned)(splitmix(rng) % (i + 1));
        unsigned t = G.order[i];
        G.order[i] = G.order[j];
        G.order[j] = t;
    }
}

static void init_group(const unsigned group[3], const unsigned dims[3], const unsigned n_groups[3]) {
    const msl_sim_launch *l = G.launch;
    unsigned n = dims[0] * dims[1] * dims[2];
    unsigned n_sg = (n + MSL_SIM_SIMD_WIDTH - 1) / MSL_SIM_SIMD_WIDTH;
    G.n = n;
    G.live = n;
    G.tg_waiting = 0;
    for (unsigned s = 0; s < n_sg; s++) {
        unsigned first = s * MSL_SIM_SIMD_WIDTH;
        G.sgs[s].live = n - first < MSL_SIM_SIMD_WIDTH ? n - first : MSL_SIM_SIMD_WIDTH;
        G.sgs[s].waiting = 0;
        G.sgs[s].gen = 0;
    }
    for (unsigned i = 0; i < n; i++) {
        msl_sim_fiber *f = &G.fibers[i];
        msl_sim_thread *t = &f->info;
        unsigned local[3] = {i % dims[0], (i / dims[0]) % dims[1], i / (dims[0] * dims[1])};
        for (int d = 0; d < 3; d++) {
            t->thread_position_in_threadgroup[d] = local[d];
            t->threadgroup_position_in_grid[d] = group[d];
            t->thread_position_in_grid[d] = group[d] * l->group_size[d] + local[d];
            t->threads_per_threadgroup[d] = dims[d];
            t->threadgroups_per_grid[d] = n_groups[d];
            t->threads_per_grid[d] = l->threads[d];
        }
        t->thread_index_in_threadgroup = i;
        t->simdgroup_index_in_threadgroup = i / MSL_SIM_SIMD_WIDTH;
        t->thread_index_in_simdgroup = i % MSL_SIM_SIMD_WIDTH;
        t->threads_per_simdgroup = MSL_SIM_SIMD_WIDTH;
        t->simdgroups_per_threadgroup = n_sg;
        f->state = MSL_SIM_READY;
        f->site = NULL;
        char *lo = stack_pool + (unsigned long)i * MSL_SIM_STACK_STRIDE + MSL_SIM_STACK_GUARD;
        msl_sim_context_init(&f->ctx, lo, lo + MSL_SIM_STACK_SIZE, fiber_main, NULL);
    }
    /* Uninitialised threadgroup memory reads as NaN in every float type. */
    memset(G.arena, 0xFF, G.arena_used);
}

static int run_group(const unsigned group[3], const unsigned dims[3], const unsigned n_groups[3]) {
    init_group(group, dims, n_groups);
    unsigned long long rng = G.launch->seed ^ (0x2545f4914f6cdd1dull *
        (1ull + group[0] + 65536ull * (group[1] + 65536ull * group[2])));
    for (;;) {
        int ran = 0;
        make_order(G.n, &rng);
        for (unsigned k = 0; k < G.n; k++) {
            unsigned i = G.order[k];
            if (G.fibers[i].state != MSL_SIM_READY) continue;
            G.current = (int)i;
            G.fibers[i].state = MSL_SIM_RUNNING;
            msl_sim_context_switch(&G.sched_ctx, &G.fibers[i].ctx);
            G.current = -1;
            ran = 1;
            if (G.report->kind) return G.report->kind;
        }
        if (G.live == 0) return 0;
        if (!ran) return msl_sim_report_deadlock();
    }
}

static void set_launch_error(int kind, const char *message) {
    G.report->kind = kind;
    snprintf(G.report->message, sizeof G.report->message, "%s", message);
}

static void classify_fault(void) {
    msl_sim_report *r = G.report;
    msl_sim_fault *fault = &msl_sim_last_fault;
    r->signo = fault->signo;
    r->fault_addr = (unsigned long long)fault->addr;
    r->pc = (unsigned long long)fault->pc;
    r->is_write = fault->is_write;
    if (fault->signo == SIGALRM) r->kind = MSL_SIM_ERR_TIMEOUT;
    else if (fault->signo == SIGFPE) r->kind = MSL_SIM_ERR_FPE;
    else if (fault->signo == SIGBUS) r->kind = MSL_SIM_ERR_BUS;
    else if (msl_sim_stack_guard_hit(fault->addr)) r->kind = MSL_SIM_ERR_STACK;
    else r->kind = MSL_SIM_ERR_SEGV;
    Dl_info info;
    if (fault->pc && dladdr(fault->pc, &info) && info.dli_fname) {
        r->pc_offset = (unsigned long long)((char *)fault->pc - (char *)info.dli_fbase);
        snprintf(r->object_path, sizeof r->object_path, "%s", info.dli_fname);
    }
    if (G.current >= 0) msl_sim_note_thread(&G.fibers[G.current]);
}

void msl_sim_note_thread(const msl_sim_fiber *f) {
    for (int d = 0; d < 3; d++) {
        G.report->group[d] = f->info.threadgroup_position_in_grid[d];
        G.report->local[d] = f->info.thread_position_in_threadgroup[d];
    }
    G.report->local_index = f->info.thread_index_in_threadgroup;
}

static int check_launch(const msl_sim_launch *l) {
    unsigned long per_group = 1;
    for (int d = 0; d < 3; d++) {
        if (l->threads[d] == 0 || l->group_size[d] == 0) {
            set_launch_error(MSL_SIM_ERR_LAUNCH, "threads and group_size must be positive");
            return -1;
        }
        per_group *= l->group_size[d];
    }
    if (per_group > MSL_SIM_MAX_THREADS) {
        snprintf(G.report->message, sizeof G.report->message,
                 "%lu threads per threadgroup exceed Metal's limit of %d", per_group,
                 MSL_SIM_MAX_THREADS);
        G.report->kind = MSL_SIM_ERR_LAUNCH;
        return -1;
    }
    if (l->n_tg > MSL_SIM_MAX_TG_ARGS) {
        set_launch_error(MSL_SIM_ERR_LAUNCH, "too many [[threadgroup(i)]] arguments");
        return -1;
    }
    unsigned long total = 0;
    for (unsigned i = 0; i < l->n_tg; i++) {
        G.tg_ptrs[i] = G.arena + total;
        total += (l->tg_lengths[i] + 15) / 16 * 16;
    }
    if (total > MSL_SIM_TG_LIMIT) {
        snprintf(G.report->message, sizeof G.report->message,
                 "[[threadgroup(i)]] arguments need %lu bytes, over the %u-byte limit", total,
                 MSL_SIM_TG_LIMIT);
        G.report->kind = MSL_SIM_ERR_TG_MEMORY;
        return -1;
    }
    G.arena_used = total;
    return 0;
}

int msl_sim_dispatch(const msl_sim_launch *launch, msl_sim_report *report) {
    memset(report, 0, sizeof *report);
    G.report = report;
    G.launch = launch;
    G.current = -1;
    G.n_statics = 0;
    G.static_bytes = 0;
    if (ensure_stacks() || ensure_arena()) {
        set_launch_error(MSL_SIM_ERR_LAUNCH, "cannot map fiber stacks / threadgroup memory");
        return report->kind;
    }
    if (check_launch(launch)) return report->kind;
    if (msl_sim_cas_spurious_reset(report->message, sizeof report->message)) {
        report->kind = MSL_SIM_ERR_LAUNCH;
        return report->kind;
    }
    unsigned n_groups[3];
    for (int d = 0; d < 3; d++)
        n_groups[d] = (launch->threads[d] + launch->group_size[d] - 1) / launch->group_size[d];
    msl_sim_signals_enter(launch->timeout_ms);
    if (sigsetjmp(msl_sim_fault_env, 1) == 0) {
        unsigned group[3], dims[3];
        for (group[2] = 0; group[2] < n_groups[2]; group[2]++)
            for (group[1] = 0; group[1] < n_groups[1]; group[1]++)
                for (group[0] = 0; group[0] < n_groups[0]; group[0]++) {
                    for (int d = 0; d < 3; d++) {
                        unsigned rest = launch->threads[d] - group[d] * launch->group_size[d];
                        dims[d] = rest < launch->group_size[d] ? rest : launch->group_size[d];
                    }
                    report->groups_run++;
                    if (run_group(group, dims, n_groups)) goto done;
                }
    } else {
        classify_fault();
    }
done:
    msl_sim_signals_leave(launch->timeout_ms);
    report->tg_static_bytes = G.static_bytes;
    return report->kind;
}

int msl_sim_abi_version(void) { return MSL_SIM_ABI_VERSION; }
