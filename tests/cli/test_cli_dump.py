"""`msltrans dump`: stages printed, signature inference, one-line errors with exit status 1."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

from msltrans import cli

KERNELS = textwrap.dedent('''
    import triton
    import triton.language as tl


    @triton.jit
    def add_kernel(x_ptr, y_ptr, output_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
        pid = tl.program_id(axis=0)
        offsets = pid * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
        mask = offsets < n_elements
        x = tl.load(x_ptr + offsets, mask=mask)
        y = tl.load(y_ptr + offsets, mask=mask)
        tl.store(output_ptr + offsets, x + y, mask=mask)


    @triton.jit
    def scale_kernel(x_ptr, n, alpha, BLOCK: tl.constexpr = 128):
        offs = tl.arange(0, BLOCK)
        tl.store(x_ptr + offs, tl.load(x_ptr + offs, mask=offs < n) * alpha, mask=offs < n)
''')


@pytest.fixture
def kernel_file(tmp_path, monkeypatch):
    monkeypatch.setenv("TRITON_CACHE_DIR", str(tmp_path / "cache"))
    path = tmp_path / "kernels.py"
    path.write_text(KERNELS)
    return path


def run(capsys, *argv):
    try:
        code = cli.main(list(argv))
    except SystemExit as exc:
        code = exc.code
    out = capsys.readouterr()
    return code, out.out, out.err


def test_ttgir_stage_with_inferred_pointer_types(kernel_file, capsys):
    code, out, err = run(capsys, "dump", str(kernel_file), "--kernel", "add_kernel",
                         "--stage", "ttgir", "--signature", "n_elements=i32",
                         "--constexpr", "BLOCK_SIZE=256", "--num-warps", "2")
    assert code == 0, err
    assert "ttg.num-warps\" = 2" in out
    assert 'ttg.target = "metal:apple-m1"' in out
    assert out.count("!tt.ptr<f32>") >= 3  # x_ptr, y_ptr, output_ptr inferred as *fp32
    assert "tensor<256x" in out


def test_ttir_stage_uses_given_pointer_type(kernel_file, capsys):
    code, out, err = run(capsys, "dump", str(kernel_file), "--kernel", "add_kernel",
                         "--stage", "ttir", "--signature", "x_ptr=*fp16,y_ptr=*fp16",
                         "--signature", "output_ptr=*fp16,n_elements=i32",
                         "--constexpr", "BLOCK_SIZE=64")
    assert code == 0, err
    assert "!tt.ptr<f16>" in out and "!tt.ptr<f32>" not in out
    assert "ttg." not in out  # TTIR: no layouts yet


def test_msl_stage_prints_kernel_and_launch_metadata(kernel_file, capsys):
    code, out, err = run(capsys, "dump", str(kernel_file), "--kernel", "add_kernel",
                         "--signature", "n_elements=i32", "--constexpr", "BLOCK_SIZE=1024")
    assert code == 0, err
    assert "kernel void add_kernel(" in out
    assert "// launch: kernel add_kernel, 128 threads per threadgroup" in out
    assert "buffer(3) byte 0: n_elements i32 (scalar, in the argument struct)" in out
    assert "constant add_kernel_args& msl_args [[buffer(3)]]" in out


def test_all_stages_have_headers(kernel_file, capsys):
    code, out, err = run(capsys, "dump", str(kernel_file), "--kernel", "scale_kernel",
                         "--stage", "all", "--signature", "n=i32,alpha=fp32")
    assert code == 0, err
    assert [line for line in out.splitlines() if line.startswith("// =====")] == [
        "// ===== ttir =====", "// ===== ttgir =====", "// ===== msl ====="]
    assert "tensor<128x" in out  # BLOCK's Python default used


def test_missing_constexpr_names_the_flag(kernel_file, capsys):
    code, out, err = run(capsys, "dump", str(kernel_file), "--kernel", "add_kernel")
    assert code == 1 and out == ""
    assert err.strip() == ("msltrans: error: kernel `add_kernel` needs --constexpr "
                           "BLOCK_SIZE=VALUE (adjust types as needed)")


def test_launch_less_file_dumps_with_printed_assumptions(kernel_file, capsys):
    code, out, err = run(capsys, "dump", str(kernel_file), "--kernel", "scale_kernel")
    assert code == 0, err
    lines = out.splitlines()
    assert lines[0].startswith("// msltrans dump: no launch to copy the arguments from")
    assert lines[1].startswith("//   x_ptr: *fp32 (its name ends in _ptr), 16-byte aligned")
    assert lines[2].startswith("//   x_ptr: a buffer under 2 GB (tt.pointer_range=32")
    assert lines[3].startswith("//   n: i32 (an int below 2**31), not a multiple of 16")
    assert lines[4].startswith("//   alpha: i32")  # no usage marks it: flags override
    assert "kernel void scale_kernel(" in out
    assert "(x_ptr + " in out  # its pointers are 32-bit offsets from it


def test_over_2gb_keeps_64_bit_pointers(kernel_file, capsys):
    code, out, err = run(capsys, "dump", str(kernel_file), "--kernel", "scale_kernel",
                         "--over-2gb", "x_ptr")
    assert code == 0, err
    assert "a buffer under 2 GB" not in out and "(x_ptr + " not in out
    assert "device float* " in out.split("kernel void scale_kernel(")[1].split("{", 1)[1]


def test_several_kernels_need_kernel_flag(kernel_file, capsys):
    code, _, err = run(capsys, "dump", str(kernel_file))
    assert code == 1
    assert "defines 2 @triton.jit kernels (add_kernel, scale_kernel): pass --kernel NAME" in err


def test_front_end_error_is_one_line_with_file_and_line(kernel_file, capsys):
    code, _, err = run(capsys, "dump", str(kernel_file), "--kernel", "add_kernel",
                       "--signature", "n_elements=i32", "--constexpr", "BLOCK_SIZE=1000")
    assert code == 1
    assert len(err.strip().splitlines()) == 1
    assert f"{kernel_file}:9" in err and "power of 2" in err


def test_bad_num_warps_is_refused(kernel_file, capsys):
    code, _, err = run(capsys, "dump", str(kernel_file), "--kernel", "scale_kernel",
                       "--signature", "n=i32,alpha=fp32", "--num-warps", "3")
    assert code == 1 and "num_warps=3" in err and len(err.strip().splitlines()) == 1


def test_unknown_flag_and_argument(kernel_file, capsys):
    code, _, err = run(capsys, "dump", str(kernel_file), "--bogus")
    assert code == 1 and "unrecognized arguments: --bogus" in err
    code, _, err = run(capsys, "dump", str(kernel_file), "--kernel", "add_kernel",
                       "--signature", "nope=i32")
    assert code == 1 and "has no argument(s) nope" in err


def test_ttgir_file_input(kernel_file, tmp_path, capsys):
    code, ttgir, err = run(capsys, "dump", str(kernel_file), "--kernel", "scale_kernel",
                           "--stage", "ttgir", "--signature", "n=i32,alpha=fp32",
                           "--num-warps", "1")
    assert code == 0, err
    path = tmp_path / "scale.ttgir"
    path.write_text(ttgir)
    code, out, err = run(capsys, "dump", str(path), "--stage", "ttgir")
    assert code == 0, err
    assert "tt.func public @scale_kernel" in out and '"ttg.num-warps" = 1' in out
    code, _, err = run(capsys, "dump", str(path), "--stage", "ttir")
    assert code == 1 and "no ttir stage" in err


def test_console_script_help_teaches():
    out = subprocess.run([sys.executable, "-m", "msltrans.cli", "dump", "--help"],
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0
    assert "examples:" in out.stdout and "--signature n=i32" in out.stdout
    assert "*fp32 and 16-byte aligned" in out.stdout


def test_info_reports_engine_and_limits(capsys, monkeypatch):
    monkeypatch.setenv("MSLTRANS_ENGINE", "sim")
    code, out, err = run(capsys, "info")
    assert code == 0, err
    assert "engine: sim" in out and "max_shared_mem: 32768" in out
    assert "target: GPUTarget(backend='metal'" in out


def test_script_without_flags_is_run_and_its_launch_dumped(tmp_path, monkeypatch):
    """The README's `msltrans dump examples/vector_add.py`: no flags, the script's real launch."""
    from pathlib import Path

    monkeypatch.setenv("TRITON_CACHE_DIR", str(tmp_path / "cache"))
    example = Path(__file__).resolve().parents[2] / "examples" / "vector_add.py"
    res = subprocess.run([sys.executable, "-m", "msltrans.cli", "dump", str(example)],
                         capture_output=True, text=True, timeout=600)
    assert res.returncode == 0, res.stderr
    out = res.stdout
    assert out.startswith("// captured from running")
    assert "n=i32" in out.splitlines()[0]
    assert "kernel void vector_add_kernel(" in out
    assert "// tt.load  vector_add.py:" in out
    # The program's own prints went to stderr, so stdout is MSL only.
    assert "max error" not in out and "max error 0" in res.stderr


@pytest.mark.parametrize("name,kernel", [("broadcast_2d", "scale_bias_kernel"),
                                         ("loops_and_branches", "row_stats_kernel")])
def test_every_example_dumps_without_flags(tmp_path, monkeypatch, name, kernel):
    """loops_and_branches ends in `sys.exit(main())`: its launch must still be captured."""
    from pathlib import Path

    monkeypatch.setenv("TRITON_CACHE_DIR", str(tmp_path / "cache"))
    example = Path(__file__).resolve().parents[2] / "examples" / f"{name}.py"
    res = subprocess.run([sys.executable, "-m", "msltrans.cli", "dump", str(example)],
                         capture_output=True, text=True, timeout=600)
    assert res.returncode == 0, res.stderr
    assert res.stdout.startswith(f"// captured from running {example}: the first launch of "
                                 f"`{kernel}`")
    assert f"kernel void {kernel}(" in res.stdout


def test_script_exiting_nonzero_is_reported(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("TRITON_CACHE_DIR", str(tmp_path / "cache"))
    path = tmp_path / "fails.py"
    path.write_text(KERNELS + "\nif __name__ == '__main__':\n    import sys\n    sys.exit(3)\n")
    with pytest.raises(SystemExit) as exc:
        cli.main(["dump", str(path), "--kernel", "add_kernel"])
    assert exc.value.code == 1
    assert "failed (exit status 3)" in capsys.readouterr().err


def test_script_that_never_launches_falls_back_to_assumptions(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("TRITON_CACHE_DIR", str(tmp_path / "cache"))
    path = tmp_path / "nolaunch.py"
    path.write_text(KERNELS.replace("scale_kernel", "_scale") + "\nif __name__ == '__main__':\n"
                    "    pass\n")
    with pytest.raises(SystemExit) as exc:
        cli.main(["dump", str(path), "--kernel", "add_kernel"])
    assert exc.value.code == 1
    err = capsys.readouterr().err
    assert "never launched `add_kernel`: assuming its signature" in err
    assert "needs --constexpr BLOCK_SIZE=VALUE" in err
