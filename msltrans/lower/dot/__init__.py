"""The tt.dot family: tt.dot (ops_dot.py, its paths in the modules beside it) and
tt.dot_scaled (ops_dot_scaled.py). See docs/dev-notes/dot.md."""
