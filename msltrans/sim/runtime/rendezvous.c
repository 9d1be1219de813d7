/* Rendezvous points (barriers, SIMD-group ops, simdgroup_matrix multiply), the uniformity
   check of simdgroup_matrix loads and stores, threadgroup memory and device-side failure:
   the entry points of abi.h that kernels call while running on a fiber. (Multiply-accumulate
   records are mma.c's.) */
#include <stdio.h>
#include <string.h>

#include "profile.h"
#include "sched.h"

static const char *kind_name(unsigned kind) {
    switch (kind) {
    case MSL_SIM_KIND_THREADGROUP_BARRIER: return "threadgroup_barrier";
    case MSL_SIM_KIND_SIMDGROUP_BARRIER: return "simdgroup_barrier";
    case MSL_SIM_KIND_SIMD_OP: return "SIMD-group op";
    case MSL_SIM_KIND_SIMD_SHUFFLE: return "SIMD shuffle";
    case MSL_SIM_KIND_SIMD_REDUCE: return "SIMD reduction";
    case MSL_SIM_KIND_SIMD_MATRIX: return "simdgroup_multiply_accumulate";
    case MSL_SIM_KIND_MATRIX_LOAD: return "simdgroup_load";
    case MSL_SIM_KIND_MATRIX_STORE: return "simdgroup_store";
    case MSL_SIM_KIND_MATRIX_FILL: return "simdgroup_matrix constructor";
    case MSL_SIM_KIND_MATRIX_READ: return "simdgroup_matrix thread_elements()";
    case MSL_SIM_KIND_CODEGEN_CHECK: return "msltrans codegen check";
    default: return "rendezvous";
    }
}

static int same_site(const msl_sim_site *a, const msl_sim_site *b) {
    if (a == b) return 1;
    if (!a || !b) return 0;
    if (a->line != b->line || a->column != b->column || a->kind != b->kind) return 0;
    if (a->file == b->file) return 1;
    return a->file && b->file && strcmp(a->file, b->file) == 0;
}

static int describe_site(char *out, size_t cap, const msl_sim_site *s) {
    if (!s) return snprintf(out, cap, "(unknown site)");
    return snprintf(out, cap, "%s at %s:%u:%u", kind_name(s->kind), s->file ? s->file : "?",
                    s->line, s->column);
}

static void fail_here(msl_sim_worker *w, const msl_sim_fiber *f, int kind, const char *message)
    __attribute__((noreturn));
static void fail_here(msl_sim_worker *w, const msl_sim_fiber *f, int kind, const char *message) {
    msl_sim_set_error(w, kind, message);
    msl_sim_note_thread(w, f);
    msl_sim_abort_group(w);
}

/* ---- simdgroup_matrix uniformity ------------------------------------------------------
   Matrix loads and stores touch only the caller's own elements, so they run without a
   rendezvous; each lane counts them (and hashes their sites) instead, and every release of
   a rendezvous, and the end of the group, checks that all lanes of the simdgroup executed
   the same sequence (a lane that returned early shows up there). A matrix op in a partial
   simdgroup fails at once, and so does a multiply-accumulate (a rendezvous) once lanes
   have returned. */

static void partial_simdgroup(msl_sim_worker *w, msl_sim_fiber *f, const msl_sim_site *site)
    __attribute__((noreturn, noinline));
static void partial_simdgroup(msl_sim_worker *w, msl_sim_fiber *f, const msl_sim_site *site) {
    char where[256], msg[512];
    describe_site(where, sizeof where, site);
    snprintf(msg, sizeof msg, "simdgroup_matrix operation with inactive lanes (all 32 lanes "
             "of the simdgroup must take part): %s in a simdgroup of %u lane(s)", where,
             w->sgs[f->sg].lanes);
    fail_here(w, f, MSL_SIM_ERR_FAIL, msg);
}

/* A multiply-accumulate that only `reached` lanes of f's simdgroup execute: the others
   returned (lanes mode; on fibers the op's record waits for them and the deadlock report
   says so). */
