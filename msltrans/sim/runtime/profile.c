/* The simulator as a profiler. A profiled dispatch runs on one worker; its kernel library
   is a profiling build, in which every load and store first calls __asan_loadN(addr) /
   __asan_storeN(addr) (clang's address sanitizer in callback mode, nothing else of it):
   accesses to the dispatch's device buffers and to threadgroup memory go into a log per
   thread. When every lane of a simdgroup is at one point (a SIMD op or barrier release, the
   end of the threadgroup), the lanes' logs are paired up: the k-th execution of one access
   site by each lane is one simdgroup-wide instruction, whose lanes' addresses give the
   128-byte segments it touches (device memory) or the cycles its bank conflicts cost
   (threadgroup memory: 32 banks of 4 bytes; a bank serves one 4-byte word per cycle, lanes
   reading the same word share it). Sites are keyed by the code address of the access and
   the return address of the function it is in, which Python maps to MSL and Triton lines. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "profile.h"

typedef struct access {
    uintptr_t pc0, pc1, addr;
    unsigned size, kind;
} access;

typedef struct lane_log {
    access *a;
    unsigned n, cap;
} lane_log;

typedef struct instr {
    uintptr_t pc0, pc1;
    unsigned kind, size, k, n;
    uintptr_t addr[MSL_SIM_SIMD_WIDTH];
} instr;

typedef struct prof {
    msl_sim_profile_site *sites;      /* open addressing on (pc0, pc1, kind) */
    unsigned cap, count;
    lane_log logs[MSL_SIM_MAX_THREADS];
    uintptr_t events[MSL_SIM_MAX_THREADS][2];   /* where each fiber last called the runtime */
    /* per-flush scratch: (pc0, pc1, kind, k) -> instruction; occurrences per site for a lane */
    instr *instrs;
    unsigned n_instrs, cap_instrs;
    unsigned *slots;                  /* hash of instructions: index + 1, 0 empty */
    unsigned cap_slots;
    struct occ { uintptr_t pc0, pc1; unsigned kind, stamp, count; } *occ;
    unsigned cap_occ, stamp;
} prof;

static prof state;                    /* profiled dispatches run on worker 0 alone */
static msl_sim_profile_out *out;
static unsigned char *footprint[MSL_SIM_MAX_TG_ARGS + 32][2];
static const msl_sim_launch *current_launch;

static uint64_t mix(uintptr_t a, uintptr_t b, unsigned c, unsigned d) {
    uint64_t h = (uint64_t)a * 0x9e3779b97f4a7c15ull ^ ((uint64_t)b + 0x632be59bd9b4e019ull);
    h ^= ((uint64_t)c << 32 | d) * 0xff51afd7ed558ccdull;
    return h ^ (h >> 29);
}

static msl_sim_profile_site *site_of(uintptr_t pc0, uintptr_t pc1, unsigned kind, unsigned width) {
    if (2 * (state.count + 1) > state.cap) {
        unsigned cap = state.cap ? 2 * state.cap : 1024;
        msl_sim_profile_site *grown = calloc(cap, sizeof *grown);
        if (!grown) return NULL;
        for (unsigned i = 0; i < state.cap; i++) {
            msl_sim_profile_site *s = &state.sites[i];
            if (!s->kind) continue;
            unsigned j = (unsigned)(mix(s->pc[0], s->pc[1], s->kind, 0) & (cap - 1));
            while (grown[j].kind) j = (j + 1) & (cap - 1);
            grown[j] = *s;
        }
        free(state.sites);
        state.sites = grown;
        state.cap = cap;
    }
    unsigned j = (unsigned)(mix(pc0, pc1, kind, 0) & (state.cap - 1));
    while (state.sites[j].kind) {
        msl_sim_profile_site *s = &state.sites[j];
        if (s->pc[0] == pc0 && s->pc[1] == pc1 && s->kind == kind) return s;
        j = (j + 1) & (state.cap - 1);
    }
    msl_sim_profile_site *s = &state.sites[j];
    s->pc[0] = pc0;
    s->pc[1] = pc1;
    s->kind = kind;
    s->width = width;
    state.count++;
    return s;
}

