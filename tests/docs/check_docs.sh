#!/usr/bin/env bash
# tests/docs/check_docs.sh - the documentation a user reads stays true:
#   - README.md shows examples/async_train_loop.c whole, byte for byte;
#   - main() of that loop and of examples/listener_resume.c (hook + listener
#     + custom name + automatic resume) is at most 25 lines each;
#   - every numbered section of docs/guide.md has a "Program:" line naming
#     its program in examples/, and every program there is named by the
#     guide;
#   - headers, sources, tests, docs and examples send no reader to files a
#     user does not have (the shared spec), and every behaviour number they
#     cite (B<n>, F<n>) is defined in docs/behaviour.md;
#   - the format is cited as docs/format.md §N, and each cited section exists.
#   - every ckpt_ name that opens a code span of docs/guide.md is declared
#     in include/, and its TensorFlow table maps the functions that read a
#     checkpoint (latest_checkpoint, load_checkpoint, list_variables,
#     load_variable) and TensorFlow 2's CheckpointManager (its
#     checkpoint_name, restore_or_initialize, object-path keys);
#   - the guide's example end-of-session log line prints the stall as the
#     checkpoint hook does.
#   - a C++ or C user learns that a callback must return to the library (no
#     exception or longjmp out of it): the guide's Errors section and
#     ckpt_error_set's doc comment, where callbacks learn to fail, say so.
#   - every "<function>: <argument> is NULL" a test expects names a
#     parameter of that function as include/ declares it.
# Usage: check_docs.sh SOURCE_DIR
set -euo pipefail
src=${1:?usage: check_docs.sh SOURCE_DIR}
fail=0
die() {
    echo "FAIL: $*" >&2
    fail=1
}

