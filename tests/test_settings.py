"""The environment-variable table (msltrans/settings.py) is the only reader of the
environment in msltrans's Python code, names every variable its C code reads, and is the
README's "Settings" table."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from msltrans import settings

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "msltrans"
HEADER_GUARDS = {"MSLTRANS_LANES_PASS_H"}


def _sources(*suffixes: str) -> list[Path]:
    return sorted(p for p in PACKAGE.rglob("*") if p.suffix in suffixes and p.is_file())


def test_readme_table_is_generated_from_the_table() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert settings.readme_table() in readme, (
        "README.md's Settings table differs from msltrans.settings: replace it with the "
        "output of `python -m msltrans.settings`")


def test_every_variable_named_in_the_package_is_in_the_table() -> None:
    named = set()
    for path in _sources(".py", ".c", ".h", ".cpp", ".j2", ".metal"):
        named |= set(re.findall(r"\bMSLTRANS_[A-Z0-9_]*[A-Z0-9]\b", path.read_text()))
    missing = named - HEADER_GUARDS - {s.name for s in settings.SETTINGS}
    assert not missing, f"variables named in msltrans/ but not in msltrans.settings: {missing}"


def test_python_code_reads_the_environment_only_through_the_table() -> None:
    reads = re.compile(r"os\.environ\.get\(|os\.getenv\(|os\.environ\[|environ\.setdefault\(")
    offenders = [f"{p.relative_to(ROOT)}:{i}" for p in _sources(".py")
                 if p.name != "settings.py"
                 for i, line in enumerate(p.read_text().splitlines(), 1) if reads.search(line)]
    assert not offenders, f"environment read outside msltrans/settings.py: {offenders}"


def test_c_readers_are_marked() -> None:
    for path in _sources(".c", ".cpp"):
        for name in re.findall(r'getenv\("(\w+)"\)', path.read_text()):
            row = next(s for s in settings.SETTINGS if s.name == name)
            assert row.c_reader, f"{name} is read by {path.name}: its row needs c_reader"


def test_unknown_names_are_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MSLTRANS_NOT_A_SETTING", "1")
    with pytest.raises(KeyError):
        settings.raw("MSLTRANS_NOT_A_SETTING")
    monkeypatch.setenv(settings.SIM_THREADS, " 3 ")
    assert settings.text(settings.SIM_THREADS) == "3"
    assert settings.raw(settings.SIM_THREADS) == " 3 "
