"""Kernel discovery's namespace scan (msltrans/sim/discover.py) remembers the state at the
end of the shared first part of the text (the shim's headers): resuming from it gives the
scopes a whole scan gives, and a second text with the same first part skips that part."""

from __future__ import annotations

import pytest

from msltrans.sim import discover

FIRST = ('namespace metal {\nnamespace detail { struct s { int v = "}{"[0]; }; }\n'
         'inline namespace v1 {\nusing namespace detail;\n')


@pytest.mark.parametrize("user", [
    "kernel void k() {}\n} }\nnamespace outer::inner { kernel void j() {} }\n",
    "} }\nnamespace { kernel void k() {} }\nkernel void j() { '{'; }\n",
])
def test_resumed_scan_gives_the_whole_scans_scopes(user: str,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    text = FIRST + user
    positions = [i for i in range(len(FIRST), len(text)) if text.startswith("kernel", i)]
    whole = discover.namespace_scopes(text, positions)
    monkeypatch.setattr(discover, "_STATES", {})
    assert discover.namespace_scopes(text, positions, resume_at=len(FIRST)) == whole
    scanned: list[int] = []
    scan = discover._scan

    def counting(text: str, start: int, *args: object) -> object:
        scanned.append(start)
        return scan(text, start, *args)

    monkeypatch.setattr(discover, "_scan", counting)
    assert discover.namespace_scopes(text, positions, resume_at=len(FIRST)) == whole
    assert scanned == [len(FIRST)]  # the first part's state came from the first call
    # positions inside the first part: a whole scan
    assert discover.namespace_scopes(text, [5, *positions], resume_at=len(FIRST)) == \
        discover.namespace_scopes(text, [5, *positions])
