/* tools/ckpt/cli_pattern.c - what a --include/--exclude regex may cost
 * before regcomp(3) sees it. glibc's regcomp expands bounded repetitions
 * ({m,n}) in full, about 200 bytes a position, so a{32767}{32767} (a
 * billion positions) asks for hundreds of GiB. It also keeps, for every
 * position, the positions it reaches without reading a character (its
 * epsilon closure): n - m optional copies ({m,n}: nested "maybe"s) reach
 * up to n - m of each other, and copies of something that can match
 * nothing ((a?){n}, (){n}) reach every later copy, so those cost the
 * square of the copies: x{0,16000} took 2 GiB, (a?){255}{255} more than
 * 4 GiB. Its regexec walks those links again for each character of a name
 * that keeps many positions alive: b.{0,100}{255}x{5} compiled in 0.5 s
 * but took 207 s on a name of 200 b's. And its regexec backtracks for
 * back-references (\1..\9, an extension POSIX EREs lack), in time exponential
 * in a name's length:
 * (.*)(.*)(.*)(.*)(.*)\5\4\3\2\1z did not end on a 68-byte name. All three
 * are refused with a message saying why; without them matching is
 * polynomial and bounded. The estimate of the links follows regcomp's
 * expansion (within 2x of what it allocated, 16 to 32 bytes a link). */
#include "cli.h"

#include <stdint.h>
#include <stdio.h>
#include <string.h>

/* Positions a pattern may expand to (about 13 MiB of regcomp's memory);
 * a{255}{255}, POSIX's largest bound nested once, fits. */
#define MAX_POSITIONS ((uint64_t)1 << 16)

/* Closure links a pattern may make: a few MiB, and at most about a second
 * of matching for a 200-byte name (b.{0,20}{100}x, 0.12 million links,
 * fits; x{0,500}, a{255}{255} too). */
#define MAX_CLOSURE ((uint64_t)1 << 17)

/* Groups nested deeper than this are refused too (the scan keeps one
 * frame per open parenthesis). */
#define MAX_DEPTH 256

/* Every count saturates here, far past both limits. */
#define CAP ((uint64_t)1 << 50)

/* An atom or a group as regcomp expands it. */
typedef struct piece {
    uint64_t positions;
    uint64_t atoms;   /* its positions that read a character */
    uint64_t closure; /* closure entries of its positions, estimated */
    uint64_t chain;   /* when nullable: the skips its entry reaches */
    int nullable;     /* it can match the empty string */
} piece;

/* An open group: its finished branches, the branch being read and the
 * atom read last (a repetition may still apply to it). */
typedef struct frame {
    piece branches; /* positions and closure summed, nullable if any is */
    uint64_t count; /* branches finished */
    piece branch;   /* the current branch's atoms, last one excepted */
    uint64_t run;   /* chain of the branch's trailing nullable atoms */
    piece last;
    int has_last;
} frame;

static uint64_t add_cap(uint64_t a, uint64_t b)
{
    return a + b > CAP ? CAP : a + b;
}

static uint64_t mul_cap(uint64_t a, uint64_t b)
{
    if (a != 0 && b > CAP / a)
        return CAP;
    return a * b;
}

static void frame_start(frame *f)
{
    memset(f, 0, sizeof(*f));
    f->branch.nullable = 1; /* an empty branch matches the empty string */
}

/* Append the last atom to the branch: a nullable one lets every earlier
 * position of the trailing nullable run reach through it. */
static void commit_last(frame *f)
{
    piece *b = &f->branch, *p = &f->last;
    if (!f->has_last)
        return;
    b->positions = add_cap(b->positions, p->positions);
    b->atoms = add_cap(b->atoms, p->atoms);
    b->closure = add_cap(b->closure, p->closure);
    if (p->nullable) {
        b->closure = add_cap(b->closure, mul_cap(f->run, p->chain));
        f->run = add_cap(f->run, p->chain);
    } else {
        f->run = 0;
        b->nullable = 0;
    }
    f->has_last = 0;
}

static void set_last(frame *f, piece p)
{
    commit_last(f);
    f->last = p;
    f->has_last = 1;
}

/* '|' or the group's end: the branch joins the finished ones. */
static void end_branch(frame *f)
{
    commit_last(f);
    f->branches.positions = add_cap(f->branches.positions, f->branch.positions);
    f->branches.atoms = add_cap(f->branches.atoms, f->branch.atoms);
    f->branches.closure = add_cap(f->branches.closure, f->branch.closure);
    if (f->branch.nullable) {
        f->branches.nullable = 1;
        if (f->run > f->branches.chain)
            f->branches.chain = f->run;
    }
    f->count++;
    f->branch = (piece){0, 0, 0, 0, 1};
    f->run = 0;
}

/* The group `f` closes into, as one piece: its open and close positions,
 * and its entry reaching each branch. */
static piece group_piece(frame *f)
{
    piece g;
    end_branch(f);
    g.positions = add_cap(f->branches.positions, 2);
    g.atoms = f->branches.atoms;
    g.closure = add_cap(f->branches.closure, add_cap(f->count, 2));
    g.nullable = f->branches.nullable;
    g.chain = g.nullable ? (f->branches.chain ? f->branches.chain : 1) : 0;
    return g;
}

/* A loop ('*', '+', {m,}) back over `p`: when p can match nothing, its
 * positions reach each other round the loop, and regcomp works their
 * closures out again for each (((){0,30}{2})+ took 13 s to compile). */