/* ---- memory accesses ------------------------------------------------------------------ */

static int region_of(uintptr_t addr) {
    for (unsigned i = 0; i < out->n_regions; i++)
        if (addr - out->regions[i].start < out->regions[i].size) return (int)i;
    return -1;
}

static void mark_footprint(int region, uintptr_t addr, unsigned size, int write) {
    unsigned char *bits = footprint[region][write];
    if (!bits) return;
    uintptr_t base = out->regions[region].start;
    for (uintptr_t s = (addr - base) / MSL_SIM_PROF_SEGMENT;
         s <= (addr + size - 1 - base) / MSL_SIM_PROF_SEGMENT; s++)
        bits[s / 8] |= (unsigned char)(1u << (s % 8));
}

static void record(msl_sim_worker *w, uintptr_t addr, unsigned size, int write, uintptr_t pc0,
                   void *frame) {
    if (!w->profile || !size) return;
    unsigned kind;
    if (addr - (uintptr_t)w->arena < MSL_SIM_TG_LIMIT + MSL_SIM_TG_SLACK) {
        kind = write ? MSL_SIM_PROF_TG_STORE : MSL_SIM_PROF_TG_LOAD;
    } else {
        int region = region_of(addr);
        if (region < 0) return;   /* the stack, the runtime's own memory, scalar arguments */
        kind = write ? MSL_SIM_PROF_DEVICE_STORE : MSL_SIM_PROF_DEVICE_LOAD;
        mark_footprint(region, addr, size, write);
    }
    msl_sim_fiber *f = msl_sim_self_fiber(w);
    lane_log *log = &state.logs[f - w->fibers];
    if (log->n == log->cap) {
        unsigned cap = log->cap ? 2 * log->cap : 256;
        access *grown = realloc(log->a, cap * sizeof *grown);
        if (!grown) return;
        log->a = grown;
        log->cap = cap;
    }
    /* The caller's frame (kernel code keeps frame pointers): its return address. */
    void **caller = *(void ***)frame;
    log->a[log->n++] = (access){pc0, caller ? (uintptr_t)caller[1] : 0, addr, size, kind};
}

/* The instrumented build serves two checks: the profile, and the coherence check of a checked
   build (coherence.c). */
static inline __attribute__((always_inline)) void on_access(uintptr_t addr, unsigned size,
                                                            int write, uintptr_t pc0,
                                                            void *frame) {
    msl_sim_worker *w = msl_sim_self();
    if (w->coherence) msl_sim_coherence_access(w, addr, size, write, pc0);
    else record(w, addr, size, write, pc0, frame);
}

#define CALLBACKS(n)                                                                          \
    void __asan_load##n(uintptr_t addr) {                                                     \
        on_access(addr, n, 0, (uintptr_t)__builtin_return_address(0), __builtin_frame_address(0)); \
    }                                                                                         \
    void __asan_store##n(uintptr_t addr) {                                                    \
        on_access(addr, n, 1, (uintptr_t)__builtin_return_address(0), __builtin_frame_address(0)); \
    }
CALLBACKS(1)
CALLBACKS(2)
CALLBACKS(4)
CALLBACKS(8)
CALLBACKS(16)
void __asan_loadN(uintptr_t addr, uintptr_t size) {
    on_access(addr, (unsigned)size, 0, (uintptr_t)__builtin_return_address(0), __builtin_frame_address(0));
}
void __asan_storeN(uintptr_t addr, uintptr_t size) {
    on_access(addr, (unsigned)size, 1, (uintptr_t)__builtin_return_address(0), __builtin_frame_address(0));
}
void *__asan_memcpy(void *dst, const void *src, uintptr_t size) {
    on_access((uintptr_t)src, (unsigned)size, 0, (uintptr_t)__builtin_return_address(0), __builtin_frame_address(0));
    on_access((uintptr_t)dst, (unsigned)size, 1, (uintptr_t)__builtin_return_address(0), __builtin_frame_address(0));
    return memcpy(dst, src, size);
}
void *__asan_memmove(void *dst, const void *src, uintptr_t size) {
    on_access((uintptr_t)src, (unsigned)size, 0, (uintptr_t)__builtin_return_address(0), __builtin_frame_address(0));
    on_access((uintptr_t)dst, (unsigned)size, 1, (uintptr_t)__builtin_return_address(0), __builtin_frame_address(0));
    return memmove(dst, src, size);
}
void *__asan_memset(void *dst, int value, uintptr_t size) {
    on_access((uintptr_t)dst, (unsigned)size, 1, (uintptr_t)__builtin_return_address(0), __builtin_frame_address(0));
    return memset(dst, value, size);
}
void __asan_handle_no_return(void) {}

