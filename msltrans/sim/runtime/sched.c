/* The fiber scheduler of one worker: runs one threadgroup as one fiber per Metal thread.

   A pass visits the threads in schedule order (forward, reverse, or seeded shuffle) and runs
   each ready one until it returns or blocks at a rendezvous; passes repeat until every thread
   returned. A blocking fiber switches straight to the next ready fiber of the pass (one
   context switch per block, not two through a scheduler loop). */
#define _GNU_SOURCE
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "profile.h"
#include "sched.h"

__thread msl_sim_worker *msl_sim_tls_worker;

/* Every worker's stack pool, for the stack-overflow test of a fault address. */
static char *pools[MSL_SIM_MAX_WORKERS];

int msl_sim_stack_guard_hit(const void *addr) {
    const char *p = addr;
    for (unsigned i = 0; i < MSL_SIM_MAX_WORKERS; i++) {
        const char *pool = __atomic_load_n(&pools[i], __ATOMIC_ACQUIRE);
        if (!pool || p < pool + MSL_SIM_POOL_HEADER || p >= pool + MSL_SIM_POOL_LEN) continue;
        return (unsigned long)(p - pool - MSL_SIM_POOL_HEADER) % MSL_SIM_STACK_STRIDE
               < MSL_SIM_STACK_GUARD;
    }
    return 0;
}

