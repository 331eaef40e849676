file(REMOVE_RECURSE
  "../../lib/liblantern_trace.a"
  "../../lib/liblantern_trace.pdb"
  "CMakeFiles/lantern_trace.dir/codec.c.o"
  "CMakeFiles/lantern_trace.dir/codec.c.o.d"
)

# Per-language clean rules from dependency scanning.
foreach(lang C)
  include(CMakeFiles/lantern_trace.dir/cmake_clean_${lang}.cmake OPTIONAL)
endforeach()
