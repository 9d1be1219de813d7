/* simdgroup_multiply_accumulate without a rendezvous (abi.h describes the protocol).

   Lane l's k-th multiply-accumulate and every other lane's k-th one are the same operation
   of the simdgroup: its record gathers each lane's operand elements as the lane reaches it,
   and the lane that arrives last computes the result once for all. Lanes run ahead holding
   counted handles; a lane that needs the values (a store, thread_elements()) waits for the
   result if the other lanes have not all recorded the op yet. Compared with a rendezvous per
   multiply-accumulate this saves one fiber switch per lane and op, and with it the cache
   misses of resuming 32 fibers' frames in turn. Every rendezvous release finds all lanes of
   the simdgroup with the same count of ops (checked by rendezvous.c), so the per-simdgroup
   list of records restarts there; records live on while handles refer to them. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "profile.h"
#include "sched.h"

#define MMA_CHUNK 64

/* A record: `refs`, `done`, the lanes' operands and the result are the part the shim sees
   (msl_sim_mma); the runtime's fields fill the rest of the first two cache lines, so that a
   lane recording its operands touches the header, its own 24 bytes of operands, and the
   pending-operand line when it has one. A lane whose operand x is a pending result is marked
   in pending_lanes[x]: that result is pending_src[x] (the same op for every lane, as when
   each lane's accumulator is its previous result), or for lanes whose source differs, in
   the lazily made `more`. */
typedef struct mma_op {
    unsigned refs, done;
    msl_sim_mma_finish finish;
    const char *site_file;            /* where the first lane recorded it */
    unsigned site_line, site_column;
    unsigned arrived, waiters;
    unsigned pending_lanes[3];
    unsigned sg;
    /* second line */
    msl_sim_mma *pending_src[3];
    msl_sim_mma *(*more)[MSL_SIM_SIMD_WIDTH];
    struct mma_op *next_free;
    unsigned long long pad[4];
    float lanes[MSL_SIM_SIMD_WIDTH][6];
    float d[64];
} mma_op;
_Static_assert(sizeof(mma_op) == sizeof(msl_sim_mma), "mma_op must match msl_sim_mma");
_Static_assert(__builtin_offsetof(mma_op, lanes) == __builtin_offsetof(msl_sim_mma, lanes), "lanes");
_Static_assert(__builtin_offsetof(mma_op, d) == __builtin_offsetof(msl_sim_mma, d), "d");

#define OP_OF(h) ((mma_op *)(h))

typedef struct mma_chunk {
    struct mma_chunk *next;
    mma_op ops[MMA_CHUNK];
} mma_chunk;

static unsigned lane_index(unsigned lane) {
    unsigned q = lane / 4;
    unsigned row = (q & 4) + (lane / 2) % 4, col0 = (q & 2) * 2 + (lane % 2) * 2;
    return row * 8 + col0;
}

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

    if (op->more) {
        free(op->more);
        op->more = NULL;
    }
    op->next_free = w->mma_free;
    w->mma_free = op;
    w->mma_live--;
}

static void release(msl_sim_worker *w, msl_sim_mma *h) {
    if (--h->refs == 0 && h->done) free_op(w, OP_OF(h));
}

void msl_sim_mma_free(msl_sim_mma *h) { free_op(msl_sim_self(), OP_OF(h)); }

static void fail(msl_sim_worker *w, msl_sim_fiber *f, const char *message) __attribute__((noreturn));
static void fail(msl_sim_worker *w, msl_sim_fiber *f, const char *message) {
    msl_sim_set_error(w, MSL_SIM_ERR_DIVERGENCE, message);
    msl_sim_note_thread(w, f);
    msl_sim_abort_group(w);
}

static void complete(msl_sim_worker *w, msl_sim_fiber *f, mma_op *op) {
    for (unsigned x = 0; x < 3; x++) {
        unsigned lanes = op->pending_lanes[x];
        if (!lanes) continue;
        for (unsigned l = 0; l < MSL_SIM_SIMD_WIDTH; l++) {
            if (!(lanes >> l & 1)) continue;
            msl_sim_mma *src = op->more && op->more[x][l] ? op->more[x][l] : op->pending_src[x];
            if (!src->done)
                fail(w, f, "divergent simdgroup_matrix ops: a multiply-accumulate operand is "
                     "the result of one that not every lane of the simdgroup executed");
            unsigned pos = lane_index(l);
            op->lanes[l][2 * x] = src->d[pos];
            op->lanes[l][2 * x + 1] = src->d[pos + 1];
            release(w, src);
        }
        op->pending_lanes[x] = 0;
    }
    op->finish((msl_sim_mma *)op);
    op->done = 1;
    if (w->profile) msl_sim_profile_mma(w, NULL);
    if (op->waiters) {
        msl_sim_fiber *lanes = &w->fibers[op->sg * MSL_SIM_SIMD_WIDTH];
        for (unsigned l = 0; l < MSL_SIM_SIMD_WIDTH; l++)
            if (lanes[l].state == MSL_SIM_WAIT_MMA && lanes[l].wait_op == (msl_sim_mma *)op)
                lanes[l].state = MSL_SIM_READY;
        op->waiters = 0;
    }
}

