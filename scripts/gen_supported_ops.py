"""Write docs/supported-ops.md from the lowering registry (never edit that file by hand).

    python scripts/gen_supported_ops.py          # rewrite the file
    python scripts/gen_supported_ops.py --check  # exit 1 if it is out of date (CI test)
"""

from __future__ import annotations

import argparse
import sys
from collections import defaultdict
from pathlib import Path

from msltrans.lower.registry import lowering_of, supported_ops

DOC = Path(__file__).resolve().parents[1] / "docs" / "supported-ops.md"


def render() -> str:
    families: dict[str, list[str]] = defaultdict(list)
    summaries: dict[str, str] = {}
    for name in supported_ops():
        fn = lowering_of(name)
        module = sys.modules[fn.__module__]
        family = fn.__module__.rsplit(".", 1)[-1]
        families[family].append(name)
        doc = (module.__doc__ or "").strip().splitlines()
        summaries[family] = doc[0] if doc else ""
    lines = [
        "# Supported ops",
        "",
        "Generated from the lowering registry by `scripts/gen_supported_ops.py`; do not edit.",
        "An op that is not listed raises `MetalNonRecoverableError` naming the op and the",
        "kernel's source line. A listed op can still refuse particular types or attributes",
        "(each such refusal is tested and says what to do instead).",
        "",
        f"{len(supported_ops())} ops in {len(families)} families.",
        "",
    ]
    for family in sorted(families):
        lines += [f"## `{family}` — {summaries[family]}", ""]
        lines += [f"- `{op}`" for op in sorted(families[family])]
        lines.append("")
    return "\n".join(lines)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--check", action="store_true", help="fail if the file is out of date")
    args = ap.parse_args()
    text = render()
    if args.check:
        if not DOC.exists() or DOC.read_text() != text:
            print(f"{DOC} is out of date: run python scripts/gen_supported_ops.py")
            return 1
        return 0
    DOC.write_text(text)
    print(f"wrote {DOC}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
