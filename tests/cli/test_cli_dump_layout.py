"""`msltrans dump` on a file that launches nothing shows the layout a real launch gets:
pointers assumed 16-byte aligned as Triton's launcher specialises torch tensors, so vector add
has `sizePerThread = [4]` for fp32 and `[8]` for fp16, as `kernel[grid](...)` compiles it."""

from __future__ import annotations

import re
import textwrap

import pytest
import torch
import triton

from msltrans import cli

SOURCE = textwrap.dedent('''
    import triton
    import triton.language as tl


    @triton.jit
    def vadd(x_ptr, y_ptr, output_ptr, n_elements, BLOCK_SIZE: tl.constexpr = 1024):
        pid = tl.program_id(axis=0)
        offsets = pid * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
        mask = offsets < n_elements
        x = tl.load(x_ptr + offsets, mask=mask)
        y = tl.load(y_ptr + offsets, mask=mask)
        tl.store(output_ptr + offsets, x + y, mask=mask)


    @triton.jit
    def row_copy(X, Y, stride, n, BLOCK: tl.constexpr = 256):
        row = tl.program_id(0)
        offs = tl.arange(0, BLOCK)
        src = X + row * stride
        tl.store(Y + row * stride + offs, tl.load(src + offs, mask=offs < n), mask=offs < n)
''')
BLOCKED = re.compile(r"#ttg\.blocked<\{sizePerThread = \[(\d+)\]")


def _dump_layouts(capsys, path, *flags) -> list[str]:  # noqa: ANN001
    try:
        code = cli.main(["dump", str(path), "--stage", "ttgir", *flags])
    except SystemExit as exc:
        code = exc.code
    out = capsys.readouterr()
    assert code == 0, out.err
    return BLOCKED.findall(out.out)


@pytest.fixture
def module(tmp_path, monkeypatch):  # noqa: ANN001, ANN201
    import importlib.util

    monkeypatch.setenv("TRITON_CACHE_DIR", str(tmp_path / "cache"))
    path = tmp_path / "vadd_kernels.py"
    path.write_text(SOURCE)
    spec = importlib.util.spec_from_file_location("vadd_kernels", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return path, mod


@pytest.mark.parametrize("dtype, width", [(torch.float32, "4"), (torch.float16, "8")])
def test_vector_add_layout_matches_a_real_launch(module, capsys, dtype, width) -> None:  # noqa: ANN001
    path, mod = module
    flags = [] if dtype == torch.float32 else [
        "--signature", "x_ptr=*fp16,y_ptr=*fp16,output_ptr=*fp16"]
    dumped = _dump_layouts(capsys, path, "--kernel", "vadd", *flags)
    assert dumped == [width]
    n = 1000  # not a multiple of 16, as the dump assumes
    x, y = torch.randn(n).to(dtype), torch.randn(n).to(dtype)
    out = torch.empty_like(x)
    compiled = mod.vadd[(triton.cdiv(n, 1024),)](x, y, out, n)
    assert BLOCKED.findall(compiled.asm["ttgir"]) == dumped
    assert torch.equal(out, x + y)


def test_unaligned_flag_drops_the_specialisation(module, capsys) -> None:  # noqa: ANN001
    path, _ = module
    assert _dump_layouts(capsys, path, "--kernel", "vadd", "--unaligned",
                         "x_ptr,y_ptr,output_ptr") == ["1"]


def test_pointer_found_from_its_use(module, capsys) -> None:  # noqa: ANN001
    path, mod = module
    dumped = _dump_layouts(capsys, path, "--kernel", "row_copy")
    x = torch.randn(4, 256)
    y = torch.empty_like(x)
    compiled = mod.row_copy[(4,)](x, y, 257, 200)  # stride: i32, not a multiple of 16
    assert BLOCKED.findall(compiled.asm["ttgir"]) == dumped
