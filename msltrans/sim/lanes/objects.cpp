// msltrans simulator's lanes pass: the stack objects of a simdgroup's lanes function.
//
// - Objects holding simdgroup matrices are split into the parts the code touches. A kernel
//   keeps its matrices in arrays (`simdgroup_float8x8 acc[4][8]`), and each matrix object is
//   its two elements and the shim's handle, which lanes mode only ever stores null into.
//   The front end cannot split those arrays (the shim's multiply-accumulate takes their
//   addresses), so one array is one stack object, and its 32 lane copies put lane l's
//   elements of one matrix l * sizeof(array) bytes apart. Split into the byte ranges the
//   code touches, each matrix's elements become an object of their own: their 32 copies are
//   adjacent (lane l's at l * 8 bytes for float), and a multiply-accumulate reads each row
//   as two 16-byte pieces (the shim's packed path, matrix.h). Ranges that are only ever
//   written (the handles) go away.
// - In every other object accessed only at constant offsets, stores into bytes nothing
//   reads go too (call-site records whose reading call lanes mode folded away): in lanes
//   mode each was a store per lane to memory that stays.
// - Call-site records the shim fills with constants before a rendezvous or a matrix load
//   become constants (no stores per lane).
// - An object's address plus a constant, used after a rendezvous, is computed again where
//   it is used rather than kept per lane across the rendezvous (each use of an object
//   computes the lane's copy anyway: a kept address is a store and a reload per use).
#include "pass.h"

#include "llvm/ADT/SmallPtrSet.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/Analysis/ValueTracking.h"
#include "llvm/IR/InstIterator.h"
#include "llvm/IR/IntrinsicInst.h"

#include <algorithm>
#include <array>

