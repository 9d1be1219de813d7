"""tt.reduce and tt.scan, with the axis plan and combine machinery they share."""
