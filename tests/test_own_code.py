"""Only the project's own code in the repository: no committed file's prose says its code
came from a third party ("copied", "verbatim", "unmodified" tutorial or upstream code), and no
file defines a function named like one of Triton's tutorial kernels, as only a copy would (the
rule: tests/support/provenance.py). Third-party tests and tutorials run from trees outside the
repository (scripts/run_*.py); third-party files that ship in an installed package are read
from the package at run time."""

from __future__ import annotations

import pytest

from tests.support.provenance import COPY_MARKERS, check_repository, check_text, provenance_claim

# Sentences as this repository's docs and docstrings have to be able to write them.
ALLOWED = [
    "`python scripts/run_tutorials.py` runs Triton's tutorials unmodified from a fetched tree.",
    "The runner executes Triton's upstream unit tests, unmodified, against msltrans on CPU "
    "tensors through the simulator.",
    "Upstream test files are never copied into this repository.",
    "Each written for this project in the style of Triton's own `test_core.py` (never copied).",
    "Loaded by `scripts/run_upstream_tests.py`; the upstream test files stay unmodified.",
    "Liger's test modules run unmodified on CPU tensors.",
    "The workload of Triton's tutorial 03 (its kernel runs unmodified out of tree).",
    "Run unmodified `@triton.jit` kernels on Apple-Silicon GPUs.",
    "THE test helper: compile an unmodified @triton.jit kernel through msltrans and run it.",
    "Tensors and arrays are copied into guarded staging mappings.",
    "The layout attribute text is kept verbatim and decoded only by msltrans.layout.",
    "PyTorch's c10/metal headers, read from the installed torch wheel at run time.",
    'It fails on prose that calls a file "copied" or `verbatim` third-party code.',
]
# Provenance claims, as file headers of copies say it.
CLAIMS = [
    "Triton tutorial 01 (vector add), unmodified, byte-exact against numpy.",
    "Triton's tutorial 01 (vector addition), unmodified, running through msltrans.",
    "`matmul_kernel` and `leaky_relu`, copied unmodified from triton-lang/triton.",
    "The kernels are copied verbatim from `python/tutorials/04-low-memory-dropout.py`.",
    "---- verbatim from the tutorial ----",
    "ATen's radix_scan kernel, its text taken verbatim from the shipped header.",
    "Adapted from MLX's steel GEMM.",
    "A copy of PyTorch's SortRadix.h kernel.",
    "This file was ported from the upstream test_core.py.",
    "Kernels kept unmodified from Triton's tutorials.",
]


@pytest.mark.parametrize("sentence", ALLOWED)
def test_rule_allows_describing_out_of_tree_runs(sentence: str) -> None:
    assert not provenance_claim(sentence)


@pytest.mark.parametrize("sentence", CLAIMS)
def test_rule_flags_provenance_claims(sentence: str) -> None:
    assert provenance_claim(sentence)


def test_rule_reads_python_docstrings_and_comments_not_code() -> None:
    source = '\n'.join([
        '"""Kernels for the tests.',
        '',
        'Triton tutorial 02, copied',
        'verbatim."""',
        'MESSAGE = "Triton tutorial 02, copied verbatim"  # a string in code is not prose',
        '# the kernel below: from tutorial 05,',
        '# unmodified.',
        'x = 1',
    ])
    found = check_text("k.py", source)
    assert [(f.line, f.what) for f in found] == [(3, "claim"), (6, "claim")]
    assert "copied verbatim" in found[0].text  # wrapped lines are one sentence


def test_rule_reads_markdown_blocks_and_finds_marker_names() -> None:
    name = COPY_MARKERS[0]
    text = ("# Notes\n\n| file | note |\n| --- | --- |\n| a.py | runs the tutorials "
            "unmodified from a fetched tree |\n| b.py | tutorial 06, copied unmodified |\n\n"
            f"def {name}(acc):\n")
    found = check_text("notes.md", text)
    assert [(f.what, f.line) for f in found] == [("marker", 8), ("claim", 6)]
    assert check_text("ok.py", f"def {name}_ours():\n    pass\n") == []  # whole names only


def test_repository_holds_only_its_own_code() -> None:
    found = check_repository()
    assert not found, "third-party code or a claim of it:\n" + "\n".join(map(str, found))


def test_every_tutorial_workload_has_its_own_ci_kernels() -> None:
    """The tutorials' code lives outside the repository; their work is covered in CI by the
    project's kernels (msltrans/workloads) in the test files scripts/run_tutorials.py names in
    its report."""
    import importlib.util

    from tests.support.provenance import ROOT

    spec = importlib.util.spec_from_file_location("run_tutorials",
                                                  ROOT / "scripts" / "run_tutorials.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    assert sorted(module.CI_COVERAGE) == list(module.TUTORIALS)
    for nn, path in module.CI_COVERAGE.items():
        text = (ROOT / path).read_text(encoding="utf-8")
        assert any(s in text for s in ("@triton.jit", "from tests.", "from msltrans.workloads")), \
            (nn, path)
