#!/usr/bin/env bash
# tests/lint/check_banned_selftest.sh - scripts/check-banned.sh on a made-up
# tree: it must report exactly the banned calls planted there (file, line,
# name) and none of the look-alikes (the allowed files included: the
# allocator, the thread start, the no-signal write), and pass on a clean
# tree.
# Usage: check_banned_selftest.sh SOURCE_DIR
set -euo pipefail
script=$1/scripts/check-banned.sh
tmp=$(mktemp -d "${TMPDIR:-/tmp}/ckpt-banned.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$tmp/src/common" "$tmp/src/x" "$tmp/tools/t" "$tmp/include/ckpt"

cat >"$tmp/src/x/bad.c" <<'C'
/* strcpy(a, b) in a comment is fine; so is free(p) */
static void f(char *d, const char *s, ckpt_allocator *a, int n)
{
    strcpy(d, s);
    strcat (d, s);
    sprintf(d, "%d", n);
    vsprintf(d, s, ap);
    n = atoi(s) + atol(s);
    d = alloca(n);
    strtok(d, ",");
    gets(d);
    d = malloc(n);
    d = calloc(1, n);
    d = realloc(d, n);
    free(d);
    d = strdup(s);
    pthread_create(&t, NULL, fn, d);
    n = write(1, d, n) + pwrite(1, d, n, 0);
    n = writev(1, iov, 2) + pwritev(1, iov, 2, 0);
}
C
cat >"$tmp/src/x/good.c" <<'C'
// free(x) in a line comment, "malloc(3)" and "strcpy(" in strings
static void g(char *d, const char *s, ckpt_allocator *a, size_t n)
{
    snprintf(d, n, "%s", s);
    vsnprintf(d, n, s, ap);
    d = ckpt__malloc(n);
    d = ckpt__calloc(1, n);
    d = ckpt__realloc(d, n);
    ckpt__free(d);
    d = ckpt__strdup(s);
    d = a->malloc(n, a->payload);
    a->free(d, a->payload);
    d = cur.realloc(d, n, cur.payload);
    strtok_r(d, ",", &save);
    n = strtol(s, NULL, 10) + atoll_like(s) + my_free(d);
    char c = '(';
    puts("sprintf(buf, x)");
    free(real); /* check-banned: allow (realpath's memory) */
    n = ckpt__thread_create(&t, fn, d) + ckpt__write_no_signal(1, d, n, 0, 0);
    n = f->write(f, d, n, f->payload) + fs.write(f, d, n, fs.payload);
    int (*write)(void *, const void *, size_t) = NULL;
}
C
cat >"$tmp/src/common/thread.c" <<'C'
int ckpt__thread_create(pthread_t *id, void *(*fn)(void *), void *arg)
{ return pthread_create(id, NULL, fn, arg); }
C
cat >"$tmp/src/common/quiet_write.c" <<'C'
ssize_t ckpt__write_no_signal(int fd, const void *p, size_t n, int s, int e)
{ return write(fd, p, n); }
C
cat >"$tmp/src/common/alloc.c" <<'C'
void *ckpt__malloc(size_t n) { return malloc(n); }
void ckpt__free(void *p) { free(p); }
C
cat >"$tmp/tools/t/main.c" <<'C'
int main(void) { char *p = malloc(4); free(p); sprintf(p, "x"); return 0; }
void w(int fd) { (void)write(fd, "x", 1); }
C
cat >"$tmp/include/ckpt/h.h" <<'C'
typedef struct a { void *(*malloc)(size_t n, void *payload); void (*free)(void *p); } a;
#define CKPT_X(b, s) strcat(b, s)
C

rc=0
"$script" "$tmp" >"$tmp/out" 2>"$tmp/err" || rc=$?
[ "$rc" = 1 ] || { echo "FAIL: exit $rc on a bad tree, want 1"; cat "$tmp/out" "$tmp/err"; exit 1; }
cut -d: -f1-3 "$tmp/out" | LC_ALL=C sort >"$tmp/got"
LC_ALL=C sort >"$tmp/want" <<'W'
include/ckpt/h.h:2: strcat
src/x/bad.c:4: strcpy
src/x/bad.c:5: strcat
src/x/bad.c:6: sprintf
src/x/bad.c:7: vsprintf
src/x/bad.c:8: atoi
src/x/bad.c:8: atol
src/x/bad.c:9: alloca
src/x/bad.c:10: strtok
src/x/bad.c:11: gets
src/x/bad.c:12: malloc
src/x/bad.c:13: calloc
src/x/bad.c:14: realloc
src/x/bad.c:15: free
src/x/bad.c:16: strdup
src/x/bad.c:17: pthread_create
src/x/bad.c:18: write
src/x/bad.c:18: pwrite
src/x/bad.c:19: writev
src/x/bad.c:19: pwritev
tools/t/main.c:1: sprintf
W
if ! diff -u "$tmp/want" "$tmp/got"; then
    echo "FAIL: check-banned.sh reported the wrong hits (diff: want, got)"
    exit 1
fi
grep -q "21 banned call" "$tmp/err" || { echo "FAIL: no summary"; cat "$tmp/err"; exit 1; }

rm "$tmp/src/x/bad.c" "$tmp/tools/t/main.c" "$tmp/include/ckpt/h.h"
"$script" "$tmp" >"$tmp/out" 2>&1 || { echo "FAIL: clean tree rejected"; cat "$tmp/out"; exit 1; }
echo "PASS"
