"""The wheel: everything the package reads at run time is inside it, and Triton finds the
plugin through its entry point."""

from __future__ import annotations

import configparser
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DATA_DIRS = ("msltrans/templates", "msltrans/sim/include", "msltrans/sim/runtime")
DATA_FILES = ("msltrans/selftest/reference.npz",)  # the selftest's simulator bytes


def _tracked_copy(dst: Path) -> None:
    """The files a clean checkout has (no build outputs, no editable-install metadata)."""
    files = subprocess.run(["git", "ls-files", "--cached", "--others", "--exclude-standard"],
                           cwd=ROOT, capture_output=True, text=True, check=True).stdout.split()
    for rel in files:
        if (ROOT / rel).is_file():
            (dst / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / rel, dst / rel)


def test_wheel_ships_templates_headers_and_entry_points(tmp_path: Path) -> None:
    src, out = tmp_path / "src", tmp_path / "dist"
    _tracked_copy(src)
    res = subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps",
                          "--no-build-isolation", "-w", str(out), str(src)],
                         capture_output=True, text=True, timeout=600)
    assert res.returncode == 0, res.stdout[-2000:] + res.stderr[-2000:]
    (wheel,) = out.glob("msltrans-*.whl")
    with zipfile.ZipFile(wheel) as zf:
        names = set(zf.namelist())
        entry = next(n for n in names if n.endswith(".dist-info/entry_points.txt"))
        ep = configparser.ConfigParser()
        ep.read_string(zf.read(entry).decode())
    wanted = {str(p.relative_to(src)) for d in DATA_DIRS for p in (src / d).rglob("*")
              if p.is_file() and "__pycache__" not in p.parts} | set(DATA_FILES)
    assert wanted and not wanted - names, f"missing from the wheel: {sorted(wanted - names)}"
    py = {str(p.relative_to(src)) for p in (src / "msltrans").rglob("*.py")}
    assert not py - names, f"modules missing from the wheel: {sorted(py - names)}"
    assert ep["triton.backends"]["metal"] == "msltrans.backend"
    assert ep["console_scripts"]["msltrans"] == "msltrans.cli:main"
    # does nothing unless MSLTRANS_INDUCTOR=1 (msltrans/inductor/autoload.py)
    assert ep["torch.backends"]["msltrans_inductor"] == "msltrans.inductor.autoload:autoload"
    assert "cpu" not in ep["triton.backends"], "a static `cpu` Triton backend changes has_triton()"


def test_triton_requirement_accepts_every_supported_build() -> None:
    """`pip install msltrans` over a source-built Triton: every supported release, and a build
    of main, which reports the last release's version with a local label (PEP 440)."""
    import re

    from packaging.requirements import Requirement

    pyproject = (ROOT / "pyproject.toml").read_text()
    (line,) = re.findall(r'^\s*"(triton\b[^"]*)",', pyproject, re.M)
    triton = Requirement(line)
    for version in ("3.6.0", "3.7.0", "3.7.1", "3.8.0", "3.9.0", "3.8.0+git63068fcc",
                    "3.9.0+gitabc1234", "3.10.0"):
        assert triton.specifier.contains(version, prereleases=True), version
    assert not triton.specifier.contains("3.5.1")
