#!/usr/bin/env bash
# Configure and build the C++ library, tests, C library and the Python extension (in place) into build/.
# Extra arguments go to cmake (e.g. -DKUBETUNE_MODULES="core;tpe"). KUBETUNE_CUDA_EMULATION=ON in the environment
# also builds the nas CUDA backend's emulator tests (tests/cuda_emu); scripts/test.sh (CI) sets it, a plain
# build.sh leaves them out.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
export CCACHE_BASEDIR="$ROOT" CCACHE_NOHASHDIR=1 CCACHE_COMPILERCHECK=content
PYBIN="$ROOT/.venv/bin/python"
JOBS="${KUBETUNE_JOBS:-$(nproc)}"
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release -DKUBETUNE_BUILD_TESTS=ON -DKUBETUNE_BUILD_PYTHON=ON \
  -DKUBETUNE_CUDA_EMULATION="${KUBETUNE_CUDA_EMULATION:-OFF}" -DPython_EXECUTABLE="$PYBIN" -Dpybind11_DIR="$("$PYBIN" -m pybind11 --cmakedir)" "$@" >/dev/null
cmake --build build -j"$JOBS"
