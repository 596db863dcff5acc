#!/usr/bin/env bash
# scripts/check-banned.sh - fail when library, tool or public-header code
# calls a banned function (STYLE.md, "Banned functions"):
#   everywhere in src/, tools/, include/:
#     strcpy strcat sprintf vsprintf gets strtok atoi atol atoll alloca
#     (snprintf, vsnprintf, strtok_r, strtol... are fine)
#   in src/ except src/common/alloc.c (the allocator itself):
#     malloc calloc realloc free strdup strndup, i.e. anything that bypasses
#     ckpt__malloc/ckpt__calloc/ckpt__realloc/ckpt__free/ckpt__strdup...
#   in src/ except src/common/thread.c:
#     pthread_create (every library thread starts through
#     ckpt__thread_create, with a stack of at least 1 MiB)
#   in src/ except src/common/quiet_write.c:
#     write pwrite writev pwritev (every write(2) goes through
#     ckpt__write_no_signal, so SIGXFSZ or SIGPIPE cannot end the process)
# A match is the name as a whole word followed by "(", outside comments,
# string and character literals; member calls such as a->free(p) or
# allocator.malloc(n) are not matches.
# A line that truly needs one (e.g. free() of memory the C library allocated,
# such as realpath(p, NULL)) says so in a comment on that line:
#     free(real); /* check-banned: allow (realpath allocates with malloc) */
# Usage: scripts/check-banned.sh [REPO_ROOT]   (default: this script's repo)
# Prints file:line: name: text for each hit and exits 1; exits 0 when clean.
set -euo pipefail
root=${1:-"$(cd "$(dirname "$0")/.." && pwd)"}
cd "$root"

files=()
for d in src tools include; do
    [ -d "$d" ] || continue
    while IFS= read -r -d '' f; do
        files+=("$f")
    done < <(find "$d" -type f \( -name '*.c' -o -name '*.h' \) -print0 | sort -z)
done
[ ${#files[@]} -gt 0 ] || { echo "check-banned: no sources under $root" >&2; exit 2; }

perl -e '
use strict;
use warnings;
my @banned = qw(strcpy strcat sprintf vsprintf gets strtok atoi atol atoll
                alloca);
my @raw_alloc = qw(malloc calloc realloc free strdup strndup);
my $hits = 0;
for my $file (@ARGV) {
    open(my $fh, "<", $file) or die "check-banned: $file: $!\n";
    local $/;
    my $text = <$fh>;
    close($fh);
    my @original = split /\n/, $text, -1;
    # Blank out comments and literals, keeping newlines so that line numbers
    # stay right.
    $text =~ s{
        (/\*.*?\*/) | (//[^\n]*) | ("(?:\\.|[^"\\\n])*") | (\x27(?:\\.|[^\x27\\\n])*\x27)
    }{
        my $m = $&;
        $m =~ s/[^\n]/ /g;
        $m
    }gsex;
    my @names = @banned;
    push @names, @raw_alloc
        if $file =~ m{^src/} && $file ne "src/common/alloc.c";
    push @names, "pthread_create"
        if $file =~ m{^src/} && $file ne "src/common/thread.c";
    push @names, qw(write pwrite writev pwritev)
        if $file =~ m{^src/} && $file ne "src/common/quiet_write.c";
    my $re = join "|", @names;
    my @lines = split /\n/, $text, -1;
    for my $i (0 .. $#lines) {
        next if $original[$i] =~ /check-banned:\s*allow\b/;
        while ($lines[$i] =~ /(?<![\w.])(?<!->)\b($re)\s*\(/g) {
            my $name = $1;
            my $src = $original[$i];
            $src =~ s/^\s+//;
            print "$file:", $i + 1, ": $name: $src\n";
            $hits++;
        }
    }
}
if ($hits) {
    print STDERR "check-banned: $hits banned call(s); see docs/CODE_REVIEW.md\n";
    exit 1;
}
' "${files[@]}"
