#!/usr/bin/env bash
# Idempotent set-up of everything kubetune needs on a fresh Debian 12 machine:
# system packages (apt-get) and a Python virtualenv at .venv with the build/test dependencies.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
APT_PKGS=(build-essential cmake ccache libeigen3-dev libxsimd-dev libboost-graph-dev nlohmann-json3-dev liblbfgspp-dev
          libgtest-dev libgmock-dev libbenchmark-dev libomp-dev python3-venv python3-dev zlib1g-dev)
missing=()
for p in "${APT_PKGS[@]}"; do
  dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "[setup] apt-get install ${missing[*]}"
  SUDO=""; [[ $(id -u) -ne 0 ]] && SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${missing[@]}" >/dev/null
fi
PY="${KUBETUNE_PYTHON:-python3}"
if [[ ! -x "$ROOT/.venv/bin/python" ]]; then
  echo "[setup] creating virtualenv .venv"
  "$PY" -m venv "$ROOT/.venv"
fi
STAMP="$ROOT/.venv/.kubetune-deps"
REQ="$ROOT/scripts/requirements-dev.txt"
if [[ ! -f "$STAMP" ]] || ! cmp -s "$REQ" "$STAMP"; then
  echo "[setup] pip install -r scripts/requirements-dev.txt"
  "$ROOT/.venv/bin/python" -m pip install -q --upgrade pip
  "$ROOT/.venv/bin/python" -m pip install -q -r "$REQ"
  cp "$REQ" "$STAMP"
fi
