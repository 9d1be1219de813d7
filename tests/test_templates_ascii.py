"""Every MSL template and support library msltrans ships is 7-bit ASCII: torch.mps.
compile_shader reads the source with NSASCIIStringEncoding (PyTorch's MetalShaderLibrary::
compileLibrary), so one byte above 0x7F, even in a comment, breaks every kernel that
includes the file on a Mac. The simulator refuses such source too (msltrans.sim.language);
this test finds the file before any kernel is built."""

from __future__ import annotations

from pathlib import Path

import msltrans

PACKAGE = Path(msltrans.__file__).resolve().parent


def msl_files() -> list[Path]:
    """The MSL text files in the package: templates and support libraries."""
    return sorted(p for p in PACKAGE.rglob("*")
                  if p.is_file() and p.name.endswith((".metal", ".metal.j2")))


def first_non_ascii(data: bytes) -> str | None:
    for index, byte in enumerate(data):
        if byte > 0x7F:
            line = data.count(b"\n", 0, index) + 1
            column = index - (data.rfind(b"\n", 0, index) + 1) + 1
            char = data[index:index + 4].decode("utf-8", "replace")[:1]
            return f"{line}:{column}: byte 0x{byte:02X} ({char!r})"
    return None


def test_the_templates_are_found():
    names = {p.name for p in msl_files()}
    assert {"kernel.metal.j2", "elementwise_support.metal", "reduce.metal.j2"} <= names


def test_every_msl_template_is_seven_bit_ascii():
    bad = {}
    for path in msl_files():
        found = first_non_ascii(path.read_bytes())
        if found is not None:
            bad[str(path.relative_to(PACKAGE.parent))] = found
    assert not bad, f"non-ASCII bytes in MSL templates (first per file): {bad}"
