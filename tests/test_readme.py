"""The README's Python example runs and computes what it says (docs stay true to the code)."""

import re
from pathlib import Path

import numpy as np

README = Path(__file__).resolve().parents[1] / "README.md"


def test_readme_simulator_example_runs() -> None:
    blocks = re.findall(r"```python\n(.*?)```", README.read_text(), re.S)
    assert blocks, "the README lost its simulator example"
    scope: dict = {}
    exec(compile(blocks[0], "README.md", "exec"), scope)  # noqa: S102 - our own README
    assert np.array_equal(scope["out"], scope["a"] + scope["b"])


def test_readme_quick_start_names_real_files() -> None:
    text = README.read_text()
    root = README.parent
    for path in ("scripts/setup.sh", "examples/vector_add.py", ".ci/run",
                 "scripts/run_tutorials.py", "docs/conformance-tutorials.md"):
        assert path in text and (root / path).exists(), path
    assert "python3 -m pytest -n 2 -q" in (root / ".ci" / "run").read_text()