void msl_sim_matrix_returned(msl_sim_worker *w, msl_sim_fiber *f, const msl_sim_site *site,
                             unsigned reached) {
    char where[256], msg[512];
    describe_site(where, sizeof where, site);
    snprintf(msg, sizeof msg, "%s executed by %u of 32 lanes: the others returned (every lane "
             "of the simdgroup must take part in a simdgroup_matrix operation)", where, reached);
    fail_here(w, f, MSL_SIM_ERR_FAIL, msg);
}

/* The sites of a lane's matrix ops since the last check, hashed as h = h * P + (file ^ lck)
   per op: a run of ops hashed from 0 continues a hash h as h * P^n + its own (lanes mode
   counts a lane's ops between rendezvous inline and adds them at the next one,
   msl_sim_lanes_matrix_flush). */
#define MATRIX_HASH_P 0x100000001b3ull

/* Counts a matrix op of lane `f` (and fails one in a partial simdgroup at once). */
static inline __attribute__((always_inline)) void note(msl_sim_worker *w, msl_sim_fiber *f,
                                                       const msl_sim_site *site) {
    if (__builtin_expect(!f->full_sg, 0)) partial_simdgroup(w, f, site);
    w->sgs[f->sg].matrix_used = 1;
    f->matrix_count++;
    unsigned long long lck =
        (unsigned long long)site->line << 40 | (unsigned long long)site->column << 16 | site->kind;
    f->matrix_hash =
        f->matrix_hash * MATRIX_HASH_P + ((unsigned long long)(uintptr_t)site->file ^ lck);
    f->matrix_file = site->file;
    f->matrix_lck = lck;
    if (__builtin_expect(w->profile != NULL, 0)) msl_sim_profile_matrix(w, f, site);
}

void msl_sim_matrix_note(msl_sim_worker *w, msl_sim_fiber *f, const msl_sim_site *site) {
    note(w, f, site);
}

/* The last matrix load/store of lane `f`, from what note() kept of its site. */
static int describe_matrix_site(char *out, size_t cap, const msl_sim_fiber *f) {
    msl_sim_site s = {f->matrix_file, (unsigned)(f->matrix_lck >> 40),
                      (unsigned)(f->matrix_lck >> 16) & 0xFFFFFFu,
                      (unsigned)f->matrix_lck & 0xFFFFu};
    return describe_site(out, cap, &s);
}

/* 0 when every lane of simdgroup `index` ran the same matrix loads/stores since the last
   check (then the counts restart); else the error is set. */
static int matrix_sync(msl_sim_worker *w, unsigned index) {
    msl_sim_simdgroup *sg = &w->sgs[index];
    msl_sim_fiber *lanes = &w->fibers[index * MSL_SIM_SIMD_WIDTH];
    unsigned bad = 0;
    for (unsigned l = 1; l < sg->lanes; l++)
        if (lanes[l].matrix_count != lanes[0].matrix_count || lanes[l].matrix_hash != lanes[0].matrix_hash
            || lanes[l].mma.seq != lanes[0].mma.seq) {
            bad = l;
            break;
        }
    if (!bad) {
        sg->matrix_used = 0;
        if (!lanes[0].matrix_count && !lanes[0].mma.seq) return 0;
        for (unsigned l = 0; l < sg->lanes; l++) {
            lanes[l].matrix_count = 0;
            lanes[l].matrix_hash = 0;
        }
        msl_sim_mma_restart(w, index);
        return 0;
    }
    char a[256], b[256], msg[800];
    if (lanes[0].matrix_count) describe_matrix_site(a, sizeof a, &lanes[0]);
    else snprintf(a, sizeof a, "none");
    if (lanes[bad].matrix_count) describe_matrix_site(b, sizeof b, &lanes[bad]);
    else snprintf(b, sizeof b, "none");
    snprintf(msg, sizeof msg, "divergent simdgroup_matrix ops in simdgroup %u: since the last "
             "rendezvous lane 0 executed %u load(s)/store(s) (last: %s) and %u "
             "multiply-accumulate(s), lane %u executed %u (last: %s) and %u; every lane of the "
             "simdgroup must execute each simdgroup_matrix operation", index,
             lanes[0].matrix_count, a, lanes[0].mma.seq, bad, lanes[bad].matrix_count, b,
             lanes[bad].mma.seq);
    msl_sim_set_error(w, MSL_SIM_ERR_DIVERGENCE, msg);
    msl_sim_note_thread(w, &lanes[bad]);
    return -1;
}

