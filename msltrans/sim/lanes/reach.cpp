// msltrans simulator's lanes pass: which functions reach a rendezvous or need fibers, and
// the clone of an entry with everything that reaches a rendezvous inlined (lanes_pass.cpp
// makes that clone the lanes function).
#include "pass.h"

#include "llvm/IR/InstIterator.h"
#include "llvm/Transforms/Utils/Cloning.h"

namespace lanes_pass {
namespace {

const Rendezvous RENDEZVOUS[] = {
    {"msl_sim_simd_exchange", "msl_sim_lanes_exchange", "msl_sim_lanes_exchange_result"},
    {"msl_sim_simdgroup_barrier", "msl_sim_lanes_simdgroup_barrier", nullptr},
    {"msl_sim_threadgroup_barrier", "msl_sim_lanes_threadgroup_barrier", nullptr},
};
// Runtime calls that need the per-thread model (fibers).
const char *const FIBERS_ONLY[] = {"msl_sim_mma_record", "msl_sim_mma_wait", "msl_sim_mma_free",
                                   "msl_sim_mma_complete"};
// The shim's lanes-mode switch (1 in a lanes entry, 0 everywhere else).
const char *const LANES_MODE = "msl_sim_lanes_mode";

bool fibersOnly(const Function *f) {
    if (!f) return false;
    for (const char *name : FIBERS_ONLY)
        if (f->getName() == name) return true;
    return false;
}

}  // namespace

const Rendezvous MATRIX = {"msl_sim_lanes_mma", "msl_sim_lanes_matrix", nullptr};

const Rendezvous *rendezvousOf(const Function *f) {
    if (!f) return nullptr;
    for (const Rendezvous &r : RENDEZVOUS)
        if (f->getName() == r.name) return &r;
    return nullptr;
}

Reach reach(Module &m) {
    Reach r;
    bool changed = true;
    while (changed) {
        changed = false;
        for (Function &f : m) {
            if (f.isDeclaration()) continue;
            bool hasR = r.rendezvous.count(&f), hasX = r.refuse.count(&f);
            for (Instruction &i : instructions(f)) {
                auto *cb = dyn_cast<CallBase>(&i);
                if (!cb) continue;
                Function *callee = cb->getCalledFunction();
                bool lanesCall = isNamed(callee, LANES_MODE) || isNamed(callee, LANES_MMA);
                if (!hasR && (rendezvousOf(callee) || lanesCall ||
                              (callee && r.rendezvous.count(callee)))) {
                    r.rendezvous.insert(&f);
                    hasR = changed = true;
                }
                if (!hasX && (fibersOnly(callee) || (callee && r.refuse.count(callee)))) {
                    r.refuse.insert(&f);
                    hasX = changed = true;
                }
            }
        }
    }
    return r;
}

// Replaces every call of the lanes-mode switch in `f` by `value`; whether there was one.
bool setLanesMode(Function &f, int value) {
    SmallVector<CallInst *, 16> calls;
    for (Instruction &i : instructions(f))
        if (auto *c = dyn_cast<CallInst>(&i))
            if (isNamed(c->getCalledFunction(), LANES_MODE)) calls.push_back(c);
    for (CallInst *c : calls) {
        c->replaceAllUsesWith(ConstantInt::get(c->getType(), value));
        c->eraseFromParent();
    }
    return !calls.empty();
}

// What of `g` (lanes mode set, its other paths folded away) still needs fibers, or "".
std::string fibersOnlyIn(Function &g, const Reach &r) {
    for (Instruction &i : instructions(g))
        if (auto *cb = dyn_cast<CallBase>(&i)) {
            Function *callee = cb->getCalledFunction();
            if (fibersOnly(callee) || (callee && r.refuse.count(callee)))
                return "simdgroup_matrix ops outside the lanes path";
        }
    return "";
}

// Why `g` (the clone, everything that reaches a rendezvous inlined) cannot run as lanes,
// or "".
std::string inlineAll(Function &g, const Reach &r) {
    for (unsigned round = 0; round < 64; ++round) {
        SmallVector<CallBase *, 16> calls;
        for (Instruction &i : instructions(g)) {
            auto *cb = dyn_cast<CallBase>(&i);
            if (!cb) continue;
            Function *callee = cb->getCalledFunction();
            if (!callee && !cb->isInlineAsm()) return "an indirect call";
            if (callee && !callee->isDeclaration() && r.rendezvous.count(callee))
                calls.push_back(cb);
        }
        if (calls.empty()) return "";
        for (CallBase *cb : calls) {
            InlineFunctionInfo info;
            if (!InlineFunction(*cb, info).isSuccess()) return "a call that cannot be inlined";
        }
    }
    return "calls nested too deeply";
}

}  // namespace lanes_pass
