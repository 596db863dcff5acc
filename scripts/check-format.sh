#!/usr/bin/env bash
# scripts/check-format.sh - fail when a C source or header differs from what
# clang-format makes of it with the repository's .clang-format: every .c and
# .h under include/ (the public headers too), src/, tools/, tests/, bench/,
# examples/ and fuzz/. A region that is laid out by hand is fenced with
#     /* clang-format off */ ... /* clang-format on */
# Usage: scripts/check-format.sh [REPO_ROOT]   (default: this script's repo)
# Environment: CLANG_FORMAT names the binary (default clang-format).
# Prints the name of each file that differs and exits 1; exits 0 when all are
# clean, 77 (a skip for CTest) when clang-format is not installed or is not
# version 14.
set -euo pipefail
root=${1:-"$(cd "$(dirname "$0")/.." && pwd)"}
cd "$root"
cf=${CLANG_FORMAT:-clang-format}
if ! command -v "$cf" >/dev/null 2>&1; then
    echo "check-format: $cf not found; skipped"
    exit 77
fi
# The tree is laid out with clang-format 14 (Debian 12's); another major
# version lays some constructs out differently, which says nothing about
# the code: skipped there (CLANG_FORMAT may name a clang-format-14).
major=$("$cf" --version | sed -n 's/.*version \([0-9][0-9]*\)\..*/\1/p' | sed -n 1p)
if [ "${major:-0}" != 14 ]; then
    echo "check-format: $cf is version ${major:-unknown}, the tree's layout is clang-format 14's; skipped"
    exit 77
fi

# One clang-format run over all the files (one process per file takes
# seconds); --dry-run --Werror reports each difference as
# "file:line:col: error: code should be clang-formatted".
out=$(find include src tools tests bench examples fuzz -type f \
    \( -name '*.c' -o -name '*.h' \) -print0 2>/dev/null | sort -z |
    xargs -0 "$cf" --style=file --dry-run --Werror 2>&1) && exit 0
files=$(printf '%s\n' "$out" | sed -n 's/^\([^:]*\):[0-9]*:[0-9]*: error: code should be clang-formatted.*/\1/p' | sort -u)
if [ -z "$files" ]; then
    printf '%s\n' "$out"
    exit 1
fi
while IFS= read -r f; do
    echo "$f: differs from $cf output (run: $cf -i $f)"
done <<<"$files"
exit 1
