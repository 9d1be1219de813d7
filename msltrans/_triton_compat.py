"""What differs between the Triton releases msltrans runs on (3.6 onward, and builds of main).

Every choice here is made by what the Triton in hand has, never by its version number: a
source build of main reports the previous release's version (`3.8.0+git<sha>`), and a Mac user
builds whichever tag or commit they have. `check_triton()` runs when msltrans's Triton plugin
or IR reader is imported and names every pass and binding msltrans needs that this Triton
lacks, with the version it reports, instead of failing in the middle of a compile.
"""

from __future__ import annotations

import dataclasses
import gc
from collections.abc import Iterable
from types import SimpleNamespace
from typing import Any

from msltrans.errors import MetalNonRecoverableError

# Passes and bindings msltrans cannot do without (msltrans/ir/pipeline.py, msltrans/ir/walker.py,
# the plugin): (where, attribute) pairs looked up on `_required_roots()`.
_REQUIRED: tuple[tuple[str, str], ...] = (
    *(("passes.common", p) for p in (
        "add_inliner", "add_canonicalizer", "add_cse", "add_symbol_dce", "add_sccp")),
    *(("passes.ttir", p) for p in (
        "add_rewrite_tensor_descriptor_to_pointer", "add_combine", "add_reorder_broadcast",
        "add_loop_unroll", "add_convert_to_ttgpuir", "add_loop_aware_cse", "add_triton_licm")),
    *(("passes.ttgpuir", p) for p in (
        "add_coalesce", "add_remove_layout_conversions", "add_optimize_thread_locality",
        "add_fuse_nested_loops", "add_reorder_instructions")),
    *(("ir", b) for b in (
        "context", "load_dialects", "parse_mlir_module", "pass_manager", "module", "operation")),
    *(("ir.module", b) for b in ("walk", "str", "str_nodebug", "get_int_attr")),
    *(("ir.operation", b) for b in (
        "get_name", "get_block", "get_num_operands", "get_operand", "get_num_results",
        "get_result", "get_num_regions", "get_region", "get_bool_attr")),
    *(("ir.value", b) for b in ("id", "get_type", "get_loc")),
    *(("ir.block", b) for b in ("id", "get_parent", "get_argument", "get_num_arguments")),
    ("ir.region", "id"),
    *(("backends.compiler", c) for c in ("BaseBackend", "GPUTarget", "Language")),
    ("backends.driver", "DriverBase"),
    ("knobs.language", "default_fp_fusion"),
)


def triton_version() -> str:
    import triton

    return str(getattr(triton, "__version__", "unknown"))


def _required_roots() -> dict[str, Any]:
    # Not triton.compiler: this runs while `import triton` discovers its backends.
    from triton import knobs
    from triton._C.libtriton import ir, passes
    from triton.backends import compiler, driver

    return {"ir": ir, "passes": passes, "knobs": knobs,
            "backends": SimpleNamespace(compiler=compiler, driver=driver)}


def missing_features(roots: dict[str, Any],
                     required: Iterable[tuple[str, str]] = _REQUIRED) -> list[str]:
    """The required passes and bindings `roots` (as `_required_roots()` gives) lacks."""
    out = []
    for where, attr in required:
        head, *rest = where.split(".")
        obj = roots.get(head)
        for part in rest:
            obj = getattr(obj, part, None)
        if obj is None or not hasattr(obj, attr):
            out.append(f"{where}.{attr}")
    return out


class TritonFeatureError(MetalNonRecoverableError, ImportError):
    """The installed Triton lacks a pass or binding msltrans needs (also an ImportError)."""


def check_triton(roots: dict[str, Any] | None = None, version: str | None = None) -> None:
    """Raise `TritonFeatureError` naming what this Triton lacks; silent when it has it all."""
    missing = missing_features(_required_roots() if roots is None else roots)
    if missing:
        found = triton_version() if version is None else version
        raise TritonFeatureError(
            f"Triton {found} lacks what msltrans needs: {', '.join(missing)}",
            hint="install Triton 3.6 or newer (pip install 'triton>=3.6'; on a Mac, build it "
                 "from source: see README.md)")


# -- the fp-fusion knob ------------------------------------------------------------------

def fp_fusion_enabled(requested: bool | None, language_knobs: Any = None) -> bool:
    """Triton's `enable_fp_fusion` option as its own backends resolve it: through
    `knobs.language.fp_fusion_enabled` where that exists (it also honours
    TRITON_FORCE_DISABLE_FP_FUSION), else the requested value or `default_fp_fusion`."""
    if language_knobs is None:
        from triton import knobs

        language_knobs = knobs.language
    resolve = getattr(language_knobs, "fp_fusion_enabled", None)
    if resolve is not None:
        return bool(resolve(requested))
    if getattr(language_knobs, "force_disable_fp_fusion", False):
        return False
    return bool(language_knobs.default_fp_fusion if requested is None else requested)


# -- integer attributes --------------------------------------------------------------------

def has_int_attr_binding(op_class: Any = None) -> bool:
    """Whether operations expose `get_int_attr` (Triton 3.7 on); without it the walker reads
    integer attributes from the op's printed attribute dictionary and custom syntax."""
    if op_class is None:
        from triton._C.libtriton import ir

        op_class = ir.operation
    return hasattr(op_class, "get_int_attr")


# -- tensor descriptors --------------------------------------------------------------------

def descriptor_has_tf32_flag(descriptor_class: Any = None) -> bool:
    """Whether a host-side TensorDescriptor argument carries the round-f32-to-tf32 flag: the
    kernel argument list the descriptor rewrite makes has that flag exactly when the
    TensorDescriptor class has the field."""
    if descriptor_class is None:
        try:
            from triton.tools.tensor_descriptor import TensorDescriptor as descriptor_class
        except ImportError:
            return False
    if dataclasses.is_dataclass(descriptor_class):
        return any(f.name == "round_f32_to_tf32" for f in dataclasses.fields(descriptor_class))
    return hasattr(descriptor_class, "round_f32_to_tf32")


# -- block pointers ------------------------------------------------------------------------

def add_block_pointer_rewrite(pm: Any, ttir_passes: Any = None) -> bool:
    """Add `rewrite_tensor_pointer` where this Triton still hands block pointers
    (`tl.make_block_ptr`, `tl.advance`) to the backend; newer ones rewrite them before.
    Returns whether the pass was added."""
    if ttir_passes is None:
        from triton._C.libtriton import passes

        ttir_passes = passes.ttir
    add = getattr(ttir_passes, "add_rewrite_tensor_pointer", None)
    if add is None:
        return False
    add(pm)
    return True


# -- the JIT's functions -------------------------------------------------------------------

def jit_functions() -> list[Any]:
    """Every live `JITFunction`: Triton's registry where it keeps one (3.7 on), else found
    through the garbage collector (tests use this to drop launchers bound to an old driver)."""
    import triton.runtime.jit as jit

    registry = getattr(jit, "_triton_jit_function_registry", None)
    if registry is not None:
        return list(registry.values())
    return [o for o in gc.get_objects() if issubclass(type(o), jit.JITFunction)]


def clear_device_caches() -> None:
    """Forget every JIT function's compiled kernels and launchers."""
    for fn in jit_functions():
        fn.device_caches.clear()
