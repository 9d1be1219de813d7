"""Every byte of the MSL msltrans emits is 7-bit ASCII (torch.mps.compile_shader reads the source
with NSASCIIStringEncoding): names derived from Python identifiers, and user text (file names)
quoted in comments (the templates: tests/test_templates_ascii.py)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import numpy as np
import pytest

from msltrans.errors import MetalNonRecoverableError
from msltrans.ir import read_module
from msltrans.lower import lower_module
from msltrans.lower.emitter import sanitize
from msltrans.lower.msl_ascii import ascii_source, identifier
from msltrans.toolchain import to_ttgir

KERNEL = '''
import triton
import triton.language as tl


@triton.jit
def affine_relu(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    # comment: größe ± 1 → café
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    maske = offs < n
    größe = tl.load(x_ptr + offs, mask=maske)
    café = größe * 2.0 + 1.0
    tl.store(y_ptr + offs, tl.maximum(café, 0.0), mask=maske)
'''


@pytest.mark.parametrize("name, want", [("cafe", "cafe"), ("café", "cafe"),
                                        ("größe", "groudf_e"), ("δx", "u3b4_x")])
def test_identifiers_become_ascii(name: str, want: str) -> None:
    assert identifier(name) == want
    assert sanitize(name).isascii() and sanitize(name).isidentifier()


def test_comments_are_escaped_and_code_refuses() -> None:
    src = 'int a = 1;  // größe ± 1\n/* → */ float b = 2.0f;\n'
    out = ascii_source(src)
    assert out.isascii()
    assert "gr\\u{f6}\\u{df}e \\u{b1} 1" in out and "/* \\u{2192} */" in out
    assert out.replace("\\u{f6}\\u{df}", "").startswith("int a = 1;  // gre")
    with pytest.raises(MetalNonRecoverableError, match="non-ASCII character 'é'.*line 2"):
        ascii_source("int a;\nint caf\u00e9 = 0;\n")


def test_a_kernel_from_a_non_ascii_file_with_non_ascii_names(tmp_path: Path) -> None:
    path = tmp_path / "noyau_é.py"
    path.write_text(KERNEL, encoding="utf-8")
    spec = importlib.util.spec_from_file_location("noyau_e_ascii_test", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    try:
        spec.loader.exec_module(module)
        mod = to_ttgir(module.affine_relu, {"x_ptr": "*fp32", "y_ptr": "*fp32", "n": "i32"},
                       {"BLOCK": 128}, 4)
    finally:
        del sys.modules[spec.name]
    program = lower_module(read_module(mod))
    assert program.source.isascii()
    assert "noyau_\\u{e9}.py" in program.source   # the file name, escaped in the header comment

    import msltrans.sim as sim

    lib = sim.compile_shader(program.source)
    rng = np.random.default_rng(3)
    x = rng.standard_normal(300).astype(np.float32)
    y = np.full(300, np.nan, np.float32)
    t = program.threads_per_group
    getattr(lib, program.kernel_name)(*program.engine_args((x, y, 300)), threads=(3 * t, 1, 1),
                                      group_size=(t, 1, 1), arg_casts=program.arg_casts)
    # x * 2 is exact, so fused or not, the result is x * 2 + 1 rounded once
    want = np.maximum(x.astype(np.float64) * 2.0 + 1.0, 0.0).astype(np.float32)
    np.testing.assert_array_equal(y, want)
