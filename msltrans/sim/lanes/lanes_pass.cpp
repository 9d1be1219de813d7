// msltrans simulator: run a simdgroup as one function (an LLVM pass plugin for clang).
//
// For each generated entry __msl_sim_entry_N whose kernel meets SIMD-group rendezvous
// (SIMD ops, simdgroup and threadgroup barriers), adds __msl_sim_lanes_N: the same kernel
// as one function that runs the lanes of one simdgroup in turn, each up to its next
// rendezvous, like the fibers of the per-thread model but without a context per lane:
//
// - every rendezvous call is split out: the lane publishes (the runtime's msl_sim_lanes_*
//   variant, which never blocks; at a SIMD op or simdgroup barrier a lane that neither
//   starts nor releases it writes what that variant would, inline), keeps where it stopped
//   in a per-lane resume slot and goes back to the loop head; resumed, it reads the call's
//   result from the simdgroup's view;
// - values live across a rendezvous, and every stack object, get one copy per lane (32
//   slots, indexed by the lane the loop head chose);
// - the loop head takes the next ready lane of the pass from the runtime's view of the
//   simdgroup (its lanes' states in schedule order) and asks the runtime
//   (msl_sim_lanes_next) only at the end of a pass, after a threadgroup barrier and on an
//   error: it starts the next pass or blocks the simdgroup while its lanes wait at a
//   threadgroup barrier; then it dispatches on that lane's resume slot.
//
// Which functions reach a rendezvous, and the clone's inlining: reach.cpp.
// simdgroup_matrix ops take the shim's lanes path (msl_sim_lanes_mode() is 1 here, 0 in
// every other function): matrix.cpp counts loads and stores inline and makes runs of
// multiply-accumulates rendezvous computed once per simdgroup. The 32 copies of each stack
// object lie side by side, in the runtime's memory when they are too large for the stack.
//
// Kernels it does not handle keep only their per-thread entry (the runtime then uses
// fibers): dynamic stack allocations, indirect calls, matrix operands that are not stack
// objects, per-lane stack objects over LANES_HEAP_LIMIT bytes. The per-thread entry is left
// unchanged.
#include "pass.h"

#include "llvm/ADT/SmallPtrSet.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/IR/CFG.h"
#include "llvm/IR/InstIterator.h"
#include "llvm/IR/IRBuilder.h"
#include "llvm/IR/Instructions.h"
#include "llvm/IR/IntrinsicInst.h"
#include "llvm/IR/Module.h"
#include "llvm/IR/PassManager.h"
#include "llvm/IR/Verifier.h"
#include "llvm/Passes/PassBuilder.h"
#include "llvm/Passes/PassPlugin.h"
#include "llvm/Support/raw_ostream.h"
#include "llvm/Transforms/Scalar/InstSimplifyPass.h"
#include "llvm/Transforms/Scalar/LoopDeletion.h"
#include "llvm/Transforms/Scalar/LoopPassManager.h"
#include "llvm/Transforms/Scalar/SimplifyCFG.h"
#include "llvm/Transforms/Utils/BasicBlockUtils.h"
#include "llvm/Transforms/Utils/Cloning.h"
#include "llvm/Transforms/Utils/Local.h"

#include <string>

namespace lanes_pass {
const char *const LANES_MMA = "msl_sim_lanes_mma";

bool isNamed(const Function *f, const char *name) { return f && f->getName() == name; }

FunctionCallee runtimeFn(Module &m, StringRef name, FunctionType *type) {
    FunctionCallee fn = m.getOrInsertFunction(name, type);
    if (auto *f = dyn_cast<Function>(fn.getCallee())) {
        f->addFnAttr(Attribute::NonLazyBind);
        f->addFnAttr(Attribute::NoUnwind);
    }
    return fn;
}
}  // namespace lanes_pass

using namespace llvm;
using namespace lanes_pass;

