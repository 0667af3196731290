#!/usr/bin/env bash
# The C++ and C test suites built with clang++-14 (Debian's) under AddressSanitizer + UndefinedBehaviorSanitizer
# into build-asan/ (-O1 -g, no CUDA, no Python module), then run with ctest. One build serves as CI's clang build
# (the library, the C library and every suite must compile with clang 14) and as its sanitizer run: any ASan
# report (overflow, use-after-free, leak) or UBSan report (-fno-sanitize-recover: the first one aborts the test)
# fails the test that triggered it.
# Usage: scripts/sanitize.sh [ctest args...]   (e.g. scripts/sanitize.sh -R gpu)
# KUBETUNE_JOBS (default 2) bounds the build's parallelism.
# Not built here: the CUDA-emulator twin tests (label cuda_emu): the emulator switches stacks with ucontext without
# ASan's fiber annotations; they run in the normal build (scripts/test.sh). Nor is the module exercise run (label
# module_exercise): it configures and builds a tree of its own, without these flags, which the normal run covers.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
if ! command -v clang++-14 >/dev/null; then
  echo "[sanitize] clang++-14 not found (Debian: apt-get install clang-14)" >&2
  exit 1
fi
export CCACHE_BASEDIR="$ROOT" CCACHE_NOHASHDIR=1 CCACHE_COMPILERCHECK=content
JOBS="${KUBETUNE_JOBS:-2}"
SAN="-fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer"
# -fsanitize-link-c++-runtime, with libstdc++ for C programs: the C test programs load the C++ library, whose
# UBSan vptr checks need the sanitizers' C++ runtime in the executable.
CXXRT="-fsanitize-link-c++-runtime -Wl,--push-state,--no-as-needed -lstdc++ -Wl,--pop-state"
start=$(date +%s)
cmake -S . -B build-asan -DCMAKE_BUILD_TYPE=Debug -DCMAKE_C_COMPILER=clang-14 -DCMAKE_CXX_COMPILER=clang++-14 \
  -DCMAKE_C_FLAGS_DEBUG="-O1 -g" -DCMAKE_CXX_FLAGS_DEBUG="-O1 -g" -DCMAKE_C_FLAGS="$SAN" -DCMAKE_CXX_FLAGS="$SAN" \
  -DCMAKE_EXE_LINKER_FLAGS="$SAN $CXXRT" -DCMAKE_SHARED_LINKER_FLAGS="$SAN" \
  -DKUBETUNE_BUILD_TESTS=ON -DKUBETUNE_BUILD_PYTHON=OFF -DKUBETUNE_ENABLE_CUDA=OFF -DKUBETUNE_CUDA_EMULATION=OFF \
  -DKUBETUNE_INSTALL=OFF >/dev/null
cmake --build build-asan -j"$JOBS"
built=$(date +%s)
echo "[sanitize] clang 14 ASan+UBSan build in $((built - start)) s"
export ASAN_OPTIONS="${ASAN_OPTIONS:-detect_leaks=1:strict_string_checks=1:detect_stack_use_after_return=1}"
export UBSAN_OPTIONS="${UBSAN_OPTIONS:-print_stacktrace=1}"
ctest --test-dir build-asan --output-on-failure -j"$JOBS" --timeout 600 -LE module_exercise "$@"
echo "[sanitize] tests in $(( $(date +%s) - built )) s"
