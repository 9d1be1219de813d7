"""Global memory: pointers, loads and stores (vectorised where provable), volatile loads, and the
pointer analyses they use (roots, 32-bit offsets, coherence)."""
