"""Triton's knobs keep working: the cache, TRITON_KERNEL_DUMP, TRITON_ALWAYS_COMPILE."""

from __future__ import annotations

import shutil

import torch
import triton
import triton.language as tl
from triton.backends.compiler import GPUTarget
from triton.compiler import ASTSource

from msltrans.backend import compiler as compiler_mod
from msltrans.backend.source_hash import PACKAGE_ROOT, source_hash

TARGET = GPUTarget("metal", "apple-m1", 32)


@triton.jit
def copy_kernel(src_ptr, dst_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(dst_ptr + offs, tl.load(src_ptr + offs, mask=offs < n), mask=offs < n)


def _src(block=64):
    return ASTSource(copy_kernel, {"src_ptr": "*fp32", "dst_ptr": "*fp32", "n": "i32",
                                   "BLOCK": "constexpr"}, {"BLOCK": block})


def test_msl_stage_round_trips_through_the_cache(fake_lowering, private_cache):
    first = triton.compile(_src(), target=TARGET, options={"num_warps": 2})
    second = triton.compile(_src(), target=TARGET, options={"num_warps": 2})  # cache hit
    assert first.hash == second.hash
    msl = second.asm["msl"]
    assert isinstance(msl, bytes) and msl.decode() == first.asm["msl"].decode()
    assert msl.decode().startswith("// fake MSL for copy_kernel")
    assert "ttgir" in second.asm and "ttir" in second.asm
    assert list(private_cache.glob("*/copy_kernel.msl"))
    md = second.metadata
    assert md.name == "copy_kernel" and md.shared == 0 and md.threads_per_group == 64
    assert [p["triton_type"] for p in md.params] == ["*f32", "*f32", "i32"]
    assert [p["buffer_index"] for p in md.params] == [0, 1, 2]
    assert md.params[2]["offset"] == 0 and md.args_size == 4


def test_kernel_dump_writes_msl(fake_lowering, tmp_path, monkeypatch):
    dump = tmp_path / "dump"
    monkeypatch.setenv("TRITON_KERNEL_DUMP", "1")
    monkeypatch.setenv("TRITON_DUMP_DIR", str(dump))
    triton.compile(_src(32), target=TARGET, options={"num_warps": 1})
    (msl,) = dump.glob("*/copy_kernel.msl")
    assert "fake MSL for copy_kernel" in msl.read_text()
    assert list(dump.glob("*/copy_kernel.ttgir"))


def test_always_compile_recompiles(fake_lowering, monkeypatch):
    calls = []
    real = compiler_mod.make_msl
    monkeypatch.setattr(compiler_mod, "make_msl", lambda *a: calls.append(1) or real(*a))
    triton.compile(_src(16), target=TARGET)
    triton.compile(_src(16), target=TARGET)
    assert len(calls) == 1
    monkeypatch.setenv("TRITON_ALWAYS_COMPILE", "1")
    triton.compile(_src(16), target=TARGET)
    assert len(calls) == 2


def test_cache_key_covers_msltrans_sources(fake_lowering, monkeypatch):
    before = triton.compile(_src(8), target=TARGET)
    monkeypatch.setattr(compiler_mod, "source_hash", lambda: "edited-lowering")
    after = triton.compile(_src(8), target=TARGET)
    assert before.hash != after.hash


def test_source_hash_sees_an_edit(tmp_path):
    copy = tmp_path / "msltrans"
    shutil.copytree(PACKAGE_ROOT, copy, ignore=shutil.ignore_patterns("__pycache__"))
    original = source_hash(copy)
    source_hash.cache_clear()
    (copy / "errors.py").write_text((copy / "errors.py").read_text() + "\n# edit\n")
    assert source_hash(copy) != original
    source_hash.cache_clear()
    (copy / "templates").mkdir(exist_ok=True)
    (copy / "templates" / "extra.metal.j2").write_text("// template")
    assert source_hash(copy) != original
    source_hash.cache_clear()
    assert compiler_mod.MetalBackend(TARGET).hash() == f"msltrans-{source_hash()}-apple-m1"


def test_jit_launch_reaches_the_launcher_through_the_cache(recording):
    x, y = torch.randn(40), torch.empty(40)
    copy_kernel[(1,)](x, y, 40, BLOCK=64)
    assert recording.calls and recording.calls[0].args[0] is x
