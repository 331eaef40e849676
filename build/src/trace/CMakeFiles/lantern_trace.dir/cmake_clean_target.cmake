file(REMOVE_RECURSE
  "../../lib/liblantern_trace.a"
)
