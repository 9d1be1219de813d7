"""`MetalOptions`: every compile option Triton may hand the Metal backend.

Triton's JIT rejects a launch keyword that is not a field of the options dataclass, and it
injects a few fields of its own (`debug`, `instrumentation_mode`, `fpsan_homomorphic_casts`).
Kernels written for NVIDIA or AMD pass tuning keywords (`maxnreg`, `waves_per_eu`, `kpack`, ...);
we accept those so such kernels run unmodified, and document them as inert.
"""

from __future__ import annotations

import hashlib
import sys
import warnings
from dataclasses import dataclass, fields
from typing import Any

from msltrans import settings
from msltrans.abi.limits import MAX_THREADS_PER_THREADGROUP, SIMD_WIDTH
from msltrans.errors import MetalNonRecoverableError

DEFAULT_NUM_STAGES = 3  # Triton's own default (autotune Configs pass 3); only other values warn

# Fields that tune NVIDIA/AMD code generation: accepted so kernels run unmodified, no effect here.
INERT_FIELDS = (
    "num_stages", "launch_pdl", "maxnreg", "ptx_version", "ptx_options", "sched4reg",
    "enable_reflect_ftz", "clc", "min_shared_mem", "waves_per_eu", "matrix_instr_nonkdim",
    "kpack", "allow_flush_denorm", "schedule_hint", "llvm_fn_attrs", "wgp_cu_mode",
    "extern_libs", "sanitize_overflow", "fpsan_homomorphic_casts", "grf_mode",
)

# fp8 as a storage format (msltrans/lower/elementwise/ops_fp8.py converts in software, exactly as
# Triton's NVIDIA backend rounds). The AMD FNUZ types (fp8e4b8, fp8e5b16) and fp8e4b15 are
# left out, so Triton's front end refuses them ("type ... not supported in this architecture").
SUPPORTED_FP8_DTYPES: tuple[str, ...] = ("fp8e4nv", "fp8e5")

_num_stages_warned = False


class DotPrecisions(tuple):
    """`("ieee",)`, the only dot input precision Apple GPUs have.

    Triton's front end checks `input_precision in options.allowed_dot_input_precisions`
    with an assert; for the precisions other targets have (tf32, tf32x3, bf16x3, ...) this
    raises a MetalNonRecoverableError that says why and what to use instead.
    """

    def __new__(cls, values: Any = ("ieee",)) -> DotPrecisions:
        return super().__new__(cls, values)

    def __contains__(self, item: object) -> bool:
        if tuple.__contains__(self, item):
            return True
        # Triton 3.9's `tl.dot` probes `"tf32" in allowed_dot_input_precisions` to pick the
        # default precision when none is given: that probe must read False (default "ieee"),
        # not refuse every dot. Only an explicitly requested precision is refused.
        if sys._getframe(1).f_globals.get("__name__") == "triton.language.core":
            return False
        if isinstance(item, str):
            raise MetalNonRecoverableError(
                f"tl.dot input_precision={item!r}: Apple GPUs have no tf32 or split-precision "
                "dot units", op="tt.dot", hint="pass input_precision='ieee' (the default here)")
        return False


class NumWarpsError(MetalNonRecoverableError, AssertionError):
    """A refusal that is also the `AssertionError` Triton's own backends raise for a bad
    `num_warps` ("num_warps must be a power of 2"), so code and tests written against them
    see the error type they expect."""


def _warn_num_stages(num_stages: int) -> None:
    # Software pipelining (cp.async / TMA stages) has no Metal equivalent; say so once per
    # process rather than once per autotune config.
    global _num_stages_warned
    if _num_stages_warned:
        return
    _num_stages_warned = True
    warnings.warn(f"msltrans: num_stages={num_stages} is accepted but has no effect on Metal "
                  "(no software pipelining); this warning is shown once per process",
                  stacklevel=3)


