/* Lanes mode: a threadgroup run as one fiber per simdgroup.

   The kernel library's __msl_sim_lanes_N (built by the lanes pass, msltrans/sim/lanes)
   runs the lanes of one simdgroup in turn inside one call: each lane runs until its next
   rendezvous, where it publishes (rendezvous.c's msl_sim_lanes_* calls, which never
   block) and the function goes back to its loop head, which asks msl_sim_lanes_next for
   the lane to run next. The lanes keep the per-thread model's state (w->state, the
   fibers' bookkeeping, w->current while a lane runs), so every check, error report and
   fault attribution is the per-thread model's; what goes is a context and a switch per
   lane and rendezvous. A simdgroup whose lanes all wait at a threadgroup barrier hands
   the worker to the next simdgroup with a lane to run (one context switch). */
#include <stdlib.h>
#include <string.h>

#include "sched.h"

/* Runs simdgroups' functions: the one it was started for, then, when that one's lanes
   have all returned, each not-yet-started simdgroup on this same stack. */
static void sg_main(void *arg);

/* The next simdgroup (after the running one, in schedule order) that has a lane ready or
   has not started; -1 if none. */
static int next_sg(msl_sim_worker *w) {
    unsigned n = w->n_sg, at = 0;
    while (at < n && w->sg_order[at] != w->cur_sg) at++;
    for (unsigned k = 1; k <= n; k++) {
        unsigned s = w->sg_order[(at + k) % n];
        if (w->sg_done[s]) continue;
        if (w->sg_fresh[s]) return (int)s;
        unsigned first = s * MSL_SIM_SIMD_WIDTH;
        for (unsigned l = 0; l < w->sgs[s].lanes; l++)
            if (w->state[first + l] == MSL_SIM_READY) return (int)s;
    }
    return -1;
}

static msl_sim_context *sg_context(msl_sim_worker *w, unsigned s) {
    return &w->fibers[s * MSL_SIM_SIMD_WIDTH].ctx;
}

/* From the running simdgroup to simdgroup s (started on its own lane 0 stack if new). */
static void switch_sg(msl_sim_worker *w, unsigned s) {
    msl_sim_context *from = sg_context(w, w->cur_sg);
    if (w->sg_fresh[s]) {
        unsigned i = s * MSL_SIM_SIMD_WIDTH;
        char *lo = w->pool + MSL_SIM_POOL_HEADER + (unsigned long)i * MSL_SIM_STACK_STRIDE
                   + MSL_SIM_STACK_GUARD;
        msl_sim_context_init(sg_context(w, s), lo, lo + MSL_SIM_STACK_SIZE, sg_main, w);
        w->sg_fresh[s] = 0;
    }
    w->cur_sg = s;
    msl_sim_context_switch(from, sg_context(w, s));
}

/* Nothing can run: say who waits where (the per-thread model's deadlock report). */
static void stuck(msl_sim_worker *w) __attribute__((noreturn));
static void stuck(msl_sim_worker *w) {
    if (!w->report.kind) msl_sim_report_deadlock(w);
    msl_sim_abort_group(w);
}

static void sg_main(void *arg) {
    msl_sim_worker *w = arg;
    for (;;) {
        w->launch->lanes_entry(w->launch->buffers, w->tg_ptrs, NULL);
        w->sg_done[w->cur_sg] = 1;
        if (w->report.kind) msl_sim_abort_group(w);
        int s = next_sg(w);
        if (s < 0) {
            if (w->live) stuck(w);
            msl_sim_context_switch(sg_context(w, w->cur_sg), &w->sched_ctx);
            __builtin_unreachable();
        }
        if (w->sg_fresh[s]) {   /* start it right here: this stack is free */
            w->sg_fresh[s] = 0;
            w->cur_sg = (unsigned)s;
            continue;
        }
        w->cur_sg = (unsigned)s;
        msl_sim_context finished;   /* this simdgroup is done: never resumed */
        msl_sim_context_switch(&finished, sg_context(w, s));
        __builtin_unreachable();
    }
}

