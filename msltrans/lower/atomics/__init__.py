"""Global-memory atomics (32- and 64-bit) and tt.histogram."""
