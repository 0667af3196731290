#!/usr/bin/env bash
# README's test command: set up, build, then run every suite (C++ ctest incl. the C API test and, in this
# CPU build, the nas CUDA twin tests on the CUDA emulator (ctest -L cuda_emu, built here only: a plain build.sh
# leaves the emulator out), the one-line module exercise (ctest -L module_exercise); install consumer, CUDA
# compile check when nvcc exists, and pytest). Exits non-zero if anything fails or no test ran.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
start=$(date +%s)
bash scripts/setup.sh
KUBETUNE_CUDA_EMULATION=ON bash scripts/build.sh
echo "== ctest (C++ suites, the C API test, the CUDA backend on the emulator, the module exercise)"
ctest --test-dir build --output-on-failure -j"$(nproc)" --timeout 900
echo "== install tree + examples/cpp via find_package(kubetune)"
bash scripts/check_install.sh
if command -v nvcc >/dev/null 2>&1 && [[ "${KUBETUNE_SKIP_CUDA_CHECK:-0}" != 1 ]]; then
  echo "== CUDA sources compile (one architecture)"
  bash scripts/check_cuda_compile.sh
fi
echo "== pytest"
PYTHONPATH="$ROOT/python" "$ROOT/.venv/bin/python" -m pytest -q tests/python
if [[ "${CI:-}" == "true" ]] && command -v clang++-14 >/dev/null 2>&1; then
  echo "== clang 14 build + C++/C suites under ASan/UBSan (build-asan/)"
  bash scripts/sanitize.sh
  echo "== fuzz (libFuzzer + ASan/UBSan, 20 s per target; longer runs: scripts/fuzz.sh 600)"
  bash scripts/fuzz.sh 20
fi
echo "[test] all suites passed in $(( $(date +%s) - start )) s"
