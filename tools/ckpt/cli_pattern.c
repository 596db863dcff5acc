/* tools/ckpt/cli_pattern.c - what a --include/--exclude regex may cost
 * before regcomp(3) sees it. glibc's regcomp expands bounded repetitions
 * ({m,n}) in full, about 200 bytes a position, so a{32767}{32767} (a
 * billion positions) asks for hundreds of GiB; and its regexec backtracks
 * for back-references (\1..\9, an extension POSIX EREs lack), in time
 * exponential in a name's length: (.*)(.*)(.*)(.*)(.*)\5\4\3\2\1z did not
 * end on a 68-byte name. Both are refused with a message saying why;
 * without them matching is polynomial. */
#include "cli.h"

#include <stdint.h>
#include <stdio.h>
#include <string.h>

/* Positions a pattern may expand to (about 13 MiB of regcomp's memory);
 * a{255}{255}, POSIX's largest bound nested once, fits. */
#define MAX_POSITIONS ((uint64_t)1 << 16)

/* Groups nested deeper than this are refused too (the scan keeps one
 * frame per open parenthesis). */
#define MAX_DEPTH 256

typedef struct frame {
    uint64_t total; /* positions of the group so far */
    uint64_t last;  /* positions of its last atom, which a bound repeats */
} frame;

/* a * b, saturating just past the limit. */
static uint64_t mul_cap(uint64_t a, uint64_t b)
{
    if (a != 0 && b > (MAX_POSITIONS + 1) / a)
        return MAX_POSITIONS + 1;
    return a * b;
}

static uint64_t add_cap(uint64_t a, uint64_t b)
{
    return a + b > MAX_POSITIONS ? MAX_POSITIONS + 1 : a + b;
}

/* The end of the bracket expression starting at p ('['). */
static const char *skip_bracket(const char *p)
{
    p++;
    if (*p == '^')
        p++;
    if (*p == ']')
        p++;
    while (*p && *p != ']') {
        if (p[0] == '[' && (p[1] == ':' || p[1] == '.' || p[1] == '=')) {
            char close = p[1];
            const char *end = p + 2;
            while (*end && !(end[0] == close && end[1] == ']'))
                end++;
            p = *end ? end + 2 : end;
        } else {
            p++;
        }
    }
    return *p ? p + 1 : p;
}

/* A bound {m}, {m,} or {m,n} at p: its largest count (m + 1 for {m,}: its
 * expansion is m copies and a star) into *count and its end, or NULL when
 * p does not start one. */
static const char *parse_bound(const char *p, uint64_t *count)
{
    uint64_t m = 0, n;
    int digits = 0;
    for (p++; *p >= '0' && *p <= '9'; p++, digits++)
        m = m > MAX_POSITIONS ? m : m * 10 + (uint64_t)(*p - '0');
    if (!digits)
        return NULL;
    n = m;
    if (*p == ',') {
        digits = 0;
        n = 0;
        for (p++; *p >= '0' && *p <= '9'; p++, digits++)
            n = n > MAX_POSITIONS ? n : n * 10 + (uint64_t)(*p - '0');
        if (!digits)
            n = m + 1;
    }
    if (*p != '}')
        return NULL;
    *count = n > m ? n : m;
    return p + 1;
}

int cli_pattern_check(const char *expr, char *why, size_t n)
{
    frame stack[MAX_DEPTH + 1];
    int depth = 0;
    const char *p = expr;
    memset(stack, 0, sizeof(stack));
    while (*p) {
        frame *f = &stack[depth];
        uint64_t atom = 1, count;
        const char *end;
        if (*p == '\\' && p[1] >= '1' && p[1] <= '9') {
            snprintf(why, n,
                     "back-reference \\%c: not supported (matching one "
                     "can take time exponential in a name's length)",
                     p[1]);
            return -1;
        }
        if (*p == '(') {
            if (depth == MAX_DEPTH) {
                snprintf(why, n, "groups nested more than %d deep", MAX_DEPTH);
                return -1;
            }
            stack[++depth] = (frame){0, 0};
            p++;
            continue;
        }
        if (*p == '{' && f->last > 0) {
            end = parse_bound(p, &count);
            if (end) {
                f->total =
                    add_cap(f->total, mul_cap(f->last, count ? count - 1 : 0));
                f->last = mul_cap(f->last, count);
                p = end;
                if (f->total > MAX_POSITIONS)
                    break;
                continue;
            }
        }
        if (*p == ')' && depth > 0) {
            atom = stack[depth--].total;
            f = &stack[depth];
            p++;
        } else if (*p == '[') {
            p = skip_bracket(p);
        } else if (*p == '\\') {
            p += p[1] ? 2 : 1;
        } else if (strchr("*+?|^$", *p)) {
            p++;
            f->last = 0; /* nothing for a bound to repeat */
            continue;
        } else {
            p++;
        }
        f->last = atom;
        f->total = add_cap(f->total, atom);
        if (f->total > MAX_POSITIONS)
            break;
    }
    for (int d = depth; d > 0; d--) /* an unclosed group: regcomp says so */
        stack[d - 1].total = add_cap(stack[d - 1].total, stack[d].total);
    if (stack[0].total > MAX_POSITIONS) {
        snprintf(why, n,
                 "its bounded repetitions ({m,n}) expand to more than "
                 "%llu positions",
                 (unsigned long long)MAX_POSITIONS);
        return -1;
    }
    return 0;
}
