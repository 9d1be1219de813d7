"""`msltrans.inductor.enable()` / `disable()` in fresh interpreters: what they change, that
nothing changes without them, the environment switch, Inductor's compile workers, and the
refusal when another `cpu` Triton backend is installed."""

from __future__ import annotations

import importlib.metadata
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

# (cpu backend registered, has_triton(), Inductor's cpu_backend, MSLTRANS_INDUCTOR); without
# the route, has_triton() is true only where a CUDA GPU answers for it
STATE = """
import os, torch, triton.backends, torch.utils._triton as tu, torch._inductor.config as cfg
def state():
    return ["cpu" in triton.backends.backends, tu.has_triton(), cfg.cpu_backend,
            os.environ.get("MSLTRANS_INDUCTOR")]
"""
OFF = [False, False, "cpp", None]
MODEL = """
import torch
def f(x):
    return torch.nn.functional.gelu(x).softmax(-1) * 2 + 1
def run(**options):
    torch._dynamo.reset()
    x = torch.randn(8, 33)
    got = torch.compile(f, options=options)(x)
    return bool(torch.allclose(got, f(x), rtol=1e-5, atol=1e-6))
"""


def run_script(body: str, tmp_path: Path, **env: str) -> dict:
    environ = {k: v for k, v in os.environ.items() if k != "MSLTRANS_INDUCTOR"}
    environ.update({"PYTHONPATH": str(ROOT), "TRITON_CACHE_DIR": str(tmp_path / "triton"),
                    "TORCHINDUCTOR_CACHE_DIR": str(tmp_path / "inductor"), **env})
    code = (STATE + MODEL + body + "\nout['cuda'] = torch.cuda.is_available()\n"
            "import json; print('RESULT', json.dumps(out))\n")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=600, env=environ, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr[-4000:]
    line = [x for x in proc.stdout.splitlines() if x.startswith("RESULT ")][-1]
    return json.loads(line[len("RESULT "):])


def off(out: dict) -> list:
    """The state without the route on this machine."""
    return [OFF[0], out["cuda"], *OFF[2:]]


def entry_point_installed() -> bool:
    return any(ep.value == "msltrans.inductor.autoload:autoload"
               for ep in importlib.metadata.entry_points(group="torch.backends"))


needs_entry_point = pytest.mark.skipif(
    not entry_point_installed(),
    reason="msltrans is not installed with its `torch.backends` entry point "
           "(pip install -e . in this environment)")


def test_nothing_changes_without_enable(tmp_path: Path) -> None:
    out = run_script("""
import sys
out = {"state": state(), "inductor_imported": "msltrans.inductor.route" in sys.modules}
import msltrans.inductor as mi
out["launches"] = mi.launches()
out["after"] = state()
""", tmp_path)
    assert out["state"] == off(out)
    assert not out["inductor_imported"]
    assert out["launches"] == {}
    assert out["after"] == out["state"]


def test_enable_then_disable(tmp_path: Path) -> None:
    out = run_script("""
from triton.runtime import driver
active = driver.active
out = {"before": state()}
import msltrans.inductor as mi
import torch._inductor.config as cfg
mi.enable()
cfg.compile_threads = 1
out["enabled"] = state()
out["epilogue"] = cfg.benchmark_epilogue_fusion
out["match"] = run()
out["launches"] = sum(mi.launches().values())
out["same_driver"] = driver.active is active
mi.disable()
out["disabled"] = state()
out["epilogue_after"] = cfg.benchmark_epilogue_fusion
""", tmp_path)
    assert out["before"] == off(out)
    assert out["enabled"] == [True, True, "triton", "1"]
    assert out["epilogue"] is False and out["epilogue_after"] is True
    assert out["match"] and out["launches"] >= 1
    assert out["same_driver"], "an Inductor kernel changed Triton's active driver"
    assert out["disabled"] == out["before"]  # so Inductor generates C++ again


@needs_entry_point
def test_environment_switch_enables_at_import_torch(tmp_path: Path) -> None:
    out = run_script("""
out = {"state": state()}
import torch._inductor.config as cfg
cfg.compile_threads = 1
import msltrans.inductor as mi
out["match"] = run()
out["launches"] = sum(mi.launches().values())
""", tmp_path, MSLTRANS_INDUCTOR="1")
    assert out["state"] == [True, True, "triton", "1"]
    assert out["match"] and out["launches"] >= 1


