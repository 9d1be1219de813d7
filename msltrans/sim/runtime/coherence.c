/* Cross-threadgroup coherence (MSL 4.8, Memory Coherency). Device memory is coherent only
   within a threadgroup unless a buffer is declared coherent(device) (Metal 3.2): during one
   dispatch, a plain load of bytes that another threadgroup stored may return a stale value,
   even after that threadgroup's release and this one's acquire. The simulator's memory is
   coherent, so a checked build (msltrans/sim/coherence.py) reports such a load instead.

   A checked kernel library is compiled like the profiling build: every load and store first
   calls __asan_loadN/__asan_storeN (profile.c routes them here when the worker checks
   coherence), and the shim's device atomics are left uninstrumented and call
   msl_sim_coherence_atomic instead (atomic.h). A shadow word per byte of every device buffer
   records who stored it last during the dispatch: the thread (threadgroup linear index * 1024
   + thread index, plus one), whether it was an atomic, and where (the code offset of the
   store in the kernel library). A plain load of a byte whose last writer belongs to another
   threadgroup fails the dispatch unless the byte lies in a coherent(device) buffer. Atomic
   accesses are coherent by themselves (they are never reported); a plain load of a value
   another threadgroup wrote with an atomic is reported like one it wrote with a plain store
   (the load itself is not coherent). Threadgroups may run on several workers at once: shadow
   words are read and written with relaxed 64-bit atomics, so no word tears. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>

#include "sched.h"

#define ID_BITS 35
#define ID_MASK ((1ull << ID_BITS) - 1)
#define ATOMIC_BIT (1ull << ID_BITS)
#define PC_SHIFT (ID_BITS + 1)
#define PC_LIMIT (1ull << (64 - PC_SHIFT))
#define GROUP_SHIFT 10   /* MSL_SIM_MAX_THREADS threads per group */
#define MAX_GROUPS (1ull << (ID_BITS - GROUP_SHIFT))

static struct {
    const msl_sim_coherence_in *in;
    uint64_t *shadow[MSL_SIM_MAX_COHERENCE_RANGES];
    unsigned long long shadow_len[MSL_SIM_MAX_COHERENCE_RANGES];
    uintptr_t base;                   /* the kernel library's load address */
} state;

