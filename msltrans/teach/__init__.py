"""Teaching views: what a kernel becomes, shown side by side, and who holds which element.

- `capture`: what the views show of a compiled kernel: TTGIR (with locations), MSL, launch
  metadata and the refusal, if any (`msltrans.cli.views.capture` compiles as `dump` does).
- `mapping`: the source line of every TTGIR line and every MSL line.
- `values`: the kernel's tensor values and their (encoding, shape) pairs.
- `ownership`: a layout's ownership map (which simdgroup, lane and register hold each element).
- `draw`: the ownership pictures (matplotlib, imported lazily: `import msltrans` stays light).
- `page`: the self-contained HTML page (`msltrans dump --html`).

Their command line (`msltrans layout`, `dump --html`) is `msltrans.cli.views`.
"""
