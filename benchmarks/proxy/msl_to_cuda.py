"""MSL → CUDA, statement for statement: the GPU proxy's source mapping.

The kernel's statements stay as they are; metal_cuda.cuh (beside this file) gives every MSL
type and function msltrans emits a CUDA definition. This module rewrites what a header cannot:

- `kernel void f(...)` → `extern "C" __global__ void __launch_bounds__(T) f(...)`: buffers
  become parameters in buffer-index order (`device T*` → `T*`, `constant T&` → `T` by value)
  and the builtin arguments locals read from blockIdx / threadIdx / gridDim;
- a function-scope `threadgroup T x[N];` → `__shared__` (16-byte aligned), other address-space
  qualifiers (`device`, `threadgroup`, `constant`, `thread`) vanish, a program-scope
  `constant` table becomes a `__device__ const` one (LLVM folds its loads at constant indices,
  as Metal's compiler does for `constant` data);
- functions become `__device__`, attributes `[[...]]` go, clang's unroll pragma becomes nvcc's;
- msltrans's scalar-argument struct (`constant <kernel>_args& msl_args [[buffer(N)]]`, bound
  after the pointers) is a by-value parameter, its field offsets asserted (`offsetof`)
  against the byte offsets msltrans's launcher packs (run_gpu.py sends those bytes).

Anything outside that subset fails to compile with nvcc, loudly: the proxy never guesses.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

HEADER = Path(__file__).with_name("metal_cuda.cuh")

_BUILTINS = {
    "threadgroup_position_in_grid": "uint3(blockIdx.x, blockIdx.y, blockIdx.z)",
    "threadgroups_per_grid": "uint3(gridDim.x, gridDim.y, gridDim.z)",
    "thread_position_in_threadgroup": "uint3(threadIdx.x, threadIdx.y, threadIdx.z)",
    "threads_per_threadgroup": "uint3(blockDim.x, blockDim.y, blockDim.z)",
    "thread_index_in_threadgroup": "threadIdx.x",
    "thread_index_in_simdgroup": "(threadIdx.x & 31u)",
    "simdgroup_index_in_threadgroup": "(threadIdx.x >> 5)",
    "simdgroups_per_threadgroup": "(blockDim.x >> 5)",
    "thread_position_in_grid":
        "uint3(blockIdx.x * blockDim.x + threadIdx.x, blockIdx.y, blockIdx.z)",
}


@dataclass(frozen=True)
class KernelParam:
    index: int  # the [[buffer(i)]] index
    name: str
    ctype: str  # element type (pointers) or scalar type
    pointer: bool


@dataclass
class Mapped:
    cuda: str
    kernel: str
    threads: int
    params: list[KernelParam] = field(default_factory=list)


def _split_params(text: str) -> list[str]:
    out, depth, cur = [], 0, []
    for ch in text:
        if ch in "([<":
            depth += 1
        elif ch in ")]>":
            depth -= 1
        if ch == "," and depth == 0:
            out.append("".join(cur).strip())
            cur = []
        else:
            cur.append(ch)
    if "".join(cur).strip():
        out.append("".join(cur).strip())
    return out


def _close_paren(text: str, start: int) -> int:
    depth = 0
    for i in range(start, len(text)):
        if text[i] == "(":
            depth += 1
        elif text[i] == ")":
            depth -= 1
            if depth == 0:
                return i
    raise ValueError("unbalanced parentheses in the kernel signature")


def _map_param(p: str) -> tuple[KernelParam | None, str | None, str | None]:
    """(buffer param, CUDA parameter text, builtin local) for one MSL parameter."""
    m = re.match(r"(.*?)\s*\[\[\s*(\w+)(?:\((\d+)\))?\s*\]\]\s*$", p, re.S)
    if not m:
        raise ValueError(f"kernel parameter without an attribute: {p!r}")
    decl, attr, idx = m.group(1).strip(), m.group(2), m.group(3)
    if attr == "buffer":
        pm = re.match(r"(device|constant)\s+(?:const\s+)?([\w:<>, ]+?)\s*([*&])\s*(\w+)$", decl)
        if not pm:
            raise ValueError(f"buffer parameter not understood: {decl!r}")
        space, ctype, kind, name = pm.groups()
        if kind == "*":
            return KernelParam(int(idx), name, ctype, True), f"{ctype}* {name}", None
        return KernelParam(int(idx), name, ctype, False), f"{ctype} {name}", None
    if attr not in _BUILTINS:
        raise ValueError(f"builtin [[{attr}]] has no CUDA mapping")
    tm = re.match(r"([\w]+)\s+(\w+)$", decl)
    if not tm:
        raise ValueError(f"builtin parameter not understood: {decl!r}")
    ctype, name = tm.groups()
    return None, None, f"    const {ctype} {name} = {ctype}({_BUILTINS[attr]});"


def map_msl(source: str, threads: int | None = None) -> Mapped:
    """CUDA source for the one kernel in `source` (`threads` per threadgroup: taken from the
    kernel's `[[max_total_threads_per_threadgroup(N)]]` or msltrans's header comment when not
    given)."""
    if threads is None:
        m = (re.search(r"\[\[max_total_threads_per_threadgroup\((\d+)\)\]\]", source)
             or re.search(r"-> (\d+) threads per threadgroup", source))
        if not m:
            raise ValueError("threads per threadgroup unknown: pass threads=")
        threads = int(m.group(1))
    text = re.sub(r"^\s*#include\s*<metal_\w+>\s*$", "", source, flags=re.M)
    text = re.sub(r"^\s*using namespace metal;\s*$", "", text, flags=re.M)
    km = re.search(r"\bkernel\s+void\s+(\w+)\s*\(", text)
    if not km:
        raise ValueError("no `kernel void f(...)` in the source")
    name = km.group(1)
    close = _close_paren(text, km.end() - 1)
    brace = text.index("{", close)
    params, cuda_params, locals_ = [], [], []
    for p in _split_params(text[km.end():close]):
        param, cuda, local = _map_param(p)
        if param is not None:
            params.append((param, cuda))
        if local is not None:
            locals_.append(local)
    params.sort(key=lambda pc: pc[0].index)
    cuda_params = [c for _, c in params]
    head = (f'extern "C" __global__ void __launch_bounds__({threads}) {name}(\n    '
            + ",\n    ".join(cuda_params) + ")\n{\n" + "\n".join(locals_) + "\n")
    before, body = text[:km.start()], text[brace + 1:]
    # Function-scope threadgroup arrays are shared memory; program-scope constant tables are
    # read-only device data.
    body = re.sub(r"^(\s*)threadgroup\s+([\w:<>]+)\s+(\w+)\s*\[",
                  r"\1__shared__ __align__(16) \2 \3[", body, flags=re.M)
    before = re.sub(r"^constant\s+", "__device__ const ", before, flags=re.M)
    out = before + head + body
    out = re.sub(r"\[\[[^\]]*\]\]", "", out)
    out = re.sub(r"\b(device|threadgroup|constant|thread)[ \t]+(?=[\w(])", "", out)
    out = re.sub(r"(?<!__device__ )\binline\b", "__device__ inline", out)
    out = out.replace('_Pragma("clang loop unroll(full)")', '_Pragma("unroll")')
    out = _pin_struct_offsets(out)
    out = f'#include "{HEADER.name}"\n' + out
    return Mapped(out, name, threads, [p for p, _ in params])


_STRUCT_RE = re.compile(r"^struct (\w+) \{[^\n]*\n((?:[ \t]+[\w:]+ \w+;\s*// byte \d+\n)+)\};",
                        re.M)
_FIELD_RE = re.compile(r"[\w:]+ (\w+);\s*// byte (\d+)")


def _pin_struct_offsets(text: str) -> str:
    """msltrans's scalar-argument struct states each field's byte offset in a comment (the
    launcher packs the bytes there) and asserts only its size: assert every offset too, so
    that nvcc refuses a struct whose CUDA layout differs from the bytes the launcher sends
    (the struct is passed by value, as Metal's `setBytes` passes it)."""
    def pin(m: re.Match[str]) -> str:
        asserts = [f'static_assert(offsetof({m.group(1)}, {f}) == {at}, "argument struct '
                   f'layout");' for f, at in _FIELD_RE.findall(m.group(2))]
        return m.group(0) + "\n" + "\n".join(asserts)
    return _STRUCT_RE.sub(pin, text)
