// Scalar types, address-space keywords and the language switches every other shim header
// relies on. MSL is compiled as C++ for OpenCL (clang -x clcpp -cl-std=clc++2021), so the
// address spaces are real and mixing them is a type error, as in Metal.
#ifndef MSL_SIM_TYPES_H
#define MSL_SIM_TYPES_H
#pragma clang system_header

// Metal treats double literals (0.5) as float and has no double: silence clang's
// "double precision constant ... casting to single precision" (an ungrouped warning, only
// reachable through -Weverything), then restore the usual warnings for user code.
#pragma clang diagnostic ignored "-Weverything"
#pragma clang diagnostic warning "-Wall"
// [[buffer(0)]], [[thread_position_in_grid]], [[host_name("x")]]: Metal attributes that
// clang does not know; the runtime reads them from the source, the compiler ignores them.
#pragma clang diagnostic ignored "-Wunknown-attributes"
#pragma clang diagnostic ignored "-Wunused-function"

#pragma OPENCL EXTENSION cl_khr_fp16 : enable
// c10/metal (and Metal itself) pass function pointers, e.g. atomic_binary_op(op).
#pragma OPENCL EXTENSION __cl_clang_function_pointers : enable

#ifndef __METAL__
#define __METAL__ 1
#endif
// __METAL_VERSION__ comes from the compile (msltrans/msl_version.py); features.h says what
// each version offers.
#include "features.h"
#define __HAVE_BFLOAT__ 1
#define __HAVE_SIMDGROUP_MATRIX__ 1

// Address spaces. `thread` is the generic address space (not __private): a `thread T&`
// must bind to locals and to pointers derived from them alike.
#define device __global
#define threadgroup __local
#define constant __constant
#define thread
// coherent(device) (MSL 4.8 Memory Coherency, Metal 3.2): a device buffer whose plain loads
// see other threadgroups' stores once synchronised. The qualifier becomes an annotation the
// simulator reads from kernel signatures (msltrans/sim/signatures.py): the coherence check of
// a checked build (msltrans/sim/coherence.py) lets plain loads from such a buffer read what
// other threadgroups stored. Only `device` is a scope; below Metal 3.2 it is an error.
#if MSL_SIM_HAS_coherent
#define coherent(scope) MSL_SIM_COHERENT_##scope
#define MSL_SIM_COHERENT_device __attribute__((annotate("msl_sim_coherent")))
#else
#define coherent(scope) _Pragma("GCC error \"coherent(device) needs MSL 3.2 (MSL section 4.8 Memory Coherency; macOS 15): the target MSL version is older\"")
#endif
// Kernels become plain functions; the runtime generates their entry wrappers. `[[kernel]]`
// becomes `[[]]`, which is valid C++.
#define kernel
#define ray_data
#define object_data

typedef unsigned char uchar;
typedef unsigned short ushort;
typedef unsigned int uint;
typedef unsigned long ulong;
typedef unsigned long size_t;
typedef long ptrdiff_t;
typedef long intptr_t;
typedef unsigned long uintptr_t;
typedef signed char int8_t;
typedef unsigned char uint8_t;
typedef short int16_t;
typedef unsigned short uint16_t;
typedef int int32_t;
typedef unsigned int uint32_t;
typedef long int64_t;
typedef unsigned long uint64_t;
// `half` is OpenCL's built-in half (cl_khr_fp16: arithmetic rounds to half after every
// operation, like Metal). bfloat is clang's __bf16; clang rounds it per operation too.
typedef __bf16 bfloat;

// Debian's libgcc 12 lacks __truncsfbf2 (float -> bfloat), which clang calls for every
// bfloat rounding. A weak definition here: round to nearest even, NaN stays a quiet NaN.
extern "C" __attribute__((weak, used)) __bf16 __truncsfbf2(float f) {
    unsigned u = __builtin_bit_cast(unsigned, f);
    unsigned short r;
    if ((u & 0x7fffffffu) > 0x7f800000u)
        r = (unsigned short)((u >> 16) | 0x40u);
    else
        r = (unsigned short)((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
    return __builtin_bit_cast(__bf16, r);
}

#endif