namespace lanes_pass {
namespace {

struct Access {
    uint64_t lo, hi;    // the bytes it touches, from the object's start
    Instruction *user;  // a load, store, memset or multiply-accumulate
    unsigned operand;   // which of its operands is the address
    bool reads;         // (a load nothing uses does not: it goes with the stores)
};

// Every use of stack object `a` as a constant-offset access (through address arithmetic
// with constant offsets), or false if some use is anything else.
bool collect(AllocaInst *a, SmallVectorImpl<Access> &out, bool &matrix) {
    const DataLayout &dl = a->getModule()->getDataLayout();
    SmallVector<std::pair<Value *, uint64_t>, 16> work{{a, 0}};
    while (!work.empty()) {
        auto [v, at] = work.pop_back_val();
        for (Use &u : v->uses()) {
            auto *user = cast<Instruction>(u.getUser());
            unsigned no = u.getOperandNo();
            if (auto *gep = dyn_cast<GetElementPtrInst>(user)) {
                APInt delta(dl.getIndexTypeSizeInBits(gep->getType()), 0);
                if (no != 0 || !gep->accumulateConstantOffset(dl, delta) || delta.isNegative())
                    return false;
                work.push_back({gep, at + delta.getZExtValue()});
            } else if (auto *ld = dyn_cast<LoadInst>(user)) {
                if (ld->isVolatile()) return false;
                uint64_t size = dl.getTypeStoreSize(ld->getType()).getFixedValue();
                out.push_back({at, at + size, ld, no, !ld->use_empty()});   // unused: not a read
            } else if (auto *st = dyn_cast<StoreInst>(user)) {
                if (st->isVolatile() || no != 1) return false;   // the address stored: escapes
                Type *t = st->getValueOperand()->getType();
                uint64_t size = dl.getTypeStoreSize(t).getFixedValue();
                out.push_back({at, at + size, st, no, false});
            } else if (auto *ms = dyn_cast<MemSetInst>(user)) {
                auto *len = dyn_cast<ConstantInt>(ms->getLength());
                if (!len || ms->isVolatile() || no != 0) return false;
                out.push_back({at, at + len->getZExtValue(), ms, no, false});
            } else if (auto *c = dyn_cast<CallInst>(user)) {
                // The shim's multiply-accumulate: operand k's elements are byte k of `sizes`.
                if (!isNamed(c->getCalledFunction(), LANES_MMA) || no >= 4) return false;
                auto *sizes = dyn_cast<ConstantInt>(c->getArgOperand(LANES_MMA_SIZES));
                if (!sizes) return false;
                uint64_t size = (sizes->getZExtValue() >> (8 * no)) & 0xff;
                if (size == 0) return false;
                out.push_back({at, at + size, c, no, true});
                matrix = true;
            } else {
                return false;
            }
        }
    }
    return true;
}

// The byte ranges `a` is split into: the union of its accesses' ranges (a memset may span
// several, and bytes nothing else touches).
SmallVector<std::pair<uint64_t, uint64_t>, 16> parts(SmallVectorImpl<Access> &accesses) {
    SmallVector<std::pair<uint64_t, uint64_t>, 16> ranges, merged;
    for (const Access &x : accesses)
        if (!isa<MemSetInst>(x.user) && x.hi > x.lo) ranges.push_back({x.lo, x.hi});
    std::sort(ranges.begin(), ranges.end());
    for (auto r : ranges) {
        if (!merged.empty() && r.first < merged.back().second)
            merged.back().second = std::max(merged.back().second, r.second);
        else
            merged.push_back(r);
    }
    return merged;
}

void split(AllocaInst *a, SmallVectorImpl<Access> &accesses) {
    LLVMContext &ctx = a->getContext();
    Type *i8 = Type::getInt8Ty(ctx);
    auto ranges = parts(accesses);
    // Whether any access reads each range (one only written is dropped with its stores).
    SmallVector<bool, 16> read(ranges.size(), false);
    auto rangeOf = [&](uint64_t lo) {
        auto it = std::upper_bound(ranges.begin(), ranges.end(), std::make_pair(lo, UINT64_MAX));
        return (unsigned)(it - ranges.begin()) - 1;
    };
    for (const Access &x : accesses)
        if (x.reads) read[rangeOf(x.lo)] = true;
    IRBuilder<> ab(a);
    SmallVector<AllocaInst *, 16> pieces;
    for (unsigned k = 0; k < ranges.size(); ++k) {
        if (!read[k]) {
            pieces.push_back(nullptr);
            continue;
        }
        auto [lo, hi] = ranges[k];
        // Aligned to its size's largest power of two (up to 16), so that its copies' stride
        // is its size; no more than the object gave it (accesses claiming more are lowered
        // below).
        Align align = std::min(Align(std::min<uint64_t>(16, (hi - lo) & -(hi - lo))),
                               commonAlignment(a->getAlign(), lo));
        AllocaInst *piece = ab.CreateAlloca(ArrayType::get(i8, hi - lo), nullptr,
                                            a->getName() + ".part");
        piece->setAlignment(align);
        pieces.push_back(piece);
    }
    SmallVector<Instruction *, 32> gone;
    for (const Access &x : accesses) {
        if (auto *ms = dyn_cast<MemSetInst>(x.user)) {
            IRBuilder<> b(ms);
            for (unsigned k = 0; k < ranges.size(); ++k) {
                uint64_t lo = std::max(x.lo, ranges[k].first);
                uint64_t hi = std::min(x.hi, ranges[k].second);
                if (lo >= hi || !pieces[k]) continue;
                Value *at = b.CreateConstInBoundsGEP1_64(i8, pieces[k], lo - ranges[k].first);
                b.CreateMemSet(at, ms->getValue(), hi - lo, MaybeAlign(1));
            }
            gone.push_back(ms);
            continue;
        }
        unsigned k = rangeOf(x.lo);
        if (!pieces[k]) {
            gone.push_back(x.user);   // a store into a range nothing reads
            continue;
        }
        IRBuilder<> b(x.user);
        uint64_t at = x.lo - ranges[k].first;
        x.user->setOperand(x.operand, b.CreateConstInBoundsGEP1_64(i8, pieces[k], at));
        Align holds = commonAlignment(pieces[k]->getAlign(), at);
        if (auto *ld = dyn_cast<LoadInst>(x.user))
            ld->setAlignment(std::min(ld->getAlign(), holds));
        if (auto *st = dyn_cast<StoreInst>(x.user))
            st->setAlignment(std::min(st->getAlign(), holds));
    }
    for (Instruction *i : gone) i->eraseFromParent();
    // The old address arithmetic, now unused, then the object.
    SmallVector<Instruction *, 32> order = usersTree(a);
    for (auto it = order.rbegin(); it != order.rend(); ++it)
        if ((*it)->use_empty()) (*it)->eraseFromParent();
}

// Stores into bytes of `a` that nothing reads go (a call-site record whose reading call
// lanes mode folded away: each of the lanes' stores to it was a store to memory), and `a`
// with them if nothing is left.
void dropUnread(AllocaInst *a, SmallVectorImpl<Access> &accesses) {
    SmallVector<std::pair<uint64_t, uint64_t>, 16> reads;
    for (const Access &x : accesses)
        if (x.reads) reads.push_back({x.lo, x.hi});
    auto unread = [&](const Access &x) {
        return std::none_of(reads.begin(), reads.end(),
                            [&](auto r) { return r.first < x.hi && x.lo < r.second; });
    };
    for (const Access &x : accesses)
        if (!x.reads && unread(x)) x.user->eraseFromParent();
    // Then its address arithmetic left unused, and itself if nothing is left.
    SmallVector<Instruction *, 32> order{a};
    for (unsigned k = 0; k < order.size(); ++k)
        for (User *u : order[k]->users())
            if (isa<GetElementPtrInst>(u)) order.push_back(cast<Instruction>(u));
    for (auto it = order.rbegin(); it != order.rend(); ++it)
        if ((*it)->use_empty()) (*it)->eraseFromParent();
}

// The shim's calls that take a site object (abi.h): a matrix load or store's count, and the
// rendezvous.
const char *const SITE_CALLS[] = {"msl_sim_matrix_arrive", "msl_sim_simd_exchange",
                                  "msl_sim_simdgroup_barrier", "msl_sim_threadgroup_barrier"};

bool isSiteCall(const CallInst *c, const Value *site) {
    for (const char *name : SITE_CALLS)
        if (isNamed(c->getCalledFunction(), name))
            return c->getArgOperand(0) == site &&
                   std::none_of(c->arg_begin() + 1, c->arg_end(),
                                [&](const Use &u) { return u.get() == site; });
    return false;
}

// The fields of site object `a` (file, line, column, kind) as `call` passes them: the
// constants stored last before it in its block. False if a field is not found so, or if
// anything but stores, their address arithmetic and site calls uses `a` (one object may
// serve several sites, written before each call; transform() has dropped the lifetime
// markers before this runs).
bool constantSite(AllocaInst *a, CallInst *call, Constant *field[4]) {
    const DataLayout &dl = a->getModule()->getDataLayout();
    static const uint64_t offsets[4] = {0, 8, 12, 16};
    SmallVector<Value *, 8> work{a};
    while (!work.empty()) {
        Value *v = work.pop_back_val();
        for (User *u : v->users()) {
            if (isa<GetElementPtrInst>(u)) {
                work.push_back(u);
            } else if (auto *st = dyn_cast<StoreInst>(u)) {
                if (st->getValueOperand() == v) return false;
            } else if (auto *c = dyn_cast<CallInst>(u)) {
                if (!isSiteCall(c, v)) return false;
            } else {
                return false;
            }
        }
    }
    bool found[4] = {false, false, false, false};
    for (Instruction *i = call->getPrevNode(); i; i = i->getPrevNode()) {
        auto *st = dyn_cast<StoreInst>(i);
        if (!st) continue;
        int64_t offset = 0;
        if (GetPointerBaseWithConstantOffset(st->getPointerOperand(), offset, dl) != a) continue;
        for (unsigned k = 0; k < 4; ++k)
            if (offsets[k] == (uint64_t)offset && !found[k]) {
                found[k] = true;
                field[k] = dyn_cast<Constant>(st->getValueOperand());
            }
    }
    for (unsigned k = 1; k < 4; ++k)
        if (!found[k] || !field[k] || !isa<ConstantInt>(field[k])) return false;
    return found[0] && field[0] && field[0]->getType()->isPointerTy();
}

}  // namespace

void replaceAtUses(Value *v, function_ref<Value *(IRBuilder<> &)> make) {
    SmallVector<Use *, 16> uses;
    for (Use &u : v->uses()) uses.push_back(&u);
    for (Use *u : uses) {
        Instruction *where = cast<Instruction>(u->getUser());
        if (auto *phi = dyn_cast<PHINode>(where))
            where = phi->getIncomingBlock(*u)->getTerminator();
        IRBuilder<> b(where);
        u->set(make(b));
    }
}

SmallVector<Instruction *, 32> usersTree(Instruction *root) {
    SmallVector<Instruction *, 32> order{root};
    SmallPtrSet<Instruction *, 32> seen{root};
    for (unsigned k = 0; k < order.size(); ++k)
        for (User *u : order[k]->users())
            if (seen.insert(cast<Instruction>(u)).second) order.push_back(cast<Instruction>(u));
    return order;
}

GlobalVariable *siteConstant(Module &m, ArrayRef<Constant *> fields, SiteConstants &made) {
    LLVMContext &ctx = m.getContext();
    Type *i32 = Type::getInt32Ty(ctx);
    StructType *siteTy = StructType::get(ctx, {PointerType::get(ctx, 0), i32, i32, i32});
    Constant *init = ConstantStruct::get(siteTy, fields);
    GlobalVariable *&site = made[init];
    if (!site)
        site = new GlobalVariable(m, siteTy, true, GlobalValue::PrivateLinkage, init,
                                  "lanes.site");
    return site;
}

void constantSites(Function &g) {
    Module &m = *g.getParent();
    SmallVector<std::pair<CallInst *, AllocaInst *>, 64> calls;
    for (Instruction &i : instructions(g))
        if (auto *c = dyn_cast<CallInst>(&i))
            if (c->arg_size() > 0)
                if (auto *a = dyn_cast<AllocaInst>(c->getArgOperand(0)))
                    if (isSiteCall(c, a)) calls.push_back({c, a});
    // Fields first for every call (each reads the stores before it), then the changes.
    SmallVector<std::pair<CallInst *, std::array<Constant *, 4>>, 64> sites;
    for (auto [c, a] : calls) {
        std::array<Constant *, 4> field;
        if (constantSite(a, c, field.data())) sites.push_back({c, field});
    }
    SmallPtrSet<AllocaInst *, 32> objects;
    SiteConstants made;
    for (auto &[c, field] : sites) {
        objects.insert(cast<AllocaInst>(c->getArgOperand(0)));
        c->setArgOperand(0, siteConstant(m, field, made));
    }
    // Objects now only written (no site call reads them any more): gone.
    for (AllocaInst *a : objects) {
        SmallVector<Instruction *, 32> order = usersTree(a);
        auto isCall = [](Instruction *i) { return isa<CallInst>(i); };
        if (std::any_of(order.begin(), order.end(), isCall)) continue;
        for (auto it = order.rbegin(); it != order.rend(); ++it)
            if ((*it)->use_empty()) (*it)->eraseFromParent();
    }
}

void rematerializeAddresses(Function &g, const LiveAcross &liveAcross) {
    const DataLayout &dl = g.getParent()->getDataLayout();
    Type *i8 = Type::getInt8Ty(g.getContext());
    struct Address {
        Instruction *at;
        AllocaInst *object;
        int64_t offset;
    };
    SmallVector<Address, 64> addresses;
    for (Instruction &i : instructions(g)) {
        if (!isa<GetElementPtrInst>(i) || !liveAcross(i)) continue;
        APInt offset(dl.getIndexTypeSizeInBits(i.getType()), 0);
        Value *base = i.stripAndAccumulateConstantOffsets(dl, offset, /*AllowNonInbounds=*/true);
        if (auto *a = dyn_cast<AllocaInst>(base); a && !offset.isNegative())
            addresses.push_back({&i, a, offset.getSExtValue()});
    }
    for (const Address &x : addresses)
        replaceAtUses(x.at, [&](IRBuilder<> &b) {
            return b.CreateConstGEP1_64(i8, x.object, x.offset);
        });
    for (auto it = addresses.rbegin(); it != addresses.rend(); ++it)
        if (it->at->use_empty()) it->at->eraseFromParent();
}

void tidyObjects(Function &g, ArrayRef<AllocaInst *> keep) {
    SmallVector<AllocaInst *, 32> objects;
    for (Instruction &i : g.getEntryBlock())
        if (auto *a = dyn_cast<AllocaInst>(&i))
            if (a->isStaticAlloca() && !is_contained(keep, a)) objects.push_back(a);
    for (AllocaInst *a : objects) {
        SmallVector<Access, 64> accesses;
        bool matrix = false;
        if (!collect(a, accesses, matrix)) continue;
        if (matrix && parts(accesses).size() >= 2)
            split(a, accesses);
        else
            dropUnread(a, accesses);
    }
}

}  // namespace lanes_pass
