// Run-time checks of the facts msltrans's vectorised accesses rely on. The generated MSL
// says `msl_assume_run(ptrs, r, width, bytes)` before one `bytes`-wide access through
// ptrs[r]: registers r .. r + width - 1 hold consecutive element addresses and the first is
// `bytes`-aligned; `msl_assume_uniform(mask, r, width)`: the mask is the same over the run;
// `msl_assume_run_at(base, offsets, r, width, bytes)`: the same for a pointer held as
// 32-bit element offsets from `base`; `msl_assume_same(value, full)`: a register computed
// at its run's first register equals the full computation.
// On Metal all are empty macros (the kernel defines them when nobody has); here a false
// claim stops the dispatch with the kernel's line, so an axis-analysis mistake fails a test
// instead of reading the wrong memory.
#ifndef MSL_SIM_CHECKS_H
#define MSL_SIM_CHECKS_H
#pragma clang system_header
#include "sync.h"

namespace metal {
namespace __detail {
template <class P, int N>
inline void check_run(thread P (&ptrs)[N], uint r, uint width, uint bytes, const msl_sim_site &s) {
    ulong first = (ulong)ptrs[r];
    if (first % bytes)
        fail(s, "vectorised access: the run's first address is not aligned to the access width "
                "(a pointer specialised as 16-byte aligned points elsewhere)");
    for (uint i = 1; i < width; ++i)
        if ((ulong)ptrs[r + i] != first + i * (ulong)sizeof(*ptrs[r]))
            fail(s, "vectorised access: the registers of one run are not consecutive addresses");
}
template <class P, class O, int N>
inline void check_run_at(P base, thread O (&offsets)[N], uint r, uint width, uint bytes,
                         const msl_sim_site &s) {
    if ((ulong)(base + offsets[r]) % bytes)
        fail(s, "vectorised access: the run's first address is not aligned to the access width "
                "(a pointer specialised as 16-byte aligned points elsewhere)");
    for (uint i = 1; i < width; ++i)
        if (offsets[r + i] != (int)((uint)offsets[r] + i))
            fail(s, "vectorised access: the registers of one run are not consecutive offsets");
}
template <class M, int N>
inline void check_uniform(thread M (&mask)[N], uint r, uint width, const msl_sim_site &s) {
    for (uint i = 1; i < width; ++i)
        if (bool(mask[r + i]) != bool(mask[r]))
            fail(s, "vectorised access: the mask is not the same over one run");
}
template <class T>
inline void check_same(T computed, T full, const msl_sim_site &s) {
    if (!(computed == full))
        fail(s, "constant-run elementwise: a register differs from its run's first register");
}
}  // namespace __detail
}  // namespace metal

#define msl_assume_run(ptrs, r, width, bytes)                                                  \
    ::metal::__detail::check_run(ptrs, r, width, bytes,                                        \
        ::metal::__detail::site(__builtin_FILE(), __builtin_LINE(), __builtin_COLUMN(),        \
                                MSL_SIM_KIND_CODEGEN_CHECK))
#define msl_assume_run_at(base, offsets, r, width, bytes)                                       \
    ::metal::__detail::check_run_at(base, offsets, r, width, bytes,                             \
        ::metal::__detail::site(__builtin_FILE(), __builtin_LINE(), __builtin_COLUMN(),        \
                                MSL_SIM_KIND_CODEGEN_CHECK))
#define msl_assume_same(value, full)                                                           \
    ::metal::__detail::check_same(value, full,                                                 \
        ::metal::__detail::site(__builtin_FILE(), __builtin_LINE(), __builtin_COLUMN(),        \
                                MSL_SIM_KIND_CODEGEN_CHECK))
#define msl_assume_uniform(mask, r, width)                                                     \
    ::metal::__detail::check_uniform(mask, r, width,                                           \
        ::metal::__detail::site(__builtin_FILE(), __builtin_LINE(), __builtin_COLUMN(),        \
                                MSL_SIM_KIND_CODEGEN_CHECK))
#endif
