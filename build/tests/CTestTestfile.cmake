# CMake generated Testfile for 
# Source directory: /work/main/tests
# Build directory: /work/main/build/tests
# 
# This file includes the relevant testing commands required for 
# testing this directory and lists subdirectories to be tested as well.
add_test([=[test_trace_codec]=] "/work/main/build/bin/test_trace_codec")
set_tests_properties([=[test_trace_codec]=] PROPERTIES  LABELS "unit;" _BACKTRACE_TRIPLES "/work/main/tests/CMakeLists.txt;10;add_test;/work/main/tests/CMakeLists.txt;14;lantern_unit_test;/work/main/tests/CMakeLists.txt;0;")
subdirs("agent")
subdirs("cli")
subdirs("cuda_reports")
subdirs("cupti")
subdirs("e2e_nvtx")
subdirs("energy")
subdirs("gpu")
subdirs("gpu_energy")
subdirs("gpu_kernels")
subdirs("import")
subdirs("kernels")