@needs_entry_point
def test_compile_workers_compile_for_msltrans(tmp_path: Path) -> None:
    """With Inductor's subprocess pool ready, kernels compile in the workers (this process
    lowers nothing) and run here through msltrans."""
    out = run_script("""
import time
import msltrans.inductor as mi
import msltrans.backend.compiler as metal_compiler
mi.enable()
import torch._inductor.config as cfg
cfg.compile_threads = 2
cfg.worker_start_method = "subprocess"
lowered = []
original = metal_compiler.make_msl
metal_compiler.make_msl = lambda *a: lowered.append(1) or original(*a)
from torch._inductor.async_compile import AsyncCompile
deadline = time.time() + 300
while not AsyncCompile.use_process_pool() and time.time() < deadline:
    time.sleep(0.2)
out = {"pool": AsyncCompile.use_process_pool()}
out["match"] = run()
out["lowered_here"] = len(lowered)
out["launches"] = sum(mi.launches().values())
""", tmp_path)
    assert out["pool"], "Inductor's compile-worker pool did not start"
    assert out["match"] and out["launches"] >= 1
    assert out["lowered_here"] == 0, "kernels were lowered in this process, not in workers"


def test_another_cpu_backend_is_refused(tmp_path: Path) -> None:
    out = run_script("""
import triton.backends
from triton.backends import Backend
from msltrans.backend.compiler import MetalBackend
from msltrans.backend.driver import MetalDriver
class ForeignBackend(MetalBackend):
    pass
ForeignBackend.__module__ = "triton_cpu.compiler"
triton.backends.backends["cpu"] = Backend(compiler=ForeignBackend, driver=MetalDriver)
import msltrans.inductor as mi
from msltrans.errors import MetalNonRecoverableError
out = {}
try:
    mi.enable()
    out["error"] = None
except MetalNonRecoverableError as exc:
    out["error"] = str(exc)
out["env"] = os.environ.get("MSLTRANS_INDUCTOR")
out["kept"] = triton.backends.backends["cpu"].compiler is ForeignBackend
""", tmp_path)
    assert out["error"] and "triton_cpu.compiler" in out["error"]
    assert "triton-cpu" in out["error"]
    assert out["env"] is None and out["kept"]


def test_readme_torch_compile_example(tmp_path: Path) -> None:
    blocks = re.findall(r"```python\n(.*?)```", (ROOT / "README.md").read_text(), re.S)
    example = next(b for b in blocks if "msltrans.inductor.enable()" in b)
    out = run_script(example + "out = {'launches': msltrans.inductor.launches()}\n", tmp_path,
                     TORCHINDUCTOR_COMPILE_THREADS="1")
    assert out["launches"], "the README's torch.compile example ran no Triton kernel"


def _fake_main(monkeypatch, spec_name: str | None) -> None:
    import importlib.machinery
    import types

    main = types.ModuleType("__main__")
    main.__spec__ = importlib.machinery.ModuleSpec(spec_name, None) if spec_name else None
    monkeypatch.setitem(sys.modules, "__main__", main)


@pytest.mark.parametrize("spec_name, worker", [
    ("torch._inductor.compile_worker.__main__", True), (None, False), ("train", False)])
def test_autoload_pins_the_simulator_only_in_compile_workers(monkeypatch, spec_name, worker):
    from msltrans.inductor import autoload, route

    calls: list[dict] = []
    monkeypatch.setenv("MSLTRANS_INDUCTOR", "1")
    monkeypatch.delenv("MSLTRANS_ENGINE", raising=False)
    monkeypatch.setattr(route, "enable", lambda **kw: calls.append(kw))
    _fake_main(monkeypatch, spec_name)
    autoload.autoload()
    assert calls == [{"from_environment": True, "compile_worker": worker}]
    assert os.environ.get("MSLTRANS_ENGINE") == ("sim" if worker else None)


def test_autoload_does_nothing_without_the_switch(monkeypatch) -> None:
    from msltrans.inductor import autoload, route

    monkeypatch.delenv("MSLTRANS_INDUCTOR", raising=False)
    monkeypatch.setattr(route, "enable", lambda **kw: pytest.fail("enabled without the switch"))
    autoload.autoload()


def test_compile_workers_skip_the_mps_registrations(monkeypatch) -> None:
    import torch._inductor.config  # noqa: F401 - imported before the switch is set

    from msltrans.inductor import mps_route, route

    monkeypatch.setattr(mps_route, "enable", lambda **kw: pytest.fail("mps touched in a worker"))
    monkeypatch.setenv("MSLTRANS_INDUCTOR", "1")  # as a worker inherits it: no pool restart
    try:
        route.enable(from_environment=True, compile_worker=True)
    finally:
        route.disable()
