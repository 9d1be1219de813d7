"""The on-disk compile cache (what lands where, reuse without the compiler, what the key
covers) and compiler discovery (order, version floor, messages)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import textwrap
import types
import uuid
from pathlib import Path

import numpy as np
import pytest

from tests.support.sim_cache import fresh_cache

SOURCE = """
#include <metal_stdlib>
using namespace metal;
kernel void plus_k(device float* x [[buffer(0)]], uint i [[thread_position_in_grid]]) {
    x[i] += K;   // SALT
}
"""


def _source(k: float = 1.0, salt: str | None = None) -> str:
    # A salt no other run has used, so the first compile is a real (cold) one.
    return SOURCE.replace("K", f"{k}f").replace("SALT", salt or uuid.uuid4().hex)


@pytest.fixture
def private_cache(sim, tmp_path, monkeypatch):
    """A fresh cache dir and an empty in-process cache (as a new process starts with)."""
    fresh_cache(monkeypatch, tmp_path)
    monkeypatch.setattr(sim.library, "_loaded", {})
    return tmp_path


def _forbid_compiling(monkeypatch) -> None:
    from msltrans.sim import build

    def refuse(*args, **kwargs):
        raise AssertionError("the compiler was invoked for a cached build")

    monkeypatch.setattr(build, "build", refuse)
    monkeypatch.setattr(build, "_run", refuse)


def test_disk_cache_lands_in_cache_dir_and_is_reused(sim, private_cache, monkeypatch):
    source = _source(2.0)
    lib = sim.compile_shader(source)
    libraries = sorted(private_cache.glob("*.so"))
    metadata = sorted(private_cache.glob("*.json"))
    assert lib.path.parent == private_cache and lib.path in libraries
    assert [p.stem for p in metadata] == [lib.path.stem]
    # As a second process would: nothing in memory, the compiler must not run.
    monkeypatch.setattr(sim.library, "_loaded", {})
    _forbid_compiling(monkeypatch)
    again = sim.compile_shader(source)
    assert again is not lib and again.path == lib.path and again.kernel_names == ["plus_k"]
    x = np.zeros(4, np.float32)
    again.plus_k(x, threads=4)
    np.testing.assert_array_equal(x, [2, 2, 2, 2])


def test_fresh_process_loads_from_disk_without_compiling(sim, private_cache):
    from msltrans.sim import native

    source = _source(3.0)
    first = sim.compile_shader(source)
    # The runtime library is per process and already built: share it, so the child process
    # has nothing at all to compile.
    built = Path(native.runtime()._name)
    if built.parent.resolve() != Path(private_cache).resolve():  # built here when run alone
        shutil.copy(built, private_cache)
    script = textwrap.dedent("""
        import sys
        import numpy as np
        import msltrans.sim as sim
        from msltrans.sim import build, native

        def refuse(*args, **kwargs):
            raise AssertionError("the compiler was invoked for a cached build")

        build.build = build._run = native._build = refuse
        lib = sim.compile_shader(sys.stdin.read())
        x = np.zeros(4, np.float32)
        lib.plus_k(x, threads=4)
        print(lib.path, x.tolist())
    """)
    env = {**os.environ, "MSLTRANS_SIM_CACHE_DIR": str(private_cache)}
    result = subprocess.run([sys.executable, "-c", script], input=source, capture_output=True,
                            text=True, env=env, cwd=Path(__file__).parents[2], timeout=120)
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == [str(first.path), "[3.0,", "3.0,", "3.0,", "3.0]"]


def test_key_changes_with_source_and_name(sim, private_cache):
    salt = uuid.uuid4().hex
    a = sim.compile_shader(_source(1.0, salt))
    b = sim.compile_shader(_source(1.0, salt + "x"))          # a comment changed
    c = sim.compile_shader(_source(1.0, salt), name="other.metal")
    assert len({a.path, b.path, c.path}) == 3
    kernels = [p for p in private_cache.glob("*.so")
               if not p.name.startswith(("lanes-", "libmslsim-"))]
    assert len(kernels) == 3, kernels
    assert sim.compile_shader(_source(1.0, salt)) is a          # same source: same entry


def test_included_header_change_invalidates_cached_builds(sim, private_cache, monkeypatch,
                                                           tmp_path):
    inc = tmp_path / "inc"
    inc.mkdir()
    (inc / "k.h").write_text("#define K_VALUE 4.0f\n")
    source = SOURCE.replace("K", "K_VALUE").replace("SALT", uuid.uuid4().hex)
    source = source.replace("using namespace metal;", 'using namespace metal;\n#include "k.h"')
    x = np.zeros(2, np.float32)
    sim.compile_shader(source, include_dirs=[str(inc)]).plus_k(x, threads=2)
    (inc / "k.h").write_text("#define K_VALUE 40.0f\n")
    monkeypatch.setattr(sim.library, "_loaded", {})   # a new process, same disk cache
    sim.compile_shader(source, include_dirs=[str(inc)]).plus_k(x, threads=2)
    np.testing.assert_array_equal(x, [44, 44])
    # In the same process too: the rebuilt library (same key, same file name) is what runs.
    (inc / "k.h").write_text("#define K_VALUE 400.0f\n")
    lib = sim.compile_shader(source, include_dirs=[str(inc)])
    lib.plus_k(x, threads=2)
    np.testing.assert_array_equal(x, [444, 444])
    assert sim.compile_shader(source, include_dirs=[str(inc)]) is lib


def test_header_version_covers_every_shim_file(tmp_path, monkeypatch):
    # The cache key's header version is a hash of the shim tree and the source-preparing
    # modules: editing or adding any of them must change it, with no version to bump.
    from msltrans.sim import cache

    copy = tmp_path / "sim"
    shutil.copytree(cache._SIM_DIR / "include", copy / "include")
    for name in cache._VERSIONED_FILES:
        (copy / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(cache._SIM_DIR / name, copy / name)
    monkeypatch.setattr(cache, "_SIM_DIR", copy)
    base = cache.headers_hash()
    vector_h = copy / "include" / "msl_sim" / "vector.h"
    vector_h.write_text(vector_h.read_text() + "\n// edited\n")
    edited = cache.headers_hash()
    (copy / "include" / "msl_sim" / "new.h").write_text("// new\n")
    added = cache.headers_hash()
    entries = copy / "entries.py"
    entries.write_text(entries.read_text() + "\n# edited\n")
    entries_edited = cache.headers_hash()
    lanes_pass = copy / "lanes" / "lanes_pass.cpp"
    lanes_pass.write_text(lanes_pass.read_text() + "\n// edited\n")
    assert len({base, edited, added, entries_edited, cache.headers_hash()}) == 5


# --- compiler discovery -----------------------------------------------------------------

@pytest.fixture
def discovery(monkeypatch):
    """compiler.py with a fake set of installed clangs: {argv: version line or None}."""
    from msltrans.sim import compiler

    installed: dict[tuple[str, ...], str | None] = {}

    def version_of(argv):
        line = installed.get(tuple(argv))
        if line is None:
            return None
        return line, int(line.split("clang version ")[1].split(".")[0])

    monkeypatch.delenv("MSLTRANS_CLANG", raising=False)
    monkeypatch.setattr(compiler, "_version_of", version_of)
    monkeypatch.setattr(compiler, "_candidates", lambda: list(installed))
    compiler._find.cache_clear()
    yield compiler, installed
    compiler._find.cache_clear()


ZIG = (sys.executable, "-m", "ziglang", "clang")


def test_system_clang_17_or_newer_is_preferred(discovery):
    compiler, installed = discovery
    installed[("/usr/bin/clang-18",)] = "Debian clang version 18.1.8"
    installed[("/usr/bin/clang",)] = "clang version 19.1.0"
    installed[ZIG] = "clang version 18.1.6"
    found = compiler.find_compiler()
    assert found.argv == ("/usr/bin/clang-18",) and found.major == 18


def test_old_clang_is_skipped_for_ziglang(discovery):
    compiler, installed = discovery
    installed[("/usr/bin/clang",)] = "Debian clang version 14.0.6"
    installed[ZIG] = "clang version 18.1.6"
    found = compiler.find_compiler()
    assert found.argv == ZIG and found.major == 18


def test_only_old_clang_is_rejected_with_how_to_install(discovery):
    compiler, installed = discovery
    installed[("/usr/bin/clang",)] = "Debian clang version 16.0.6"
    with pytest.raises(compiler.CompilerNotFoundError) as info:
        compiler.find_compiler()
    message = str(info.value)
    assert "clang >= 17" in message
    assert "found only: /usr/bin/clang (Debian clang version 16.0.6)" in message
    assert "apt-get install clang-19" in message
    assert "pip install msltrans[zig]" in message and "MSLTRANS_CLANG" in message


def test_no_clang_at_all_says_how_to_get_one(discovery):
    compiler, _ = discovery
    with pytest.raises(compiler.CompilerNotFoundError) as info:
        compiler.find_compiler()
    message = str(info.value)
    assert "found only" not in message
    assert "apt-get install clang-19" in message and "pip install msltrans[zig]" in message


def test_override_comes_first(discovery, monkeypatch):
    compiler, installed = discovery
    installed[("/usr/bin/clang-19",)] = "clang version 19.1.0"
    installed[("/opt/llvm/bin/clang", "--target=x86_64-linux-gnu")] = "clang version 20.1.0"
    monkeypatch.setenv("MSLTRANS_CLANG", "/opt/llvm/bin/clang --target=x86_64-linux-gnu")
    assert compiler.find_compiler().argv == ("/opt/llvm/bin/clang", "--target=x86_64-linux-gnu")


def test_candidate_order_then_ziglang(monkeypatch):
    from msltrans.sim import compiler

    present = {"clang": "/usr/bin/clang", "clang-17": "/usr/bin/clang-17",
               "clang-19": "/usr/lib/llvm-19/bin/clang-19"}
    monkeypatch.setattr(compiler.shutil, "which", present.get)
    monkeypatch.setitem(sys.modules, "ziglang", types.ModuleType("ziglang"))
    assert compiler._candidates() == [("/usr/lib/llvm-19/bin/clang-19",), ("/usr/bin/clang-17",),
                                      ("/usr/bin/clang",), ZIG]
    monkeypatch.setitem(sys.modules, "ziglang", None)   # not installed: import fails
    assert compiler._candidates()[-1] == ("/usr/bin/clang",)


def _fake_clang(path: Path, major: int) -> None:
    path.write_text(f"#!/bin/sh\necho 'fake clang version {major}.1.0 (test)'\n")
    path.chmod(0o755)


def test_version_probe_is_remembered_per_binary(tmp_path, monkeypatch):
    """`clang --version` runs once per binary, not once per process; another binary at the
    same path (an upgrade: new size/mtime) is probed again."""
    from msltrans.sim import compiler

    monkeypatch.setenv("MSLTRANS_SIM_CACHE_DIR", str(tmp_path / "cache"))
    clang = tmp_path / "clang"
    _fake_clang(clang, 18)
    assert compiler._version_of((str(clang),)) == ("fake clang version 18.1.0 (test)", 18)
    real_run = subprocess.run

    def no_probe(*args, **kwargs):
        raise AssertionError("probed again")

    monkeypatch.setattr(compiler.subprocess, "run", no_probe)
    assert compiler._version_of((str(clang),))[1] == 18  # from the memo, no subprocess
    _fake_clang(clang, 190)  # another binary: the size changes
    monkeypatch.setattr(compiler.subprocess, "run", real_run)
    assert compiler._version_of((str(clang),))[1] == 190
    # a multi-word command (python -m ziglang clang) is never memoised
    assert compiler._binary_key((sys.executable, "-m", "ziglang", "clang")) is None
