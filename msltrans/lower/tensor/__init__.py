"""Shape and layout ops: make_range, splat, broadcast, reshape, trans, join, split, cat,
convert_layout, gather."""
