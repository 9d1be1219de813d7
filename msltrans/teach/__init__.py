"""Teaching views: what a kernel becomes, shown side by side, and who holds which element.

- `capture`: compile a kernel as `msltrans dump` does, keeping TTGIR (with locations), MSL,
  launch metadata and the refusal, if any.
- `mapping`: the source line of every TTGIR line and every MSL line.
- `values`: the kernel's tensor values and their (encoding, shape) pairs.
- `ownership`: a layout's ownership map (which simdgroup, lane and register hold each element).
- `draw`: the ownership pictures (matplotlib, imported lazily: `import msltrans` stays light).
- `page`: the self-contained HTML page (`msltrans dump --html`).
- `cli_hooks`: `msltrans layout` and `dump --html`.
"""
