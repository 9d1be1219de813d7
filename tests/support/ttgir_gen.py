"""Hand-built TTGIR for layout sweeps: load a tile in layout A, convert to B, store from B.

Written as text (then parsed by Triton's own parser) so the test controls the layouts
exactly, which Triton's passes would otherwise choose.
"""

from __future__ import annotations

import random
from pathlib import Path


def blocked(spt: list[int], tpw: list[int], wpc: list[int], order: list[int]) -> str:
    return (f"#ttg.blocked<{{sizePerThread = {spt}, threadsPerWarp = {tpw}, "
            f"warpsPerCTA = {wpc}, order = {order}}}>")


def module_header(num_warps: int) -> str:
    return ('module attributes {"ttg.num-ctas" = 1 : i32, '
            f'"ttg.num-warps" = {num_warps} : i32, ttg.target = "metal:apple-m1", '
            '"ttg.threads-per-warp" = 32 : i32}')


def _offsets_2d(tag: str, enc: str, m: int, n: int) -> tuple[str, str]:
    s1 = f"#ttg.slice<{{dim = 1, parent = {enc}}}>"
    s0 = f"#ttg.slice<{{dim = 0, parent = {enc}}}>"
    text = f"""
    %{tag}r0 = tt.make_range {{end = {m} : i32, start = 0 : i32}} : tensor<{m}xi32, {s1}>
    %{tag}r1 = tt.make_range {{end = {n} : i32, start = 0 : i32}} : tensor<{n}xi32, {s0}>
    %{tag}e0 = tt.expand_dims %{tag}r0 {{axis = 1 : i32}} : tensor<{m}xi32, {s1}>
        -> tensor<{m}x1xi32, {enc}>
    %{tag}e1 = tt.expand_dims %{tag}r1 {{axis = 0 : i32}} : tensor<{n}xi32, {s0}>
        -> tensor<1x{n}xi32, {enc}>
    %{tag}cn = arith.constant dense<{n}> : tensor<{m}x1xi32, {enc}>
    %{tag}rows = arith.muli %{tag}e0, %{tag}cn : tensor<{m}x1xi32, {enc}>
    %{tag}b0 = tt.broadcast %{tag}rows : tensor<{m}x1xi32, {enc}> -> tensor<{m}x{n}xi32, {enc}>
    %{tag}b1 = tt.broadcast %{tag}e1 : tensor<1x{n}xi32, {enc}> -> tensor<{m}x{n}xi32, {enc}>
    %{tag}off = arith.addi %{tag}b0, %{tag}b1 : tensor<{m}x{n}xi32, {enc}>"""
    return text, f"%{tag}off"


def convert_kernel_2d(src: str, dst: str, m: int, n: int, num_warps: int) -> str:
    a_text, a_off = _offsets_2d("a", src, m, n)
    b_text, b_off = _offsets_2d("b", dst, m, n)
    t_src, t_dst = f"tensor<{m}x{n}xf32, {src}>", f"tensor<{m}x{n}xf32, {dst}>"
    p_src, p_dst = f"tensor<{m}x{n}x!tt.ptr<f32>, {src}>", f"tensor<{m}x{n}x!tt.ptr<f32>, {dst}>"
    return f"""{module_header(num_warps)} {{
  tt.func public @convert_kernel(%in: !tt.ptr<f32>, %out: !tt.ptr<f32>) {{{a_text}
    %pin = tt.splat %in : !tt.ptr<f32> -> {p_src}
    %pa = tt.addptr %pin, {a_off} : {p_src}, tensor<{m}x{n}xi32, {src}>
    %x = tt.load %pa : {p_src}
    %y = ttg.convert_layout %x : {t_src} -> {t_dst}{b_text}
    %pout = tt.splat %out : !tt.ptr<f32> -> {p_dst}
    %pb = tt.addptr %pout, {b_off} : {p_dst}, tensor<{m}x{n}xi32, {dst}>
    tt.store %pb, %y : {p_dst}
    tt.return
  }}
}}
"""


def write(tmp: Path, name: str, text: str) -> Path:
    path = tmp / f"{name}.ttgir"
    path.write_text(text)
    return path


