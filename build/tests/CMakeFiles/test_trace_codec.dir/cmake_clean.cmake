file(REMOVE_RECURSE
  "../bin/test_trace_codec"
  "../bin/test_trace_codec.pdb"
  "CMakeFiles/test_trace_codec.dir/unit/test_trace_codec.c.o"
  "CMakeFiles/test_trace_codec.dir/unit/test_trace_codec.c.o.d"
)

# Per-language clean rules from dependency scanning.
foreach(lang C)
  include(CMakeFiles/test_trace_codec.dir/cmake_clean_${lang}.cmake OPTIONAL)
endforeach()
