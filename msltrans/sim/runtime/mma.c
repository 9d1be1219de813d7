/* simdgroup_multiply_accumulate without a rendezvous (abi.h describes the protocol).

   Lane l's k-th multiply-accumulate and every other lane's k-th one are the same operation
   of the simdgroup: each lane writes its operand elements for it as it reaches it, and the
   lane that arrives last computes the result once for all. Lanes run ahead holding counted
   handles; a lane that needs the values (a store, thread_elements()) waits for the result
   if the other lanes have not all recorded the op yet. Compared with a rendezvous per
   multiply-accumulate this saves a fiber switch per lane and op, and the cache misses of
   resuming 32 fibers' frames in turn.

   Memory layout, for a lane sweeping through many ops before the next lane runs: the
   lanes' operands live in per-simdgroup blocks of 16 ops, lane-major (lane l's records of
   16 consecutive ops are 384 contiguous bytes), and are consumed when the op completes; an
   op's record keeps one cache line of bookkeeping and the 64 results for as long as
   handles refer to it. Every rendezvous release finds all lanes of the simdgroup with the
   same op count (checked by rendezvous.c): the ops' numbering restarts there.

   The shim records the common case itself (abi.h, msl_sim_mma_lane): this file keeps each
   lane's view (its op count, the simdgroup's op table, NULL past the ops made, and its
   blocks) current, and does everything else. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "profile.h"
#include "sched.h"

#define MMA_CHUNK 64
#define BLOCK_OPS 16

/* A lane's record for one op: per operand its two elements, or (marked in the op's
   pending mask) the pending result they will come from. */
typedef union operand {
    float v[2];
    msl_sim_mma *pending;
} operand;

#define BLOCK_OPS MSL_SIM_MMA_BLOCK
typedef struct mma_block {
    operand lanes[MSL_SIM_SIMD_WIDTH][BLOCK_OPS][3];
} mma_block;

typedef msl_sim_mma mma_op;   /* abi.h: the shim's inline path reads it too */
_Static_assert(__builtin_offsetof(mma_op, d) == 64, "the lanes' part is one cache line");

typedef struct mma_chunk {
    struct mma_chunk *next;
    mma_op ops[MMA_CHUNK];
} mma_chunk;

/* Each lane's first element as a row-major index: the shim's lane_row/lane_col0 (matrix.h),
   which this map must agree with. */
static const unsigned char LANE_INDEX[MSL_SIM_SIMD_WIDTH] = {
#define P(l) (unsigned char)((((l) / 4 & 4) + ((l) / 2) % 4) * 8 + ((l) / 4 & 2) * 2 + ((l) % 2) * 2)
    P(0), P(1), P(2), P(3), P(4), P(5), P(6), P(7), P(8), P(9), P(10), P(11), P(12), P(13),
    P(14), P(15), P(16), P(17), P(18), P(19), P(20), P(21), P(22), P(23), P(24), P(25), P(26),
    P(27), P(28), P(29), P(30), P(31),
#undef P
};

/* All records of the worker are free again (a new threadgroup: handles of the last one's
   fibers are gone, even those an aborted group never released). */
void msl_sim_mma_reset(msl_sim_worker *w) {
    if (!w->mma_live) return;
    w->mma_free = NULL;
    for (mma_chunk *c = w->mma_chunks; c; c = c->next)
        for (unsigned i = 0; i < MMA_CHUNK; i++) {
            c->ops[i].next_free = w->mma_free;
            w->mma_free = &c->ops[i];
        }
    w->mma_live = 0;
}

static mma_op *alloc_op(msl_sim_worker *w) {
    if (!w->mma_free) {
        mma_chunk *c = malloc(sizeof *c);
        if (!c) return NULL;
        c->next = w->mma_chunks;
        w->mma_chunks = c;
        for (unsigned i = 0; i < MMA_CHUNK; i++) {
            c->ops[i].next_free = w->mma_free;
            w->mma_free = &c->ops[i];
        }
    }
    mma_op *op = w->mma_free;
    w->mma_free = op->next_free;
    w->mma_live++;
    return op;
}

