"""The MSL msltrans emits, each feature with the section of the Metal Shading Language
Specification (Version 4, 2025-06-05) that allows it and the version it needs.
docs/msl-subset.md is generated from this table (scripts/gen_msl_subset.py) and
tests/test_docs_msl_subset.py checks both directions: every Metal name in what msltrans emits
is listed here, and every name listed here is emitted somewhere."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Feature:
    what: str
    names: tuple[str, ...]   # identifiers as they appear in the MSL
    section: str
    since: str               # MSL version ("1.0": every version msltrans targets)
    use: str


FEATURES: tuple[Feature, ...] = (
    Feature("scalar types", ("bool", "char", "uchar", "short", "ushort", "int", "uint", "half",
                             "float"), "2.1, Table 2.1", "1.0", "tensor elements, scalars"),
    Feature("64-bit integers", ("long", "ulong"), "2.1, Table 2.1", "2.2",
            "i64 / u64, pointer arithmetic"),
    Feature("bfloat", ("bfloat",), "2.1, Table 2.1", "3.1", "bf16 tensors"),
    Feature("vector types", ("uint2", "uint3", "float2", "ulong2", "uint4", "ushort2",
                             "short2", "char2", "char4", "uchar2", "uchar4", "half2"),
            "2.2", "1.0",
            "built-in ids (uint3), packed pairs, 8- and 16-byte loads and stores as words"),
    Feature("bfloat vectors", ("bfloat2",), "2.2", "3.1", "bf16 pairs packed into one word"),
    Feature("SIMD-group matrices", ("simdgroup_matrix", "simdgroup_float8x8",
                                    "simdgroup_half8x8", "simdgroup_bfloat8x8"),
            "2.4; bfloat: 3.1", "2.3", "tl.dot on 8x8 tiles"),
    Feature("atomic types", ("atomic_int", "atomic_uint", "atomic_float"), "2.6",
            "1.0; atomic_float 3.0", "tl.atomic_*, histograms, volatile loads, debug buffer"),
    Feature("reinterpreting data", ("as_type",), "2.21", "1.0", "bitcasts, NaN literals"),
    Feature("address spaces", ("device", "constant", "thread", "threadgroup"), "4.1-4.4",
            "1.0", "buffers, the scalar-argument struct, scratch"),
    Feature("kernel functions", ("kernel", "max_total_threads_per_threadgroup"), "5.1.3", "1.0",
            "one kernel per Triton function, its group size (num_warps * 32) as its maximum"),
    Feature("buffer bindings", ("buffer",), "5.2.1", "1.0",
            "[[buffer(0..30)]]: pointers, then one struct of scalars"),
    Feature("kernel input attributes", ("threadgroup_position_in_grid", "threadgroups_per_grid",
                                        "thread_index_in_threadgroup",
                                        "thread_index_in_simdgroup",
                                        "simdgroup_index_in_threadgroup"),
            "5.2.3.6, Table 5.8", "1.0; SIMD-group ids 2.0", "program ids, lanes, warps"),
    Feature("static_assert", ("static_assert",), "1.5 (C++ constructs)", "1.0",
            "the scalar-argument struct's size"),
    Feature("integer functions", ("clz", "ctz", "popcount", "reverse_bits", "mulhi",
                                      "min", "max", "clamp"),
            "6.3, Table 6.2", "1.0", "bit ops, umulhi, integer min/max"),
    Feature("relational functions", ("isnan", "isinf", "isfinite", "signbit", "select"),
            "6.4, Table 6.3", "1.0", "NaN-aware min/max, predicates"),
    Feature("math functions", ("fma", "sqrt", "rsqrt", "exp", "exp2", "exp10", "log", "log2",
                               "log10", "sin", "cos", "tan", "sinh", "cosh", "tanh", "asin",
                               "acos", "atan", "atan2", "asinh", "acosh", "atanh", "cbrt",
                               "pow", "fabs", "floor", "ceil", "trunc", "rint", "round",
                               "fmod", "copysign", "divide", "fmax", "fmin", "precise",
                               "fast"),
            "6.5, Table 6.4", "1.0", "the math dialect, libdevice"),
    Feature("SIMD-group matrix functions", ("simdgroup_load", "simdgroup_store",
                                            "simdgroup_multiply_accumulate",
                                            "make_filled_simdgroup_matrix"),
            "6.7", "2.3", "tl.dot"),
    Feature("threadgroup barriers", ("threadgroup_barrier", "mem_flags", "mem_threadgroup",
                                     "mem_device"), "6.9.1, Tables 6.12-6.13", "1.0",
            "scratch, reductions, scalar stores and atomics"),
    Feature("SIMD-group functions", ("simd_shuffle", "simd_shuffle_xor"),
            "6.9.2, Table 6.14", "2.0",
            "reductions, scans, layout conversions"),
    Feature("relaxed atomic functions", ("atomic_load_explicit", "atomic_store_explicit",
                                         "atomic_exchange_explicit",
                                         "atomic_compare_exchange_weak_explicit",
                                         "atomic_fetch_add_explicit",
                                         "atomic_fetch_sub_explicit",
                                         "atomic_fetch_and_explicit", "atomic_fetch_or_explicit",
                                         "atomic_fetch_xor_explicit",
                                         "atomic_fetch_min_explicit",
                                         "atomic_fetch_max_explicit", "memory_order_relaxed"),
            "6.15.1, 6.15.4", "1.0 (device, explicit: 2.0)", "tl.atomic_*, volatile loads"),
    Feature("64-bit atomics", ("atomic_ulong", "atomic_max_explicit", "atomic_min_explicit"),
            "2.6, 6.15.4.6", "2.4", "uint64 tl.atomic_max/min whose old value is unused"),
    Feature("fences", ("atomic_thread_fence", "memory_order_seq_cst", "thread_scope_device",
                       "thread_scope_threadgroup"), "6.15.1-6.15.3", "3.2",
            "sem != 'relaxed', volatile loads"),
    Feature("float constants", ("NAN", "INFINITY"), "6.5, Table 6.5",
            "1.2", "NaN literals"),
    Feature("memory coherency", ("coherent",), "4.8", "3.2",
            "buffers one program writes and another reads after an acquire "
            "(coherent(device); lower/memory/coherence.py)"),
    Feature("floating-point pragmas", ("math_mode", "contract"), "1.6.3",
            "math_mode: 3.2; contract: 3.1",
            "every kernel: `#pragma METAL fp contract(off)`, and math_mode(safe) from 3.2 "
            "(msltrans/math_mode.py)"),
)

# Metal names that could appear in emitted code but do not (checked: using one means adding
# it above, with its section). Spec §6.2-6.15.
UNUSED: frozenset[str] = frozenset({
    "mix", "saturate", "smoothstep", "step", "sign", "absdiff", "addsat", "subsat", "hadd",
    "rhadd", "madhi", "madsat", "mad24", "mul24", "rotate", "extract_bits",
    "insert_bits", "median3", "max3", "min3", "all", "any", "isnormal", "isordered",
    "isunordered", "fract", "frexp", "ldexp", "ilogb", "modf", "nextafter", "powr", "sincos",
    "sinpi", "cospi", "tanpi", "fdim", "INT_MAX", "simd_broadcast",
    "INT_MIN", "abs", "simd_sum", "dot", "cross", "length", "distance",
    "normalize", "simd_prefix_inclusive_sum", "simd_prefix_exclusive_sum", "simd_max",
    "simd_min", "simd_product", "simd_and", "simd_or", "simd_xor", "simd_shuffle_up",
    "simd_shuffle_down", "simd_ballot", "simd_all", "simd_any", "simdgroup_barrier",
    "quad_shuffle", "atomic_bool", "memory_order_acquire", "memory_order_release",
    "memory_order_acq_rel", "thread_scope_simdgroup", "thread_scope_thread",
    "texture", "sampler", "int2", "int3", "int4", "float3", "float4",
    "half4", "packed_float3",
})


def all_names() -> dict[str, Feature]:
    return {name: f for f in FEATURES for name in f.names}


@dataclass(frozen=True)
class Rule:
    """Something Apple's toolchain rejects that clang (the simulator's compiler) accepts: the
    simulator refuses it with a CompileError (or, for alignment, a fault) citing `source`."""

    key: str
    what: str
    source: str       # the specification section (Version 4) or other source
    refused: str      # at which MSL versions
    why: str          # the reason, as the error message gives it
    how: str          # where the simulator checks it


RULES: tuple[Rule, ...] = (
    Rule("non_ascii", "a byte above 0x7F anywhere in the source string, comments included "
         "(not in headers it includes: torch converts only the string)",
         "PyTorch's MetalShaderLibrary::compileLibrary, "
         "aten/src/ATen/native/mps/OperationUtils.mm", "all",
         "torch.mps.compile_shader builds the source with [NSString stringWithCString:src "
         "encoding:NSASCIIStringEncoding], which does not take such bytes (most likely a nil "
         "string: newLibraryWithSource: gets no source and the kernel does not compile on a Mac)",
         "msltrans/sim/language.py check_ascii, before the cache lookup"),
    Rule("lambda", "a lambda expression", "MSL specification 1.5.4 (lambda expressions prior "
         "to Metal 3.2)", "below 3.2",
         "MSL has lambda expressions only from Metal 3.2 (macOS 15)",
         "language.py check_user_text (preprocessed user text)"),
    Rule("goto", "a `goto` statement", "MSL specification 1.5.4 (goto statement, C++17 6.6)",
         "all", "MSL has no goto statement", "language.py check_user_text"),
    Rule("bfloat_implicit", "an implicit conversion of float or half to bfloat (or of bfloat "
         "to half)", "MSL specification 2.22 (neither float nor half can be implicitly "
         "converted to bfloat; bfloat only to a type of greater rank)", "all",
         "MSL allows no implicit conversion to bfloat: write bfloat(x) or static_cast<bfloat>(x)",
         "language.py check_ir: a float -> bfloat conversion in a user function whose "
         "operand does not follow `bfloat(` (`static_cast` converts in the shim); not checked: "
         "lines with a C-style `(bfloat)` cast, template instantiations (`T(x)` reads as "
         "implicit there), constants clang folds (`bfloat b = 1.0f;`). half <-> bfloat: clang"),
    Rule("atomic_float_threadgroup", "atomic_fetch_add/sub_explicit on a threadgroup "
         "atomic_float", "MSL specification 6.15.4.5 (atomic add and sub support atomic_float "
         "only in device memory)", "all",
         "atomic_float add and sub exist only in device memory",
         "static_assert in msl_sim/atomic.h"),
    Rule("simd_permute_type", "simd_shuffle*, simd_broadcast* on bool, long or ulong",
         "MSL specification 6.9.2 (Table 6.14's T excludes bool, long, ulong, void, size_t, "
         "ptrdiff_t)", "all", "the SIMD-group permute functions take no bool or 64-bit type",
         "static_assert in msl_sim/simd.h"),
    Rule("recursion", "a call-graph cycle through a user function",
         "MSL specification 1.5.4 allows recursion in kernels from Metal 2.4, but Apple's "
         "MTLComputePipelineDescriptor.maxCallStackDepth defaults to 1", "all",
         "torch.mps.compile_shader makes its pipelines without a descriptor, so the call "
         "stack depth cannot be raised for recursion (a msltrans subset rule, not a language "
         "rule)", "language.py check_ir (call graph of the unoptimised IR)"),
    Rule("function_pointer", "an indirect call (a function pointer)",
         "MSL specification 1.5.4 (function pointers: Metal 2.3) and 5.1.4 (only [[visible]] "
         "functions, passed in the pipeline descriptor)", "all",
         "a Metal function pointer must point to a [[visible]] function linked through the "
         "pipeline descriptor, which torch.mps.compile_shader does not provide",
         "language.py check_ir (an indirect call in a user function)"),
    Rule("threadgroup_alignment", "a threadgroup access at an address its type's alignment "
         "does not divide (a `threadgroup ulong x[N]` read as uint4)",
         "MSL specification 2.5 (Tables 2.2-2.3: a type's alignment)", "all",
         "Metal aligns a threadgroup variable only to its declared type",
         "runtime (rendezvous.c): each threadgroup declaration at its type's alignment, at an "
         "odd multiple of it below 16 bytes where that fits (`alignas(N)` before `threadgroup` "
         "raises it); clang's -fsanitize=alignment check, kept in the IR only for accesses "
         "whose type is in threadgroup memory (`__local`), reported when the address is "
         "threadgroup memory (opt-in: MSLTRANS_SIM_ALIGNMENT_CHECK=1)"),
)
