# Empty dependencies file for test_trace_codec.
# This may be replaced when dependencies are built.