int msl_sim_matrix_check_end(msl_sim_worker *w) {
    for (unsigned s = 0; s < w->n_sg; s++)
        if (w->sgs[s].matrix_used && matrix_sync(w, s)) return w->report.kind;
    return 0;
}

unsigned msl_sim_matrix_arrive(const msl_sim_site *site) {
    msl_sim_worker *w = msl_sim_self();
    msl_sim_fiber *f = msl_sim_self_fiber(w);
    if (__builtin_expect(w->profile != NULL, 0))
        msl_sim_profile_note_caller(w, f, __builtin_frame_address(0));
    note(w, f, site);
    return f->lane;
}

/* ---- SIMD-group rendezvous -------------------------------------------------------------- */

/* Whether a lane arriving at `site` waits where the first waiting one does. */
static inline int same_site_fast(const msl_sim_site *a, const msl_sim_site *b) {
    if (a->line != b->line || a->column != b->column || a->kind != b->kind) return 0;
    return a->file == b->file || same_site(a, b);
}

static void simd_divergence(msl_sim_worker *w, msl_sim_simdgroup *sg, unsigned index) {
    unsigned first = index * MSL_SIM_SIMD_WIDTH, end = first + sg->lanes;
    const msl_sim_site *site = NULL;
    for (unsigned i = first; i < end; i++) {
        msl_sim_fiber *f = &w->fibers[i];
        if (w->state[i] != MSL_SIM_WAIT_SIMD) continue;
        if (site && !same_site(site, f->site)) {
            char a[256], b[256], msg[700];
            describe_site(a, sizeof a, site);
            describe_site(b, sizeof b, f->site);
            snprintf(msg, sizeof msg, "divergent SIMD op in simdgroup %u: lanes wait at %s and "
                     "lane %u at %s", index, a, i - first, b);
            msl_sim_set_error(w, MSL_SIM_ERR_DIVERGENCE, msg);
            msl_sim_note_thread(w, f);
            return;
        }
        site = f->site;
    }
}

/* Called when every live lane of `sg` waits at a SIMD op: they must all be at one site. */
void msl_sim_release_simd(msl_sim_worker *w, msl_sim_simdgroup *sg, unsigned index) {
    if (sg->site_mismatch) {
        simd_divergence(w, sg, index);
        return;
    }
    if (sg->matrix_used && matrix_sync(w, index)) return;
    if (w->profile) msl_sim_profile_simd(w, sg->site0, index);
    unsigned mask = sg->waiting_mask;
    sg->mask[sg->gen & 1] = mask;
    ((msl_sim_shared_result *)w->slots[index][sg->gen & 1][MSL_SIM_SIMD_WIDTH])->ready = 0;
    sg->gen++;
    sg->waiting = 0;
    sg->waiting_mask = 0;
    unsigned char *state = &w->state[index * MSL_SIM_SIMD_WIDTH];
    for (; mask; mask &= mask - 1) state[__builtin_ctz(mask)] = MSL_SIM_READY;
    /* Locality: the pass goes on with this simdgroup's first lane (in schedule order), so a
       run of SIMD ops keeps 32 fibers' frames in cache instead of cycling through the
       whole threadgroup's. Any order is a schedule the GPU may choose (lanes of one
       simdgroup still run in order between rendezvous); the seeded shuffle keeps its own. */
    unsigned first = index * MSL_SIM_SIMD_WIDTH;
    if (w->launch->schedule == MSL_SIM_FORWARD) w->pos = first - 1;
    else if (w->launch->schedule == MSL_SIM_REVERSE) w->pos = w->n - first - sg->lanes - 1;
}

/* Publishes the lane's payload; lane_buffer keeps the generation whose slots it reads back
   (fibers here, lanes mode's loop head through the simdgroup's view). */
