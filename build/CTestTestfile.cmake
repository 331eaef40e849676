# CMake generated Testfile for 
# Source directory: /work/main
# Build directory: /work/main/build
# 
# This file includes the relevant testing commands required for 
# testing this directory and lists subdirectories to be tested as well.
subdirs("src/trace")
subdirs("src/nvml")
subdirs("src/agent")
subdirs("src/db")
subdirs("src/report")
subdirs("src/export")
subdirs("src/api")
subdirs("src/cli")
subdirs("tests")
subdirs("bench")
subdirs("examples")
subdirs("python")
