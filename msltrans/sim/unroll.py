"""Which of msltrans's element loops the simulator's build unrolls.

msltrans's MSL marks every element loop `msl_unroll for (uint r = 0; r < Nu; ...)` (the
kernel template defines `msl_unroll` as the `unroll(full)` pragma) so that on Apple's GPU its
arrays stay registers. On the CPU a fully unrolled loop of many iterations costs far more to
build than it saves to run, so the simulator's build drops the pragma from two kinds of
element loop:

- loops of more than MAX_SIM_UNROLLED_TRIPS iterations: a 64x64x128 fp16 `tl.dot` on 4 warps
  (its register path: 32 rows of a 128-step fma chain, per thread) is 4,096 fma steps of
  straight-line code, and with the per-thread and the lanes entry both optimised and
  generated the build took 3.6 s of CPU (the fp8 one, its operands decoded at each step,
  17.7 s); with these loops left as loops, 0.5 and 0.6 s;
- loops of more than MAX_SIM_UNROLLED_RENDEZVOUS_TRIPS iterations whose body meets a
  SIMD-group rendezvous (a `simd_*` / `quad_*` function, a barrier, or a function of the
  source that calls one, such as msltrans's `msl_shfl_idx`). Each such call is a call into
  the runtime on the CPU (a fiber switch, or a resume point of the lanes entry), so unrolled
  it is that many calls with every value of the loop's arrays live across them: the one-warp
  `scan_order_2d` (ten 2,048-element scans, 64 registers a thread) became one function of
  ~4,500 runtime calls and 10,000 blocks, whose register allocation, machine CSE and
  instruction selection took most of a 39 s build; as loops it builds in 3.6 s (and gets a
  lanes entry: its rendezvous sites fit), the calls costing the same at run time.

LLVM's own unroller still decides for these loops, as for any loop. Only the pragma token
goes, replaced by blanks, so lines and columns stay the source's; the MSL text itself (what
goes to Apple, the cache key) is unchanged. The results are the same IEEE operations in the
same order either way (no fast-math, contraction off). Loops over simdgroup fragments are
short (at most 64 tiles a simdgroup) and their matrix operations are not rendezvous of this
kind, so their matrices stay at fixed places and lanes mode keeps taking them
(docs/sim-execution.md, "Lanes mode").

A kernel whose largest function has LARGE_FUNCTION_INSTRUCTIONS or more instructions in the
front end's IR (before any optimisation) is built with every unroll-requested loop of more
than LARGE_FUNCTION_UNROLLED_TRIPS iterations left a loop, simdgroup-matrix loops included
(cap_preprocessed, on the preprocessed text; the front end runs again, a few tenths of a
second). In the test suite these are the causal attention backward kernels of HEAD_DIM 32
and 64 (22,300 and 24,800 instructions): -O2 unrolled their loops of 4-64 iterations into
over 100,000 instructions, and they built in 5.5-6.2 and 12.2-14.5 s alone (15.5 s in CI
beside the other test worker); with their loops kept, in 2.6-2.8 and 3.6-3.7 s. A backward
call then takes 2-4x as long in lanes mode (arrays of per-thread values and matrices stay in
per-lane memory: 2.4 -> 5.0 ms, 4.2 -> 7.7 ms for the tests' shapes) and half as long on
fibers, whose per-thread code the split compile (split.py) had generated at -O0; the bits
are the same (benchmarks/sim_attention_run.py, docs/sim-speed.md).
"""

from __future__ import annotations

import re

# The most iterations of an element loop the simulator still fully unrolls.
MAX_SIM_UNROLLED_TRIPS = 64
# The same for element loops whose body meets a SIMD-group rendezvous.
MAX_SIM_UNROLLED_RENDEZVOUS_TRIPS = 8
# Instructions in one function of the front end's IR from which element loops of more than
# LARGE_FUNCTION_UNROLLED_TRIPS iterations stay loops (the kernels of the test suite below
# it build in under 4 s; see the module's text).
LARGE_FUNCTION_INSTRUCTIONS = 20_000
LARGE_FUNCTION_UNROLLED_TRIPS = 2

_PRAGMA = "msl_unroll "
# An element loop's header: counter, start, end and step are groups 1-4 (_trips).
_HEADER = r"for \(uint (\w+) = (\d+)u?; \1 < (\d+)u; (?:\+\+\1|\1 \+= (\d+)u)\)"
_LOOP = re.compile(rf"\bmsl_unroll (?={_HEADER}\s*)")
# The pragma as the preprocessor writes it, before a loop of the same form (a line marker
# may stand between them).
_PREPROCESSED_LOOP = re.compile(
    rf"^#pragma clang loop unroll\(full\)\n(?=(?:# \d+ [^\n]*\n)?\s*{_HEADER})", re.M)
