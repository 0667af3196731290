#!/usr/bin/env bash
# Installs build/ into build/install and builds + runs examples/cpp against it with find_package(kubetune).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
rm -rf build/install build/example-consumer
cmake --install build --prefix build/install >/dev/null
cmake -S examples/cpp -B build/example-consumer -DCMAKE_PREFIX_PATH="$ROOT/build/install" >/dev/null
cmake --build build/example-consumer -j"$(nproc)" >/dev/null
./build/example-consumer/kubetune_example
# Only C symbols may be exported from the shared C library.
bad=$(nm -D --defined-only build/install/lib/libkubetune.so | awk '{print $3}' | grep -v '^kt_' | grep -v '^_' || true)
if [[ -n "$bad" ]]; then echo "non-C symbols exported from libkubetune.so:"; echo "$bad" | head; exit 1; fi
echo "install consumer OK; libkubetune.so exports $(nm -D --defined-only build/install/lib/libkubetune.so | grep -c ' T kt_') kt_* functions"
