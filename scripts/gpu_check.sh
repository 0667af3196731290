#!/usr/bin/env bash
# On a machine with an NVIDIA GPU: build kubetune with CUDA, run the nas CUDA-vs-CPU twin tests (plus the
# CPU gradient suite on the CUDA build) and the nas GPU benchmark. Usage: bash scripts/gpu_check.sh [arch]
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
ARCH="${1:-${KT_CUDA_ARCH:-90}}"
BUILD="${KT_GPU_BUILD_DIR:-build-gpu}"
OUT="${OUT:-$BUILD/gpu-check}"
mkdir -p "$OUT"
command -v nvidia-smi >/dev/null && nvidia-smi -L | tee "$OUT/gpus.txt" || echo "nvidia-smi not found"
cmake -S . -B "$BUILD" -DCMAKE_BUILD_TYPE=Release -DKUBETUNE_ENABLE_CUDA=ON -DKUBETUNE_CUDA_ARCHITECTURES="$ARCH" \
  -DCMAKE_CUDA_COMPILER="$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)" -DKUBETUNE_BUILD_TESTS=ON \
  -DKUBETUNE_INSTALL=OFF >/dev/null
cmake --build "$BUILD" -j"$(nproc)" --target kubetune_test_nas
echo "== nas tests on the CUDA build (twins must RUN, not skip)"
"$BUILD/kubetune_test_nas" --gtest_brief=1 2>&1 | tee "$OUT/test_nas.txt"
if grep -q "SKIPPED.*NasCudaTwins" "$OUT/test_nas.txt"; then
  echo "error: CUDA twin tests were skipped (no usable GPU?)" >&2
  exit 1
fi
echo "== nas benchmark (CUDA paper-size + CPU reduced supernet)"
CUDA_LIB="$(dirname "$(readlink -f "$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)")")/../lib64"
g++ -O2 -std=c++20 -fopenmp -Iinclude -I/usr/include/eigen3 benchmarks/cpp/bench_nas.cpp \
  "$BUILD/libkt_nas.a" "$BUILD/libkt_core.a" -L"$CUDA_LIB" -lcublas -lcudart_static -lbenchmark -lbenchmark_main \
  -lpthread -ldl -lrt -Wl,-rpath,"$CUDA_LIB" -o "$BUILD/bench_nas"
"$BUILD/bench_nas" --benchmark_filter='CUDA|Reduced/1' --benchmark_format=console \
  --benchmark_out="$OUT/bench_nas.json" --benchmark_out_format=json | tee "$OUT/bench_nas.txt"
if [[ -x .venv/bin/python ]] && .venv/bin/python -c "import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)" 2>/dev/null; then
  echo "== PyTorch eager on the GPU, same model (optional)"
  cmake -S . -B "$BUILD" -DKUBETUNE_BUILD_PYTHON=ON -DPython_EXECUTABLE="$ROOT/.venv/bin/python" \
    -Dpybind11_DIR="$(.venv/bin/python -m pybind11 --cmakedir)" >/dev/null
  cmake --build "$BUILD" -j"$(nproc)" --target _kubetune
  PYTHONPATH="$ROOT/python" .venv/bin/python benchmarks/python/darts_vs_torch.py --device cuda | tee "$OUT/darts_vs_torch.txt"
fi
echo "gpu_check: done (outputs in $OUT)"
