#!/usr/bin/env bash
# Proves the CUDA sources compile and link for one architecture (no GPU needed); builds only CUDA modules.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
export CCACHE_BASEDIR="$ROOT" CCACHE_NOHASHDIR=1
cmake -S . -B build-cuda -DCMAKE_BUILD_TYPE=Release -DKUBETUNE_ENABLE_CUDA=ON -DKUBETUNE_CUDA_ARCHITECTURES=90 \
  -DCMAKE_CUDA_COMPILER="$(command -v nvcc)" -DKUBETUNE_INSTALL=OFF >/dev/null
cmake --build build-cuda -j"$(nproc)" --target kt_core kt_nas
echo "CUDA sources compiled for sm_90"