_BRACES = re.compile(r"[{}]")
# Calls that meet the other threads of a SIMD-group (or threadgroup) on the simulator.
_RENDEZVOUS = re.compile(r"\b(?:simd|quad)_\w+\s*\(|\b(?:simdgroup|threadgroup)_barrier\s*\(")
_CALL = re.compile(r"\b(\w+)\s*\(")
# What stands before a function body's `{` at file scope: `name(parameters)`, possibly
# `const` (kernels' attributes `[[buffer(0)]]` are one level of parentheses deeper).
_DEFINITION = re.compile(r"\b(\w+)\s*\((?:[^()]|\((?:[^()]|\([^()]*\))*\))*\)\s*(?:const\s*)?$")


def _trips(match: re.Match[str]) -> int:
    start, end, step = int(match.group(2)), int(match.group(3)), int(match.group(4) or 1)
    return max(0, (end - start + step - 1) // step)


def _code_only(source: str) -> str:
    """`source` with comments, string and character literals and preprocessor lines
    blanked (same length), so that braces and names in them do not count."""
    pattern = re.compile(r"//[^\n]*|/\*.*?\*/|\"(?:\\.|[^\"\\\n])*\"|'(?:\\.|[^'\\\n])*'"
                         r"|^[ \t]*#[^\n]*(?:\\\n[^\n]*)*", re.S | re.M)
    return pattern.sub(lambda m: re.sub(r"[^\n]", " ", m.group(0)), source)


def _block_end(code: str, open_brace: int) -> int:
    """Index just past the `}` that closes the `{` at `open_brace` (len(code) if none)."""
    depth = 0
    for match in _BRACES.finditer(code, open_brace):
        depth += 1 if match.group(0) == "{" else -1
        if depth == 0:
            return match.end()
    return len(code)


def _rendezvous_functions(code: str) -> frozenset[str]:
    """Names of the functions `code` defines that meet a rendezvous, directly or through
    another such function."""
    calls: dict[str, set[str]] = {}
    meets: set[str] = set()
    pos, last = 0, 0
    while True:
        brace = code.find("{", pos)
        if brace < 0:
            break
        end = _block_end(code, brace)
        head = code[last:brace].rsplit(";", 1)[-1].rsplit("}", 1)[-1]
        found = _DEFINITION.search(head)
        if found:
            body = code[brace:end]
            if _RENDEZVOUS.search(body):
                meets.add(found.group(1))
            else:
                calls.setdefault(found.group(1), set()).update(_CALL.findall(body))
        pos = last = end
    changed = True
    while changed:
        changed = False
        for name, called in calls.items():
            if name not in meets and not called.isdisjoint(meets):
                meets.add(name)
                changed = True
    return frozenset(meets)


def _body(code: str, pragma_end: int) -> str:
    """The text of the loop whose pragma ends at `pragma_end`: its header and its block (or
    its one statement)."""
    header_end = code.index(")", pragma_end) + 1
    rest = code[header_end:header_end + 1000].lstrip()
    if rest.startswith("{"):
        brace = code.index("{", header_end)
        return code[pragma_end:_block_end(code, brace)]
    return code[pragma_end:code.find(";", header_end) + 1]


def _meets_rendezvous(body: str, functions: frozenset[str]) -> bool:
    return bool(_RENDEZVOUS.search(body)) or any(
        call.group(1) in functions for call in _CALL.finditer(body))


def cap_unrolls(source: str, max_trips: int = MAX_SIM_UNROLLED_TRIPS,
                max_rendezvous_trips: int = MAX_SIM_UNROLLED_RENDEZVOUS_TRIPS) -> str:
    """`source` with the unroll pragma blanked out of element loops of over `max_trips`
    iterations, and of those of over `max_rendezvous_trips` whose body meets a SIMD-group
    rendezvous (same length, same lines)."""
    if _PRAGMA not in source:
        return source
    code: str | None = None   # `source` without comments and literals, when first needed
    functions: frozenset[str] | None = frozenset()
    out, done = [], 0
    for match in _LOOP.finditer(source):
        trips = _trips(match)
        drop = trips > max_trips
        if not drop and trips > max_rendezvous_trips:
            if code is None:
                code = _code_only(source)
                functions = _rendezvous_functions(code) if _RENDEZVOUS.search(code) else None
            drop = functions is not None and _meets_rendezvous(_body(code, match.end()),
                                                                functions)
        if drop:
            out += [source[done:match.start()], " " * len(_PRAGMA)]
            done = match.end()
    return "".join(out) + source[done:]


def wants_loops(size: int) -> bool:
    """Whether a kernel whose front-end IR's largest function has `size` instructions is
    built with its element loops capped at LARGE_FUNCTION_UNROLLED_TRIPS (cap_preprocessed)."""
    return size >= LARGE_FUNCTION_INSTRUCTIONS


def cap_preprocessed(text: str, max_trips: int = LARGE_FUNCTION_UNROLLED_TRIPS) -> str:
    """Preprocessed source `text` with the unroll pragma line of loops of over `max_trips`
    iterations emptied (the line stays, so line numbers do too)."""
    return _PREPROCESSED_LOOP.sub(lambda m: "\n" if _trips(m) > max_trips else m.group(0), text)
