"""`msltrans profile`: kernels (the project's vector add, a softmax) profiled per Triton
source line."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest

from msltrans import cli

ROOT = Path(__file__).resolve().parents[2]

SOFTMAX = textwrap.dedent('''
    import torch

    from msltrans.workloads.small_kernels import softmax


    if __name__ == "__main__":
        x = torch.randn(6, 300)
        y = torch.empty_like(x)
        for _ in range(3):
            softmax[(6,)](y, x, x.stride(0), y.stride(0), 300, BLOCK=512, num_warps=4)
        print("max error", (y - torch.softmax(x, 1)).abs().max().item())
''')
# The profiled kernel's file and the lines of its load and of its tl.max (the rows the test reads)
KERNEL_FILE = ROOT / "msltrans" / "workloads" / "small_kernels.py"


def _line(start: str) -> str:
    lines = KERNEL_FILE.read_text().splitlines()
    first = next(i for i, ln in enumerate(lines) if ln.startswith("def softmax("))
    at = next(i for i, ln in enumerate(lines) if i > first and ln.strip().startswith(start))
    return f"{KERNEL_FILE.name}:{at + 1}"



@pytest.fixture
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("TRITON_CACHE_DIR", str(tmp_path / "cache"))


def test_vector_add_per_triton_line(cache, tmp_path, capsys):
    out = tmp_path / "profile.json"
    assert cli.main(["profile", str(ROOT / "examples" / "vector_add.py"), "--json",
                     str(out)]) == 0
    report = capsys.readouterr().out
    assert "kernel `vector_add_kernel`: 1 launch(es), 97 threadgroup(s)" in report
    assert "ESTIMATE on Apple M4 Max" in report
    lines = json.loads(out.read_text())["vector_add_kernel"]["lines"]
    loads = {k: v for k, v in lines.items() if v["ops"] == ["tt.load"]}
    stores = {k: v for k, v in lines.items() if v["ops"] == ["tt.store"]}
    assert sorted(loads) == ["vector_add.py:26", "vector_add.py:27"]
    assert list(stores) == ["vector_add.py:28"]
    assert loads["vector_add.py:26"]["source"] == "a = tl.load(a_ptr + idx, mask=in_range)"
    for row in [*loads.values(), *stores.values()]:
        widths = row["global_loads"] or row["global_stores"]
        assert len(widths) == 1
        width = int(next(iter(widths)))
        # 98432 fp32 elements (the last program's masked lanes move nothing) ...
        assert row["global_load_bytes"] + row["global_store_bytes"] == 98432 * 4
        # ... and each thread owns 4 consecutive elements (16 bytes), so an access of
        # `width` bytes per lane uses width/16 of the 128-byte segments it touches: 25 %
        # for scalar accesses, 100 % with the 16-byte vectors msltrans emits for it
        assert width == 16
        assert row["coalescing"] == pytest.approx(width / 16)


def test_reductions_and_repeated_launches(cache, tmp_path, capsys):
    script = tmp_path / "softmax.py"
    script.write_text(SOFTMAX)
    assert cli.main(["profile", str(script), "--launches", "2", "--chip", "apple-m1"]) == 0
    captured = capsys.readouterr()
    assert "max error" in captured.err   # the program's output goes to stderr
    assert "kernel `softmax`: 2 launch(es), 12 threadgroup(s)" in captured.out
    assert "ESTIMATE on Apple M1 (8-core GPU)" in captured.out
    rows = {line.split()[0]: line.split() for line in captured.out.splitlines()
            if line.strip().startswith(f"{KERNEL_FILE.name}:")}
    # the load: 2 launches x 6 rows x 3 simdgroup accesses of 16 bytes a lane (the row
    # stride 300 is a multiple of 4: the launch's alignment variant, whole runs under the
    # bound mask `offs < n_cols`, 300 = 75 runs of 4)
    assert rows[_line("x = tl.load(")][1] == "36x16B"
    # tl.max: a shuffle per lane bit of each simdgroup, then a pass through threadgroup
    # memory between barriers (columns: ld st coal tg bank bar shfl red mma)
    reduce = rows[_line("num = tl.exp(x - tl.max(")]
    assert int(reduce[6]) > 0 and int(reduce[7]) > 0


def test_errors(cache, tmp_path, capsys):
    script = tmp_path / "softmax.py"
    script.write_text(SOFTMAX)
    with pytest.raises(SystemExit):
        cli.main(["profile", str(script), "--kernel", "nope"])
    assert "did not launch a kernel 'nope' (launched: softmax)" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        cli.main(["profile", str(tmp_path / "missing.py")])
    assert "no such file" in capsys.readouterr().err