static uint64_t loop_cost(piece p)
{
    return p.nullable ? mul_cap(p.closure, p.positions) : p.positions;
}

/* `p` repeated {m,n} (`open`: {m,}, expanded as m copies and a star):
 * its copies, the nested optional ones reaching each other, and copies of
 * a nullable piece each reaching every later one: from each of its atoms
 * (or its entry, when it has none), through each later copy's chain. */
static piece repeat(piece p, uint64_t m, uint64_t n, int open)
{
    /* regcomp builds the repeated piece once even for {0} */
    uint64_t copies = open ? m + 1 : n ? n : 1;
    uint64_t optional = open ? 1 : n - m;
    uint64_t from = p.atoms ? p.atoms : 1;
    piece r;
    r.positions = mul_cap(p.positions, copies);
    r.atoms = mul_cap(p.atoms, copies);
    r.closure = mul_cap(p.closure, copies);
    r.closure =
        add_cap(r.closure, mul_cap(from, mul_cap(optional, optional) / 2));
    if (p.nullable)
        r.closure = add_cap(r.closure, mul_cap(mul_cap(from, p.chain),
                                               mul_cap(copies, copies) / 2));
    if (open)
        r.closure = add_cap(r.closure, loop_cost(p));
    r.nullable = p.nullable || m == 0;
    r.chain = p.nullable ? mul_cap(p.chain, copies) : (uint64_t)r.nullable;
    return r;
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

/* `p` followed by '*', '+' or '?': one more position, and its loop. */
static piece quantify(piece p, char op)
{
    if (op != '?')
        p.closure = add_cap(p.closure, loop_cost(p));
    p.positions = add_cap(p.positions, 1);
    p.closure = add_cap(p.closure, 1);
    if (op != '+') {
        p.chain = p.nullable ? p.chain : 1;
        p.nullable = 1;
    }
    return p;
}

/* A bound {m}, {m,}, {m,n} or {,n} (glibc's {0,n}) at p: m, the largest
 * count and whether it is open into *m, *n, *open, and its end; NULL
 * when p does not start one. */
static const char *parse_bound(const char *p, uint64_t *m, uint64_t *n,
                               int *open)
{
    int digits = 0;
    *m = 0;
    *open = 0;
    for (p++; *p >= '0' && *p <= '9'; p++, digits++)
        *m = *m > CAP ? *m : *m * 10 + (uint64_t)(*p - '0');
    if (!digits && *p != ',')
        return NULL;
    *n = *m;
    if (*p == ',') {
        digits = 0;
        *n = 0;
        for (p++; *p >= '0' && *p <= '9'; p++, digits++)
            *n = *n > CAP ? *n : *n * 10 + (uint64_t)(*p - '0');
        *open = !digits;
    }
    if (*p != '}')
        return NULL;
    if (*open || *n < *m)
        *n = *m;
    return p + 1;
}

int cli_pattern_check(const char *expr, char *why, size_t n)
{
    frame stack[MAX_DEPTH + 1];
    int depth = 0, bounded = 0;
    const char *p = expr;
    piece all;
    frame_start(&stack[0]);
    while (*p) {
        frame *f = &stack[depth];
        static const piece one = {1, 1, 1, 0, 0};
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
            frame_start(&stack[++depth]);
            p++;
        } else if (*p == ')' && depth > 0) {
            piece g = group_piece(f);
            set_last(&stack[--depth], g);
            p++;
        } else if (*p == '{' && f->has_last) {
            uint64_t lo, hi;
            int open;
            const char *end = parse_bound(p, &lo, &hi, &open);
            if (end) {
                f->last = repeat(f->last, lo, hi, open);
                bounded = 1;
                p = end;
            } else {
                set_last(f, one); /* a literal '{' */
                p++;
            }
        } else if (*p == '[') {
            set_last(f, one);
            p = skip_bracket(p);
        } else if (*p == '\\') {
            set_last(f, one);
            p += p[1] ? 2 : 1;
        } else if (strchr("*+?", *p) && f->has_last) {
            f->last = quantify(f->last, *p);
            p++;
        } else if (*p == '|') {
            end_branch(f);
            p++;
        } else if (*p == '^' || *p == '$') {
            static const piece anchor = {1, 0, 1, 1, 1};
            set_last(f, anchor);
            commit_last(f); /* nothing repeats an anchor */
            p++;
        } else {
            set_last(f, one);
            p++;
        }
    }
    while (depth > 0) { /* an unclosed group: regcomp says so */
        piece g = group_piece(&stack[depth]);
        set_last(&stack[--depth], g);
    }
    all = group_piece(&stack[0]);
    if (all.positions > MAX_POSITIONS + 2) {
        if (bounded)
            snprintf(why, n,
                     "its bounded repetitions ({m,n}) expand to more than "
                     "%llu positions",
                     (unsigned long long)MAX_POSITIONS);
        else
            snprintf(why, n, "it is longer than %llu positions",
                     (unsigned long long)MAX_POSITIONS);
        return -1;
    }
    if (all.closure > MAX_CLOSURE) {
        snprintf(why, n,
                 "its repetitions make about %llu thousand links between "
                 "positions (more than %llu thousand), which regcomp keeps "
                 "and matching walks at each character of a name: optional "
                 "copies ({m,n} with n > m) and copies of what can match "
                 "nothing ((a?){n}) reach each other",
                 (unsigned long long)(all.closure / 1000),
                 (unsigned long long)(MAX_CLOSURE / 1000));
        return -1;
    }
    return 0;
}
