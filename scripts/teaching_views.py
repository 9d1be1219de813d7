"""The teaching views of every example and tutorial kernel the project keeps.

For each kernel below, what `msltrans dump FILE ... --html OUT/NAME.html` writes (source |
TTGIR | MSL, launch metadata, its layouts drawn in) and what `msltrans layout FILE ... -o
OUT/NAME/` draws (one PNG per layout), from one compile. The flags are the launches the
examples and the tutorial tests make.

    python3 scripts/teaching_views.py [--out build/teaching] [--only vector_add softmax]
        [--no-png]
    python3 scripts/teaching_views.py --readme   # docs/images/: the README's two pictures

`--readme` runs the README's two commands (README_COMMANDS), screenshots the page with
headless Chromium and writes small (256-colour) PNGs under docs/images/.
"""

from __future__ import annotations

import argparse
import sys
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


@dataclass(frozen=True)
class Kernel:
    name: str  # the page's file name
    file: str  # relative to the repository root
    kernel: str
    signature: str = ""
    constexpr: str = ""
    num_warps: int = 4
    extra: tuple[str, ...] = ()

    def dump_args(self, root: Path | None = None) -> list[str]:
        """`msltrans dump` arguments (the file relative to the repository, or under `root`)."""
        file = str(root / self.file) if root is not None else self.file
        args = [file, "--kernel", self.kernel, "--num-warps", str(self.num_warps)]
        if self.signature:
            args += ["--signature", self.signature]
        if self.constexpr:
            args += ["--constexpr", self.constexpr]
        return args + list(self.extra)


WL = "msltrans/workloads"
KERNELS = [
    Kernel("vector_add", "examples/vector_add.py", "vector_add_kernel", "n=i32", "BLOCK=1024"),
    Kernel("broadcast_2d", "examples/broadcast_2d.py", "scale_bias_kernel",
           "M=i32,N=i32,stride_xm=i32,stride_xn=i32,stride_om=i32", "BLOCK_M=16,BLOCK_N=64",
           extra=("--no-fp-fusion",)),
    Kernel("loops_and_branches", "examples/loops_and_branches.py", "row_stats_kernel",
           "steps_ptr=*i32,n_cols=i32,stride=i32", "BLOCK=128"),
    Kernel("tutorial02_softmax", f"{WL}/softmax_layernorm.py", "row_softmax_kernel",
           "in_stride=i32,out_stride=i32,n_rows=i32,n_cols=i32", "BLOCK=1024,STAGES=1"),
    Kernel("tutorial03_matmul", f"{WL}/grouped_matmul.py", "grouped_matmul_kernel",
           "a_ptr=*fp16,b_ptr=*fp16,c_ptr=*fp16,M=i32,N=i32,K=i32,sa_m=i32,sa_k=i32,"
           "sb_k=i32,sb_n=i32,sc_m=i32,sc_n=i32", "BM=64,BN=64,BK=32,GROUP_M=8,EPILOGUE=leaky"),
    Kernel("tutorial04_dropout", f"{WL}/dropout.py", "keep_mask_dropout_kernel",
           "keep_ptr=*i1,n=i32,p=fp32", "BLOCK=1024"),
    Kernel("tutorial04_seeded_dropout", f"{WL}/dropout.py", "philox_dropout_kernel",
           "n=i32,p=fp32,seed=i32", "BLOCK=1024"),
    Kernel("tutorial05_layer_norm_fwd", f"{WL}/softmax_layernorm.py",
           "layer_norm_fwd_rows", "row_stride=i32,N=i32,eps=fp32", "BLOCK=1024"),
    Kernel("tutorial05_layer_norm_bwd_dx", f"{WL}/softmax_layernorm.py",
           "layer_norm_bwd_dx_rows", "locks_ptr=*i32,row_stride=i32,N=i32",
           "GROUPS=4,BLOCK_N=512"),
    Kernel("tutorial05_layer_norm_bwd_dwdb", f"{WL}/softmax_layernorm.py",
           "layer_norm_bwd_sum_groups", "GROUPS=i32,N=i32", "BLOCK_G=32,BLOCK_N=128"),
    Kernel("tutorial06_attn_fwd", f"{WL}/attention.py", "flash_attn_fwd",
           "sm_scale=fp32,lse_ptr=*fp32,Z=i32,H=i32,q=*fp16,k=*fp16,v=*fp16,o=*fp16,N_CTX=i32",
           "HEAD_DIM=64,BLOCK_M=128,BLOCK_N=64,FP8=False,CAUSAL=True"),
    Kernel("tutorial06_attn_bwd_preprocess", f"{WL}/attention.py", "flash_attn_bwd_delta",
           "o_ptr=*fp16,do_ptr=*fp16,delta_ptr=*fp32,N_CTX=i32", "BLOCK_M=128,HEAD_DIM=64"),
    Kernel("tutorial06_attn_bwd", f"{WL}/attention.py", "flash_attn_bwd",
           "q_ptr=*fp16,k_ptr=*fp16,v_ptr=*fp16,sm_scale=fp32,do_ptr=*fp16,dq_ptr=*fp16,"
           "dk_ptr=*fp16,dv_ptr=*fp16,lse_ptr=*fp32,delta_ptr=*fp32,stride_z=i32,stride_h=i32,"
           "stride_tok=i32,stride_d=i32,H=i32,N_CTX=i32",
           "BLOCK_M1=32,BLOCK_N1=128,BLOCK_M2=128,BLOCK_N2=32,SLICE=2,HEAD_DIM=64,CAUSAL=True"),
]