static void free_op(msl_sim_worker *w, mma_op *op) {
    op->next_free = w->mma_free;
    w->mma_free = op;
    w->mma_live--;
}

static void release(msl_sim_worker *w, msl_sim_mma *h) {
    if (--h->refs == 0 && h->done) free_op(w, (mma_op *)h);
}

void msl_sim_mma_free(msl_sim_mma *h) { free_op(msl_sim_self(), (mma_op *)h); }

static void fail(msl_sim_worker *w, msl_sim_fiber *f, const char *message) __attribute__((noreturn));
static void fail(msl_sim_worker *w, msl_sim_fiber *f, const char *message) {
    msl_sim_set_error(w, MSL_SIM_ERR_DIVERGENCE, message);
    msl_sim_note_thread(w, f);
    msl_sim_abort_group(w);
}

static void not_all_lanes(msl_sim_worker *w, msl_sim_fiber *f) __attribute__((noreturn));
static void not_all_lanes(msl_sim_worker *w, msl_sim_fiber *f) {
    fail(w, f, "divergent simdgroup_matrix ops: a multiply-accumulate operand is the result "
         "of one that not every lane of the simdgroup executed");
}

static void complete(msl_sim_worker *w, msl_sim_fiber *f, mma_op *op, mma_block *block,
                     unsigned k) {
    unsigned slot = k % BLOCK_OPS;
    const float *whole[3] = {NULL, NULL, NULL};
    mma_op *src = op->whole;
    if (src) {
        if (!src->done) not_all_lanes(w, f);
        if (op->whole_mask == ~0u) {
            whole[2] = src->d;
        } else {
            for (unsigned lanes = op->whole_mask; lanes; lanes &= lanes - 1) {
                unsigned l = (unsigned)__builtin_ctz(lanes), pos = LANE_INDEX[l];
                operand *o = &block->lanes[l][slot][2];
                o->v[0] = src->d[pos];
                o->v[1] = src->d[pos + 1];
            }
        }
    }
    for (unsigned x = 0; x < 3; x++) {
        for (unsigned lanes = op->pending[x]; lanes; lanes &= lanes - 1) {
            unsigned l = (unsigned)__builtin_ctz(lanes);
            operand *o = &block->lanes[l][slot][x];
            msl_sim_mma *other = o->pending;
            if (!other->done) not_all_lanes(w, f);
            unsigned pos = LANE_INDEX[l];
            o->v[0] = other->d[pos];
            o->v[1] = other->d[pos + 1];
            release(w, other);
        }
        op->pending[x] = 0;
    }
    op->finish((msl_sim_mma *)op, block->lanes[0][slot][0].v, BLOCK_OPS * 3 * 2, whole);
    op->done = 1;
    if (src) {
        release(w, (msl_sim_mma *)src);
        op->whole = NULL;
    }
    if (w->profile) msl_sim_profile_mma(w, NULL);
    if (op->waiters) {
        unsigned first = f->sg * MSL_SIM_SIMD_WIDTH;
        for (unsigned l = first; l < first + MSL_SIM_SIMD_WIDTH; l++)
            if (w->state[l] == MSL_SIM_WAIT_MMA && w->fibers[l].wait_op == (msl_sim_mma *)op)
                w->state[l] = MSL_SIM_READY;
        op->waiters = 0;
    }
}

/* The first lane to reach the k-th op of its simdgroup makes its record. The table is
   NULL past n_ops: the shim's inline path finds an op with one load. */
