#!/usr/bin/env bash
# README's main command: set up, install the kubetune wheel into .venv (pip install .), run the demo.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
bash scripts/setup.sh
export CCACHE_BASEDIR="$ROOT" CCACHE_NOHASHDIR=1
"$ROOT/.venv/bin/python" -m pip install -q --no-build-isolation "$ROOT"
# kubetune.sched reads the shared data (the Alibaba trace) from $KUBETUNE_SHARED_DATA only: point it at
# ../shared/data when present (the installed package never looks outside itself).
if [[ -d "$ROOT/../shared/data" ]]; then export KUBETUNE_SHARED_DATA="${KUBETUNE_SHARED_DATA:-$(cd "$ROOT/../shared/data" && pwd)}"; fi
cd /tmp && exec "$ROOT/.venv/bin/python" -m kubetune.demo "$@"
