"""docs/supported-ops.md must be what the registry says (it is generated, not written)."""

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_supported_ops_doc_is_generated_from_registry() -> None:
    res = subprocess.run([sys.executable, "scripts/gen_supported_ops.py", "--check"], cwd=ROOT,
                         capture_output=True, text=True)
    assert res.returncode == 0, res.stdout + res.stderr