def elementwise_kernel_1d(block: int, num_warps: int, in_types: list[str], out_type: str,
                          body: str, spt: int = 1) -> str:
    """out[i] = body(x0[i], x1[i], ...) over a masked 1-D block; `body` defines %res from
    %x0, %x1, ... and may use the layout alias #L."""
    enc = blocked([spt], [32], [num_warps], [0])
    lines = [f"#L = {enc}", module_header(num_warps) + " {"]
    args = [f"%in{i}: !tt.ptr<{t}>" for i, t in enumerate(in_types)]
    lines.append(f"  tt.func public @ew_kernel({', '.join(args + [f'%out: !tt.ptr<{out_type}>'])}"
                 ", %n: i32) {")
    lines += [
        f"    %c = arith.constant {block} : i32",
        "    %pid = tt.get_program_id x : i32",
        "    %start = arith.muli %pid, %c : i32",
        f"    %r = tt.make_range {{end = {block} : i32, start = 0 : i32}}"
        f" : tensor<{block}xi32, #L>",
        f"    %s = tt.splat %start : i32 -> tensor<{block}xi32, #L>",
        f"    %off = arith.addi %s, %r : tensor<{block}xi32, #L>",
        f"    %ns = tt.splat %n : i32 -> tensor<{block}xi32, #L>",
        f"    %mask = arith.cmpi slt, %off, %ns : tensor<{block}xi32, #L>",
    ]
    for i, t in enumerate(in_types):
        pt = f"tensor<{block}x!tt.ptr<{t}>, #L>"
        lines += [
            f"    %p{i} = tt.splat %in{i} : !tt.ptr<{t}> -> {pt}",
            f"    %q{i} = tt.addptr %p{i}, %off : {pt}, tensor<{block}xi32, #L>",
            f"    %x{i} = tt.load %q{i}, %mask : {pt}",
        ]
    pt = f"tensor<{block}x!tt.ptr<{out_type}>, #L>"
    lines += ["    " + ln.strip() for ln in body.strip().splitlines()]
    lines += [
        f"    %po = tt.splat %out : !tt.ptr<{out_type}> -> {pt}",
        f"    %qo = tt.addptr %po, %off : {pt}, tensor<{block}xi32, #L>",
        f"    tt.store %qo, %res, %mask : {pt}",
        "    tt.return", "  }", "}",
    ]
    return "\n".join(lines) + "\n"


def reshape_kernel_1d_to_2d(src: str, dst: str, m: int, n: int, num_warps: int,
                            allow_reorder: bool = False) -> str:
    """out (m x n, row-major) = reshape(in[0 : m*n]) with explicit source/result layouts."""
    b_text, b_off = _offsets_2d("b", dst, m, n)
    total = m * n
    t1, t2 = f"tensor<{total}xf32, {src}>", f"tensor<{m}x{n}xf32, {dst}>"
    p1, p2 = f"tensor<{total}x!tt.ptr<f32>, {src}>", f"tensor<{m}x{n}x!tt.ptr<f32>, {dst}>"
    reorder = " allow_reorder" if allow_reorder else ""
    return f"""{module_header(num_warps)} {{
  tt.func public @reshape_kernel(%in: !tt.ptr<f32>, %out: !tt.ptr<f32>) {{
    %r = tt.make_range {{end = {total} : i32, start = 0 : i32}} : tensor<{total}xi32, {src}>
    %pin = tt.splat %in : !tt.ptr<f32> -> {p1}
    %pa = tt.addptr %pin, %r : {p1}, tensor<{total}xi32, {src}>
    %x = tt.load %pa : {p1}
    %y = tt.reshape %x{reorder} : {t1} -> {t2}{b_text}
    %pout = tt.splat %out : !tt.ptr<f32> -> {p2}
    %pb = tt.addptr %pout, {b_off} : {p2}, tensor<{m}x{n}xi32, {dst}>
    tt.store %pb, %y : {p2}
    tt.return
  }}
}}
"""


def _split_pow2(total: int, rng: random.Random) -> list[int]:
    """A random split of the power of two `total` over two dimensions."""
    out = [1, 1]
    for _ in range(total.bit_length() - 1):
        out[rng.randrange(2)] *= 2
    return out


def random_blocked(rng: random.Random, num_warps: int) -> str:
    """A random 2-D #blocked layout for 32-lane warps and `num_warps` warps."""
    order = [0, 1] if rng.random() < 0.5 else [1, 0]
    return blocked([rng.choice([1, 2, 4]), rng.choice([1, 2, 4])], _split_pow2(32, rng),
                   _split_pow2(num_warps, rng), order)
