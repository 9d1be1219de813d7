"""`MetalBackend`: the Triton compiler plugin — source → TTIR → TTGIR → MSL.

Triton imports this module through the `triton.backends` entry point and requires exactly
one concrete `BaseBackend` subclass in its namespace: import other classes by module only.
The pass lists live in `msltrans.ir.pipeline`; the MSL stage calls `msltrans.lower`.
"""

from __future__ import annotations

import inspect
import math
from collections.abc import Callable
from types import ModuleType
from typing import Any

from triton import knobs
from triton.backends.compiler import BaseBackend, GPUTarget, Language

from msltrans import options as _options
from msltrans._triton_compat import fp_fusion_enabled
from msltrans.backend.source_hash import source_hash
from msltrans.errors import MetalNonRecoverableError


def min_dot_size(target: GPUTarget) -> Callable[[Any, Any], tuple[int, int, int]]:
    # The lowering computes tl.dot as an fma chain over k (any shape) and only switches to
    # 8x8 simdgroup matrices when the shapes allow it, so no lower bound is needed here.
    def check(lhs_type: Any, rhs_type: Any) -> tuple[int, int, int]:
        return (1, 1, 1)

    return check


def _param_dicts(program: Any) -> list[dict[str, Any]]:
    """The program's parameter table as JSON-serialisable dicts (it reaches the launcher)."""
    out = []
    for p in program.params:
        out.append({
            "name": p.name, "kind": p.kind, "triton_type": p.triton_type,
            "buffer_index": p.buffer_index, "offset": getattr(p, "offset", None),
            "slot": getattr(p, "slot", None),
        })
    return out


def lower_ttgir(mod: Any, opt: Any = None) -> Any:
    """Live TTGIR module → `MslProgram` (the transpiler core: msltrans.ir + msltrans.lower)."""
    from msltrans.ir import read_module
    from msltrans.lower import lower_module

    kwargs = {}
    takes = inspect.signature(lower_module).parameters
    # enable_fp_fusion decides whether a*b+c becomes fma(); pass it once the lowering takes it.
    if opt is not None and "enable_fp_fusion" in takes:
        kwargs["enable_fp_fusion"] = opt.enable_fp_fusion
    if opt is not None and getattr(opt, "msl_version", 0) and "msl_version_target" in takes:
        kwargs["msl_version_target"] = opt.msl_version
    if opt is not None and getattr(opt, "dot_fragments", None) is not None:
        kwargs["dot_fragments"] = bool(opt.dot_fragments)
    return lower_module(read_module(mod), **kwargs)


def make_msl(mod: Any, metadata: dict[str, Any], opt: Any) -> str:
    """The msl stage: lower the TTGIR and record the launch metadata."""
    program = lower_ttgir(mod, opt)
    record_metadata(program, metadata, opt)
    return program.source


def record_metadata(program: Any, metadata: dict[str, Any], opt: Any) -> None:
    """What the launcher needs of an `MslProgram`, into Triton's kernel metadata."""
    if program.threads_per_group != opt.num_warps * opt.warp_size:
        raise MetalNonRecoverableError(
            f"lowering produced {program.threads_per_group} threads per threadgroup for "
            f"num_warps={opt.num_warps}; expected {opt.num_warps * opt.warp_size}")
    metadata["name"] = program.kernel_name
    metadata["shared"] = int(program.shared_bytes)
    metadata["num_warps"] = int(program.num_warps)
    metadata["threads_per_group"] = int(program.threads_per_group)
    metadata["params"] = _param_dicts(program)
    metadata["buffer_alignment"] = [list(pair) for pair in program.buffer_alignment]
    metadata["spilled_alignment"] = [list(pair)
                                     for pair in getattr(program, "spilled_alignment", ())]
    metadata["coherent_buffers"] = list(getattr(program, "coherent_buffers", ()))
    metadata["args_size"] = int(getattr(program, "args_size", 0))
    metadata["alignment_keys"] = [list(pair) for pair in getattr(program, "alignment_keys", ())]
    if getattr(program, "debug_sites", ()):  # tl.device_print / device_assert: hidden buffer
        metadata["msl_debug_sites"] = list(program.debug_sites)


# A buffer whose every byte is less than 2^31 from any pointer into it: the pointers derived
# from such an argument can be 32-bit element offsets (msltrans/lower/memory/pointer_offsets.py).
POINTER_RANGE_BYTES = 2**31 - 1