/* ---- pairing the lanes' accesses into instructions ---------------------------------------- */

static unsigned occurrence(const access *a) {
    unsigned cap = state.cap_occ, j = (unsigned)(mix(a->pc0, a->pc1, a->kind, 1) & (cap - 1));
    for (;;) {
        struct occ *o = &state.occ[j];
        if (o->stamp != state.stamp) {
            *o = (struct occ){a->pc0, a->pc1, a->kind, state.stamp, 1};
            return 0;
        }
        if (o->pc0 == a->pc0 && o->pc1 == a->pc1 && o->kind == a->kind) return o->count++;
        j = (j + 1) & (cap - 1);
    }
}

static instr *instr_of(const access *a, unsigned k) {
    if (2 * (state.n_instrs + 1) > state.cap_slots) {
        unsigned cap = state.cap_slots ? 2 * state.cap_slots : 1024;
        unsigned *slots = calloc(cap, sizeof *slots);
        if (!slots) return NULL;
        for (unsigned i = 0; i < state.n_instrs; i++) {
            instr *t = &state.instrs[i];
            unsigned j = (unsigned)(mix(t->pc0, t->pc1, t->kind, t->k) & (cap - 1));
            while (slots[j]) j = (j + 1) & (cap - 1);
            slots[j] = i + 1;
        }
        free(state.slots);
        state.slots = slots;
        state.cap_slots = cap;
    }
    unsigned j = (unsigned)(mix(a->pc0, a->pc1, a->kind, k) & (state.cap_slots - 1));
    while (state.slots[j]) {
        instr *t = &state.instrs[state.slots[j] - 1];
        if (t->pc0 == a->pc0 && t->pc1 == a->pc1 && t->kind == a->kind && t->k == k) return t;
        j = (j + 1) & (state.cap_slots - 1);
    }
    if (state.n_instrs == state.cap_instrs) {
        unsigned cap = state.cap_instrs ? 2 * state.cap_instrs : 512;
        instr *grown = realloc(state.instrs, cap * sizeof *grown);
        if (!grown) return NULL;
        state.instrs = grown;
        state.cap_instrs = cap;
    }
    instr *t = &state.instrs[state.n_instrs];
    *t = (instr){.pc0 = a->pc0, .pc1 = a->pc1, .kind = a->kind, .size = a->size, .k = k};
    state.slots[j] = ++state.n_instrs;
    return t;
}

static int cmp_uptr(const void *a, const void *b) {
    uintptr_t x = *(const uintptr_t *)a, y = *(const uintptr_t *)b;
    return x < y ? -1 : x > y;
}

/* Distinct values of v[0..n) (sorted in place). */
static unsigned distinct(uintptr_t *v, unsigned n) {
    qsort(v, n, sizeof *v, cmp_uptr);
    unsigned d = 0;
    for (unsigned i = 0; i < n; i++)
        if (!i || v[i] != v[i - 1]) v[d++] = v[i];
    return d;
}

static void account(const instr *t) {
    msl_sim_profile_site *s = site_of(t->pc0, t->pc1, t->kind, t->size);
    if (!s) return;
    s->instructions++;
    s->lane_ops += t->n;
    s->bytes += (unsigned long long)t->n * t->size;
    uintptr_t units[MSL_SIM_SIMD_WIDTH * 8];
    unsigned n = 0;
    int device = t->kind == MSL_SIM_PROF_DEVICE_LOAD || t->kind == MSL_SIM_PROF_DEVICE_STORE;
    unsigned unit = device ? MSL_SIM_PROF_SEGMENT : MSL_SIM_PROF_BANK_BYTES;
    for (unsigned l = 0; l < t->n; l++)
        for (uintptr_t u = t->addr[l] / unit; u <= (t->addr[l] + t->size - 1) / unit; u++) {
            if (n == sizeof units / sizeof *units) break;
            units[n++] = u;
        }
    n = distinct(units, n);
    if (device) {
        s->segments += n;
        return;
    }
    unsigned per_bank[MSL_SIM_PROF_BANKS] = {0}, most = 0;
    for (unsigned i = 0; i < n; i++) {
        unsigned b = (unsigned)(units[i] % MSL_SIM_PROF_BANKS);
        if (++per_bank[b] > most) most = per_bank[b];
    }
    s->wavefronts += most;
}