int msl_sim_lanes_next(void) {
    msl_sim_worker *w = msl_sim_self();
    for (;;) {
        if (w->report.kind) msl_sim_abort_group(w);
        if (w->lanes_restart) {
            /* As the per-thread scheduler does after a barrier: a new pass from the first
               thread in schedule order (the same interleaving, so the same results). */
            w->lanes_restart = 0;
            for (unsigned g = 0; g < w->n_sg; g++) {
                w->lane_pos[g] = -1;
                w->lane_progress[g] = 0;
            }
            if (w->cur_sg != w->sg_order[0]) {
                switch_sg(w, w->sg_order[0]);
                continue;
            }
        }
        unsigned s = w->cur_sg, first = s * MSL_SIM_SIMD_WIDTH, n = w->sgs[s].lanes;
        while (++w->lane_pos[s] < (int)n) {
            unsigned i = first + w->lane_order[s][w->lane_pos[s]];
            if (w->state[i] == MSL_SIM_READY) {
                w->state[i] = MSL_SIM_RUNNING;
                w->current = (int)i;
                w->lane_progress[s] = 1;
                return (int)(i - first);
            }
        }
        w->lane_pos[s] = -1;
        if (w->lane_progress[s]) {
            w->lane_progress[s] = 0;
            continue;
        }
        if (!w->sgs[s].live) return -1;
        /* Every live lane waits (at a threadgroup barrier): another simdgroup's turn. */
        int other = next_sg(w);
        if (other < 0) stuck(w);
        switch_sg(w, (unsigned)other);
    }
}

/* The running simdgroup's view (sched.h): the lanes pass reads it at its loop head and
   takes the next ready lane of the pass itself, as msl_sim_lanes_next would (state
   RUNNING, w->current, the pass position and its progress flag); it calls
   msl_sim_lanes_next when a barrier release restarts the passes, when an error is
   reported, or when the pass reaches its end. After a SIMD op it reads the lane's result
   from it as msl_sim_lanes_exchange_result would. The pass hard-codes this layout. */
_Static_assert(__builtin_offsetof(struct msl_sim_lanes_view, error) == 48, "lanes view layout");
_Static_assert(__builtin_offsetof(struct msl_sim_lanes_view, first) == 56, "lanes view layout");
_Static_assert(__builtin_offsetof(struct msl_sim_lanes_view, gen_slots) == 64, "lanes view layout");
_Static_assert(__builtin_offsetof(struct msl_sim_lanes_view, sg) == 96, "lanes view layout");
_Static_assert(sizeof(struct msl_sim_lanes_view) == 120, "lanes view layout");
_Static_assert(MSL_SIM_READY == 0 && MSL_SIM_RUNNING == 1 && MSL_SIM_WAIT_SIMD == 2,
               "states the lanes pass uses");
/* The simdgroup fields the inline publish reads and writes. */
_Static_assert(__builtin_offsetof(msl_sim_simdgroup, live) == 4 &&
               __builtin_offsetof(msl_sim_simdgroup, waiting) == 8 &&
               __builtin_offsetof(msl_sim_simdgroup, gen) == 12 &&
               __builtin_offsetof(msl_sim_simdgroup, waiting_mask) == 24 &&
               __builtin_offsetof(msl_sim_simdgroup, site0) == 40, "simdgroup layout");
const struct msl_sim_lanes_view *msl_sim_lanes_view(void) {
    msl_sim_worker *w = msl_sim_self();
    return &w->lanes_views[w->cur_sg];
}

const msl_sim_thread *msl_sim_lanes_info(void) {
    msl_sim_worker *w = msl_sim_self();
    return &w->fibers[w->current].info;
}

void msl_sim_lanes_return(void) {
    msl_sim_worker *w = msl_sim_self();
    unsigned i = (unsigned)w->current, index = i / MSL_SIM_SIMD_WIDTH;
    msl_sim_simdgroup *sg = &w->sgs[index];
    /* Lanes wait at a multiply-accumulate this one will never reach. */
    if (sg->waiting && sg->site0->kind == MSL_SIM_KIND_SIMD_MATRIX)
        msl_sim_matrix_returned(w, &w->fibers[i], sg->site0, sg->waiting);
    w->state[i] = MSL_SIM_DONE;
    w->live--;
    sg->live--;
    /* A lane that returns no longer takes part in SIMD ops: the others may go on. */
    if (sg->live && sg->waiting == sg->live) msl_sim_release_simd(w, sg, index);
}

