#!/usr/bin/env bash
# On a machine with an NVIDIA GPU: run the nas CUDA-vs-CPU twin tests, the nas Google Benchmark, a short
# DARTS search on the GPU and the same-run comparison with PyTorch eager (benchmarks/python/darts_vs_torch.py).
#
#   bash scripts/gpu_check.sh [arch]            # arch: CUDA architecture, default 90 (H100/H200)
#
# Environment (all optional):
#   KT_GPU_PREBUILT   folder holding kubetune_test_nas and bench_nas built elsewhere with
#                     -DKUBETUNE_ENABLE_CUDA=ON; used when they start, else both are built here
#   CMAKE_PREFIX_PATH where Eigen, nlohmann_json (and GTest/benchmark for a local build) are, when not in /usr
#   PYTHON            interpreter that has torch with CUDA (default: python3)
#   OUT               where logs go (default: $BUILD/gpu-check)
# Every step runs even when an earlier one fails; the exit status says whether any failed.
set -uo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
ARCH="${1:-${KT_CUDA_ARCH:-90}}"
BUILD="${KT_GPU_BUILD_DIR:-build-gpu}"
OUT="${OUT:-$BUILD/gpu-check}"
PY="${PYTHON:-python3}"
JOBS="$(nproc)"
mkdir -p "$OUT" "$BUILD"
failed=()
step() { echo; echo "== $* ($(date +%T))"; }
fail() { echo "gpu_check: FAILED: $*" >&2; failed+=("$*"); }

NVCC="$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)"
CUDA_LIB="$(dirname "$(readlink -f "$NVCC")")/../lib64"
# cuBLAS may live in the toolkit or in the nvidia-cublas wheel that torch brings.
PY_CUBLAS="$("$PY" -c 'import nvidia.cublas, os; print(os.path.join(list(nvidia.cublas.__path__)[0], "lib"))' 2>/dev/null || true)"
export LD_LIBRARY_PATH="${CUDA_LIB}:${CUDA_LIB}/../lib:${PY_CUBLAS}${CMAKE_PREFIX_PATH:+:${CMAKE_PREFIX_PATH//://lib/x86_64-linux-gnu:}/lib/x86_64-linux-gnu}:${LD_LIBRARY_PATH:-}"

step "machine"
{ nvidia-smi --query-gpu=name,memory.total,driver_version,clocks.max.sm --format=csv 2>&1
  "$NVCC" --version | tail -2; "$PY" -c 'import torch; print("torch", torch.__version__, torch.cuda.is_available())' 2>&1
  nproc; } | tee "$OUT/machine.txt"

step "C++ binaries"
BIN=""
if [[ -n "${KT_GPU_PREBUILT:-}" && -x "$KT_GPU_PREBUILT/kubetune_test_nas" ]] &&
   "$KT_GPU_PREBUILT/kubetune_test_nas" --gtest_list_tests >/dev/null 2>&1 &&
   "$KT_GPU_PREBUILT/bench_nas" --benchmark_list_tests >/dev/null 2>&1; then
  BIN="$KT_GPU_PREBUILT"; echo "using prebuilt binaries in $BIN"
else
  echo "building kubetune_test_nas and bench_nas here"
  if cmake -S . -B "$BUILD" -DCMAKE_BUILD_TYPE=Release -DKUBETUNE_ENABLE_CUDA=ON -DKUBETUNE_CUDA_ARCHITECTURES="$ARCH" \
       -DCMAKE_CUDA_COMPILER="$NVCC" -DKUBETUNE_BUILD_TESTS=ON -DKUBETUNE_BUILD_BENCHMARKS=ON \
       -DKUBETUNE_MODULES="core;nas" -DKUBETUNE_INSTALL=OFF >"$OUT/cmake.txt" 2>&1 &&
     cmake --build "$BUILD" -j"$JOBS" --target kubetune_test_nas bench_nas >"$OUT/build.txt" 2>&1; then
    mkdir -p "$BUILD/bin" && cp "$BUILD/kubetune_test_nas" "$BUILD/benchmarks/cpp/bench_nas" "$BUILD/bin/"
    BIN="$BUILD/bin"
  else
    tail -30 "$OUT/cmake.txt" "$OUT/build.txt"; fail "C++ build"
  fi
fi

if [[ -n "$BIN" ]]; then
  step "nas tests with CUDA (twins must RUN, not skip)"
  # KT_CUDA_SYNC=1: a kernel fault is reported by the kernel that caused it, not by a later call
  KT_CUDA_SYNC=1 "$BIN/kubetune_test_nas" --gtest_brief=1 2>&1 | tee "$OUT/test_nas.txt"
  [[ ${PIPESTATUS[0]} -eq 0 ]] || fail "kubetune_test_nas"
  if grep -q "Skipped" "$OUT/test_nas.txt" && grep -B2 "Skipped" "$OUT/test_nas.txt" | grep -q "NasCudaTwins\|cuda_twins"; then
    fail "CUDA twin tests were skipped (no usable GPU?)"
  fi
  step "nas Google Benchmark (CUDA paper-size and reduced supernets, CPU reduced, 1 thread)"
  "$BIN/bench_nas" --benchmark_filter='CUDA|Reduced/1' --benchmark_format=console \
    --benchmark_out="$OUT/bench_nas.json" --benchmark_out_format=json 2>&1 | tee "$OUT/bench_nas.txt"
  [[ ${PIPESTATUS[0]} -eq 0 ]] || fail "bench_nas"