void msl_sim_profile_flush(msl_sim_worker *w, unsigned sg) {
    if (!w->profile) return;
    unsigned first = sg * MSL_SIM_SIMD_WIDTH, lanes = w->sgs[sg].lanes;
    unsigned total = 0;
    for (unsigned l = 0; l < lanes; l++) total += state.logs[first + l].n;
    if (!total) return;
    state.n_instrs = 0;
    if (state.cap_slots) memset(state.slots, 0, state.cap_slots * sizeof *state.slots);
    for (unsigned l = 0; l < lanes; l++) {
        lane_log *log = &state.logs[first + l];
        if (2 * log->n + 16 > state.cap_occ) {
            unsigned cap = state.cap_occ ? state.cap_occ : 256;
            while (cap < 2 * log->n + 16) cap *= 2;
            free(state.occ);
            state.occ = calloc(cap, sizeof *state.occ);
            state.cap_occ = state.occ ? cap : 0;
            state.stamp = 0;
            if (!state.occ) return;
        }
        state.stamp++;
        for (unsigned i = 0; i < log->n; i++) {
            instr *t = instr_of(&log->a[i], occurrence(&log->a[i]));
            if (t && t->n < MSL_SIM_SIMD_WIDTH) t->addr[t->n++] = log->a[i].addr;
        }
        log->n = 0;
    }
    for (unsigned i = 0; i < state.n_instrs; i++) account(&state.instrs[i]);
}

/* ---- runtime events ------------------------------------------------------------------- */

void msl_sim_profile_note_caller(msl_sim_worker *w, msl_sim_fiber *f, void *frame) {
    void **fp = frame, **caller = fp ? *(void ***)fp : NULL;
    state.events[f - w->fibers][0] = fp ? (uintptr_t)fp[1] : 0;
    state.events[f - w->fibers][1] = caller ? (uintptr_t)caller[1] : 0;
}

static void event(msl_sim_worker *w, unsigned fiber, unsigned kind, unsigned lanes) {
    msl_sim_profile_site *s = site_of(state.events[fiber][0], state.events[fiber][1], kind, 0);
    if (!s) return;
    s->instructions++;
    s->lane_ops += lanes;
    (void)w;
}

static unsigned simd_kind(const msl_sim_site *site) {
    switch (site->kind) {
    case MSL_SIM_KIND_SIMDGROUP_BARRIER: return MSL_SIM_PROF_SIMD_BARRIER;
    case MSL_SIM_KIND_SIMD_SHUFFLE: return MSL_SIM_PROF_SIMD_SHUFFLE;
    case MSL_SIM_KIND_SIMD_REDUCE: return MSL_SIM_PROF_SIMD_REDUCE;
    default: return MSL_SIM_PROF_SIMD_OTHER;
    }
}

void msl_sim_profile_simd(msl_sim_worker *w, const msl_sim_site *site, unsigned sg) {
    unsigned mask = w->sgs[sg].waiting_mask;
    if (!mask) return;
    event(w, sg * MSL_SIM_SIMD_WIDTH + (unsigned)__builtin_ctz(mask), simd_kind(site),
          (unsigned)__builtin_popcount(mask));
    msl_sim_profile_flush(w, sg);
}

void msl_sim_profile_barrier(msl_sim_worker *w, const msl_sim_site *site) {
    (void)site;
    event(w, (unsigned)w->current, MSL_SIM_PROF_TG_BARRIER, w->n);
    for (unsigned s = 0; s < w->n_sg; s++) msl_sim_profile_flush(w, s);
}