namespace {

constexpr uint64_t LANES_STACK_LIMIT = 192 * 1024;   // all lanes' stack objects, on the stack
constexpr uint64_t LANES_HEAP_LIMIT = 16 << 20;      // in the runtime's memory (lanes.c)
// A lanes function larger than this is left out (the kernel runs on fibers): every value
// live across a rendezvous is a store and its uses loads, so one-warp kernels with thousands
// of SIMD ops grow to hundreds of thousands of instructions, on which the optimiser's late
// passes take minutes (a one-warp kernel of ten 2,048-element scans: 467,000 instructions,
// 35 s of CPU in one InstCombine run), for a kernel whose per-thread entry builds in seconds.
constexpr unsigned LANES_MAX_INSTRUCTIONS = 150000;
// Nor is one with more rendezvous sites than this: each is a case of the loop head's dispatch
// and a resume block that the live values' slots reach, and code generation grows faster than
// the sites (a one- and two-warp kernel of seven row reductions over 32 rows a thread, 1,120
// simd_shuffle_xor sites, 108,000 lines of IR: minutes in code generation, where its per-thread
// entry takes 1.9 s). Fibers run such a kernel's one threadgroup in milliseconds.
constexpr unsigned LANES_MAX_SITES = 256;

const char *const ENTRY_PREFIX = "__msl_sim_entry_";
const char *const LANES_PREFIX = "__msl_sim_lanes_";

// The view's fields (runtime sched.h) a lane's inline publish uses.
struct Publish {
    Value *sg, *sites, *fiberBytes, *state, *slots, *buffers;
};

// A lane's publish at a SIMD op or simdgroup barrier (`call`) without the runtime's call,
// doing what exchange() (runtime rendezvous.c) does for a lane that neither starts nor
// releases the rendezvous, where the first lane waits at the same site record: b branches
// to the returned block (the publish done) when so, to `slow` otherwise. Nullptr, nothing
// emitted, for other rendezvous and payloads of unknown or too large size.
BasicBlock *publishInline(IRBuilder<> &b, const Publish &v, CallInst &call, Value *lane,
                          Value *lane64, BasicBlock *slow) {
    constexpr uint64_t EXCHANGE_BYTES = 128, WAIT_SIMD = 2;   // abi.h, sched.h
    StringRef name = call.getCalledFunction()->getName();
    Value *data = nullptr;
    uint64_t size = 0;
    if (name == "msl_sim_simd_exchange") {
        auto *n = dyn_cast<ConstantInt>(call.getArgOperand(2));
        if (!n || n->getZExtValue() > EXCHANGE_BYTES) return nullptr;
        data = call.getArgOperand(1);
        size = n->getZExtValue();
    } else if (name != "msl_sim_simdgroup_barrier") {
        return nullptr;
    }
    LLVMContext &ctx = call.getContext();
    Type *i8 = b.getInt8Ty(), *i32 = b.getInt32Ty();
    PointerType *ptr = PointerType::get(ctx, 0);
    Value *site = call.getArgOperand(0);
    // msl_sim_simdgroup: live at 4, waiting at 8, gen at 12, waiting_mask at 24, site0 at 40.
    auto field = [&](IRBuilder<> &at, uint64_t offset) {
        return at.CreateConstInBoundsGEP1_64(i8, v.sg, offset);
    };
    Value *waiting = b.CreateLoad(i32, field(b, 8));
    Value *after = b.CreateAdd(waiting, ConstantInt::get(i32, 1));
    Value *middle = b.CreateAnd(
        {b.CreateICmpNE(waiting, ConstantInt::get(i32, 0)),
         b.CreateICmpNE(after, b.CreateLoad(i32, field(b, 4))),
         b.CreateICmpEQ(b.CreateLoad(ptr, field(b, 40)), site)});
    BasicBlock *fast =
        BasicBlock::Create(ctx, "lanes.publish.inline", b.GetInsertBlock()->getParent());
    b.CreateCondBr(middle, fast, slow);
    IRBuilder<> fb(fast);
    Value *buffer = fb.CreateAnd(fb.CreateLoad(i32, field(fb, 12)), ConstantInt::get(i32, 1));
    if (size) {
        Value *slots = fb.CreateLoad(
            ptr, fb.CreateInBoundsGEP(ptr, v.slots, fb.CreateZExt(buffer, fb.getInt64Ty())));
        Value *slot = fb.CreateInBoundsGEP(
            i8, slots, fb.CreateMul(lane64, fb.getInt64(EXCHANGE_BYTES)));
        fb.CreateMemCpy(slot, Align(1), data, Align(1), size);
    }
    fb.CreateStore(ConstantInt::get(i8, WAIT_SIMD), fb.CreateInBoundsGEP(i8, v.state, lane64));
    fb.CreateStore(site, fb.CreateInBoundsGEP(i8, v.sites, fb.CreateMul(lane64, v.fiberBytes)));
    Value *mask = field(fb, 24);
    fb.CreateStore(fb.CreateOr(fb.CreateLoad(i32, mask),
                               fb.CreateShl(ConstantInt::get(i32, 1), lane)), mask);
    fb.CreateStore(fb.CreateTrunc(buffer, i8), fb.CreateInBoundsGEP(i8, v.buffers, lane64));
    fb.CreateStore(after, field(fb, 8));
    return fast;
}

std::string transform(Function &g, Argument *threadArg) {
    Module &m = *g.getParent();
    LLVMContext &ctx = m.getContext();
    const DataLayout &dl = m.getDataLayout();
    Type *i32 = Type::getInt32Ty(ctx), *i64 = Type::getInt64Ty(ctx), *i8 = Type::getInt8Ty(ctx);
    PointerType *ptr = PointerType::get(ctx, 0);

    // Stack objects: static ones only; lifetime markers go (lanes share no slot anyway).
    SmallVector<Instruction *, 16> dead;
    for (Instruction &i : instructions(g)) {
        if (auto *a = dyn_cast<AllocaInst>(&i)) {
            if (a->getParent() != &g.getEntryBlock() || !a->isStaticAlloca())
                return "a dynamic stack allocation";
        } else if (auto *ii = dyn_cast<IntrinsicInst>(&i)) {
            Intrinsic::ID id = ii->getIntrinsicID();
            if (id == Intrinsic::lifetime_start || id == Intrinsic::lifetime_end)
                dead.push_back(ii);
            else if (id == Intrinsic::stacksave || id == Intrinsic::stackrestore)
                return "a dynamic stack allocation";
        }
    }
    for (Instruction *i : dead) i->eraseFromParent();

    // The thread's built-in inputs (the entry's third parameter): asked for where the lane
    // starts; a value like any other from there on.
    if (threadArg && !threadArg->use_empty()) {
        IRBuilder<> tb(&*g.getEntryBlock().getFirstInsertionPt());
        FunctionCallee info = runtimeFn(m, "msl_sim_lanes_info", FunctionType::get(ptr, false));
        threadArg->replaceAllUsesWith(tb.CreateCall(info, {}, "thread"));
    }

    // Matrix loads, stores and fills: counted inline (matrix.cpp), their sites and the
    // rendezvous' made constants first (objects.cpp).
    constantSites(g);
    MatrixCounts counts = inlineMatrixArrivals(g);
    // Arrays of matrices split: each matrix's 32 copies adjacent; stores nothing reads
    // gone (objects.cpp). The counts' slots are read only from the flushes made below.
    tidyObjects(g, counts.slots);

    // Split every rendezvous call into its own block; the code after it starts a resume block.
    struct Site {
        CallInst *call;
        const Rendezvous *kind;
        BasicBlock *resume;
    };
    // Runs of multiply-accumulates (matrix.cpp): each one rendezvous, at its first call.
    SmallVector<Run, 16> runs;
    std::string why = formRuns(g, runs);
    if (!why.empty()) return why;
    DenseMap<CallInst *, unsigned> runOf;
    for (unsigned k = 0; k < runs.size(); ++k) runOf[runs[k].head] = k;

    SmallVector<Site, 32> sites;
    for (Instruction &i : instructions(g))
        if (auto *c = dyn_cast<CallInst>(&i)) {
            if (const Rendezvous *r = rendezvousOf(c->getCalledFunction()))
                sites.push_back({c, r, nullptr});
            else if (runOf.count(c))
                sites.push_back({c, &MATRIX, nullptr});
        }
    if (sites.empty()) return "no rendezvous";
    if (getenv("MSLTRANS_SIM_LANES_TRACE"))
        errs() << "msltrans lanes: " << g.getName() << ": " << sites.size() << " rendezvous sites\n";
    if (sites.size() > LANES_MAX_SITES)
        return "over " + std::to_string(LANES_MAX_SITES) + " rendezvous sites (" +
               std::to_string(sites.size()) + ")";
    SmallPtrSet<BasicBlock *, 32> resumeBlocks;
    SmallVector<CallInst *, 32> results;
    for (Site &s : sites) {
        SplitBlock(s.call->getParent(), s.call);
        s.resume = SplitBlock(s.call->getParent(), s.call->getNextNode());
        resumeBlocks.insert(s.resume);
        if (s.kind->result && !s.call->use_empty()) {
            FunctionCallee fn =
                runtimeFn(m, s.kind->result, FunctionType::get(s.call->getType(), false));
            IRBuilder<> b(&*s.resume->getFirstInsertionPt());
            CallInst *r = b.CreateCall(fn, {});
            r->setDebugLoc(s.call->getDebugLoc());
            s.call->replaceAllUsesWith(r);
            results.push_back(r);
        }
    }

    // Values live across a rendezvous go to memory (the stack objects made per lane below),
    // but for addresses within stack objects (objects.cpp).
    LiveAcross liveAcross(g, resumeBlocks);   // live.cpp; the CFG stays as it is until demoted
    rematerializeAddresses(g, liveAcross);
    SmallVector<Instruction *, 64> demote;
    for (Instruction &i : instructions(g)) {
        if (isa<AllocaInst>(i) || i.getType()->isVoidTy() || i.use_empty()) continue;
        if (liveAcross(i)) demote.push_back(&i);
    }
    for (Instruction *i : demote) DemoteRegToStack(*i);

    // lanes.entry: one block of 32 copies per stack object, and the lanes' resume slots.
    BasicBlock *oldEntry = &g.getEntryBlock();
    BasicBlock *entry = BasicBlock::Create(ctx, "lanes.entry", &g, oldEntry);
    BasicBlock *head = BasicBlock::Create(ctx, "lanes.next", &g, oldEntry);
    BasicBlock *done = BasicBlock::Create(ctx, "lanes.done", &g, oldEntry);
    BasicBlock *body = BasicBlock::Create(ctx, "lanes.resume", &g, oldEntry);
    IRBuilder<> eb(entry);
    SmallVector<AllocaInst *, 64> allocas;
    for (Instruction &i : *oldEntry)
        if (auto *a = dyn_cast<AllocaInst>(&i))
            if (std::find(counts.slots.begin(), counts.slots.end(), a) == counts.slots.end())
                allocas.push_back(a);
    for (AllocaInst *a : counts.slots) a->moveBefore(*entry, entry->begin());
    // The 32 copies of each stack object side by side (lane l's at block + l * stride): a
    // simdgroup-wide op, and the lanes running one stretch of code in turn, touch adjacent
    // memory.
    uint64_t total = 0;
    SmallVector<std::pair<AllocaInst *, Place>, 64> places;
    DenseMap<AllocaInst *, Place> placeOf;
    for (AllocaInst *a : allocas) {
        std::optional<TypeSize> size = a->getAllocationSize(dl);
        if (!size || size->isScalable()) return "a stack object of unknown size";
        uint64_t align = a->getAlign().value();
        if (align > 64) return "a stack object aligned to more than 64 bytes";
        uint64_t stride = alignTo(std::max<uint64_t>(size->getFixedValue(), 1), align);
        total = alignTo(total, std::max<uint64_t>(align, 16));
        places.push_back({a, {total, stride}});
        placeOf[a] = {total, stride};
        total += stride * LANES;
    }
    total = alignTo(std::max<uint64_t>(total, 1), 64);
    if (total > LANES_HEAP_LIMIT) return "stack objects too large for 32 copies";
    // Its size, for the library to report (Kernel.lanes_frame_bytes).
    new GlobalVariable(m, i64, true, GlobalValue::ExternalLinkage, ConstantInt::get(i64, total),
                       g.getName() + "_frame_bytes");
    Value *frames;
    if (total <= LANES_STACK_LIMIT) {
        AllocaInst *onStack = eb.CreateAlloca(ArrayType::get(i8, total), nullptr, "lanes.frames");
        onStack->setAlignment(Align(64));
        frames = onStack;
    } else {
        FunctionCallee heap =
            runtimeFn(m, "msl_sim_lanes_frames", FunctionType::get(ptr, {i64}, false));
        frames = eb.CreateCall(heap, {ConstantInt::get(i64, total)}, "lanes.frames");
    }
    AllocaInst *resumeSlots = eb.CreateAlloca(ArrayType::get(i32, LANES), nullptr, "lanes.at");
    resumeSlots->setAlignment(Align(16));
    eb.CreateMemSet(resumeSlots, ConstantInt::get(i8, 0), LANES * 4, Align(16));
    // The simdgroup's view (runtime sched.h, struct msl_sim_lanes_view): its fields stay
    // the same for the whole call.
    FunctionCallee viewFn = runtimeFn(m, "msl_sim_lanes_view", FunctionType::get(ptr, false));
    StructType *viewTy = StructType::get(ctx, {ptr, ptr, ptr, ptr, ptr, ptr, ptr, i32, i32,
                                               ArrayType::get(ptr, 2), ptr, ptr, ptr, ptr, i64});
    Value *view = eb.CreateCall(viewFn, {}, "lanes.view");
    auto field = [&](unsigned k, Type *t, const char *name) {
        return eb.CreateLoad(t, eb.CreateStructGEP(viewTy, view, k), name);
    };
    Value *vState = field(0, ptr, "lanes.state"), *vOrder = field(1, ptr, "lanes.order");
    Value *vPos = field(2, ptr, "lanes.pos"), *vProgress = field(3, ptr, "lanes.progress");
    Value *vCurrent = field(4, ptr, "lanes.current"), *vRestart = field(5, ptr, "lanes.restart");
    Value *vError = field(6, ptr, "lanes.error"), *vFirst = field(7, i32, "lanes.first");
    Value *vLanes = field(8, i32, "lanes.count");
    Value *vMasks = field(10, ptr, "lanes.masks"), *vBuffers = field(11, ptr, "lanes.buffers");
    Value *vSlots = eb.CreateStructGEP(viewTy, view, 9, "lanes.gen_slots");
    Publish inlined{field(12, ptr, "lanes.sg"), field(13, ptr, "lanes.sites"),
                    field(14, i64, "lanes.fiber_bytes"), vState, vSlots, vBuffers};
    eb.CreateBr(head);

    // The loop head: the next ready lane of the pass, found here as msl_sim_lanes_next
    // would; the runtime is asked when the passes restart, on an error, and at the end of
    // the pass (it then starts the next pass or blocks the simdgroup).
    BasicBlock *scan = BasicBlock::Create(ctx, "lanes.scan", &g, oldEntry);
    BasicBlock *scanTest = BasicBlock::Create(ctx, "lanes.scan.test", &g, oldEntry);
    BasicBlock *found = BasicBlock::Create(ctx, "lanes.found", &g, oldEntry);
    BasicBlock *slow = BasicBlock::Create(ctx, "lanes.ask", &g, oldEntry);
    BasicBlock *asked = BasicBlock::Create(ctx, "lanes.asked", &g, oldEntry);
    IRBuilder<> hb(head);
    Value *flags = hb.CreateOr(hb.CreateLoad(i32, vRestart), hb.CreateLoad(i32, vError));
    Value *p0 = hb.CreateLoad(i32, vPos, "lanes.p0");
    hb.CreateCondBr(hb.CreateICmpNE(flags, ConstantInt::get(i32, 0)), slow, scan);
    IRBuilder<> sb(scan);
    PHINode *p = sb.CreatePHI(i32, 2, "lanes.p");
    Value *p1 = sb.CreateAdd(p, ConstantInt::get(i32, 1), "lanes.p1");
    p->addIncoming(p0, head);
    sb.CreateCondBr(sb.CreateICmpSLT(p1, vLanes), scanTest, slow);
    IRBuilder<> tb(scanTest);
    Value *l8 = tb.CreateLoad(i8, tb.CreateInBoundsGEP(i8, vOrder, tb.CreateSExt(p1, i64)));
    Value *l = tb.CreateZExt(l8, i32, "lanes.l");
    Value *stateAt = tb.CreateInBoundsGEP(i8, vState, tb.CreateZExt(l8, i64));
    Value *ready = tb.CreateICmpEQ(tb.CreateLoad(i8, stateAt), ConstantInt::get(i8, 0));
    tb.CreateCondBr(ready, found, scan);
    p->addIncoming(p1, scanTest);
    IRBuilder<> fb(found);
    fb.CreateStore(ConstantInt::get(i8, 1), stateAt);                // RUNNING
    fb.CreateStore(fb.CreateAdd(vFirst, l), vCurrent);
    fb.CreateStore(ConstantInt::get(i8, 1), vProgress);
    fb.CreateStore(p1, vPos);
    fb.CreateBr(body);
    IRBuilder<> ab(slow);
    FunctionCallee next = runtimeFn(m, "msl_sim_lanes_next", FunctionType::get(i32, false));
    FunctionCallee ret =
        runtimeFn(m, "msl_sim_lanes_return", FunctionType::get(Type::getVoidTy(ctx), false));
    CallInst *asks = ab.CreateCall(next, {}, "lanes.asked");
    ab.CreateCondBr(ab.CreateICmpSLT(asks, ConstantInt::get(i32, 0)), done, asked);
    BranchInst::Create(body, asked);
    ReturnInst::Create(ctx, done);

    IRBuilder<> bb(body);
    PHINode *lane = bb.CreatePHI(i32, 2, "lane");
    lane->addIncoming(l, found);
    lane->addIncoming(asks, asked);
    Value *lane64 = bb.CreateZExt(lane, i64);
    resetMatrixCounts(bb, counts, lane);
    // The lane's copies start at frames + lane * stride, one address per distinct stride
    // made where the lane resumes; each use of a stack object adds its block's offset where
    // it is (a constant displacement; an address per object carried from the loop head
    // would be one more register, or spill, per object). Few users of the frames also keep
    // the optimiser's walks over them short (InstCombine revisits an alloca each time one of
    // its users changes and walks all of its users).
    DenseMap<uint64_t, Value *> laneBase;
    for (auto &[a, place] : places) {
        Value *&base = laneBase[place.stride];
        if (!base)
            base = bb.CreateInBoundsGEP(
                i8, frames, bb.CreateMul(lane64, ConstantInt::get(i64, place.stride)), "lanes.copy");
        auto copyAt = [&, base = base, &place = place](IRBuilder<> &ub) {
            return ub.CreateConstInBoundsGEP1_64(i8, base, place.block);
        };
        replaceAtUses(a, copyAt);
        a->eraseFromParent();
    }
    // A SIMD op's result, as clang returns msl_sim_simd_result ({slots, active | lane << 32}):
    // the slots and mask of the generation the lane published in.
    StructType *resultTy = StructType::get(ctx, {ptr, i64});
    for (CallInst *r : results) {
        if (r->getType() != resultTy) continue;   // another ABI: keep the call
        IRBuilder<> rb(r);
        Value *buffer = rb.CreateZExt(
            rb.CreateLoad(i8, rb.CreateInBoundsGEP(i8, vBuffers, lane64)), i64, "lanes.buffer");
        Value *slots = rb.CreateLoad(ptr, rb.CreateInBoundsGEP(ptr, vSlots, buffer));
        Value *active = rb.CreateLoad(i32, rb.CreateInBoundsGEP(i32, vMasks, buffer));
        Value *packed = rb.CreateOr(rb.CreateZExt(active, i64),
                                    rb.CreateShl(lane64, ConstantInt::get(i64, 32)));
        Value *v = rb.CreateInsertValue(PoisonValue::get(resultTy), slots, {0});
        v = rb.CreateInsertValue(v, packed, {1});
        r->replaceAllUsesWith(v);
        r->eraseFromParent();
    }
    Value *slot = bb.CreateInBoundsGEP(i32, resumeSlots, lane64, "lanes.slot");
    Value *at = bb.CreateLoad(i32, slot, "lanes.resume_at");
    SwitchInst *sw = bb.CreateSwitch(at, oldEntry, sites.size());

    // Each rendezvous: publish, remember where to resume, back to the loop head.
    FunctionCallee matrixFn =
        runtimeFn(m, MATRIX.lanes, FunctionType::get(i32, {ptr, i32, i64, ptr, ptr}, false));
    FunctionCallee checkFn = runtimeFn(m, "msl_sim_lanes_matrix_check",
                                       FunctionType::get(i32, {ptr, i32, ptr, i32}, false));
    unsigned index = 0;
    for (Site &s : sites) {
        ++index;
        sw->addCase(cast<ConstantInt>(ConstantInt::get(i32, index)), s.resume);
        // Its matrix loads and stores since it resumed (a run's publish takes them along).
        if (s.kind != &MATRIX) flushMatrixCounts(counts, s.call);
        BasicBlock *b = s.call->getParent();
        IRBuilder<> cb(s.call);
        if (s.kind == &MATRIX) {
            // Publish the site, stop here; the lane whose arrival releases the rendezvous
            // checks that every lane stopped at this call and computes the run.
            CallInst *c = s.call;
            Value *site = runs[runOf.lookup(c)].site;
            cb.CreateStore(ConstantInt::get(i32, index), slot);
            SmallVector<Value *, 5> args{site};
            matrixCounts(cb, counts, args);
            CallInst *released = cb.CreateCall(matrixFn, args);
            released->setDebugLoc(c->getDebugLoc());
            BasicBlock *check = BasicBlock::Create(ctx, "lanes.mma.check", &g);
            BasicBlock *ops = BasicBlock::Create(ctx, "lanes.mma.run", &g);
            cb.CreateCondBr(cb.CreateICmpNE(released, ConstantInt::get(i32, 0)), check, head);
            IRBuilder<> kb(check);
            Value *ok = kb.CreateCall(
                checkFn, {resumeSlots, ConstantInt::get(i32, index), site,
                          ConstantInt::get(i32, runs[runOf.lookup(c)].ops.size())});
            kb.CreateCondBr(kb.CreateICmpNE(ok, ConstantInt::get(i32, 0)), ops, head);
            IRBuilder<> ob(ops);
            emitRun(ob, frames, runs[runOf.lookup(c)], placeOf, c->getDebugLoc());
            ob.CreateBr(head);
            b->getTerminator()->eraseFromParent();
            c->eraseFromParent();
            continue;
        }
        SmallVector<Type *, 4> types;
        SmallVector<Value *, 4> args;
        for (Value *a : s.call->args()) {
            types.push_back(a->getType());
            args.push_back(a);
        }
        FunctionCallee publish =
            runtimeFn(m, s.kind->lanes, FunctionType::get(Type::getVoidTy(ctx), types, false));
        b->getTerminator()->eraseFromParent();
        IRBuilder<> pb(b);
        // A lane in the middle of the rendezvous publishes inline, the others call.
        BasicBlock *call = BasicBlock::Create(ctx, "lanes.publish", &g);
        if (BasicBlock *fast = publishInline(pb, inlined, *s.call, lane, lane64, call)) {
            IRBuilder<> fb(fast);
            fb.CreateStore(ConstantInt::get(i32, index), slot);
            fb.CreateBr(head);
            pb.SetInsertPoint(call);
        } else {
            call->eraseFromParent();
        }
        CallInst *p = pb.CreateCall(publish, args);
        p->setDebugLoc(s.call->getDebugLoc());
        pb.CreateStore(ConstantInt::get(i32, index), slot);
        pb.CreateBr(head);
        s.call->eraseFromParent();
    }
    // A lane that returns is done; the others go on.
    SmallVector<ReturnInst *, 8> rets;
    for (BasicBlock &b : g)
        if (&b != done)
            if (auto *r = dyn_cast<ReturnInst>(b.getTerminator())) rets.push_back(r);
    for (ReturnInst *r : rets) {
        flushMatrixCounts(counts, r);
        IRBuilder<> rb(r);
        rb.CreateCall(ret, {})->setDebugLoc(r->getDebugLoc());
        rb.CreateBr(head);
        r->eraseFromParent();
    }
    return "";
}

struct LanesPass : PassInfoMixin<LanesPass> {
    PreservedAnalyses run(Module &m, ModuleAnalysisManager &mam) {
        FunctionAnalysisManager &fam =
            mam.getResult<FunctionAnalysisManagerModuleProxy>(m).getManager();
        const char *trace = getenv("MSLTRANS_SIM_LANES_TRACE");
        Reach r = reach(m);
        SmallVector<Function *, 8> entries;
        for (Function &f : m)
            if (!f.isDeclaration() && f.getName().starts_with(ENTRY_PREFIX)) entries.push_back(&f);
        bool changed = false;
        for (Function *e : entries) {
            std::string why;
            if (!r.rendezvous.count(e)) why = "no rendezvous";
            Function *g = nullptr;
            if (why.empty()) {
                ValueToValueMapTy map;
                g = CloneFunction(e, map);
                g->setName(std::string(LANES_PREFIX) +
                           e->getName().drop_front(strlen(ENTRY_PREFIX)).str());
                g->setLinkage(GlobalValue::ExternalLinkage);
                g->addFnAttr(Attribute::NoInline);
                why = inlineAll(*g, r);
                if (why.empty() && setLanesMode(*g, 1)) {
                    // Fold the shim's per-thread paths away (the matrix handles and their
                    // runtime calls), so that runs of multiply-accumulates are adjacent, and
                    // the loops left empty (destructors of matrix arrays) with them.
                    FunctionPassManager fpm;
                    fpm.addPass(InstSimplifyPass());
                    fpm.addPass(SimplifyCFGPass());
                    fpm.addPass(createFunctionToLoopPassAdaptor(LoopDeletionPass()));
                    fpm.addPass(SimplifyCFGPass());
                    fpm.run(*g, fam);
                    fam.clear(*g, g->getName());
                }
                if (why.empty()) why = fibersOnlyIn(*g, r);
                if (why.empty()) why = transform(*g, g->arg_size() > 2 ? g->getArg(2) : nullptr);
                if (why.empty() && g->getInstructionCount() > LANES_MAX_INSTRUCTIONS)
                    why = "over " + std::to_string(LANES_MAX_INSTRUCTIONS) +
                          " instructions (the optimiser's time on it: minutes)";
                if (why.empty() && verifyFunction(*g, &errs())) why = "internal error (verifier)";
                if (!why.empty()) {
                    g->eraseFromParent();
                    g = nullptr;
                }
            }
            if (trace)
                errs() << "msltrans lanes: " << e->getName() << ": "
                       << (g ? "lanes" : "fibers (" + why + ")") << "\n";
            changed |= g != nullptr;
        }
        // Everywhere else the shim takes its per-thread paths.
        for (Function &f : m)
            if (!f.getName().starts_with(LANES_PREFIX)) changed |= setLanesMode(f, 0);
        return changed ? PreservedAnalyses::none() : PreservedAnalyses::all();
    }
};

}  // namespace

extern "C" LLVM_ATTRIBUTE_WEAK PassPluginLibraryInfo llvmGetPassPluginInfo() {
    return {LLVM_PLUGIN_API_VERSION, "msltrans-lanes", "1",
            [](PassBuilder &pb) {
                pb.registerOptimizerEarlyEPCallback(
                    [](ModulePassManager &mpm, OptimizationLevel) {
                        mpm.addPass(LanesPass());
                    });
            }};
}
