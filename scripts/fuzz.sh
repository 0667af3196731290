#!/usr/bin/env bash
# Builds the libFuzzer targets in tests/fuzz with clang++-14 (ASan + UBSan) into build-fuzz/ and runs each for
# SECONDS (default 30) on a scratch copy of its seed corpus in tests/fuzz/corpus/<target>/ (the repository's corpus
# never grows). Exits non-zero when a target crashes, hangs (-timeout), leaks, runs out of memory or trips a
# sanitizer; the reproducer is left in build-fuzz/artifacts/<target>/.
# Usage: scripts/fuzz.sh [SECONDS] [TARGET...]   (targets: fuzz_extender fuzz_study fuzz_c_api fuzz_trace; default all)
# FUZZ_SEED (default 1) fixes libFuzzer's mutation sequence, so a short run (CI's) explores a prefix of what a longer
# run with the same seed explored; FUZZ_SEED=0 draws a new sequence each run (libFuzzer's own default).
# What each target checks, and the recorded long runs: docs/architecture.md, "Fuzzing and sanitizers".
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
seconds="${1:-30}"
shift || true
targets=("$@")
((${#targets[@]})) || targets=(fuzz_extender fuzz_study fuzz_c_api fuzz_trace)
CXX=clang++-14
command -v "$CXX" >/dev/null || { echo "[fuzz] $CXX not found (Debian: apt-get install clang-14)" >&2; exit 1; }
command -v ccache >/dev/null && CXX="ccache $CXX"
OUT=build-fuzz
# -fno-sanitize-recover: a UBSan report stops the run like a crash (UBSan only prints by default).
FLAGS=(-std=c++20 -O1 -g -fno-omit-frame-pointer -fno-sanitize-recover=all -Iinclude -I/usr/include/eigen3
       -I"$OUT/generated" -DEIGEN_DONT_PARALLELIZE=1 -DKT_HAVE_SEARCH=1)
SAN=-fsanitize=fuzzer,address,undefined
export UBSAN_OPTIONS="${UBSAN_OPTIONS:-print_stacktrace=1}"

# The library sources the targets need, linked into each: core, the basic searchers (registered for study files;
# TPE, GP and multi-fidelity searchers are not built here), the gpu and autoscale modules and the C API.
lib_sources=(src/core/*.cpp src/search/basic/*.cpp src/sched/gpu/*.cpp src/sched/autoscale/*.cpp src/c_api/*.cpp
             src/registry.cpp)
mkdir -p "$OUT/obj" "$OUT/generated"
# src/registry.cpp includes the registry list CMake writes from the module declarations; here: the basic searchers.
cat > "$OUT/generated/kt_registry_modules.inc.new" <<'INC'
namespace kubetune::search {
void register_basic_searchers();
}
namespace kubetune::detail {
inline void register_modules() { ::kubetune::search::register_basic_searchers(); }
}  // namespace kubetune::detail
INC
cmp -s "$OUT/generated/kt_registry_modules.inc.new" "$OUT/generated/kt_registry_modules.inc" ||
  mv "$OUT/generated/kt_registry_modules.inc.new" "$OUT/generated/kt_registry_modules.inc"
rm -f "$OUT/generated/kt_registry_modules.inc.new"
start=$(date +%s)
objs=()
for src in "${lib_sources[@]}"; do objs+=("$OUT/obj/$(echo "${src%.cpp}" | tr / _).o"); done
# fuzzer-no-link: coverage instrumentation without libFuzzer's main. Every run recompiles (ccache makes it cheap).
printf '%s\n' "${lib_sources[@]}" | xargs -P "$(nproc)" -I{} \
  sh -c 'exec $2 "$1" -c -o "$0/obj/$(echo "${1%.cpp}" | tr / _).o"' "$OUT" {} \
  "$CXX ${FLAGS[*]} -fsanitize=fuzzer-no-link,address,undefined"
for t in "${targets[@]}"; do
  $CXX "${FLAGS[@]}" $SAN "tests/fuzz/$t.cpp" "${objs[@]}" -lpthread -o "$OUT/$t"
done
echo "[fuzz] built ${targets[*]} in $(( $(date +%s) - start )) s"

status=0
for t in "${targets[@]}"; do
  corpus="$OUT/corpus/$t" artifacts="$OUT/artifacts/$t"
  rm -rf "$corpus"
  mkdir -p "$corpus" "$artifacts"
  cp tests/fuzz/corpus/"$t"/* "$corpus"/
  echo "== $t for ${seconds} s"
  if ! "$OUT/$t" -seed="${FUZZ_SEED:-1}" -max_total_time="$seconds" -max_len=200000 -timeout=5 -rss_limit_mb=2048 -print_final_stats=1 \
       -artifact_prefix="$artifacts/" "$corpus" 2>"$OUT/$t.log"; then
    tail -n 60 "$OUT/$t.log" >&2
    echo "[fuzz] $t FAILED; reproducer(s) in $artifacts/: $(ls "$artifacts")" >&2
    status=1
  else
    grep -E '^stat::number_of_executed_units|^stat::new_units_added' "$OUT/$t.log" | tr '\n' ' '
    echo
  fi
done
exit "$status"
