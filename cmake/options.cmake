# Build options; all prefixed KUBETUNE_.
option(KUBETUNE_BUILD_PYTHON "Build the pybind11 extension _kubetune" OFF)
option(KUBETUNE_BUILD_TESTS "Build GoogleTest suites and the C API test" OFF)
option(KUBETUNE_BUILD_BENCHMARKS "Build Google Benchmark programs" OFF)
option(KUBETUNE_ENABLE_OPENMP "Use OpenMP for CPU parallel loops" ON)
option(KUBETUNE_ENABLE_CUDA "Compile the CUDA sources (needs nvcc)" OFF)
# The nas CUDA backend's tests on a host emulator (tests/cuda_emu; Linux x86-64/ARM64 with GCC or Clang: ELF
# sections, ucontext). OFF for local builds; scripts/test.sh (CI) turns it on.
option(KUBETUNE_CUDA_EMULATION "With tests on and CUDA off: run the nas CUDA backend's tests on a host emulator" OFF)
if(KUBETUNE_CUDA_EMULATION AND NOT CMAKE_SYSTEM_NAME STREQUAL "Linux")
  message(WARNING "KUBETUNE_CUDA_EMULATION=ON needs Linux (this is ${CMAKE_SYSTEM_NAME}); the emulator is not built")
  set(KUBETUNE_CUDA_EMULATION OFF)
endif()
option(KUBETUNE_INSTALL "Generate install rules (headers, C library, CMake package)" ON)
set(KUBETUNE_CUDA_ARCHITECTURES "80;90" CACHE STRING "Explicit CUDA architectures (never 'native')")
set(KUBETUNE_MODULES "all" CACHE STRING "Modules to build: all, or a list such as core;search;tpe (developer builds)")
set(KUBETUNE_EXTRA_MODULE_DIRS "" CACHE STRING
  "Folders of modules outside the tree, each with a module.cmake holding its kubetune_module() line")
