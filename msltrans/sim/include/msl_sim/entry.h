// Support for the per-kernel entry points the simulator generates (owned by the runtime,
// not the metal_stdlib shim). Included (-include) before the user's source.
#ifndef MSL_SIM_ENTRY_H
#define MSL_SIM_ENTRY_H
// msl_sim_entry (abi.h) is a function pointer type: OpenCL needs clang's extension for it.
#pragma OPENCL EXTENSION __cl_clang_function_pointers : enable
#include "abi.h"

template <class T> struct msl_sim_is_pointer { static constexpr bool value = false; };
template <class T> struct msl_sim_is_pointer<T *> { static constexpr bool value = true; };

// A bound buffer that converts to whatever pointer or reference type the kernel parameter
// has (device float*, constant Params&, threadgroup T*, ...), so entries need not spell the
// parameter types (template kernels instantiated through decltype never spell them either).
// Casts go through an integer: OpenCL forbids generic -> constant pointer casts.
struct msl_sim_arg {
    void *address;
    template <class T> operator T &() {
        if constexpr (msl_sim_is_pointer<T>::value)
            return *(T *)(__SIZE_TYPE__)&address;
        else
            return *(T *)(__SIZE_TYPE__)address;
    }
};
#endif