int msl_sim_coherence_begin(const msl_sim_launch *launch, msl_sim_worker **workers, unsigned n,
                            unsigned long long groups, msl_sim_report *report) {
    for (unsigned i = 0; i < n; i++) workers[i]->coherence = 0;
    state.in = NULL;
    const msl_sim_coherence_in *in = launch->coherence;
    if (!in || launch->profile) return 0;
    if (in->n_regions > MSL_SIM_MAX_COHERENCE_RANGES) {
        snprintf(report->message, sizeof report->message, "the coherence check takes at most "
                 "%d buffers", MSL_SIM_MAX_COHERENCE_RANGES);
        return -1;
    }
    if (groups > MAX_GROUPS) {
        snprintf(report->message, sizeof report->message, "the coherence check takes at most "
                 "%llu threadgroups (this dispatch has %llu); turn it off with "
                 "MSLTRANS_SIM_COHERENCE=0", MAX_GROUPS, groups);
        return -1;
    }
    for (unsigned r = 0; r < in->n_regions; r++) {
        unsigned long long len = in->regions[r].size * sizeof(uint64_t);
        state.shadow[r] = NULL;
        state.shadow_len[r] = len;
        if (!len) continue;
        /* Zero pages on demand: only what the kernel stores to costs memory. */
        void *map = mmap(NULL, len, PROT_READ | PROT_WRITE,
                         MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
        if (map == MAP_FAILED) {
            for (unsigned k = 0; k < r; k++)
                if (state.shadow[k]) munmap(state.shadow[k], state.shadow_len[k]);
            snprintf(report->message, sizeof report->message, "cannot map the coherence "
                     "check's shadow memory (%llu bytes)", len);
            return -1;
        }
        state.shadow[r] = map;
    }
    Dl_info info;
    state.base = dladdr((void *)(uintptr_t)launch->entry, &info) ? (uintptr_t)info.dli_fbase : 0;
    state.in = in;
    for (unsigned i = 0; i < n; i++) workers[i]->coherence = 1;
    return 0;
}

void msl_sim_coherence_end(msl_sim_worker **workers, unsigned n) {
    for (unsigned i = 0; i < n; i++) workers[i]->coherence = 0;
    if (!state.in) return;
    for (unsigned r = 0; r < state.in->n_regions; r++)
        if (state.shadow[r]) munmap(state.shadow[r], state.shadow_len[r]);
    state.in = NULL;
}

static int region_of(uintptr_t addr) {
    for (unsigned r = 0; r < state.in->n_regions; r++)
        if (addr - state.in->regions[r].start < state.in->regions[r].size) return (int)r;
    return -1;
}

static int in_coherent(uintptr_t addr) {
    for (unsigned i = 0; i < state.in->n_coherent; i++)
        if (addr - state.in->coherent[i].start < state.in->coherent[i].size) return 1;
    return 0;
}

static uint64_t writer_word(msl_sim_worker *w, uintptr_t pc, int atomic) {
    unsigned long long id = (w->group_linear << GROUP_SHIFT) +
                            w->fibers[w->current].info.thread_index_in_threadgroup + 1;
    unsigned long long off = pc > state.base ? pc - state.base : 0;
    if (off >= PC_LIMIT) off = 0;
    return (id & ID_MASK) | (atomic ? ATOMIC_BIT : 0) | (uint64_t)off << PC_SHIFT;
}

static void record_store(msl_sim_worker *w, uintptr_t addr, unsigned long size, uintptr_t pc,
                         int atomic) {
    int r = region_of(addr);
    if (r < 0 || !state.shadow[r]) return;
    uint64_t word = writer_word(w, pc, atomic);
    unsigned long long at = addr - state.in->regions[r].start;
    unsigned long long end = at + size;
    if (end > state.in->regions[r].size) end = state.in->regions[r].size;
    for (; at < end; at++) __atomic_store_n(&state.shadow[r][at], word, __ATOMIC_RELAXED);
}

static void report_load(msl_sim_worker *w, uintptr_t addr, uintptr_t pc, uint64_t word)
    __attribute__((noreturn));
static void report_load(msl_sim_worker *w, uintptr_t addr, uintptr_t pc, uint64_t word) {
    msl_sim_report *r = &w->report;
    unsigned long long id = (word & ID_MASK) - 1, group = id >> GROUP_SHIFT;
    unsigned index = (unsigned)(id & ((1u << GROUP_SHIFT) - 1));
    const msl_sim_launch *l = w->launch;
    unsigned n_groups[3], g[3], dims[3];
    for (int d = 0; d < 3; d++)
        n_groups[d] = (l->threads[d] + l->group_size[d] - 1) / l->group_size[d];
    g[0] = (unsigned)(group % n_groups[0]);
    g[1] = (unsigned)(group / n_groups[0] % n_groups[1]);
    g[2] = (unsigned)(group / ((unsigned long long)n_groups[0] * n_groups[1]));
    for (int d = 0; d < 3; d++) {
        unsigned rest = l->threads[d] - g[d] * l->group_size[d];
        dims[d] = rest < l->group_size[d] ? rest : l->group_size[d];
    }
    msl_sim_set_error(w, MSL_SIM_ERR_COHERENCE, "plain load of another threadgroup's store");
    msl_sim_note_thread(w, &w->fibers[w->current]);
    for (int d = 0; d < 3; d++) r->writer_group[d] = g[d];
    r->writer_local[0] = index % dims[0];
    r->writer_local[1] = index / dims[0] % dims[1];
    r->writer_local[2] = index / (dims[0] * dims[1]);
    r->writer_atomic = (word & ATOMIC_BIT) != 0;
    r->writer_pc_offset = word >> PC_SHIFT;
    r->fault_addr = addr;
    r->is_write = 0;
    r->pc = pc;
    Dl_info info;
    if (pc && dladdr((void *)pc, &info) && info.dli_fname) {
        r->pc_offset = (unsigned long long)(pc - (uintptr_t)info.dli_fbase);
        snprintf(r->object_path, sizeof r->object_path, "%s", info.dli_fname);
    }
    msl_sim_abort_group(w);
}

/* A load or store of kernel code (profile.c's callbacks); pc: its return address. */
void msl_sim_coherence_access(msl_sim_worker *w, uintptr_t addr, unsigned long size, int write,
                              uintptr_t pc) {
    if (!size || w->current < 0) return;
    if (write) {
        record_store(w, addr, size, pc - 1, 0);
        return;
    }
    int r = region_of(addr);
    if (r < 0 || !state.shadow[r] || in_coherent(addr)) return;
    unsigned long long at = addr - state.in->regions[r].start;
    unsigned long long end = at + size;
    if (end > state.in->regions[r].size) end = state.in->regions[r].size;
    unsigned long long mine = w->group_linear;
    for (; at < end; at++) {
        uint64_t word = __atomic_load_n(&state.shadow[r][at], __ATOMIC_RELAXED);
        if (word && ((word & ID_MASK) - 1) >> GROUP_SHIFT != mine)
            report_load(w, state.in->regions[r].start + at, pc - 1, word);
    }
}

/* The shim's device atomics (atomic.h, in a checked build): a write of `size` bytes at
   `addr`; `pc`: the atomic function's return address (the site recorded). */
void msl_sim_coherence_atomic(const void *addr, unsigned long size, const void *pc) {
    msl_sim_worker *w = msl_sim_self();
    if (!w->coherence || w->current < 0) return;
    record_store(w, (uintptr_t)addr, size, (uintptr_t)pc - 1, 1);
}
