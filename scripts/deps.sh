#!/usr/bin/env bash
# scripts/deps.sh - make sure the Debian packages ckpt builds and tests with
# are installed: installs them when run as root (or with sudo available),
# otherwise prints the exact apt-get line and fails.
set -euo pipefail

# libopenmpi-dev and openmpi-bin: the optional MPI library ckpt_mpi and its
# tests (label mpi, run through mpiexec). procps: ps and pgrep, with which
# the mpi and crash scripts find and watch the processes they start.
PACKAGES=(cmake make gcc pkg-config libsnappy-dev libcmocka-dev libjson-c-dev valgrind
          libleveldb-dev g++ libopenmpi-dev openmpi-bin procps)

missing=()
for p in "${PACKAGES[@]}"; do
    if [ "$(dpkg-query -W -f='${Status}' "$p" 2>/dev/null)" != "install ok installed" ]; then
        missing+=("$p")
    fi
done
[ ${#missing[@]} -eq 0 ] && exit 0

line="apt-get install -y ${missing[*]}"
if [ "$(id -u)" -eq 0 ]; then
    echo "deps: installing ${missing[*]}" >&2
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $line >/dev/null
elif command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then
    echo "deps: installing ${missing[*]} with sudo" >&2
    sudo apt-get update -qq
    sudo DEBIAN_FRONTEND=noninteractive $line >/dev/null
else
    echo "deps: missing Debian packages; run as root:" >&2
    echo "  apt-get update && $line" >&2
    exit 1
fi
