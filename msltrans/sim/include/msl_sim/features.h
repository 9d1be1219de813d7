// Generated from msltrans/msl_version.py FEATURES (tests/sim/test_msl_version.py
// checks it): which version-gated MSL features __METAL_VERSION__ offers.
#ifndef MSL_SIM_FEATURES_H
#define MSL_SIM_FEATURES_H
#ifndef __METAL_VERSION__
#error "compile with -D__METAL_VERSION__=<version> (msltrans.sim passes the target)"
#endif
#if __METAL_VERSION__ < 310
#error "msltrans supports MSL 3.1 and later"
#endif
// MSL §2.6 Atomic Data Types and §6.15.4.6 Atomic Modify Functions (64 Bits) (atomic_ulong, its void max/min: Metal 2.4 and later, Apple silicon)
#define MSL_SIM_HAS_atomic_ulong (__METAL_VERSION__ >= 240)
// MSL §2.1 Scalar Data Types (bfloat: Metal 3.1 and later)
#define MSL_SIM_HAS_bfloat (__METAL_VERSION__ >= 310)
// MSL §6.15.2 Thread Scope (Metal 3.2 and later, Apple silicon)
#define MSL_SIM_HAS_thread_scope (__METAL_VERSION__ >= 320)
// MSL §6.15.3 Fence Functions (Metal 3.2 and later, Apple silicon)
#define MSL_SIM_HAS_atomic_thread_fence (__METAL_VERSION__ >= 320)
// MSL §6.15.1 Memory Order (seq_cst on atomic_thread_fence, Metal 3.2 and later)
#define MSL_SIM_HAS_memory_order_seq_cst (__METAL_VERSION__ >= 320)
// MSL §4.8 Memory Coherency (coherent(device) buffers, visible across threadgroups: Metal 3.2 and later)
#define MSL_SIM_HAS_coherent (__METAL_VERSION__ >= 320)
#endif