void msl_sim_profile_mma(msl_sim_worker *w, const msl_sim_site *site) {
    (void)site;
    event(w, (unsigned)w->current, MSL_SIM_PROF_MMA, MSL_SIM_SIMD_WIDTH);
}

void msl_sim_profile_matrix(msl_sim_worker *w, msl_sim_fiber *f, const msl_sim_site *site) {
    unsigned kind = site->kind == MSL_SIM_KIND_MATRIX_STORE ? MSL_SIM_PROF_MATRIX_STORE
                  : site->kind == MSL_SIM_KIND_MATRIX_LOAD ? MSL_SIM_PROF_MATRIX_LOAD : 0;
    if (!kind) return;
    unsigned fiber = (unsigned)(f - w->fibers);
    msl_sim_profile_site *s = site_of(state.events[fiber][0], state.events[fiber][1], kind, 0);
    if (!s) return;
    s->lane_ops++;
    if (f->lane == 0) s->instructions++;
}

/* ---- a profiled dispatch ------------------------------------------------------------------ */

void msl_sim_profile_group(msl_sim_worker *w) {
    for (unsigned i = 0; i < MSL_SIM_MAX_THREADS; i++) state.logs[i].n = 0;
    (void)w;
}

int msl_sim_profile_begin(const msl_sim_launch *launch, msl_sim_worker **workers, unsigned n) {
    for (unsigned i = 0; i < n; i++) workers[i]->profile = NULL;
    if (!launch->profile) return 0;
    out = launch->profile_out;
    current_launch = launch;
    memset(state.sites, 0, state.cap * sizeof *state.sites);
    state.count = 0;
    for (unsigned r = 0; r < out->n_regions && r < sizeof footprint / sizeof *footprint; r++)
        for (int wr = 0; wr < 2; wr++) {
            unsigned long long segs = (out->regions[r].size + MSL_SIM_PROF_SEGMENT - 1) / MSL_SIM_PROF_SEGMENT;
            footprint[r][wr] = calloc(segs / 8 + 1, 1);
            if (!footprint[r][wr]) return -1;
        }
    workers[0]->profile = &state;
    return 0;
}

static unsigned long long count_bits(const unsigned char *bits, unsigned long long n_bits) {
    unsigned long long c = 0;
    for (unsigned long long i = 0; i < n_bits / 8 + 1; i++) c += (unsigned)__builtin_popcount(bits[i]);
    return c;
}

void msl_sim_profile_end(msl_sim_worker **workers, unsigned n) {
    if (!n || !workers[0]->profile) return;
    msl_sim_worker *w = workers[0];
    for (unsigned s = 0; s < w->n_sg; s++) msl_sim_profile_flush(w, s);   /* an aborted group */
    w->profile = NULL;
    Dl_info info;
    uintptr_t base = 0;
    if (dladdr((void *)(uintptr_t)current_launch->entry, &info)) base = (uintptr_t)info.dli_fbase;
    /* Compact the table into out->sites, with code offsets in the kernel library. */
    unsigned m = 0;
    for (unsigned i = 0; i < state.cap; i++) {
        msl_sim_profile_site s = state.sites[i];
        if (!s.kind) continue;
        for (int p = 0; p < 2; p++) {
            Dl_info where;
            int in_kernel = s.pc[p] && dladdr((void *)(uintptr_t)s.pc[p], &where) &&
                            (uintptr_t)where.dli_fbase == base;
            s.pc[p] = in_kernel ? s.pc[p] - base : 0;
        }
        state.sites[m++] = s;
    }
    out->sites = state.sites;
    out->n_sites = m;
    for (unsigned r = 0; r < out->n_regions && r < sizeof footprint / sizeof *footprint; r++) {
        unsigned long long segs = (out->regions[r].size + MSL_SIM_PROF_SEGMENT - 1) / MSL_SIM_PROF_SEGMENT;
        out->regions[r].read_segments = count_bits(footprint[r][0], segs);
        out->regions[r].write_segments = count_bits(footprint[r][1], segs);
        free(footprint[r][0]);
        free(footprint[r][1]);
        footprint[r][0] = footprint[r][1] = NULL;
    }
}
