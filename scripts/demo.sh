#!/usr/bin/env bash
# scripts/demo.sh - the README's quick start: install the Debian packages
# ckpt needs, build it (Release, in build/), write a small checkpoint
# directory with examples/write_checkpoint.c, then look at it with the
# `ckpt` tool. Each command is printed before it runs.
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

quiet cmake -S . -B build -DCMAKE_BUILD_TYPE=Release
quiet cmake --build build -j"$(nproc)" --target ckpt_cli write_checkpoint

rm -rf runs/demo-ckpt
show build/examples/write_checkpoint runs/demo-ckpt
show build/tools/ckpt/ckpt ls runs/demo-ckpt
show build/tools/ckpt/ckpt inspect runs/demo-ckpt --values=4
show build/tools/ckpt/ckpt verify runs/demo-ckpt
