// msltrans simulator's lanes pass: simdgroup_matrix ops in a simdgroup's lanes function.
//
// - Matrix loads, stores and fills are counted inline, per lane between rendezvous, and
//   added to the lane's count and site hash at its next rendezvous (the runtime's
//   uniformity check then sees what it sees on fibers).
// - Runs of multiply-accumulates are one rendezvous each; the lane that releases it checks
//   that every lane stopped at the same call and computes the run's ops once for the
//   simdgroup, on the lanes' copies of the operands.
#include "pass.h"

#include "llvm/ADT/SmallPtrSet.h"
#include "llvm/Analysis/ValueTracking.h"
#include "llvm/IR/InstIterator.h"
#include "llvm/IR/IntrinsicInst.h"
#include "llvm/Transforms/Utils/BasicBlockUtils.h"

namespace lanes_pass {

MatrixCounts inlineMatrixArrivals(Function &g) {
    Module &m = *g.getParent();
    LLVMContext &ctx = m.getContext();
    Type *i32 = Type::getInt32Ty(ctx), *i64 = Type::getInt64Ty(ctx);
    PointerType *ptr = PointerType::get(ctx, 0);
    MatrixCounts counts;
    auto slot = [&](Type *t, const char *name) {
        AllocaInst *a = new AllocaInst(t, 0, name, g.getEntryBlock().getFirstInsertionPt());
        counts.slots.push_back(a);
        return a;
    };
    struct Arrive {
        CallInst *call;
        GlobalVariable *site;
        Constant *field[4];   // file, line, column, kind
    };
    SmallVector<Arrive, 64> arrives;
    bool inlineArrives = true;
    for (Instruction &i : instructions(g))
        if (auto *c = dyn_cast<CallInst>(&i))
            if (isNamed(c->getCalledFunction(), "msl_sim_matrix_arrive")) {
                // Its site a constant (constantSites, objects.cpp), or every call stays.
                auto *site = dyn_cast<GlobalVariable>(c->getArgOperand(0)->stripPointerCasts());
                auto *init = site && site->isConstant() && site->hasInitializer()
                                 ? dyn_cast<ConstantStruct>(site->getInitializer())
                                 : nullptr;
                arrives.push_back({c, site, {}});
                if (!init || init->getNumOperands() != 4) {
                    inlineArrives = false;
                    continue;
                }
                for (unsigned k = 0; k < 4; ++k) arrives.back().field[k] = init->getOperand(k);
                for (unsigned k = 1; k < 4; ++k)
                    if (!isa<ConstantInt>(arrives.back().field[k])) inlineArrives = false;
            }
    if (arrives.empty() || !inlineArrives) return counts;
    {
        AllocaInst *laneSlot = counts.lane = slot(i32, "lanes.lane");
        AllocaInst *mCount = counts.count = slot(i32, "lanes.matrix.count");
        AllocaInst *mHash = counts.hash = slot(i64, "lanes.matrix.hash");
        AllocaInst *mFirst = counts.first = slot(ptr, "lanes.matrix.first");
        AllocaInst *mLast = counts.last = slot(ptr, "lanes.matrix.last");
        for (Arrive &ar : arrives) {
            CallInst *c = ar.call;
            IRBuilder<> ib(c);
            GlobalVariable *site = ar.site;
            uint64_t lck = cast<ConstantInt>(ar.field[1])->getZExtValue() << 40 |
                           cast<ConstantInt>(ar.field[2])->getZExtValue() << 16 |
                           cast<ConstantInt>(ar.field[3])->getZExtValue();
            Value *x =
                ib.CreateXor(ib.CreatePtrToInt(ar.field[0], i64), ConstantInt::get(i64, lck));
            Value *count = ib.CreateLoad(i32, mCount);
            Value *first = ib.CreateICmpEQ(count, ConstantInt::get(i32, 0));
            ib.CreateStore(ib.CreateSelect(first, site, ib.CreateLoad(ptr, mFirst)), mFirst);
            ib.CreateStore(ib.CreateAdd(count, ConstantInt::get(i32, 1)), mCount);
            Value *hash =
                ib.CreateMul(ib.CreateLoad(i64, mHash), ConstantInt::get(i64, 0x100000001b3ull));
            ib.CreateStore(ib.CreateAdd(hash, x), mHash);
            ib.CreateStore(site, mLast);
            c->replaceAllUsesWith(ib.CreateLoad(i32, laneSlot));
            c->eraseFromParent();
        }
    }
    return counts;
}

void resetMatrixCounts(IRBuilder<> &b, const MatrixCounts &counts, Value *lane) {
    if (!counts.lane) return;
    b.CreateStore(lane, counts.lane);
    b.CreateStore(b.getInt32(0), counts.count);
    b.CreateStore(b.getInt64(0), counts.hash);
}

void flushMatrixCounts(const MatrixCounts &counts, Instruction *before) {
    if (!counts.lane) return;
    Module &m = *before->getModule();
    LLVMContext &ctx = m.getContext();
    Type *i32 = Type::getInt32Ty(ctx), *i64 = Type::getInt64Ty(ctx);
    PointerType *ptr = PointerType::get(ctx, 0);
    FunctionCallee flush = runtimeFn(
        m, "msl_sim_lanes_matrix_flush",
        FunctionType::get(Type::getVoidTy(ctx), {i32, i64, ptr, ptr}, false));
    IRBuilder<> fb(before);
    Value *count = fb.CreateLoad(i32, counts.count);
    Instruction *then =
        SplitBlockAndInsertIfThen(fb.CreateICmpNE(count, fb.getInt32(0)), before, false);
    IRBuilder<> tb(then);
    tb.CreateCall(flush, {count, tb.CreateLoad(i64, counts.hash), tb.CreateLoad(ptr, counts.first),
                          tb.CreateLoad(ptr, counts.last)})
        ->setDebugLoc(before->getDebugLoc());
}

void matrixCounts(IRBuilder<> &b, const MatrixCounts &counts, SmallVectorImpl<Value *> &args) {
    PointerType *ptr = b.getPtrTy();
    if (!counts.lane) {
        args.append({b.getInt32(0), b.getInt64(0), ConstantPointerNull::get(ptr),
                     ConstantPointerNull::get(ptr)});
        return;
    }
    args.append({b.CreateLoad(b.getInt32Ty(), counts.count),
                 b.CreateLoad(b.getInt64Ty(), counts.hash), b.CreateLoad(ptr, counts.first),
                 b.CreateLoad(ptr, counts.last)});
}

std::string formRuns(Function &g, SmallVectorImpl<Run> &runs) {
    const DataLayout &dl = g.getParent()->getDataLayout();
    SmallVector<CallInst *, 64> members;   // the calls after each run's head
    for (BasicBlock &b : g) {
        int run = -1;
        for (Instruction &i : b) {
            auto *c = dyn_cast<CallInst>(&i);
            if (c && isNamed(c->getCalledFunction(), LANES_MMA)) {
                Mma op;
                op.op = dyn_cast<Function>(c->getArgOperand(4)->stripPointerCasts());
                if (!op.op) return "a multiply-accumulate through a computed function";
                for (unsigned k = 0; k < 4; ++k) {
                    int64_t offset = 0;
                    Value *base = GetPointerBaseWithConstantOffset(c->getArgOperand(k), offset, dl);
                    auto *a = dyn_cast<AllocaInst>(base);
                    if (!a || offset < 0) return "a matrix operand that is not a stack object";
                    op.x[k] = {a, (uint64_t)offset};
                }
                if (run < 0) {
                    runs.push_back({c, {}, nullptr});
                    run = (int)runs.size() - 1;
                } else {
                    members.push_back(c);
                }
                runs[run].ops.push_back(op);
                continue;
            }
            if (run >= 0 && !i.isTerminator() && !i.mayHaveSideEffects() && !i.mayReadFromMemory())
                continue;
            run = -1;
        }
    }
    for (CallInst *c : members) c->eraseFromParent();
    // Each run's site record (file, line, column, kind 4): the shim passes constants.
    Type *i32 = Type::getInt32Ty(g.getContext());
    SiteConstants made;
    for (Run &r : runs) {
        auto *file = dyn_cast<Constant>(r.head->getArgOperand(5));
        auto *line = dyn_cast<ConstantInt>(r.head->getArgOperand(6));
        auto *col = dyn_cast<ConstantInt>(r.head->getArgOperand(7));
        if (!file || !line || !col) return "a multiply-accumulate whose site is not a constant";
        r.site = siteConstant(*g.getParent(), {file, line, col, ConstantInt::get(i32, 4)}, made);
    }
    return "";
}

void emitRun(IRBuilder<> &b, Value *frames, const Run &run,
             const DenseMap<AllocaInst *, Place> &placeOf, DebugLoc loc) {
    Type *i64 = b.getInt64Ty();
    for (const Mma &op : run.ops) {
        SmallVector<Value *, 8> args;
        for (unsigned k = 0; k < 4; ++k) {
            Place place = placeOf.lookup(op.x[k].object);
            Value *at = ConstantInt::get(i64, place.block + op.x[k].offset);
            args.push_back(b.CreateInBoundsGEP(b.getInt8Ty(), frames, at));
            args.push_back(ConstantInt::get(i64, place.stride));
        }
        b.CreateCall(op.op->getFunctionType(), op.op, args)->setDebugLoc(loc);
    }
}

}  // namespace lanes_pass