# ---- README's loop is the example ---------------------------------------------
awk '/^## A training loop with the async hook/{s=1} s&&/^```c$/{c=1; next}
     c&&/^```$/{exit} c{print}' "$src/README.md" >"${TMPDIR:-/tmp}/readme_loop.$$"
cmp -s "${TMPDIR:-/tmp}/readme_loop.$$" "$src/examples/async_train_loop.c" ||
    die "README.md's loop differs from examples/async_train_loop.c"
rm -f "${TMPDIR:-/tmp}/readme_loop.$$"

# ---- main() length ---------------------------------------------------------------
for f in async_train_loop listener_resume; do
    n=$(awk '/^int main\(/{on=1} on{n++} on&&/^}/{print n; exit}' \
        "$src/examples/$f.c")
    [ -n "$n" ] || die "examples/$f.c has no main"
    [ "${n:-99}" -le 25 ] || die "examples/$f.c: main is $n lines (at most 25)"
    echo "ok: examples/$f.c main is $n lines"
done

# ---- one program per guide section ---------------------------------------------
for c in "$src"/examples/*.c; do
    name=examples/$(basename "$c")
    grep -qF "$name" "$src/docs/guide.md" || die "docs/guide.md does not name $name"
done
# every numbered section has a "Program:" line before the next section
awk '/^## [0-9]+\./{if (sec && !prog) print sec; sec=$0; prog=0}
     /^Program: /{prog=1} END{if (sec && !prog) print sec}' \
    "$src/docs/guide.md" | while read -r sec; do
    echo "FAIL: docs/guide.md: no Program: line in '$sec'" >&2
    exit 1
done || fail=1
grep -o 'examples/[a-z_]*\.c' "$src/docs/guide.md" | sort -u | while read -r e; do
    [ -f "$src/$e" ] || { echo "FAIL: docs/guide.md names missing $e" >&2; exit 1; }
done || fail=1

# ---- no pointers to the shared spec; numbers defined ----------------------------
dirs=()
for d in include src tests docs examples; do dirs+=("$src/$d"); done
if grep -rnE 'shared/spec|hooks-and-sessions\.md|\bspec (section|sections|B[0-9]|[0-9])' \
    "${dirs[@]}" --include='*.[ch]' --include='*.md' --include='*.txt' \
    --include='*.cmake' --include='*.sh' | grep -v 'tests/docs/check_docs.sh'; then
    die "the lines above send a reader to the shared spec"
fi
# the format is described by docs/format.md: comments cite its sections, and
# every section they cite exists
if grep -rnE 'format spec|\bspec §' "${dirs[@]}" --include='*.[ch]' \
    --include='*.md' | grep -v 'tests/docs/check_docs.sh'; then
    die "the lines above cite a format spec: cite docs/format.md §N instead"
fi
grep -rhoE "format\.md('s|\))? §[0-9]+(\.[0-9]+)?" "${dirs[@]}" \
    --include='*.[ch]' --include='*.md' | grep -oE '[0-9]+(\.[0-9]+)?$' |
    sort -u | while read -r n; do
    case $n in
    *.*) re="^### ${n//./\\.} " ;;
    *) re="^## $n\\. " ;;
    esac
    grep -qE "$re" "$src/docs/format.md" ||
        { echo "FAIL: docs/format.md has no section §$n, which is cited" >&2; exit 1; }
done || fail=1
# ---- the guide names real functions; a port finds TF's readers ------------------
# (the names that open a code span: `ckpt_x(...)`, not TF's parameters)
grep -oE '`ckpt_[a-z0-9]+(_[a-z0-9]+)*' "$src/docs/guide.md" | tr -d '`' | sort -u |
    while read -r name; do
        grep -rqw -- "$name" "$src/include" || {
            echo "FAIL: docs/guide.md names $name, which include/ does not declare" >&2
            exit 1
        }
    done || fail=1
for tf in latest_checkpoint load_checkpoint list_variables load_variable; do
    grep -qF "| \`tf.train.$tf(" "$src/docs/guide.md" ||
        die "docs/guide.md's TensorFlow table does not map tf.train.$tf"
done
# a TensorFlow 2 port meets CheckpointManager first, whose name defaults
# differ from ckpt's (checkpoint_name 'ckpt', model.ckpt here)
for tf in "tf.train.CheckpointManager(" "| \`checkpoint_name='ckpt'\` | \`o.basename = \"ckpt\"\`" \
    "| \`manager.restore_or_initialize()\` |" "/.ATTRIBUTES/VARIABLE_VALUE"; do
    grep -qF -- "$tf" "$src/docs/guide.md" ||
        die "docs/guide.md does not map TensorFlow 2's CheckpointManager: no '$tf'"
done

# where ckpt_latest_checkpoint answers differently from TensorFlow's
grep -qF 'it gives the newest listed one that has one (TensorFlow: `None`)' "$src/docs/guide.md" ||
    die "docs/guide.md's tf.train.latest_checkpoint row does not say where ckpt differs (a named checkpoint without its index)"

# ---- the guide's example log line is what the hook prints -------------------------
# (its stall as "%.6f s": the line once showed "0.004 s", which no run prints)
grep -q 'longest stall %\.6f s' "$src/src/hooks/checkpoint_listeners.c" ||
    die "src/hooks/checkpoint_listeners.c no longer prints the stall as %.6f: update this check and docs/guide.md"
grep -qE 'session ended: .* longest stall [0-9]+\.[0-9]{6} s; latest step' "$src/docs/guide.md" ||
    die "docs/guide.md's end-of-session line does not print the stall as the hook does (%.6f)"

# ---- callbacks return: no exception or longjmp through the library -------------
errors_section=$(sed -n '/^## 5\. Errors/,/^## 6\./p' "$src/docs/guide.md")
for phrase in '**Callbacks return.**' 'C++ exception' 'longjmp' \
    'return ckpt_error_set(CKPT_EUSER, "%s", e.what())'; do
    grep -qF -- "$phrase" <<<"$errors_section" ||
        die "docs/guide.md section 5 does not say that callbacks return ($phrase)"
done
for phrase in 'C++' 'exception or a longjmp out of one' 'e.what()'; do
    grep -qF -- "$phrase" <<<"$(sed -n '/^\/\*\* Record `code`/,/ckpt_error_set(int code/p' \
        "$src/include/ckpt/errors.h")" ||
        die "ckpt_error_set's doc comment does not say that callbacks return ($phrase)"
done

# ---- NULL messages name the header's parameters ----------------------------------
# "<function>: <argument> is NULL" (docs/CONTRIBUTING.md) names the parameter
# as the header spells it: each such message a test asserts (on one line)
# names a parameter of that function's declaration in include/.
decls=$(cat "$src"/include/ckpt.h "$src"/include/ckpt/*.h "$src"/include/ckpt/sys/*.h |
    tr -s ' \n' '  ' | grep -oE 'CKPT_EXTERN\([^)]*\) ?ckpt_[a-z0-9_]+\([^)]*\)')
while read -r fn arg; do
    params=$(grep -oE " ?${fn}\([^)]*\)" <<<"$decls" | sed -n 1p)
    [ -n "$params" ] || die "a test expects '$fn: $arg is NULL', but include/ does not declare $fn"
    grep -qE "[ *]${arg}(\[[^]]*\])?[,)]" <<<"$params" ||
        die "a test expects '$fn: $arg is NULL', but include/ declares $params"
done < <(grep -rhoE '"ckpt_[a-z0-9_]+: [a-z0-9_]+ is NULL"' "$src/tests" |
    tr -d '"' | sed -E 's/: ([a-z0-9_]+) is NULL/ \1/' | sort -u)

defined=$(grep -oE '^\*\*[BF][0-9]+\.\*\*' "$src/docs/behaviour.md" |
    tr -d '*.' | sort -u)
cited=$(grep -rhoE '\b[BF][0-9]{1,2}\b' "$src/include" "$src/src/hooks" \
    "$src/src/session" "$src/tests/hooks" "$src/tests/session" \
    "$src/docs/guide.md" | sort -u)
for n in $cited; do
    grep -qx "$n" <<<"$defined" || die "$n is cited but not defined in docs/behaviour.md"
done
[ "$fail" = 0 ] && echo "PASS"
exit "$fail"
