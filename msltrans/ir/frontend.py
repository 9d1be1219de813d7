"""Source -> live TTGIR module, for code that walks or lowers the module itself (tests, the
benchmarks' codegen statistics, the analyses' tests).

`to_ttgir` runs the plugin's own front end and pass lists through the compile driver
(msltrans.toolchain, `until="ttgir"`) with one difference from a launch: Triton's
`sanitize_overflow` is off, as the modules these callers compare against were built.
`msltrans dump` and the teaching views call msltrans.toolchain directly.
"""

from __future__ import annotations

from typing import Any

from msltrans.ir.pipeline import DEFAULT_CHIP


def to_ttgir(fn_or_src: Any, signature: dict[str, str], constexprs: dict[str, Any] | None = None,
             num_warps: int = 4, *, kernel_name: str | None = None,
             arch: str = DEFAULT_CHIP, divisible_by_16: tuple[str, ...] = (),
             within_2gb: tuple[str, ...] = ()) -> Any:
    """Run Triton's front end and the Metal pass pipeline; returns the live TTGIR module.

    `fn_or_src` is a JITFunction or the Python source of one (`kernel_name` picks one of
    several). `signature` maps every argument name to a Triton type string ("*fp32", "i32",
    ...) or "constexpr"; `constexprs` gives the constexpr values by name; `divisible_by_16`
    names the arguments the JIT would specialise as multiples of 16
    (`tt.divisibility = 16`); `within_2gb` the pointer arguments whose buffers it would see
    under 2 GB (`tt.pointer_range = 32`).
    """
    from msltrans import toolchain

    out = toolchain.compile_kernel(
        fn_or_src, signature, constexprs, num_warps=num_warps, kernel=kernel_name, chip=arch,
        divisible_by_16=divisible_by_16, within_2gb=within_2gb, until="ttgir", texts=False,
        options={"sanitize_overflow": False})
    return out.module
