// Barriers and fences. Fibers share one address space and run one at a time, so memory
// ordering is automatic; a barrier is a rendezvous (msl_sim_threadgroup_barrier), a fence is
// a no-op that still type-checks its arguments.
#ifndef MSL_SIM_SYNC_H
#define MSL_SIM_SYNC_H
#pragma clang system_header
#include "types.h"
#include "abi.h"

namespace metal {
enum class mem_flags : uint { mem_none = 0, mem_device = 1, mem_threadgroup = 2, mem_texture = 4, mem_threadgroup_imageblock = 8, mem_object_data = 16 };
constexpr mem_flags operator|(mem_flags a, mem_flags b) { return (mem_flags)((uint)a | (uint)b); }
constexpr mem_flags operator&(mem_flags a, mem_flags b) { return (mem_flags)((uint)a & (uint)b); }
// MSL §6.15.1: memory_order_relaxed is the only order of atomic functions; seq_cst exists
// for atomic_thread_fence (Metal 3.2). There is no acquire/release/acq_rel.
#if MSL_SIM_HAS_memory_order_seq_cst
enum memory_order : uint { memory_order_relaxed = 0, memory_order_seq_cst = 5 };
#else
enum memory_order : uint { memory_order_relaxed = 0 };
#endif
#if MSL_SIM_HAS_thread_scope
enum thread_scope : uint { thread_scope_thread, thread_scope_simdgroup, thread_scope_threadgroup, thread_scope_device };
#endif

namespace __detail {
// Call site of a rendezvous: __builtin_FILE() is a __constant char* in OpenCL mode; the ABI
// struct holds a plain pointer, so it crosses via an integer (same flat address on x86).
inline msl_sim_site site(const __constant char *file, unsigned line, unsigned col, unsigned kind) {
    msl_sim_site s;
    s.file = (const char *)(unsigned long)file;
    s.line = line;
    s.column = col;
    s.kind = kind;
    return s;
}
// String literals live in __constant in OpenCL mode; the runtime takes a plain pointer.
[[noreturn]] inline void fail(const msl_sim_site &s, const __constant char *msg) {
    msl_sim_fail(&s, (const char *)(unsigned long)msg);
}
}  // namespace __detail
#define MSL_SIM_SITE_ARGS const __constant char *__file = __builtin_FILE(), unsigned __line = __builtin_LINE(), unsigned __col = __builtin_COLUMN()
#define MSL_SIM_SITE(kind) ::metal::__detail::site(__file, __line, __col, kind)

inline void threadgroup_barrier(mem_flags f, MSL_SIM_SITE_ARGS) {
    msl_sim_site s = MSL_SIM_SITE(MSL_SIM_KIND_THREADGROUP_BARRIER);
    msl_sim_threadgroup_barrier(&s, (uint)f);
}
inline void simdgroup_barrier(mem_flags f, MSL_SIM_SITE_ARGS) {
    msl_sim_site s = MSL_SIM_SITE(MSL_SIM_KIND_SIMDGROUP_BARRIER);
    msl_sim_simdgroup_barrier(&s, (uint)f);
}
#if MSL_SIM_HAS_atomic_thread_fence
inline void atomic_thread_fence(mem_flags, memory_order, thread_scope = thread_scope_device) {}
#endif
}  // namespace metal
#endif
