"""Source → TTGIR without a registered backend (tests and the CLI use this)."""

from __future__ import annotations

import hashlib
import importlib.util
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from triton._C.libtriton import ir
from triton.compiler import ASTSource

from msltrans.backend.options import SUPPORTED_FP8_DTYPES
from msltrans.ir.pipeline import DEFAULT_CHIP, make_ttgir, make_ttir


@dataclass(frozen=True)
class FrontendOptions:
    """The option fields Triton's code generator reads (a subset of the plugin's options)."""

    num_warps: int = 4
    arch: str = DEFAULT_CHIP
    debug: bool = False
    sanitize_overflow: bool = False
    instrumentation_mode: str = ""
    supported_fp8_dtypes: tuple[str, ...] = SUPPORTED_FP8_DTYPES
    deprecated_fp8_dot_operand_dtypes: tuple[str, ...] = ()
    default_dot_input_precision: str = "ieee"
    allowed_dot_input_precisions: tuple[str, ...] = ("ieee",)
    max_num_imprecise_acc_default: int = 0


def _jit_from_source(src: str, name: str | None) -> Any:
    """Import kernel source from a real file: Triton's JIT needs inspectable source."""
    digest = hashlib.sha1(src.encode()).hexdigest()[:12]
    path = Path(tempfile.gettempdir()) / f"msltrans_src_{digest}.py"
    path.write_text(src)
    spec = importlib.util.spec_from_file_location(f"msltrans_src_{digest}", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    from triton.runtime.jit import JITFunction

    kernels = {k: v for k, v in vars(module).items() if isinstance(v, JITFunction)}
    if name is not None:
        return kernels[name]
    if len(kernels) != 1:
        raise ValueError(f"source defines {sorted(kernels)}; pass the kernel name")
    return next(iter(kernels.values()))


def to_ttgir(fn_or_src: Any, signature: dict[str, str], constexprs: dict[str, Any] | None = None,
             num_warps: int = 4, *, kernel_name: str | None = None,
             arch: str = DEFAULT_CHIP, divisible_by_16: tuple[str, ...] = (),
             within_2gb: tuple[str, ...] = (), divisibility: dict[str, int] | None = None
             ) -> Any:
    """Run Triton's front end and the Metal pass pipeline; returns the live TTGIR module.

    `signature` maps every argument name to a Triton type string ("*fp32", "i32", ...) or
    "constexpr"; `constexprs` gives the constexpr values by name; `divisible_by_16` names the
    arguments the JIT would specialise as multiples of 16 (`tt.divisibility = 16`);
    `within_2gb` the pointer arguments whose buffers it would see under 2 GB
    (`tt.pointer_range = 32`); `divisibility` other stated divisibilities by name (what a
    launch-time alignment variant states: msltrans/runtime/align_variants.py).
    """
    fn = _jit_from_source(fn_or_src, kernel_name) if isinstance(fn_or_src, str) else fn_or_src
    constexprs = dict(constexprs or {})
    sig = dict(signature)
    for name in constexprs:
        sig.setdefault(name, "constexpr")
    opt = FrontendOptions(num_warps=num_warps, arch=arch)
    attrs: dict[tuple[int], list[list[Any]]] = {}
    for a in divisible_by_16:
        attrs.setdefault((fn.arg_names.index(a),), []).append(["tt.divisibility", 16])
    for a in within_2gb:
        attrs.setdefault((fn.arg_names.index(a),), []).append(["tt.pointer_range", 32])
    for a, d in (divisibility or {}).items():
        at = attrs.setdefault((fn.arg_names.index(a),), [])
        at[:] = [x for x in at if x[0] != "tt.divisibility"] + [["tt.divisibility", d]]
    src = ASTSource(fn, sig, constexprs, attrs)
    ctx = ir.context()
    ir.load_dialects(ctx)
    # tl.dot asks the target for minimum shapes; the Metal lowering has none (as the plugin's
    # get_codegen_implementation says).
    codegen_fns = {"min_dot_size": lambda lhs, rhs: (1, 1, 1)}
    mod = src.make_ir(None, opt, codegen_fns, {}, ctx)
    make_ttir(mod, opt)
    make_ttgir(mod, opt)
    return mod
