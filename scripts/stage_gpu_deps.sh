#!/usr/bin/env bash
# Stage what scripts/gpu_check.sh needs on a bare GPU machine that has nvcc, cmake, python3 + torch but no
# Debian -dev packages: Eigen, nlohmann_json, GoogleTest and Google Benchmark (headers, libraries, CMake
# configs) copied into .devdeps/usr, plus kubetune_test_nas and bench_nas built here with CUDA into
# .devdeps/bin (tried first there; rebuilt there from .devdeps/usr if they do not start).
#
#   bash scripts/stage_gpu_deps.sh [arch]      # then, on the GPU machine, from the repository root:
#   KT_GPU_PREBUILT=.devdeps/bin CMAKE_PREFIX_PATH=$PWD/.devdeps/usr bash scripts/gpu_check.sh [arch]
#
# .devdeps is ignored by git (add "/.devdeps/" to .git/info/exclude); about 20 MB.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
ARCH="${1:-90}"
grep -qx "/.devdeps/" .git/info/exclude 2>/dev/null || echo "/.devdeps/" >> .git/info/exclude
LIB=/usr/lib/x86_64-linux-gnu
D=.devdeps/usr
rm -rf .devdeps
mkdir -p "$D/include" "$D/share/eigen3" "$D/share/cmake" "$D/lib/x86_64-linux-gnu/cmake" .devdeps/bin
cp -r /usr/include/eigen3 /usr/include/nlohmann /usr/include/gtest /usr/include/gmock /usr/include/benchmark "$D/include/"
cp -r /usr/share/eigen3/cmake "$D/share/eigen3/"
cp -r /usr/share/cmake/nlohmann_json "$D/share/cmake/"
cp -r "$LIB/cmake/GTest" "$LIB/cmake/benchmark" "$D/lib/x86_64-linux-gnu/cmake/"
cp "$LIB"/lib{gtest,gtest_main,gmock,gmock_main,benchmark_main}.a "$D/lib/x86_64-linux-gnu/"
for f in libbenchmark.so libbenchmark.so.1debian libbenchmark.so.1.7.1; do cp -L "$LIB/$f" "$D/lib/x86_64-linux-gnu/"; done
B=build-gpu-stage
cmake -S . -B "$B" -DCMAKE_BUILD_TYPE=Release -DKUBETUNE_ENABLE_CUDA=ON -DKUBETUNE_CUDA_ARCHITECTURES="$ARCH" \
  -DKUBETUNE_BUILD_TESTS=ON -DKUBETUNE_BUILD_BENCHMARKS=ON -DKUBETUNE_MODULES="core;nas" -DKUBETUNE_INSTALL=OFF >/dev/null
cmake --build "$B" -j2 --target kubetune_test_nas bench_nas
cp "$B/kubetune_test_nas" "$B/benchmarks/cpp/bench_nas" .devdeps/bin/
du -sh .devdeps