def make(k: Kernel, out: Path, png: bool = True) -> tuple[Path, list[Path], str]:
    """The page (as `msltrans dump ... --html`) and, unless png=False, one PNG per layout
    (what `msltrans layout ... -o DIR` draws), from one compile. Returns the page, the PNGs
    and the page's text."""
    from msltrans import cli
    from msltrans.cli.views import capture
    from msltrans.teach.page import Picture, build_page

    args = cli.build_parser().parse_args(["dump", *k.dump_args()])
    drawn: list[Picture] = []
    text = build_page(capture(args), png_dir=out / k.name if png else None, pictures=drawn)
    page = out / f"{k.name}.html"
    page.parent.mkdir(parents=True, exist_ok=True)
    page.write_text(text, encoding="utf-8")
    return page, [p.png for p in drawn if p.png is not None], text


# The README's two commands; the page is then screenshot at the line of README_LINE.
README_COMMANDS = [
    ["dump", "examples/broadcast_2d.py", "--html", "build/teaching/readme/broadcast_2d.html"],
    ["layout", "examples/broadcast_2d.py", "--value", "out", "--shape", "16x64",
     "-o", "docs/images/layout-out.png"],
]
README_LINE = "out = x * scale"
README_PAGE_PNG = "docs/images/teaching-page.png"


def readme_images() -> None:
    import shutil
    import subprocess
    import tempfile

    from msltrans import cli

    for argv in README_COMMANDS:
        if cli.main(list(argv)):
            raise SystemExit(f"msltrans {' '.join(argv)} failed")
    page = (ROOT / README_COMMANDS[0][-1]).resolve()
    source = (ROOT / README_COMMANDS[0][1]).read_text().split("\n")
    line = next(n for n, t in enumerate(source, 1) if README_LINE in t)
    browser = next((shutil.which(b) for b in ("chromium", "chromium-browser", "google-chrome")
                    if shutil.which(b)), None)
    if browser is None:
        raise SystemExit("no Chromium for the page's screenshot (apt-get install chromium)")
    with tempfile.TemporaryDirectory() as profile:
        subprocess.run([browser, "--headless", "--no-sandbox", "--disable-gpu",
                        "--hide-scrollbars", f"--user-data-dir={profile}",
                        "--window-size=1500,1000", f"--screenshot={ROOT / README_PAGE_PNG}",
                        f"{page.as_uri()}#L0:{line}"], check=True, capture_output=True,
                       timeout=180)
    from PIL import Image

    for png in (ROOT / README_PAGE_PNG, ROOT / README_COMMANDS[1][-1]):
        with Image.open(png) as im:
            small = im.convert("RGB").quantize(colors=256, dither=Image.Dither.NONE)
        small.save(png, optimize=True)
        print(f"{png.relative_to(ROOT)}: {png.stat().st_size // 1024} KiB")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", default="build/teaching", help="output directory")
    ap.add_argument("--only", nargs="*", help="page names to make (default: all)")
    ap.add_argument("--no-png", action="store_true", help="pages only, no layout PNGs")
    ap.add_argument("--readme", action="store_true", help="make the README's two pictures")
    args = ap.parse_args(argv)
    import os

    os.chdir(ROOT)  # the kernels' files are named relative to the repository
    if args.readme:
        readme_images()
        return 0
    out = Path(args.out)
    chosen = [k for k in KERNELS if not args.only or k.name in args.only]
    if args.only and len(chosen) != len(args.only):
        known = ", ".join(k.name for k in KERNELS)
        raise SystemExit(f"unknown name(s) in --only; known: {known}")
    for k in chosen:
        start = time.perf_counter()
        page, pngs, _ = make(k, out, png=not args.no_png)
        print(f"{page}  + {len(pngs)} layout PNGs  ({time.perf_counter() - start:.1f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
