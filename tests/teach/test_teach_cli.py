"""`msltrans layout` and `msltrans dump --html` from the command line."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import numpy as np
import pytest

from msltrans import cli
from msltrans.teach.draw import simdgroup_colours
from tests.support.html_walk import external_references, read_page
from tests.support.triton_layouts import blocked_text

KERNELS = textwrap.dedent('''
    import torch
    import triton
    import triton.language as tl


    @triton.jit
    def tile_kernel(x_ptr, out_ptr, n, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
        rows = tl.arange(0, BLOCK_M)
        cols = tl.arange(0, BLOCK_N)
        offs = rows[:, None] * BLOCK_N + cols[None, :]
        x = tl.load(x_ptr + offs, mask=offs < n, other=0.0)
        total = tl.sum(x, axis=1)
        tl.store(out_ptr + rows, total)


    if __name__ == "__main__":
        x = torch.arange(256, dtype=torch.float32)
        out = torch.empty(16, dtype=torch.float32)
        tile_kernel[(1,)](x, out, 256, BLOCK_M=16, BLOCK_N=16, num_warps=2)
''')
FLAGS = ["--kernel", "tile_kernel", "--signature", "n=i32", "--constexpr",
         "BLOCK_M=16,BLOCK_N=32"]


@pytest.fixture
def kernel_file(tmp_path, monkeypatch):
    monkeypatch.setenv("TRITON_CACHE_DIR", str(tmp_path / "cache"))
    path = tmp_path / "tile.py"
    path.write_text(KERNELS)
    return path


def run(capsys, *argv: str) -> tuple[int, str, str]:
    try:
        code = cli.main(list(argv))
    except SystemExit as exc:
        code = exc.code
    out = capsys.readouterr()
    return code, out.out, out.err


def _png(path) -> np.ndarray:
    from PIL import Image

    with Image.open(path) as im:
        return np.asarray(im.convert("RGB"))


def _has_simdgroup_colours(img: np.ndarray, n: int) -> bool:
    for rgb in simdgroup_colours(n):
        want = np.array([int(round(255 * c)) for c in rgb])
        if (np.abs(img.astype(int) - want).max(axis=2) <= 3).sum() < 200:
            return False
    return True


def test_layout_of_an_encoding_to_png(tmp_path, capsys) -> None:
    out = tmp_path / "b.png"
    enc = blocked_text([1, 4], [4, 8], [2, 2], [1, 0])
    code, stdout, err = run(capsys, "layout", enc, "--shape", "32x64", "-o", str(out))
    assert code == 0, err
    assert stdout.strip() == (f"wrote {out}: tensor 32x64: 16 register(s) x 32 lanes x 4 "
                              "simdgroup(s); each element held once")
    img = _png(out)
    assert img.shape[0] > 500 and img.shape[1] > 800
    assert _has_simdgroup_colours(img, 4)


def test_layout_of_a_tensor_type_to_svg(tmp_path, capsys) -> None:
    parent = blocked_text([1, 1], [4, 8], [1, 4], [1, 0])
    out = tmp_path / "s.svg"
    tensor = f"tensor<32xf32, #ttg.slice<{{dim = 0, parent = {parent}}}>>"
    code, _, err = run(capsys, "layout", tensor, "-o", str(out))
    assert code == 0, err
    svg = out.read_text()
    assert svg.lstrip().startswith("<?xml") and "</svg>" in svg
    assert 'id="lane-0"' in svg and "x4" in svg.replace("_x4", " x4")  # replicated 4 times


_PARENT = blocked_text([1, 1], [8, 4], [2, 2], [1, 0])


@pytest.mark.parametrize("enc, shape, summary", [
    (f"#ttg.dot_op<{{opIdx = 0, parent = {_PARENT}, kWidth = 0}}>", "16x8",
     "tensor 16x8: 8 register(s) x 32 lanes x 4 simdgroup(s); each element held by 8"),
    ("#ttg.linear<{register = [[0, 1]], lane = [[0, 2], [0, 4], [1, 0], [2, 0], [4, 0]], "
     "warp = [[0, 0]], block = []}>", "8x8",
     "tensor 8x8: 2 register(s) x 32 lanes x 2 simdgroup(s); each element held by 2"),
    (f"#ttg.slice<{{dim = 1, parent = {_PARENT}}}>", "16",
     "tensor 16: 1 register(s) x 32 lanes x 4 simdgroup(s); each element held by 8"),
])
def test_layout_of_each_kind_of_encoding(tmp_path, capsys, enc, shape, summary) -> None:
    out = tmp_path / "k.svg"
    code, stdout, err = run(capsys, "layout", enc, "--shape", shape, "-o", str(out))
    assert code == 0, err
    assert summary in stdout and out.read_text().count("<use") > 0


@pytest.mark.parametrize("argv, message", [
    (["#blocked", "--shape", "4x4"], "is an alias"),
    ([blocked_text([1], [32], [4], [0])], "needs --shape"),
    ([blocked_text([1], [32], [4], [0]), "--shape", "12"], "powers of two"),
    (["#ttg.nvidia_mma<{versionMajor = 2}>", "--shape", "16x16"], "not supported"),
    ([blocked_text([1], [32], [4], [0]), "--shape", "0x4"], "powers of two"),
    (["tensor<32xf32, #ttg.blocked<{sizePerThread = [1], threadsPerWarp = [32], warpsPerCTA = "
      "[1], order = [0]}>>", "--shape", "64"], "differs from the tensor type"),
])
def test_layout_errors_are_one_line(tmp_path, capsys, argv, message) -> None:
    code, _, err = run(capsys, "layout", *argv, "-o", str(tmp_path / "x.png"))
    assert code == 1 and message in err and err.count("\n") == 1, err


def test_layout_of_kernel_values(kernel_file, tmp_path, capsys) -> None:
    out = tmp_path / "pics"
    code, stdout, err = run(capsys, "layout", str(kernel_file), *FLAGS, "--value", "x",
                            "-o", str(out))
    assert code == 0, err
    written = sorted(p.name for p in out.iterdir())
    assert written and all(n.startswith("x-") and n.endswith(".png") for n in written)
    assert any("16x32" in n for n in written)
    assert stdout.count("wrote ") == len(written)
    # Every layout of the kernel when no value is named; SVG on request.
    code, stdout, err = run(capsys, "layout", str(kernel_file), *FLAGS, "--svg",
                            "-o", str(tmp_path / "all"))
    assert code == 0, err
    every = list((tmp_path / "all").iterdir())
    assert len(every) > len(written) and all(p.suffix == ".svg" for p in every)
    # One value and shape into one file.
    one = tmp_path / "total.png"
    code, _, err = run(capsys, "layout", str(kernel_file), *FLAGS, "--value", "total",
                       "--shape", "16", "-o", str(one))
    assert code == 0 and one.exists(), err


def test_layout_of_kernel_errors(kernel_file, tmp_path, capsys) -> None:
    code, _, err = run(capsys, "layout", str(kernel_file), *FLAGS, "--value", "nope",
                       "-o", str(tmp_path))
    assert code == 1 and "no tensor value named 'nope'; it has: " in err
    assert "offs" in err and "total" in err
    code, _, err = run(capsys, "layout", str(kernel_file), *FLAGS, "-o", str(tmp_path / "a.png"))
    assert code == 1 and "give -o a directory" in err
    code, _, err = run(capsys, "layout", str(kernel_file), *FLAGS, "--value", "x",
                       "--shape", "8x8", "-o", str(tmp_path))
    assert code == 1 and "no value 'x' of shape 8x8; shapes: 16x32" in err


def test_dump_html_from_flags_and_from_a_run(kernel_file, tmp_path, capsys) -> None:
    page = tmp_path / "flags.html"
    code, stdout, err = run(capsys, "dump", str(kernel_file), *FLAGS, "--html", str(page))
    assert code == 0 and stdout.startswith(f"wrote {page}"), err
    html = page.read_text()
    assert "compiled for x_ptr: *fp32, out_ptr: *fp32, n: i32, BLOCK_M=16, BLOCK_N=32" in html
    assert external_references(html) == []
    # No flags: the script is run and its real launch shown (num_warps=2, 16x16).
    page = tmp_path / "run.html"
    code, stdout, err = run(capsys, "dump", str(kernel_file), "--html", str(page))
    assert code == 0, err
    html = page.read_text()
    assert "captured from running tile.py" in html and "64 (2 simdgroups x 32 lanes)" in html
    figures = [e for e in read_page(html).elements if e.tag == "figure"]
    assert any(f.attrs["id"].endswith("16x16") for f in figures)


def test_import_stays_light() -> None:
    """`import msltrans` and the CLI's parser do not import matplotlib (nor the page code)."""
    code = ("import sys, msltrans, msltrans.cli as c; c.build_parser(); "
            "print(sorted(m for m in sys.modules if m.startswith(('matplotlib', 'PIL', "
            "'msltrans.teach.page', 'msltrans.teach.draw'))))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]"


def test_layout_help_teaches() -> None:
    out = subprocess.run([sys.executable, "-m", "msltrans.cli", "layout", "--help"],
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0
    assert "examples:" in out.stdout and "--value" in out.stdout and "tensor<" in out.stdout
    out = subprocess.run([sys.executable, "-m", "msltrans.cli", "dump", "--help"],
                         capture_output=True, text=True, timeout=120)
    assert "--html OUT.html" in out.stdout


def test_dump_html_of_a_saved_ttgir(kernel_file, tmp_path, capsys) -> None:
    code, ttgir, err = run(capsys, "dump", str(kernel_file), *FLAGS, "--stage", "ttgir")
    assert code == 0, err
    saved = tmp_path / "tile.ttgir"
    saved.write_text(ttgir)
    page = tmp_path / "ttgir.html"
    code, _, err = run(capsys, "dump", str(saved), "--html", str(page))
    assert code == 0, err
    html = page.read_text()
    assert "lowered from the saved TTGIR tile.ttgir" in html
    # The source comes from the locations the TTGIR keeps, and its lines are linked.
    src = [e for e in read_page(html).elements if "src" in e.classes]
    assert any("tl.sum(x, axis=1)" in e.text and "mapped" in e.classes for e in src)
