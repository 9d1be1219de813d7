// msltrans simulator's lanes pass: which values are live across a rendezvous (live on entry
// to a resume block, the code after a rendezvous call), for every value of a lanes function
// in time linear in its uses.
//
// A value defined in block D and used in block U (a phi's use: at the end of the incoming
// block) is live across a rendezvous when a path from a resume block r (other than D) to U
// avoids D: D dominates U, so every path from the entry to r then passes D, and the value
// the lane holds at r is still needed. Each block knows the resume blocks that reach it (one
// forward walk from each resume block). A resume block that reaches U but not D reaches it
// only along such paths; one that reaches D as well has such a path only if D dominates it
// (as above), so D reaches it too: r and D lie on one cycle (a loop with a rendezvous in
// it). Values defined on such a cycle walk their paths one value at a time, as every value
// did before (quadratic in large kernels: an fp8 tl.dot of 4,096 unrolled steps spent 29 s
// of its build there).
#include "pass.h"

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
    reached.assign(n, BitVector(resume.size()));
    // From the entry first: a resume block it does not reach leaves every value walking.
    SmallPtrSet<BasicBlock *, 32> live{&g.getEntryBlock()};
    SmallVector<BasicBlock *, 64> work{&g.getEntryBlock()};
    while (!work.empty())
        for (BasicBlock *s : successors(work.pop_back_val()))
            if (live.insert(s).second) work.push_back(s);
    for (BasicBlock *r : resume)
        if (!live.count(r)) return;
    unsigned k = 0;
    for (BasicBlock *r : resume) {
        resumeIndex[r] = k;
        work.push_back(r);
        reached[number.lookup(r)].set(k);
        while (!work.empty()) {
            BasicBlock *b = work.pop_back_val();
            for (BasicBlock *s : successors(b)) {
                BitVector &at = reached[number.lookup(s)];
                if (at.test(k)) continue;
                at.set(k);
                work.push_back(s);
            }
        }
        ++k;
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
