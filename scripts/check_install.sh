#!/usr/bin/env bash
# Installs build/ into $B/install and builds + runs examples/cpp against it with find_package(kubetune).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
B="${KUBETUNE_BUILD_DIR:-build}"
rm -rf $B/install $B/example-consumer
cmake --install "$B" --prefix $B/install >/dev/null
cmake -S examples/cpp -B $B/example-consumer -DCMAKE_PREFIX_PATH="$ROOT/$B/install" >/dev/null
cmake --build $B/example-consumer -j"$(nproc)" >/dev/null
./$B/example-consumer/kubetune_example
(cd $B/example-consumer && ./kubetune_example_c >/dev/null)
# Only C symbols may be exported from the shared C library.
bad=$(nm -D --defined-only $B/install/lib/libkubetune.so | awk '{print $3}' | grep -v '^kt_' || true)
if [[ -n "$bad" ]]; then echo "non-C symbols exported from libkubetune.so:"; echo "$bad" | head; exit 1; fi
echo "install consumer OK; libkubetune.so exports $(nm -D --defined-only $B/install/lib/libkubetune.so | grep -c ' T kt_') kt_* functions"