static int same_record(const mma_op *op, const msl_sim_site *site, msl_sim_mma_finish finish) {
    if (op->finish != finish || op->site_line != site->line || op->site_column != site->column)
        return 0;
    return op->site_file == site->file ||
           (op->site_file && site->file && strcmp(op->site_file, site->file) == 0);
}

msl_sim_mma *msl_sim_mma_record(const msl_sim_site *site, const msl_sim_mma_arg *args,
                                msl_sim_mma_finish finish, unsigned *pos_out) {
    msl_sim_worker *w = msl_sim_self();
    msl_sim_fiber *f = msl_sim_self_fiber(w);
    unsigned index = f->sg, lane = f->lane;
    msl_sim_simdgroup *sg = &w->sgs[index];
    if (w->profile) msl_sim_profile_note_caller(w, f, __builtin_frame_address(0));
    if (!f->full_sg || w->profile) msl_sim_matrix_note(w, f, site);
    sg->matrix_used = 1;
    unsigned k = f->mma_seq++;
    mma_op *op;
    if (k == sg->n_ops) {
        if (sg->n_ops == sg->cap_ops) {
            unsigned cap = sg->cap_ops ? 2 * sg->cap_ops : 256;
            void *grown = realloc(sg->ops, cap * sizeof *sg->ops);
            if (!grown) fail(w, f, "out of memory for simdgroup_matrix records");
            sg->ops = grown;
            sg->cap_ops = cap;
        }
        op = alloc_op(w);
        if (!op) fail(w, f, "out of memory for simdgroup_matrix records");
        op->site_file = site->file;
        op->site_line = site->line;
        op->site_column = site->column;
        op->finish = finish;
        op->arrived = op->waiters = 0;
        op->sg = index;
        op->pending_lanes[0] = op->pending_lanes[1] = op->pending_lanes[2] = 0;
        op->more = NULL;
        op->refs = op->done = 0;
        sg->ops[sg->n_ops++] = op;
    } else {
        op = sg->ops[k];
        if (!same_record(op, site, finish)) {
            char msg[700];
            snprintf(msg, sizeof msg, "divergent simdgroup_matrix ops in simdgroup %u: lane %u's "
                     "multiply-accumulate #%u is at %s:%u:%u, the first lane's at %s:%u:%u",
                     index, lane, k + 1, site->file ? site->file : "?", site->line, site->column,
                     op->site_file ? op->site_file : "?", op->site_line, op->site_column);
            fail(w, f, msg);
        }
    }
    unsigned pos = lane_index(lane);
    float *mine = op->lanes[lane];
    for (unsigned x = 0; x < 3; x++) {
        msl_sim_mma *src = args[x].pending;
        if (!src) {
            mine[2 * x] = args[x].v[0];
            mine[2 * x + 1] = args[x].v[1];
        } else if (src->done) {
            mine[2 * x] = src->d[pos];
            mine[2 * x + 1] = src->d[pos + 1];
        } else {
            if (!op->pending_lanes[x]) op->pending_src[x] = src;
            if (src != op->pending_src[x]) {
                if (!op->more && !(op->more = calloc(3, sizeof *op->more)))
                    fail(w, f, "out of memory for simdgroup_matrix records");
                op->more[x][lane] = src;
            }
            op->pending_lanes[x] |= 1u << lane;
            src->refs++;
        }
    }
    op->refs++;
    if (++op->arrived == MSL_SIM_SIMD_WIDTH) complete(w, f, op);
    *pos_out = pos;
    return (msl_sim_mma *)op;
}

unsigned msl_sim_mma_wait(msl_sim_mma *h, const msl_sim_site *site) {
    msl_sim_worker *w = msl_sim_self();
    msl_sim_fiber *f = msl_sim_self_fiber(w);
    if (!h->done) {
        f->state = MSL_SIM_WAIT_MMA;
        f->site = site;
        f->wait_op = h;
        OP_OF(h)->waiters++;
        msl_sim_block(w);
    }
    return lane_index(f->lane);
}

/* After a rendezvous of simdgroup `sg` found every lane with the same op count: all its
   records are complete, and the next op of every lane is the simdgroup's first again. */
void msl_sim_mma_restart(msl_sim_worker *w, unsigned index) {
    msl_sim_simdgroup *sg = &w->sgs[index];
    if (!sg->n_ops) return;
    sg->n_ops = 0;
    msl_sim_fiber *lanes = &w->fibers[index * MSL_SIM_SIMD_WIDTH];
    for (unsigned l = 0; l < sg->lanes; l++) lanes[l].mma_seq = 0;
}

/* For a deadlock report: what a lane waiting for a result waits for. */
int msl_sim_mma_describe(const msl_sim_mma *h, char *out, unsigned long cap) {
    const mma_op *op = OP_OF(h);
    return snprintf(out, cap, " (the simdgroup_multiply_accumulate at %s:%u:%u, which %u of 32 "
                    "lanes executed)", op->site_file ? op->site_file : "?", op->site_line,
                    op->site_column, op->arrived);
}