fi

step "Python extension (core + nas, CUDA) for $PY"
PKG="$BUILD/pkg"
PYBIND_DIR="$("$PY" -m pybind11 --cmakedir 2>/dev/null || true)"
if cmake -S . -B "$BUILD-py" -DCMAKE_BUILD_TYPE=Release -DSKBUILD=ON -DKUBETUNE_BUILD_PYTHON=ON \
     -DKUBETUNE_ENABLE_CUDA=ON -DKUBETUNE_CUDA_ARCHITECTURES="$ARCH" -DCMAKE_CUDA_COMPILER="$NVCC" \
     -DKUBETUNE_MODULES="core;nas" -DKUBETUNE_INSTALL=OFF -DPython_EXECUTABLE="$(command -v "$PY")" \
     -Dpybind11_DIR="$PYBIND_DIR" >"$OUT/cmake_py.txt" 2>&1 &&
   cmake --build "$BUILD-py" -j"$JOBS" --target _kubetune >"$OUT/build_py.txt" 2>&1; then
  rm -rf "$PKG" && mkdir -p "$PKG/kubetune"
  cp python/kubetune/*.py python/kubetune/*.pyi "$PKG/kubetune/" 2>/dev/null
  cp "$(find "$BUILD-py" -name '_kubetune*.so' | head -1)" "$PKG/kubetune/"
  export PYTHONPATH="$ROOT/$PKG"
  step "DARTS on the GPU: paper-size supernet (8 cells, C=16, batch 64, 32x32x3) vs PyTorch eager"
  "$PY" benchmarks/python/darts_vs_torch.py --device cuda --paper --steps 20 2>&1 | tee "$OUT/darts_vs_torch_paper.txt"
  [[ ${PIPESTATUS[0]} -eq 0 ]] || fail "darts_vs_torch --paper"
  step "DARTS on the GPU: reduced supernet (5 cells, C=8, batch 32, 28x28x1) vs PyTorch eager"
  "$PY" benchmarks/python/darts_vs_torch.py --device cuda --steps 20 2>&1 | tee "$OUT/darts_vs_torch_reduced.txt"
  [[ ${PIPESTATUS[0]} -eq 0 ]] || fail "darts_vs_torch reduced"
  step "a short DARTS search on digits on the GPU"
  "$PY" - <<'EOF' 2>&1 | tee "$OUT/search_digits_cuda.txt"
import kubetune as kt
X, y = kt.nas.load_digits()
# the settings of tests/python/test_nas.py's CPU search, on both devices
cfg = dict(channels=6, layers=2, nodes=2, stem_multiplier=1, batch_size=64, w_lr=0.1, alpha_lr=3e-3, seed=0, threads=1)
for dev in ("cpu", "cuda"):
    r = kt.nas.DARTS(**cfg).search(X, y, epochs=3, device=dev)
    print(f"{dev}: {r.seconds:.2f} s, val acc per epoch {[round(h['val_acc'], 3) for h in r.history]}, "
          f"genotype {r.genotype.to_katib_string()}")
    assert r.history[-1]["val_acc"] >= 0.90, r.history
EOF
  [[ ${PIPESTATUS[0]} -eq 0 ]] || fail "digits search on cuda"
else
  tail -30 "$OUT/cmake_py.txt" "$OUT/build_py.txt"; fail "Python extension build"
  step "PyTorch eager alone (compare with bench_nas above)"
  "$PY" benchmarks/python/darts_vs_torch.py --device cuda --paper --steps 20 --torch-only 2>&1 |
    tee "$OUT/darts_vs_torch_paper.txt"
fi

if [[ -n "$BIN" && "${KT_GPU_SANITIZE:-0}" == 1 ]] && command -v compute-sanitizer >/dev/null; then
  step "compute-sanitizer memcheck on the CUDA twin tests"
  timeout 240 compute-sanitizer --tool memcheck --error-exitcode 9 "$BIN/kubetune_test_nas" \
    --gtest_filter='NasCudaTwins.*' --gtest_brief=1 2>&1 | tail -40 | tee "$OUT/memcheck.txt"
  [[ ${PIPESTATUS[0]} -eq 0 ]] || fail "compute-sanitizer memcheck"
fi

echo
if ((${#failed[@]})); then
  echo "gpu_check: ${#failed[@]} step(s) failed: ${failed[*]} (logs in $OUT)"; exit 1
fi
echo "gpu_check: all steps passed (logs in $OUT)"
