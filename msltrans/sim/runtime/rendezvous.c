/* Rendezvous points (barriers, SIMD-group ops), threadgroup memory and device-side
   failure: the entry points of abi.h that kernels call while running on a fiber. */
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "sched.h"

#define G msl_sim_g

static const char *kind_name(unsigned kind) {
    switch (kind) {
    case MSL_SIM_KIND_THREADGROUP_BARRIER: return "threadgroup_barrier";
    case MSL_SIM_KIND_SIMDGROUP_BARRIER: return "simdgroup_barrier";
    case MSL_SIM_KIND_SIMD_OP: return "SIMD-group op";
    case MSL_SIM_KIND_SIMD_MATRIX: return "simdgroup_matrix op";
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

static void fail_here(int kind, const char *message) {
    G.report->kind = kind;
    snprintf(G.report->message, sizeof G.report->message, "%s", message);
    if (G.current >= 0) msl_sim_note_thread(&G.fibers[G.current]);
}

/* Called when every live lane of `sg` waits at a SIMD op: they must all be at one site. */
void msl_sim_release_simd(msl_sim_simdgroup *sg, unsigned index) {
    unsigned first = index * MSL_SIM_SIMD_WIDTH, end = first + MSL_SIM_SIMD_WIDTH;
    if (end > G.n) end = G.n;
    const msl_sim_site *site = NULL;
    unsigned mask = 0;
    for (unsigned i = first; i < end; i++) {
        msl_sim_fiber *f = &G.fibers[i];
        if (f->state != MSL_SIM_WAIT_SIMD) continue;
        if (site && !same_site(site, f->site)) {
            char a[256], b[256], msg[700];
            describe_site(a, sizeof a, site);
            describe_site(b, sizeof b, f->site);
            snprintf(msg, sizeof msg, "divergent SIMD op in simdgroup %u: lanes wait at %s and "
                     "lane %u at %s", index, a, i - first, b);
            fail_here(MSL_SIM_ERR_DIVERGENCE, msg);
            msl_sim_note_thread(f);
            return;
        }
        site = f->site;
        mask |= 1u << (i - first);
    }
    sg->mask[sg->gen & 1] = mask;
    sg->gen++;
    sg->waiting = 0;
    for (unsigned i = first; i < end; i++)
        if (G.fibers[i].state == MSL_SIM_WAIT_SIMD) G.fibers[i].state = MSL_SIM_READY;
}

const void *msl_sim_simd_exchange(const msl_sim_site *site, const void *data, unsigned size,
                                  unsigned *active, unsigned *lane) {
    msl_sim_fiber *f = &G.fibers[G.current];
    unsigned index = f->info.simdgroup_index_in_threadgroup;
    unsigned my_lane = f->info.thread_index_in_simdgroup;
    msl_sim_simdgroup *sg = &G.sgs[index];
    unsigned buffer = sg->gen & 1;
    if (size > MSL_SIM_EXCHANGE_BYTES) {
        fail_here(MSL_SIM_ERR_FAIL, "SIMD op payload larger than MSL_SIM_EXCHANGE_BYTES");
        msl_sim_yield();
    }
    if (size) memcpy(sg->slots[buffer][my_lane], data, size);
    f->state = MSL_SIM_WAIT_SIMD;
    f->site = site;
    if (++sg->waiting == sg->live) msl_sim_release_simd(sg, index);
    msl_sim_yield();
    if (active) *active = sg->mask[buffer];
    if (lane) *lane = my_lane;
    return sg->slots[buffer];
}

void msl_sim_simdgroup_barrier(const msl_sim_site *site, unsigned flags) {
    (void)flags;
    msl_sim_simd_exchange(site, NULL, 0, NULL, NULL);
}

void msl_sim_threadgroup_barrier(const msl_sim_site *site, unsigned flags) {
    (void)flags;
    msl_sim_fiber *f = &G.fibers[G.current];
    f->state = MSL_SIM_WAIT_TG;
    f->site = site;
    /* Released only when every thread arrived: one that returned never will. */
    if (++G.tg_waiting == G.n) {
        const msl_sim_site *first = G.fibers[0].site;
        for (unsigned i = 0; i < G.n; i++) {
            if (!same_site(first, G.fibers[i].site)) {
                msl_sim_report_deadlock();
                msl_sim_yield();
            }
        }
        G.tg_waiting = 0;
        for (unsigned i = 0; i < G.n; i++) G.fibers[i].state = MSL_SIM_READY;
    }
    msl_sim_yield();
}

/* Every live thread is blocked and none can be released: say who waits where. */
int msl_sim_report_deadlock(void) {
    const msl_sim_site *sites[4] = {0};
    unsigned counts[4] = {0}, first_thread[4] = {0}, n_sites = 0, others = 0, done = 0;
    unsigned first_done = 0;
    for (unsigned i = 0; i < G.n; i++) {
        msl_sim_fiber *f = &G.fibers[i];
        if (f->state == MSL_SIM_DONE) {
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
    int len = snprintf(msg, sizeof msg, "barrier/SIMD divergence in a threadgroup of %u threads:", G.n);
    for (unsigned s = 0; s < n_sites && len < (int)sizeof msg - 300; s++) {
        char where[256];
        describe_site(where, sizeof where, sites[s]);
        len += snprintf(msg + len, sizeof msg - len, " %u thread(s) wait at %s (first: thread %u);",
                        counts[s], where, first_thread[s]);
    }
    if (others) len += snprintf(msg + len, sizeof msg - len, " %u at other sites;", others);
    if (done)
        snprintf(msg + len, sizeof msg - len, " %u thread(s) already returned (first: thread %u)",
                 done, first_done);
    G.report->kind = MSL_SIM_ERR_DIVERGENCE;
    snprintf(G.report->message, sizeof G.report->message, "%s", msg);
    if (n_sites) msl_sim_note_thread(&G.fibers[first_thread[0]]);
    return G.report->kind;
}

void *msl_sim_threadgroup_static(const void *key, unsigned long size, unsigned long align) {
    for (unsigned i = 0; i < G.n_statics; i++)
        if (G.statics[i].key == key) return G.arena + G.statics[i].offset;
    if (align < 16) align = 16;   /* Metal allocates threadgroup memory in 16-byte units */
    unsigned long offset = (G.arena_used + align - 1) / align * align;
    if (offset + size > MSL_SIM_TG_LIMIT || G.n_statics == MSL_SIM_MAX_STATICS) {
        char msg[256];
        snprintf(msg, sizeof msg, "threadgroup memory: a %lu-byte declaration brings the total to "
                 "%lu bytes, over Metal's %u-byte limit", size, offset + size, MSL_SIM_TG_LIMIT);
        fail_here(MSL_SIM_ERR_TG_MEMORY, msg);
        msl_sim_yield();
    }
    G.statics[G.n_statics].key = key;
    G.statics[G.n_statics++].offset = offset;
    memset(G.arena + G.arena_used, 0xFF, offset + size - G.arena_used);
    G.static_bytes += (size + 15) / 16 * 16;
    G.arena_used = offset + size;
    return G.arena + offset;
}

void msl_sim_fail(const msl_sim_site *site, const char *message) {
    char msg[1024], where[256];
    describe_site(where, sizeof where, site);
    snprintf(msg, sizeof msg, "%s (%s)", message ? message : "device failure", where);
    fail_here(MSL_SIM_ERR_FAIL, msg);
    msl_sim_yield();
    __builtin_unreachable();
}

void msl_sim_print(const char *text) {
    if (text) {
        fputs(text, stdout);
        fflush(stdout);
    }
}
