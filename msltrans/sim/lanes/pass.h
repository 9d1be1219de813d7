// msltrans simulator's lanes pass: what its two parts share (lanes_pass.cpp makes a
// simdgroup one function; matrix.cpp gives that function its simdgroup_matrix ops).
// plugin.py compiles the .cpp parts as one translation unit (LLVM's headers parsed once), so
// file-local names (anonymous namespaces, statics) must differ between the parts.
#ifndef MSLTRANS_LANES_PASS_H
#define MSLTRANS_LANES_PASS_H

#include "llvm/ADT/BitVector.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/SmallPtrSet.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/IR/Function.h"
#include "llvm/IR/IRBuilder.h"
#include "llvm/IR/Instructions.h"
#include "llvm/IR/Module.h"

#include <set>
#include <string>
#include <vector>

namespace lanes_pass {
using namespace llvm;

constexpr unsigned LANES = 32;
// The shim's multiply-accumulate in lanes mode (abi.h, msl_sim_lanes_mma), and which of its
// arguments gives the operands' element sizes (byte k: operand k's two elements).
extern const char *const LANES_MMA;
constexpr unsigned LANES_MMA_SIZES = 8;

bool isNamed(const Function *f, const char *name);
// Sets every use of `v` to what `make` builds where the use is (for a phi's use: at the end
// of the incoming block).
void replaceAtUses(Value *v, function_ref<Value *(IRBuilder<> &)> make);
// `root` and everything that uses it, transitively, each once, users after what they use.
SmallVector<Instruction *, 32> usersTree(Instruction *root);
// A runtime entry point, declared as clang declares them under -fno-plt.
FunctionCallee runtimeFn(Module &m, StringRef name, FunctionType *type);

// ---- reach.cpp -----------------------------------------------------------------------
// A rendezvous call of the shim (abi.h).
struct Rendezvous {
    const char *name;    // the shim's call
    const char *lanes;   // the runtime's publishing variant: same parameters, returns void
    const char *result;  // reads the call's result once the lane runs again (or nullptr)
};
// A run of multiply-accumulates: published like a simdgroup barrier, with the lane's counted
// matrix loads and stores (the runtime checks that the simdgroup is whole and every lane
// live); the lane that releases it computes the run for the simdgroup.
extern const Rendezvous MATRIX;
// The rendezvous `f` is (a SIMD op, a simdgroup or threadgroup barrier), or nullptr.
const Rendezvous *rendezvousOf(const Function *f);
// Functions whose calls (transitively) reach a rendezvous, and those that reach a call the
// lanes model does not handle.
struct Reach {
    std::set<const Function *> rendezvous, refuse;
};
Reach reach(Module &m);
// Replaces every call of the lanes-mode switch in `f` by `value`; whether there was one.
bool setLanesMode(Function &f, int value);
// What of `g` (lanes mode set, its other paths folded away) still needs fibers, or "".
std::string fibersOnlyIn(Function &g, const Reach &r);
// Why `g` (the clone, everything that reaches a rendezvous inlined) cannot run as lanes,
// or "".
std::string inlineAll(Function &g, const Reach &r);

// ---- live.cpp ------------------------------------------------------------------------
// Whether a value is live on entry to a block of `resume` (the code after each rendezvous):
// built once per function and CFG, asked per value.
class LiveAcross {
public:
    LiveAcross(Function &g, const SmallPtrSetImpl<BasicBlock *> &resume);
    bool operator()(Instruction &v) const;

private:
    bool walk(Instruction &v) const;   // the value's paths, walked back from its uses
    const SmallPtrSetImpl<BasicBlock *> &resume;
    DenseMap<const BasicBlock *, unsigned> number, resumeIndex;
    std::vector<BitVector> reached;   // per block: the resume blocks that reach it
    SmallPtrSet<const BasicBlock *, 16> onCycle;   // on a cycle with a resume block
    bool sets = false;                // whether `reached` is kept (else every value walks)
};

// ---- matrix.cpp ----------------------------------------------------------------------
// Matrix loads, stores and fills (msl_sim_matrix_arrive, which counts each and hashes its
// site for the uniformity check), counted inline: from where a lane resumes to its next
// rendezvous or return in slots of the call (not per lane), then added to the lane's count
// by msl_sim_lanes_matrix_flush (runtime rendezvous.c).
struct MatrixCounts {
    AllocaInst *lane = nullptr;   // the running lane's index (the calls' result); null: none
    AllocaInst *count = nullptr, *hash = nullptr, *first = nullptr, *last = nullptr;
    SmallVector<AllocaInst *, 8> slots;   // all of the above: per call, never per lane
};
// Replaces g's msl_sim_matrix_arrive calls when every one's site is constant (else keeps
// them all: the runtime counts them, slower).
MatrixCounts inlineMatrixArrivals(Function &g);
// Where a lane resumes: its index, and nothing counted yet.
void resetMatrixCounts(IRBuilder<> &b, const MatrixCounts &counts, Value *lane);
// Before a rendezvous or return: what the lane counted, if anything, to the runtime.
void flushMatrixCounts(const MatrixCounts &counts, Instruction *before);
// What the lane counted, as msl_sim_lanes_matrix takes it after the site: count, hash,
// first and last site (0 and nulls where nothing is counted inline), appended to `args`.
void matrixCounts(IRBuilder<> &b, const MatrixCounts &counts, SmallVectorImpl<Value *> &args);

// ---- objects.cpp ---------------------------------------------------------------------
// Stack objects whose every use is an access at a constant offset (but those in `keep`):
// those that hold multiply-accumulate operands split into the byte ranges the code touches
// (each matrix's elements an object of its own), and in every one the stores into bytes
// that nothing reads dropped (the object too if nothing is left).
void tidyObjects(Function &g, ArrayRef<AllocaInst *> keep);
// A call-site record (file, line, column, kind: abi.h's msl_sim_site) of constant fields as
// a private constant of `m`, one per distinct record in `made`.
using SiteConstants = DenseMap<Constant *, GlobalVariable *>;
GlobalVariable *siteConstant(Module &m, ArrayRef<Constant *> fields, SiteConstants &made);
// Site objects (file, line, column, kind) that the shim fills with constants just before
// passing them to a matrix count or a rendezvous: constants instead (no stores per lane);
// objects left write-only go.
void constantSites(Function &g);
// Addresses within stack objects at constant offsets that are live across a rendezvous
// (`liveAcross` of the resume blocks): computed again at each use instead.
void rematerializeAddresses(Function &g, const LiveAcross &liveAcross);

// Runs of multiply-accumulates (the shim's lanes path, msl_sim_lanes_mma) with nothing but
// address arithmetic between: one rendezvous each, at its first call, and each op of the
// run computed once for the simdgroup from the lanes' objects (each operand a stack object
// at a fixed offset, the same place in every lane's copy).
struct Operand {
    AllocaInst *object;
    uint64_t offset;
};
struct Mma {
    Function *op;
    Operand x[4];   // d, a, b, c
};
struct Run {
    CallInst *head;   // stays: the rendezvous; the run's other calls are gone
    SmallVector<Mma, 8> ops;
    GlobalVariable *site;   // its site record (kind 4), a constant
};
std::string formRuns(Function &g, SmallVectorImpl<Run> &runs);
// Where each stack object's 32 copies are: lane l's at frames + block + l * stride.
struct Place {
    uint64_t block, stride;
};
// The run's ops on the lanes' copies, once (the caller's block, at b's insertion point).
void emitRun(IRBuilder<> &b, Value *frames, const Run &run,
             const DenseMap<AllocaInst *, Place> &placeOf, DebugLoc loc);

}  // namespace lanes_pass
#endif