static inline __attribute__((always_inline)) void exchange(
        msl_sim_worker *w, msl_sim_fiber *f, const msl_sim_site *site, const void *data,
        unsigned size) {
    unsigned index = f->sg;
    msl_sim_simdgroup *sg = &w->sgs[index];
    unsigned buffer = sg->gen & 1;
    unsigned char *slot = w->slots[index][buffer][f->lane];
    /* The usual payloads are 4 or 8 bytes: copies of a constant size stay inline. */
    if (size == 4) memcpy(slot, data, 4);
    else if (size == 8) memcpy(slot, data, 8);
    else if (size > MSL_SIM_EXCHANGE_BYTES)
        fail_here(w, f, MSL_SIM_ERR_FAIL, "SIMD op payload larger than MSL_SIM_EXCHANGE_BYTES");
    else if (size) memcpy(slot, data, size);
    w->state[f - w->fibers] = MSL_SIM_WAIT_SIMD;
    f->site = site;
    if (!sg->waiting) sg->site0 = site;
    else if (!same_site_fast(sg->site0, site)) sg->site_mismatch = 1;
    sg->waiting_mask |= 1u << f->lane;
    w->lane_buffer[index][f->lane] = (unsigned char)buffer;
    if (++sg->waiting == sg->live) msl_sim_release_simd(w, sg, index);
}

/* A released SIMD op's result for lane f: its generation's slots, mask and lane. */
static inline msl_sim_simd_result simd_result(msl_sim_worker *w, const msl_sim_fiber *f) {
    unsigned buffer = w->lane_buffer[f->sg][f->lane];
    msl_sim_simd_result r;
    r.slots = w->slots[f->sg][buffer];
    r.active = w->sgs[f->sg].mask[buffer];
    r.lane = f->lane;
    return r;
}

msl_sim_simd_result msl_sim_simd_exchange(const msl_sim_site *site, const void *data,
                                          unsigned size) {
    msl_sim_worker *w = msl_sim_self();
    msl_sim_fiber *f = msl_sim_self_fiber(w);
    if (w->profile) msl_sim_profile_note_caller(w, f, __builtin_frame_address(0));
    exchange(w, f, site, data, size);
    msl_sim_block(w);
    return simd_result(w, f);
}

void msl_sim_simdgroup_barrier(const msl_sim_site *site, unsigned flags) {
    (void)flags;
    msl_sim_worker *w = msl_sim_self();
    msl_sim_fiber *f = msl_sim_self_fiber(w);
    if (w->profile) msl_sim_profile_note_caller(w, f, __builtin_frame_address(0));
    exchange(w, f, site, NULL, 0);
    msl_sim_block(w);
}

/* A thread arrives at a threadgroup barrier; the last one releases it. */
static void threadgroup_arrive(msl_sim_worker *w, msl_sim_fiber *f, const msl_sim_site *site) {
    w->state[f - w->fibers] = MSL_SIM_WAIT_TG;
    f->site = site;
    if (!w->tg_waiting) w->tg_site0 = site;
    else if (!same_site_fast(w->tg_site0, site)) w->tg_mismatch = 1;
    /* Released only when every thread arrived: one that returned never will. */
    if (++w->tg_waiting == w->n) {
        if (w->tg_mismatch) {
            msl_sim_report_deadlock(w);
            msl_sim_abort_group(w);
        }
        for (unsigned s = 0; s < w->n_sg; s++)
            if (w->sgs[s].matrix_used && matrix_sync(w, s)) msl_sim_abort_group(w);
        if (w->profile) msl_sim_profile_barrier(w, site);
        w->tg_waiting = 0;
        memset(w->state, MSL_SIM_READY, w->n);
        w->lanes_restart = w->lanes_mode;
    }
}

void msl_sim_threadgroup_barrier(const msl_sim_site *site, unsigned flags) {
    (void)flags;
    msl_sim_worker *w = msl_sim_self();
    msl_sim_fiber *f = msl_sim_self_fiber(w);
    if (w->profile) msl_sim_profile_note_caller(w, f, __builtin_frame_address(0));
    threadgroup_arrive(w, f, site);
    msl_sim_block(w);
}

