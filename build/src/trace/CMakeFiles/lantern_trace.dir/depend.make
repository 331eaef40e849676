# Empty dependencies file for lantern_trace.
# This may be replaced when dependencies are built.
