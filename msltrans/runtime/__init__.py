"""Launch runtime: argument binding (`launch`) and the two engines (`mps`, `sim`)."""