static char *map_pool(msl_sim_worker *w) {
    unsigned long len = MSL_SIM_POOL_LEN, span = len + MSL_SIM_POOL_ALIGN;
    char *raw = mmap(NULL, span, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (raw == MAP_FAILED) return NULL;
    char *base = (char *)(((uintptr_t)raw + MSL_SIM_POOL_ALIGN - 1) & ~(MSL_SIM_POOL_ALIGN - 1));
    if (base > raw) munmap(raw, (unsigned long)(base - raw));
    char *end = raw + span;
    if (end > base + len) munmap(base + len, (unsigned long)(end - base - len));
    /* The header page holds the owner; each stack sits above its guard (stacks grow down). */
    if (mprotect(base, 4096, PROT_READ | PROT_WRITE)) return NULL;
    *(msl_sim_worker **)base = w;
    for (unsigned i = 0; i < MSL_SIM_MAX_THREADS; i++) {
        char *lo = base + MSL_SIM_POOL_HEADER + (unsigned long)i * MSL_SIM_STACK_STRIDE;
        if (mprotect(lo + MSL_SIM_STACK_GUARD, MSL_SIM_STACK_STRIDE - MSL_SIM_STACK_GUARD,
                     PROT_READ | PROT_WRITE))
            return NULL;
    }
    return base;
}

int msl_sim_worker_init(msl_sim_worker *w) {
    if (!w->pool) {
        w->pool = map_pool(w);
        if (!w->pool) return -1;
        __atomic_store_n(&pools[w->index], w->pool, __ATOMIC_RELEASE);
    }
    if (!w->arena) {
        long page = sysconf(_SC_PAGESIZE);
        unsigned long len = 2 * (unsigned long)page + MSL_SIM_TG_LIMIT;
        char *base = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (base == MAP_FAILED) return -1;
        /* Accesses past the 32 KB a Metal threadgroup may have (and the statics' alignment
           slack) fault: the arena starts MSL_SIM_TG_SLACK bytes before a page boundary. */
        mprotect(base + page + MSL_SIM_TG_LIMIT, (unsigned long)page, PROT_NONE);
        w->arena = base + page - MSL_SIM_TG_SLACK;
    }
    return 0;
}

void msl_sim_set_error(msl_sim_worker *w, int kind, const char *message) {
    if (w->report.kind) return;   /* the first error of a worker wins */
    w->report.kind = kind;
    snprintf(w->report.message, sizeof w->report.message, "%s", message);
}

void msl_sim_note_thread(msl_sim_worker *w, const msl_sim_fiber *f) {
    for (int d = 0; d < 3; d++) {
        w->report.group[d] = f->info.threadgroup_position_in_grid[d];
        w->report.local[d] = f->info.thread_position_in_threadgroup[d];
    }
    w->report.local_index = f->info.thread_index_in_threadgroup;
}

static unsigned long long splitmix(unsigned long long *state) {
    unsigned long long z = (*state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

void msl_sim_make_order(msl_sim_worker *w) {
    unsigned n = w->n;
    unsigned schedule = w->launch->schedule;
    for (unsigned i = 0; i < n; i++) w->order[i] = schedule == MSL_SIM_REVERSE ? n - 1 - i : i;
    if (schedule != MSL_SIM_SHUFFLE) return;
    for (unsigned i = n - 1; i > 0; i--) {
        unsigned j = (unsigned)(splitmix(&w->rng) % (i + 1));
        unsigned t = w->order[i];
        w->order[i] = w->order[j];
        w->order[j] = t;
    }
}

/* A device-side error: leave the fiber for good (the group is abandoned). */
void msl_sim_abort_group(msl_sim_worker *w) {
    msl_sim_fiber *self = &w->fibers[w->current];
    msl_sim_context_switch(&self->ctx, &w->sched_ctx);
    __builtin_unreachable();
}

/* Runs threads until one blocks: the thread it was started for, then, each time the
   running one returns and the next ready thread in schedule order has not run yet, that
   one on this same stack (the order is the one switching to it would give). */
static void fiber_main(void *arg) {
    msl_sim_worker *w = arg;
    for (;;) {
        msl_sim_fiber *f = &w->fibers[w->current];
        w->launch->entry(w->launch->buffers, w->tg_ptrs, &f->info);
        w->state[f - w->fibers] = MSL_SIM_DONE;
        w->live--;
        unsigned index = f->sg;
        msl_sim_simdgroup *sg = &w->sgs[index];
        sg->live--;
        /* A lane that returns no longer takes part in SIMD ops: the others may go on. */
        if (sg->live && sg->waiting == sg->live) msl_sim_release_simd(w, sg, index);
        int next = w->report.kind ? -1 : msl_sim_next_ready(w);
        if (next >= 0 && w->fresh[next]) {
            w->fresh[next] = 0;
            msl_sim_set_current(w, next);
            w->state[next] = MSL_SIM_RUNNING;
            continue;
        }
        msl_sim_switch_to(w, f, next);
        __builtin_unreachable();
    }
}

void msl_sim_start_fiber(msl_sim_worker *w, unsigned i) {
    char *lo = w->pool + MSL_SIM_POOL_HEADER + (unsigned long)i * MSL_SIM_STACK_STRIDE
               + MSL_SIM_STACK_GUARD;
    char *top = lo + MSL_SIM_STACK_SIZE - (i % 32) * 64;
    msl_sim_context_init(&w->fibers[i].ctx, lo, top, fiber_main, w);
    w->fresh[i] = 0;
}

static void init_group(msl_sim_worker *w, const unsigned group[3], const unsigned dims[3],
                       const unsigned n_groups[3]) {
    const msl_sim_launch *l = w->launch;
    unsigned n = dims[0] * dims[1] * dims[2];
    unsigned n_sg = (n + MSL_SIM_SIMD_WIDTH - 1) / MSL_SIM_SIMD_WIDTH;
    w->n = n;
    w->n_sg = n_sg;
    w->live = n;
    w->tg_waiting = 0;
    w->tg_mismatch = 0;
    for (unsigned s = 0; s < n_sg; s++) {
        unsigned first = s * MSL_SIM_SIMD_WIDTH;
        msl_sim_simdgroup *sg = &w->sgs[s];
        sg->lanes = n - first < MSL_SIM_SIMD_WIDTH ? n - first : MSL_SIM_SIMD_WIDTH;
        sg->live = sg->lanes;
        sg->waiting = 0;
        sg->gen = 0;
        msl_sim_mma_clear(sg);
        sg->waiting_mask = 0;
        sg->site_mismatch = 0;
        sg->matrix_used = 0;
    }
    msl_sim_mma_reset(w);
    unsigned local[3] = {0, 0, 0};   /* thread i's position, stepped (no divisions) */
    for (unsigned i = 0; i < n; i++) {
        msl_sim_fiber *f = &w->fibers[i];
        msl_sim_thread *t = &f->info;
        if (i) {
            if (++local[0] == dims[0]) {
                local[0] = 0;
                if (++local[1] == dims[1]) {
                    local[1] = 0;
                    local[2]++;
                }
            }
        }
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
        f->lane = i % MSL_SIM_SIMD_WIDTH;
        f->sg = i / MSL_SIM_SIMD_WIDTH;
        f->full_sg = w->sgs[f->sg].lanes == MSL_SIM_SIMD_WIDTH;
        w->state[i] = MSL_SIM_READY;
        f->site = NULL;
        f->matrix_count = 0;
        f->matrix_hash = 0;
        msl_sim_mma_lane_init(w, f);
    }
    memset(w->fresh, 1, n);
    /* Uninitialised threadgroup memory reads as NaN in every float type. */
    memset(w->arena, 0xFF, w->arena_used);
}

/* Runs one threadgroup to the end; 0, or the error kind (w->report says more). */
int msl_sim_run_group(msl_sim_worker *w, const unsigned group[3], const unsigned dims[3],
                      const unsigned n_groups[3]) {
    init_group(w, group, dims, n_groups);
    w->rng = w->launch->seed ^ (0x2545f4914f6cdd1dull *
        (1ull + group[0] + 65536ull * (group[1] + 65536ull * group[2])));
    msl_sim_make_order(w);
    w->pos = (unsigned)-1;
    w->progress = 0;
    w->lanes_mode = w->launch->lanes_entry != NULL && !w->profile;
    if (w->lanes_mode) {
        /* Matrix kernels run on fibers; a stale lane view must not serve the inline path
           (no_mma stays zero: workers are calloc'd, so its `plain` is 0). */
        ((msl_sim_mma_lane **)w->pool)[1] = &w->no_mma;
        msl_sim_lanes_run(w);   /* lanes.c: a function call per simdgroup */
    } else {
        int first = msl_sim_next_ready(w);
        if (first >= 0) {
            msl_sim_set_current(w, first);
            w->state[first] = MSL_SIM_RUNNING;
            msl_sim_start_fiber(w, (unsigned)first);
            w->in_kernel = 1;
            msl_sim_context_switch(&w->sched_ctx, &w->fibers[first].ctx);
            w->in_kernel = 0;
        }
    }
    w->current = -1;
    if (w->profile)
        for (unsigned s = 0; s < w->n_sg; s++) msl_sim_profile_flush(w, s);
    if (w->report.kind) return w->report.kind;
    if (w->live) return msl_sim_report_deadlock(w);
    return msl_sim_matrix_check_end(w);
}
