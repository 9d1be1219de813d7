// msltrans simulator's lanes pass: which values are live across a rendezvous (live on entry
// to a resume block, the code after a rendezvous call), for every value of a lanes function
// in time linear in its uses.
//
// A value defined in block D and used in block U (a phi's use: at the end of the incoming
// block) is live across a rendezvous when a path from a resume block r (other than D) to U
// avoids D: D dominates U, so every path from the entry to r then passes D, and the value
// the lane holds at r is still needed. Each block knows the resume blocks that reach it (one
// forward pass over the blocks). A resume block that reaches U but not D reaches it
// only along such paths; one that reaches D as well has such a path only if D dominates it
// (as above), so D reaches it too: r and D lie on one cycle (a loop with a rendezvous in
// it). Values defined on such a cycle walk their paths one value at a time, as every value
// did before (quadratic in large kernels: an fp8 tl.dot of 4,096 unrolled steps spent 29 s
// of its build there).
#include "pass.h"

#include "llvm/ADT/PostOrderIterator.h"
#include "llvm/ADT/SCCIterator.h"
#include "llvm/IR/CFG.h"
#include "llvm/Support/ErrorHandling.h"

#include <algorithm>
#include <cstdlib>

namespace lanes_pass {

// Resume blocks x blocks past which the per-block sets are not kept (every value walks).
constexpr uint64_t MAX_REACH_BITS = uint64_t(1) << 27;

LiveAcross::LiveAcross(Function &g, const SmallPtrSetImpl<BasicBlock *> &resume)
    : resume(resume) {
    unsigned n = 0;
    for (BasicBlock &b : g) number[&b] = n++;
    if (uint64_t(n) * resume.size() > MAX_REACH_BITS) return;
    // Blocks on a cycle with a resume block (values defined there walk).
    for (scc_iterator<Function *> c = scc_begin(&g); !c.isAtEnd(); ++c) {
        const std::vector<BasicBlock *> &blocks = *c;
        if (blocks.size() < 2 ||
            std::none_of(blocks.begin(), blocks.end(),
                         [&](BasicBlock *b) { return resume.count(b) != 0; }))
            continue;
        for (BasicBlock *b : blocks) onCycle.insert(b);
    }
    // Forward over the blocks in reverse post-order (each block: its own bit if it is a
    // resume block, and what reaches its predecessors) until nothing changes: once for
    // straight-line code, once more per loop level. Blocks the entry does not reach are
    // reached by nothing (a use there is live across nothing, as its walk would find); a
    // resume block the entry does not reach leaves every value walking.
    reached.assign(n, BitVector(resume.size()));
    unsigned k = 0;
    for (BasicBlock *r : resume) resumeIndex[r] = k++;
    ReversePostOrderTraversal<Function *> rpo(&g);
    SmallPtrSet<const BasicBlock *, 32> live(rpo.begin(), rpo.end());
    for (BasicBlock *r : resume)
        if (!live.count(r)) return;
    BitVector next(resume.size());
    for (bool changed = true; changed;) {
        changed = false;
        for (BasicBlock *b : rpo) {
            next.reset();
            auto self = resumeIndex.find(b);
            if (self != resumeIndex.end()) next.set(self->second);
            for (BasicBlock *p : predecessors(b))
                if (live.count(p)) next |= reached[number.lookup(p)];
            BitVector &at = reached[number.lookup(b)];
            if (next != at) {
                at = next;
                changed = true;
            }
        }
    }
    sets = true;
}

bool LiveAcross::walk(Instruction &v) const {
    BasicBlock *def = v.getParent();
    SmallVector<BasicBlock *, 16> work;
    for (Use &u : v.uses()) {
        auto *user = cast<Instruction>(u.getUser());
        BasicBlock *b = user->getParent();
        if (auto *phi = dyn_cast<PHINode>(user)) b = phi->getIncomingBlock(u);
        if (b != def) work.push_back(b);   // live out of the definition's block only
    }
    SmallPtrSet<BasicBlock *, 32> seen;
    while (!work.empty()) {
        BasicBlock *b = work.pop_back_val();
        if (!seen.insert(b).second) continue;
        if (resume.count(b)) return true;
        for (BasicBlock *p : predecessors(b))
            if (p != def) work.push_back(p);
    }
    return false;
}

bool LiveAcross::operator()(Instruction &v) const {
    BasicBlock *def = v.getParent();
    if (!sets || onCycle.count(def)) return walk(v);
    BitVector from(resume.size());
    for (Use &u : v.uses()) {
        auto *user = cast<Instruction>(u.getUser());
        BasicBlock *b = user->getParent();
        if (auto *phi = dyn_cast<PHINode>(user)) b = phi->getIncomingBlock(u);
        if (b != def) from |= reached[number.lookup(b)];
    }
    auto self = resumeIndex.find(def);
    if (self != resumeIndex.end()) from.reset(self->second);
    if (from.none()) return false;
    from.reset(reached[number.lookup(def)]);
    // MSLTRANS_SIM_LANES_CHECK_LIVE (tests/sim/test_lanes_build.py): every answer walked too.
    static const bool check = getenv("MSLTRANS_SIM_LANES_CHECK_LIVE") != nullptr;
    if (check && from.any() != walk(v)) report_fatal_error("lanes pass: liveness differs");
    return from.any();
}

}  // namespace lanes_pass