static mma_op *new_op(msl_sim_worker *w, msl_sim_fiber *f, msl_sim_simdgroup *sg, unsigned k,
                      const msl_sim_site *site, msl_sim_mma_finish finish) {
    if (sg->n_ops == sg->cap_ops) {
        unsigned cap = sg->cap_ops ? 2 * sg->cap_ops : 256;
        void *grown = realloc(sg->ops, cap * sizeof *sg->ops);
        if (grown) sg->ops = grown;
        void *blocks = realloc(sg->blocks, cap / BLOCK_OPS * sizeof *sg->blocks);
        if (blocks) sg->blocks = blocks;
        if (!grown || !blocks) fail(w, f, "out of memory for simdgroup_matrix records");
        memset(sg->ops + sg->cap_ops, 0, (cap - sg->cap_ops) * sizeof *sg->ops);
        memset(sg->blocks + sg->cap_ops / BLOCK_OPS, 0,
               (cap - sg->cap_ops) / BLOCK_OPS * sizeof *sg->blocks);
        sg->cap_ops = cap;
        msl_sim_fiber *lanes = &w->fibers[f->sg * MSL_SIM_SIMD_WIDTH];
        for (unsigned l = 0; l < sg->lanes; l++) {
            lanes[l].mma.ops = sg->ops;
            lanes[l].mma.cap = cap;
            lanes[l].mma.blocks = sg->blocks;
        }
    }
    if (!sg->blocks[k / BLOCK_OPS] && !(sg->blocks[k / BLOCK_OPS] = malloc(sizeof(mma_block))))
        fail(w, f, "out of memory for simdgroup_matrix records");
    mma_op *op = alloc_op(w);
    if (!op) fail(w, f, "out of memory for simdgroup_matrix records");
    op->site_file = site->file;
    op->site_line = site->line;
    op->site_column = site->column;
    op->finish = finish;
    op->arrived = op->waiters = 0;
    op->pending[0] = op->pending[1] = op->pending[2] = 0;
    op->whole = NULL;
    op->whole_mask = 0;
    op->refs = op->done = 0;
    sg->ops[sg->n_ops++] = op;
    sg->matrix_used = 1;
    return op;
}

static void mismatch(msl_sim_worker *w, msl_sim_fiber *f, const mma_op *op, unsigned k,
                     const msl_sim_site *site) __attribute__((noreturn));
static void mismatch(msl_sim_worker *w, msl_sim_fiber *f, const mma_op *op, unsigned k,
                     const msl_sim_site *site) {
    char msg[700];
    snprintf(msg, sizeof msg, "divergent simdgroup_matrix ops in simdgroup %u: lane %u's "
             "multiply-accumulate #%u is at %s:%u:%u, the first lane's at %s:%u:%u", f->sg,
             f->lane, k + 1, site->file ? site->file : "?", site->line, site->column,
             op->site_file ? op->site_file : "?", op->site_line, op->site_column);
    fail(w, f, msg);
}

static inline __attribute__((always_inline)) void put(operand *slot, mma_op *op,
                                                      const msl_sim_mma_arg *arg, unsigned x,
                                                      unsigned lane, unsigned pos) {
    mma_op *src = (mma_op *)arg->pending;
    if (__builtin_expect(!src, 1)) {
        slot->v[0] = arg->v[0];
        slot->v[1] = arg->v[1];
    } else if (x == 2 && src == op->whole) {
        op->whole_mask |= 1u << lane;
    } else if (x == 2 && !op->whole) {
        op->whole = src;
        op->whole_mask = 1u << lane;
        src->refs++;
    } else if (src->done) {
        slot->v[0] = src->d[pos];
        slot->v[1] = src->d[pos + 1];
    } else {
        slot->pending = (msl_sim_mma *)src;
        op->pending[x] |= 1u << lane;
        src->refs++;
    }
}