/* ---- The same rendezvous for a simdgroup run as one function (lanes.c) ------------------
   The lane publishes and returns at once; the simdgroup's loop runs the other lanes and
   resumes this one when the rendezvous is released (its result: msl_sim_lanes_exchange_result). */

void msl_sim_lanes_exchange(const msl_sim_site *site, const void *data, unsigned size) {
    msl_sim_worker *w = msl_sim_self();
    exchange(w, msl_sim_self_fiber(w), site, data, size);
}

msl_sim_simd_result msl_sim_lanes_exchange_result(void) {
    msl_sim_worker *w = msl_sim_self();
    return simd_result(w, msl_sim_self_fiber(w));
}

void msl_sim_lanes_simdgroup_barrier(const msl_sim_site *site, unsigned flags) {
    (void)flags;
    msl_sim_worker *w = msl_sim_self();
    exchange(w, msl_sim_self_fiber(w), site, NULL, 0);
}

/* Lanes mode: the lanes pass counts a lane's matrix loads, stores and fills inline and adds
   them here before the lane's next rendezvous or return: their count, their sites' hash
   from 0 (note()), the first one's site (a partial simdgroup fails there, as at once on
   fibers) and the last one's (for divergence reports). */
void msl_sim_lanes_matrix_flush(unsigned count, unsigned long long hash,
                                const msl_sim_site *first, const msl_sim_site *last) {
    msl_sim_worker *w = msl_sim_self();
    msl_sim_fiber *f = msl_sim_self_fiber(w);
    if (__builtin_expect(!f->full_sg, 0)) partial_simdgroup(w, f, first);
    w->sgs[f->sg].matrix_used = 1;
    f->matrix_count += count;
    unsigned long long scale = 1, p = MATRIX_HASH_P;
    for (unsigned n = count; n; n >>= 1, p *= p)
        if (n & 1) scale *= p;
    f->matrix_hash = f->matrix_hash * scale + hash;
    f->matrix_file = last->file;
    f->matrix_lck = (unsigned long long)last->line << 40 | (unsigned long long)last->column << 16
                    | last->kind;
}

/* Lanes mode's multiply-accumulate (the lanes pass makes msl_sim_lanes_mma a rendezvous):
   first the lane's matrix loads and stores since it resumed (msl_sim_lanes_matrix_flush's
   arguments); the simdgroup must be whole and every lane still live. Returns 1 to the lane
   whose arrival released it: the pass then checks that every lane stopped at the same call
   (msl_sim_lanes_matrix_check) and computes the op, and the run of multiply-accumulates
   that follows it, for the simdgroup. */
int msl_sim_lanes_matrix(const msl_sim_site *site, unsigned count, unsigned long long hash,
                         const msl_sim_site *first, const msl_sim_site *last) {
    msl_sim_worker *w = msl_sim_self();
    msl_sim_fiber *f = msl_sim_self_fiber(w);
    if (count) msl_sim_lanes_matrix_flush(count, hash, first, last);
    if (__builtin_expect(!f->full_sg, 0)) partial_simdgroup(w, f, site);
    msl_sim_simdgroup *sg = &w->sgs[f->sg];
    if (sg->live != sg->lanes) msl_sim_matrix_returned(w, f, site, sg->live);
    exchange(w, f, site, NULL, 0);
    return sg->waiting == 0 && !w->report.kind;
}

/* After msl_sim_lanes_matrix released: 1 if every lane stopped at the lanes pass's call
   `index` (resume: the lanes' resume slots; then each lane counts the run's `ops`
   multiply-accumulates), else the error (lanes at different calls of
   one source site, which fibers would accept as one op: lanes mode computes one call's
   operands for all lanes, so it refuses). */
