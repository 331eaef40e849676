# CMake generated Testfile for 
# Source directory: /work/main/src/trace
# Build directory: /work/main/build/src/trace
# 
# This file includes the relevant testing commands required for 
# testing this directory and lists subdirectories to be tested as well.
