#!/usr/bin/env bash
# scripts/demo.sh - the README's quick start: install the Debian packages
# ckpt needs, build it (in build/), train the demo model with ckpt-train
# (asynchronous checkpoints into runs/demo), list the checkpoints with the
# `ckpt` tool, and say how to resume and inspect. Extra arguments go to
# ckpt-train (see `build/tools/ckpt-train/ckpt-train --help`).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/deps.sh

log=$(mktemp)
trap 'rm -f "$log"' EXIT

# Run quietly; show the output only when the command fails.
quiet() {
    echo "\$ $*"
    if ! "$@" >"$log" 2>&1; then
        cat "$log" >&2
        exit 1
    fi
}

# Run with the output shown.
show() {
    echo
    echo "\$ $*"
    "$@"
}

quiet cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo
quiet cmake --build build -j"$(nproc)" --target ckpt_cli ckpt_train

rm -rf runs/demo
show build/tools/ckpt-train/ckpt-train --dir runs/demo "$@"
show build/tools/ckpt/ckpt ls runs/demo

cat <<'MSG'

Resume (restores the latest checkpoint and trains on to step 3000):
  build/tools/ckpt-train/ckpt-train --dir runs/demo --steps 3000
Inspect and check the checkpoints (TensorFlow can read them too):
  build/tools/ckpt/ckpt inspect runs/demo --values=4
  build/tools/ckpt/ckpt verify runs/demo
MSG