msl_sim_mma *msl_sim_mma_record(const msl_sim_site *site, const msl_sim_mma_arg *args,
                                msl_sim_mma_finish finish) {
    msl_sim_worker *w = msl_sim_self();
    msl_sim_fiber *f = msl_sim_self_fiber(w);
    msl_sim_simdgroup *sg = &w->sgs[f->sg];
    if (__builtin_expect(w->profile != NULL || !f->full_sg, 0)) {
        if (w->profile) msl_sim_profile_note_caller(w, f, __builtin_frame_address(0));
        msl_sim_matrix_note(w, f, site);
    }
    unsigned k = f->mma.seq++;
    mma_op *op;
    if (__builtin_expect(k < sg->n_ops, 1)) {
        op = sg->ops[k];
        if (__builtin_expect(op->finish != finish || op->site_line != site->line ||
                             op->site_column != site->column, 0) ||
            (op->site_file != site->file &&
             (!op->site_file || !site->file || strcmp(op->site_file, site->file))))
            mismatch(w, f, op, k, site);
    } else {
        op = new_op(w, f, sg, k, site, finish);
    }
    unsigned lane = f->lane, pos = LANE_INDEX[lane];
    mma_block *block = (mma_block *)sg->blocks[k / BLOCK_OPS];
    operand *mine = block->lanes[lane][k % BLOCK_OPS];
    put(&mine[0], op, &args[0], 0, lane, pos);
    put(&mine[1], op, &args[1], 1, lane, pos);
    put(&mine[2], op, &args[2], 2, lane, pos);
    op->refs++;
    if (++op->arrived == MSL_SIM_SIMD_WIDTH) complete(w, f, op, block, k);
    return (msl_sim_mma *)op;
}

void msl_sim_mma_complete(msl_sim_mma *h) {
    msl_sim_worker *w = msl_sim_self();
    msl_sim_fiber *f = msl_sim_self_fiber(w);
    unsigned k = f->mma.seq - 1;
    complete(w, f, (mma_op *)h, (mma_block *)w->sgs[f->sg].blocks[k / BLOCK_OPS], k);
}

unsigned msl_sim_mma_wait(msl_sim_mma *h, const msl_sim_site *site) {
    msl_sim_worker *w = msl_sim_self();
    msl_sim_fiber *f = msl_sim_self_fiber(w);
    if (!h->done) {
        w->state[f - w->fibers] = MSL_SIM_WAIT_MMA;
        f->site = site;
        f->wait_op = h;
        ((mma_op *)h)->waiters++;
        msl_sim_block(w);
    }
    return LANE_INDEX[f->lane];
}

/* After a rendezvous of simdgroup `sg` found every lane with the same op count: all its
   records are complete, and the next op of every lane is the simdgroup's first again. */
void msl_sim_mma_restart(msl_sim_worker *w, unsigned index) {
    msl_sim_simdgroup *sg = &w->sgs[index];
    msl_sim_mma_clear(sg);   /* (lanes mode counts ops in mma.seq without records) */
    msl_sim_fiber *lanes = &w->fibers[index * MSL_SIM_SIMD_WIDTH];
    for (unsigned l = 0; l < sg->lanes; l++) lanes[l].mma.seq = 0;
}

/* No ops recorded (the table NULL again where it was used). */
void msl_sim_mma_clear(msl_sim_simdgroup *sg) {
    if (sg->n_ops) memset(sg->ops, 0, sg->n_ops * sizeof *sg->ops);
    sg->n_ops = 0;
}

/* A thread's view at the start of its threadgroup (its simdgroup's table is cleared). */
void msl_sim_mma_lane_init(msl_sim_worker *w, msl_sim_fiber *f) {
    msl_sim_simdgroup *sg = &w->sgs[f->sg];
    f->mma.seq = 0;
    f->mma.plain = f->full_sg && !w->profile;
    f->mma.lane = f->lane;
    f->mma.cap = sg->cap_ops;
    f->mma.ops = sg->ops;
    f->mma.blocks = sg->blocks;
}

/* For a deadlock report: what a lane waiting for a result waits for. */
int msl_sim_mma_describe(const msl_sim_mma *h, char *out, unsigned long cap) {
    const mma_op *op = (const mma_op *)h;
    return snprintf(out, cap, " (the simdgroup_multiply_accumulate at %s:%u:%u, which %u of 32 "
                    "lanes executed)", op->site_file ? op->site_file : "?", op->site_line,
                    op->site_column, op->arrived);
}
