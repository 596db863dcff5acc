#!/usr/bin/env bash
# fuzz/make_seeds.sh SEEDGEN OUTDIR [TFDIR] - build-time seed corpora from
# the TensorFlow-written vectors (../shared/testdata/tf), written under
# OUTDIR/<target>/ (never into the source tree): each bundle's index (table),
# index + first data file (bundle, files), index + first two data files
# under the restore target's own names and state file (restore), index
# values (pb); each `checkpoint` file (state). Without TFDIR, or when it
# is absent, only says so: the committed seeds in fuzz/corpora/ remain.
set -euo pipefail
if [ $# -lt 2 ] || [ $# -gt 3 ]; then
    echo "usage: fuzz/make_seeds.sh SEEDGEN OUTDIR [TFDIR]" >&2
    exit 2
fi
seedgen=$1 out=$2 tf=${3:-}
mkdir -p "$out"/table "$out"/bundle "$out"/pb "$out"/state "$out"/files \
    "$out"/restore
if [ -z "$tf" ] || [ ! -d "$tf" ]; then
    echo "make_seeds: no TensorFlow vectors (${tf:-none given}); using the committed seeds only"
    exit 0
fi
count=0
for dir in "$tf"/*/; do
    vec=$(basename "$dir")
    for index in "$dir"*.index; do
        [ -e "$index" ] || continue
        prefix=${index%.index}
        "$seedgen" bundle "$prefix" "$out" "tf-$vec-$(basename "$prefix")"
        count=$((count + 1))
    done
    if [ -f "$dir/checkpoint" ]; then
        cp "$dir/checkpoint" "$out/state/tf-$vec"
        chmod u+w "$out/state/tf-$vec"
    fi
done
echo "make_seeds: seeds from $count TensorFlow bundles in $out"