int msl_sim_lanes_matrix_check(const int *resume, int index, const msl_sim_site *site,
                               unsigned ops) {
    msl_sim_worker *w = msl_sim_self();
    unsigned s = w->cur_sg;
    for (unsigned l = 0; l < w->sgs[s].lanes; l++) {
        if (resume[l] == index) continue;
        char where[256], msg[512];
        describe_site(where, sizeof where, site);
        snprintf(msg, sizeof msg, "divergent SIMD op in simdgroup %u: lanes reach the "
                 "simdgroup_matrix multiply-accumulate at %s through different calls (lane "
                 "%u; lanes mode runs one call for the simdgroup: MSLTRANS_SIM_LANES=fibers "
                 "runs each lane's)", s, where, l);
        msl_sim_set_error(w, MSL_SIM_ERR_DIVERGENCE, msg);
        msl_sim_note_thread(w, &w->fibers[s * MSL_SIM_SIMD_WIDTH + l]);
        return 0;
    }
    /* Every lane made the run's `ops` multiply-accumulates (counted as on fibers). */
    for (unsigned l = 0; l < w->sgs[s].lanes; l++)
        w->fibers[s * MSL_SIM_SIMD_WIDTH + l].mma.seq += ops;
    w->sgs[s].matrix_used = 1;
    return 1;
}

void msl_sim_lanes_threadgroup_barrier(const msl_sim_site *site, unsigned flags) {
    (void)flags;
    msl_sim_worker *w = msl_sim_self();
    threadgroup_arrive(w, msl_sim_self_fiber(w), site);
}


/* Every live thread is blocked and none can be released: say who waits where. */
int msl_sim_report_deadlock(msl_sim_worker *w) {
    const msl_sim_site *sites[4] = {0};
    unsigned counts[4] = {0}, first_thread[4] = {0}, n_sites = 0, others = 0, done = 0;
    unsigned first_done = 0;
    for (unsigned i = 0; i < w->n; i++) {
        msl_sim_fiber *f = &w->fibers[i];
        if (w->state[i] == MSL_SIM_DONE) {
            if (!done++) first_done = i;
            continue;
        }
        unsigned s = 0;
        while (s < n_sites && !same_site(sites[s], f->site)) s++;
        if (s == n_sites) {
            if (n_sites == 4) { others++; continue; }
            sites[n_sites] = f->site;
            first_thread[n_sites++] = i;
        }
        counts[s]++;
    }
    char msg[2048];
    int len = snprintf(msg, sizeof msg, "barrier/SIMD divergence in a threadgroup of %u threads:", w->n);
    for (unsigned s = 0; s < n_sites && len < (int)sizeof msg - 400; s++) {
        char where[256], what[300] = "";
        describe_site(where, sizeof where, sites[s]);
        const msl_sim_fiber *f = &w->fibers[first_thread[s]];
        if (w->state[first_thread[s]] == MSL_SIM_WAIT_MMA)
            msl_sim_mma_describe(f->wait_op, what, sizeof what);
        len += snprintf(msg + len, sizeof msg - len, " %u thread(s) wait at %s%s (first: thread %u);",
                        counts[s], where, what, first_thread[s]);
    }
    if (others) len += snprintf(msg + len, sizeof msg - len, " %u at other sites;", others);
    if (done)
        snprintf(msg + len, sizeof msg - len, " %u thread(s) already returned (first: thread %u)",
                 done, first_done);
    w->report.kind = 0;   /* the deadlock is the error to report */
    msl_sim_set_error(w, MSL_SIM_ERR_DIVERGENCE, msg);
    if (n_sites) msl_sim_note_thread(w, &w->fibers[first_thread[0]]);
    return w->report.kind;
}