def within_2gb(arg: Any) -> bool:
    """Whether the whole storage behind a tensor argument is under 2^31 bytes (the test
    Triton's AMD backend makes for its `tt.pointer_range = 32`). Unknown objects: False."""
    storage = getattr(arg, "untyped_storage", None)
    if storage is None:
        return _mock_within_2gb(arg)
    try:
        return int(storage().nbytes()) <= POINTER_RANGE_BYTES
    except (RuntimeError, TypeError, AttributeError):
        return False


def _mock_within_2gb(arg: Any) -> bool:
    """Triton's MockTensor (what `kernel.warmup(torch.float32, ...)` passes for a dtype)
    stands for a tensor of its shape: specialised as one, so that the warmed-up kernel is
    the one a launch with a real tensor of that size finds in the cache (Triton's own
    launcher does the same with the mock's data_ptr() of 0: 16-byte aligned)."""
    if type(arg).__name__ != "MockTensor":
        return False
    try:
        nbytes = math.prod(int(size) for size in arg.shape) * int(arg.dtype.itemsize)
        return nbytes <= POINTER_RANGE_BYTES
    except (TypeError, AttributeError, ValueError):
        return False


class MetalBackend(BaseBackend):
    # Tensor arguments are specialised here in Python (get_tensor_specialization): Triton's
    # native specializer only knows 16-byte alignment, and msltrans also needs the buffer size.
    supports_native_tensor_specialization = False

    @staticmethod
    def get_tensor_specialization(arg: Any, **kwargs: Any) -> str:
        key = BaseBackend.get_tensor_specialization(arg, **kwargs)
        return key + "S" if within_2gb(arg) else key

    @staticmethod
    def parse_attr(desc: str) -> list[list[Any]]:
        attrs = BaseBackend.parse_attr(desc)
        if "S" in desc:
            attrs.append(["tt.pointer_range", 32])
        return attrs

    @staticmethod
    def supports_target(target: GPUTarget) -> bool:
        return target.backend == "metal"

    def __init__(self, target: GPUTarget) -> None:
        super().__init__(target)
        # Final stage; CompiledKernel reads it as bytes and hands it to driver.utils.load_binary.
        self.binary_ext = "msl"

    def parse_options(self, opts: dict[str, Any]) -> _options.MetalOptions:
        if knobs.compilation.store_binary_only:
            # Triton would then drop the .msl stage from its cache, and MSL is our binary.
            raise MetalNonRecoverableError("TRITON_STORE_BINARY_ONLY=1 is not supported by "
                                           "the Metal backend (the .msl text is the binary)")
        args = dict(opts)
        args["enable_fp_fusion"] = fp_fusion_enabled(args.get("enable_fp_fusion"))
        arch = knobs.runtime.override_arch or str(self.target.arch)
        return _options.MetalOptions.from_dict(args, arch)

    def add_stages(self, stages: dict[str, Any], options: Any, language: Language) -> None:
        from msltrans.ir import pipeline

        if language != Language.TRITON:
            raise MetalNonRecoverableError(f"{language.name} kernels are not supported on Metal",
                                           hint="use @triton.jit kernels")
        stages["ttir"] = lambda src, metadata: pipeline.make_ttir(src, options)
        stages["ttgir"] = lambda src, metadata: pipeline.make_ttgir(src, options)
        stages["msl"] = lambda src, metadata: make_msl(src, metadata, options)
        if knobs.runtime.add_stages_inspection_hook is not None:
            knobs.runtime.add_stages_inspection_hook(self, stages, options, language, None)

    def load_dialects(self, context: Any) -> None:
        # Only Triton's generic dialects are used; they are loaded by Triton itself.
        return None

    def get_module_map(self) -> dict[str, ModuleType]:
        # `tl.extra.libdevice` resolves to CUDA's libdevice module, so kernels reach the IR as
        # `tt.extern_elementwise` calls of `__nv_*` symbols;
        # msltrans.lower.elementwise.ops_libdevice maps the ones it knows to Metal functions and
        # refuses the rest. No bitcode is linked.
        from triton.language.extra.cuda import libdevice

        return {"triton.language.extra.libdevice": libdevice}

    def get_codegen_implementation(self, options: Any) -> dict[str, Any]:
        return {"min_dot_size": min_dot_size(self.target)}

    def pack_metadata(self, metadata: Any) -> tuple[Any, ...]:
        return (metadata.num_warps, metadata.num_ctas, metadata.shared)

    def hash(self) -> str:
        # source_hash() reads the files once per process; later calls are a cache lookup.
        return f"msltrans-{source_hash()}-{self.target.arch}"