@dataclass(frozen=True)
class MetalOptions:
    num_warps: int = 4
    num_ctas: int = 1
    num_stages: int = DEFAULT_NUM_STAGES
    warp_size: int = SIMD_WIDTH
    enable_fp_fusion: bool = True
    launch_cooperative_grid: bool = False
    launch_pdl: bool = False
    extern_libs: Any = None
    debug: bool = False
    instrumentation_mode: str = ""
    fpsan_homomorphic_casts: bool = False
    sanitize_overflow: bool = True
    arch: str | None = None
    backend_name: str = "metal"
    # The MSL version the MSL is written for (msltrans/msl_version.py); 0: this machine's.
    msl_version: int = 0
    # tt.dot results laid out as simdgroup fragments (msltrans/lower/dot/fragments.py); None:
    # on unless MSLTRANS_DOT_FRAGMENTS=0. Part of the cache key, like every option.
    dot_fragments: bool | None = None
    ir_override: str | None = None
    # what the front end reads
    supported_fp8_dtypes: tuple[str, ...] = SUPPORTED_FP8_DTYPES
    deprecated_fp8_dot_operand_dtypes: tuple[str, ...] = ()
    default_dot_input_precision: str = "ieee"
    allowed_dot_input_precisions: tuple[str, ...] = DotPrecisions()
    max_num_imprecise_acc_default: int = 0
    # NVIDIA / AMD tuning knobs (inert)
    maxnreg: int | None = None
    ptx_version: int | None = None
    ptx_options: str | None = None
    sched4reg: bool = False
    enable_reflect_ftz: bool = True
    clc: bool = False
    min_shared_mem: int | None = None
    waves_per_eu: int = 0
    matrix_instr_nonkdim: int = 0
    kpack: int = 1
    allow_flush_denorm: bool = False
    schedule_hint: str = ""
    llvm_fn_attrs: Any = ""
    wgp_cu_mode: str = "wgp"
    grf_mode: str = ""  # Intel XPU register-file mode (its tutorial 05 passes it)

    def __post_init__(self) -> None:
        libs = self.extern_libs
        if isinstance(libs, dict):
            libs = tuple(sorted(libs.items()))
        object.__setattr__(self, "extern_libs", tuple(tuple(x) for x in (libs or ())))
        for name in ("supported_fp8_dtypes", "deprecated_fp8_dot_operand_dtypes"):
            object.__setattr__(self, name, tuple(getattr(self, name)))
        object.__setattr__(self, "allowed_dot_input_precisions",
                           DotPrecisions(self.allowed_dot_input_precisions))
        if isinstance(self.llvm_fn_attrs, (list, tuple)):
            object.__setattr__(self, "llvm_fn_attrs", tuple(tuple(x) for x in self.llvm_fn_attrs))
        if not self.msl_version:
            from msltrans import msl_version

            object.__setattr__(self, "msl_version", msl_version.target())
        if self.dot_fragments is None:
            object.__setattr__(self, "dot_fragments",
                               settings.text(settings.DOT_FRAGMENTS) != "0")
        self._validate()
        if self.num_stages != DEFAULT_NUM_STAGES:
            _warn_num_stages(self.num_stages)

    def _validate(self) -> None:
        from msltrans import msl_version

        msl_version.parse(self.msl_version)
        nw = self.num_warps
        if not isinstance(nw, int) or nw < 1 or nw & (nw - 1):
            raise NumWarpsError(f"num_warps={nw!r} is not supported: num_warps must be a "
                                "power of 2", hint="use a power of two from 1 to 32")
        if nw > 32:
            raise MetalNonRecoverableError(
                f"num_warps={nw} gives {nw * self.warp_size} threads per threadgroup, "
                f"Metal allows {MAX_THREADS_PER_THREADGROUP}",
                hint="use a power of two from 1 to 32")
        if nw * self.warp_size > MAX_THREADS_PER_THREADGROUP:
            raise MetalNonRecoverableError(
                f"num_warps={nw} gives {nw * self.warp_size} threads per threadgroup, "
                f"Metal allows {MAX_THREADS_PER_THREADGROUP}")
        if self.warp_size != SIMD_WIDTH:
            raise MetalNonRecoverableError(
                f"warp_size={self.warp_size} is not supported: Apple SIMD groups are 32 wide")
        if self.num_ctas != 1:
            raise MetalNonRecoverableError(
                f"num_ctas={self.num_ctas} is not supported: Metal has no thread-block clusters",
                hint="use num_ctas=1")
        if self.launch_cooperative_grid:
            # Metal gives no co-residency guarantee for all threadgroups of a dispatch, so a
            # grid-wide barrier could deadlock: refuse rather than hang.
            raise MetalNonRecoverableError(
                "launch_cooperative_grid=True is not supported: Metal cannot guarantee that "
                "all threadgroups run concurrently")
        if self.instrumentation_mode:
            raise MetalNonRecoverableError(
                f"instrumentation_mode={self.instrumentation_mode!r} (Triton's NVIDIA/AMD "
                "sanitizers) is not supported on Metal",
                hint="unset TRITON_INSTRUMENTATION_MODE; the simulator checks bounds and races")
        bad = [p for p in self.allowed_dot_input_precisions if p != "ieee"]
        if bad or self.default_dot_input_precision != "ieee":
            raise MetalNonRecoverableError(
                f"dot input precisions {bad or [self.default_dot_input_precision]} are not "
                "supported: Apple GPUs have no tf32; only 'ieee' is")
        extra = [t for t in self.supported_fp8_dtypes if t not in SUPPORTED_FP8_DTYPES]
        if extra:
            raise MetalNonRecoverableError(
                f"fp8 types {tuple(extra)} are not supported on Metal",
                hint=f"supported fp8 types: {SUPPORTED_FP8_DTYPES}")

    def hash(self) -> str:
        key = "_".join(f"{f.name}-{getattr(self, f.name)!r}" for f in
                       sorted(fields(self), key=lambda f: f.name))
        return hashlib.sha256(key.encode("utf-8")).hexdigest()

    @classmethod
    def from_dict(cls, opts: dict[str, Any], arch: str) -> MetalOptions:
        """Keep the known fields of `opts` (Triton passes extras, e.g. from `ttgir` files)."""
        names = {f.name for f in fields(cls)}
        args: dict[str, Any] = {"arch": arch}
        args.update({k: v for k, v in opts.items() if k in names and v is not None})
        return cls(**args)