void *msl_sim_threadgroup_static(const void *key, unsigned long size, unsigned long align) {
    msl_sim_worker *w = msl_sim_self();
    for (unsigned i = 0; i < w->n_statics; i++)
        if (w->statics[i].key == key) return w->arena + w->statics[i].offset;
    /* Metal counts each declaration in 16-byte units; over 32 KB in that count is an error.
       Placement: each declaration at the alignment of its type (MSL 2.5), no more: where that
       alignment is below 16, at an odd multiple of it (up to MSL_SIM_TG_SLACK bytes past
       Metal's count), so that an access wider than the type allows (a `threadgroup ulong
       x[N]` read as uint4) is misaligned here as it may be on the GPU, and
       __ubsan_handle_type_mismatch_v1 (below) reports it. */
    if (align == 0) align = 1;
    unsigned long counted = w->arena_base + w->static_bytes + (size + 15) / 16 * 16;
    unsigned long packed = (w->arena_used + align - 1) / align * align;
    if (counted > MSL_SIM_TG_LIMIT || w->n_statics == MSL_SIM_MAX_STATICS ||
        packed + size > MSL_SIM_TG_LIMIT + MSL_SIM_TG_SLACK) {
        char msg[256];
        snprintf(msg, sizeof msg, "threadgroup memory: a %lu-byte declaration brings the total to "
                 "%lu bytes, over Metal's %u-byte limit", size, counted, MSL_SIM_TG_LIMIT);
        fail_here(w, msl_sim_self_fiber(w), MSL_SIM_ERR_TG_MEMORY, msg);
    }
    unsigned long start = w->arena_base + w->static_bytes;   /* where Metal's count puts it */
    if (start < w->arena_used) start = w->arena_used;
    unsigned long offset = (start + align - 1) / align * align;
    if (align < 16 && offset % (2 * align) == 0 &&
        offset + align + size <= MSL_SIM_TG_LIMIT + MSL_SIM_TG_SLACK)
        offset += align;
    if (offset + size > MSL_SIM_TG_LIMIT + MSL_SIM_TG_SLACK)   /* mixed alignments: pack */
        offset = packed;
    w->statics[w->n_statics].key = key;
    w->statics[w->n_statics++].offset = offset;
    memset(w->arena + w->arena_used, 0xFF, offset + size - w->arena_used);
    w->static_bytes += (size + 15) / 16 * 16;
    w->arena_used = offset + size;
    return w->arena + offset;
}

/* clang's -fsanitize=alignment check (msltrans/sim/build.py) calls this when a typed access
   is at an address its type's alignment does not divide. Only threadgroup memory (the
   arena) is this check's business; anything else continues as before. The layout is
   clang's (compiler-rt's ubsan_handlers.h, TypeMismatchData): a source location, the type,
   log2 of the alignment and the kind of access. */
typedef struct { const char *file; unsigned line, column; } msl_sim_ubsan_location;
typedef struct { unsigned short kind, info; char name[1]; } msl_sim_ubsan_type;
typedef struct {
    msl_sim_ubsan_location location;
    const msl_sim_ubsan_type *type;
    unsigned char log_alignment, check_kind;
} msl_sim_ubsan_mismatch;

void __ubsan_handle_type_mismatch_v1(msl_sim_ubsan_mismatch *data, unsigned long pointer) {
    msl_sim_worker *w = msl_sim_self();
    if (!w || !w->arena || !data ||
        pointer - (unsigned long)w->arena >= MSL_SIM_TG_LIMIT + MSL_SIM_TG_SLACK)
        return;
    unsigned long align = 1ul << data->log_alignment;
    if (!(pointer & (align - 1))) return;
    static const char *const kinds[] = {"load of", "store to", "reference binding to",
                                        "member access within", "member call on",
                                        "constructor call on"};
    const char *kind = data->check_kind < 6 ? kinds[data->check_kind] : "access to";
    char msg[512];
    snprintf(msg, sizeof msg, "misaligned threadgroup access: %s `%s` (%lu-byte alignment) at "
             "threadgroup byte offset %lu, which is %lu mod %lu, at %s:%u:%u (Metal aligns a "
             "threadgroup variable only to its declared type, MSL 2.5: declare it with the "
             "alignment its widest access needs)", kind,
             data->type ? data->type->name : "?", align, pointer - (unsigned long)w->arena,
             pointer % align, align, data->location.file ? data->location.file : "?",
             data->location.line, data->location.column);
    fail_here(w, msl_sim_self_fiber(w), MSL_SIM_ERR_FAIL, msg);
}

void msl_sim_fail(const msl_sim_site *site, const char *message) {
    msl_sim_worker *w = msl_sim_self();
    char msg[1024], where[256];
    describe_site(where, sizeof where, site);
    snprintf(msg, sizeof msg, "%s (%s)", message ? message : "device failure", where);
    fail_here(w, msl_sim_self_fiber(w), MSL_SIM_ERR_FAIL, msg);
}

void msl_sim_print(const char *text) {
    if (text) {
        fputs(text, stdout);
        fflush(stdout);
    }
}