int msl_sim_lanes_mode(void) { return 0; }

void msl_sim_lanes_mma(void *d, const void *a, const void *b, const void *c,
                       msl_sim_lanes_mma_op op, const char *file, unsigned line, unsigned column,
                       unsigned sizes) {
    (void)d, (void)a, (void)b, (void)c, (void)op, (void)sizes;
    msl_sim_site site = {file, line, column, MSL_SIM_KIND_SIMD_MATRIX};
    msl_sim_fail(&site, "internal error: a lanes-mode multiply-accumulate outside a lanes entry");
}

/* Room for the running simdgroup's lanes' stack objects when they are too large for its
   stack (the lanes pass asks once per call): kept per worker and simdgroup, grown as
   needed, never shrunk. */
void *msl_sim_lanes_frames(unsigned long bytes) {
    msl_sim_worker *w = msl_sim_self();
    unsigned s = w->cur_sg;
    if (w->lanes_frames_cap[s] < bytes) {
        free(w->lanes_frames[s]);
        w->lanes_frames[s] = aligned_alloc(64, (bytes + 63) & ~63ul);
        w->lanes_frames_cap[s] = w->lanes_frames[s] ? bytes : 0;
        if (!w->lanes_frames[s]) {
            msl_sim_set_error(w, MSL_SIM_ERR_FAIL, "out of memory for the lanes' stack objects");
            msl_sim_abort_group(w);
        }
    }
    return w->lanes_frames[s];
}

/* Runs the group (w is initialised, w->order made); returns when it ended or failed. */
void msl_sim_lanes_run(msl_sim_worker *w) {
    unsigned n_sg = w->n_sg, seen = 0;
    unsigned char count[MSL_SIM_MAX_SIMDGROUPS] = {0};
    for (unsigned s = 0; s < n_sg; s++) {
        struct msl_sim_lanes_view *v = &w->lanes_views[s];
        v->state = &w->state[s * MSL_SIM_SIMD_WIDTH];
        v->order = w->lane_order[s];
        v->pos = &w->lane_pos[s];
        v->progress = &w->lane_progress[s];
        v->current = &w->current;
        v->restart = &w->lanes_restart;
        v->error = &w->report.kind;
        v->first = s * MSL_SIM_SIMD_WIDTH;
        v->lanes = w->sgs[s].lanes;
        v->gen_slots[0] = w->slots[s][0];
        v->gen_slots[1] = w->slots[s][1];
        v->masks = w->sgs[s].mask;
        v->buffers = w->lane_buffer[s];
        v->sg = &w->sgs[s];
        v->sites = &w->fibers[s * MSL_SIM_SIMD_WIDTH].site;
        v->fiber_bytes = sizeof(msl_sim_fiber);
        w->lane_pos[s] = -1;
        w->lane_progress[s] = 0;
        w->sg_fresh[s] = 1;
        w->sg_done[s] = 0;
    }
    /* Each simdgroup's lanes, and the simdgroups, in the order the schedule visits them. */
    for (unsigned k = 0; k < w->n; k++) {
        unsigned i = w->order[k], s = i / MSL_SIM_SIMD_WIDTH;
        if (!count[s]) w->sg_order[seen++] = s;
        w->lane_order[s][count[s]++] = (unsigned char)(i % MSL_SIM_SIMD_WIDTH);
    }
    memset(w->fresh, 0, w->n);
    unsigned s = w->sg_order[0];
    w->cur_sg = s;
    w->sg_fresh[s] = 0;
    unsigned i = s * MSL_SIM_SIMD_WIDTH;
    char *lo = w->pool + MSL_SIM_POOL_HEADER + (unsigned long)i * MSL_SIM_STACK_STRIDE
               + MSL_SIM_STACK_GUARD;
    msl_sim_context_init(sg_context(w, s), lo, lo + MSL_SIM_STACK_SIZE, sg_main, w);
    w->current = (int)i;
    w->lanes_restart = 0;
    w->in_kernel = 1;
    msl_sim_context_switch(&w->sched_ctx, sg_context(w, s));
    w->in_kernel = 0;
}
