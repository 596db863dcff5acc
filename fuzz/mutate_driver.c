/* fuzz/mutate_driver.c - exhaustive small mutations of seed inputs, run
 * through the fuzz targets without libFuzzer (any compiler):
 *
 *   ckpt_fuzz_mutate [--stride N] bundle SEED...
 *       for each seed in the bundle target's layout (flags[1] |
 *       index_len[4, LE] | index | data), or checkpoint (a SEED ending in
 *       ".index": that index and its first data file, as the bundle
 *       target serves it for every shard): every byte of the index set to
 *       0x00, 0xff, +1, -1 and each of its eight bits flipped, the index
 *       cut at every length, both with the index's block checksums kept
 *       and repaired; and the data at the bytes around every record's
 *       start and end (and the first 4 KiB), set to 0x00, 0xff and +1
 *   ckpt_fuzz_mutate [--stride N] state SEED...
 *       for each `checkpoint` text: every byte changed as above, the text
 *       cut at every length, each line doubled, dropped and given a CRLF
 *       end, and the paths replaced by long, "..", absolute and NUL-holding
 *       ones
 *
 * A SEED that is a directory stands for its files, in name order (data
 * files, `checkpoint` in bundle mode, and names starting with '.' or
 * "README" skipped).
 * --stride N visits every Nth offset and length only; --verbose prints
 * each mutation before it runs (a line each: run it again so when one
 * fails, to name it).
 * A mutation that breaks an invariant aborts inside the target, as under
 * libFuzzer. Exit status 0: every mutation passed. */
#include "fuzz.h"

#include "ckpt/bundle.h"

#include <dirent.h>
#include <errno.h>
#include <glob.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define BUNDLE_HEADER 5
#define KEEP_CRCS 2
/* Bytes mutated either side of a record's start and end in the data. */
#define RECORD_EDGE 8
/* Leading data bytes mutated one by one. */
#define DATA_HEAD 4096
#define LONG_PATH 5000

typedef struct sweep {
    const char *seed;
    size_t stride;
    int verbose;
    size_t runs;
    ckpt_fuzz_target_fn fn;
    uint8_t *work; /* scratch input */
    size_t work_cap;
} sweep;

static void *xmalloc(size_t n)
{
    void *p = malloc(n ? n : 1);
    if (!p) {
        fprintf(stderr, "ckpt_fuzz_mutate: out of memory\n");
        exit(1);
    }
    return p;
}

static int read_whole(const char *path, uint8_t **out, size_t *len)
{
    FILE *f = fopen(path, "rb");
    long n;
    if (!f) {
        fprintf(stderr, "%s: %s\n", path, strerror(errno));
        return -1;
    }
    if (fseek(f, 0, SEEK_END) != 0 || (n = ftell(f)) < 0 ||
        fseek(f, 0, SEEK_SET) != 0) {
        fprintf(stderr, "%s: cannot size\n", path);
        fclose(f);
        return -1;
    }
    *out = xmalloc((size_t)n);
    *len = fread(*out, 1, (size_t)n, f);
    fclose(f);
    if (*len != (size_t)n) {
        fprintf(stderr, "%s: short read\n", path);
        free(*out);
        return -1;
    }
    return 0;
}

/* Run the target over work[0..n), saying what it is first (a crash then
 * names it on stderr). */
static void run(sweep *s, size_t n, const char *what, size_t at, int value)
{
    if (s->verbose) {
        fprintf(stderr, "%s: %s at %zu value %d\n", s->seed, what, at, value);
        fflush(stderr);
    }
    s->fn(s->work, n);
    s->runs++;
}

static void reserve(sweep *s, size_t n)
{
    if (n > s->work_cap) {
        free(s->work);
        s->work = xmalloc(n);
        s->work_cap = n;
    }
}

/* The values a byte `b` is changed to; returns their count. */
static int byte_values(uint8_t b, int out[12])
{
    int n = 0;
    int cand[12] = {0x00, 0xff, (b + 1) & 0xff, (b - 1) & 0xff};
    for (int k = 0; k < 8; k++)
        cand[4 + k] = b ^ (1 << k);
    for (int i = 0; i < 12; i++) {
        int dup = cand[i] == b;
        for (int j = 0; j < n && !dup; j++)
            dup = out[j] == cand[i];
        if (!dup)
            out[n++] = cand[i];
    }
    return n;
}

/* Every value of byte `at` of `base` (n bytes; `base` stays as it was). */
static void mutate_byte(sweep *s, const uint8_t *base, size_t n, size_t at,
                        const char *what, int few)
{
    int values[12];
    int count = byte_values(base[at], values);
    if (few && count > 3)
        count = 3;
    reserve(s, n);
    memcpy(s->work, base, n);
    for (int i = 0; i < count; i++) {
        s->work[at] = (uint8_t)values[i];
        run(s, n, what, at, values[i]);
    }
}

/* ---- bundle ------------------------------------------------------------- */

static void put_len(uint8_t *p, size_t v)
{
    p[0] = (uint8_t)v;
    p[1] = (uint8_t)(v >> 8);
    p[2] = (uint8_t)(v >> 16);
    p[3] = (uint8_t)(v >> 24);
}

static size_t get_len(const uint8_t *p)
{
    return (size_t)p[0] | (size_t)p[1] << 8 | (size_t)p[2] << 16 |
           (size_t)p[3] << 24;
}

/* The records' start and end offsets of the unmutated bundle (in one data
 * part: the target serves it for every shard); *n of them. */
static uint64_t *record_edges(const uint8_t *in, size_t size, size_t *n)
{
    ckpt_bundle_reader_options opts = CKPT_BUNDLE_READER_OPTIONS_INIT;
    ckpt_bundle_reader *r = NULL;
    ckpt_fuzz_mem_fs mem;
    size_t index_len = get_len(in + 1), count;
    uint64_t *edges;
    *n = 0;
    ckpt_fuzz_mem_fs_init(&mem);
    ckpt_fuzz_mem_fs_add(&mem, "/m/b.index", in + BUNDLE_HEADER, index_len, 0);
    ckpt_fuzz_mem_fs_add(&mem, "/m/b.data-", in + BUNDLE_HEADER + index_len,
                         size - BUNDLE_HEADER - index_len, 1);
    opts.fs = &mem.fs;
    if (ckpt_bundle_reader_open(&r, "/m/b", &opts) != 0)
        return NULL;
    count = ckpt_bundle_reader_count(r);
    edges = xmalloc(2 * count * sizeof(*edges));
    for (size_t i = 0; i < count; i++) {
        const ckpt_tensor_entry *e = ckpt_bundle_reader_entry(r, i);
        if (e->num_slices > 0)
            continue;
        edges[(*n)++] = (uint64_t)e->offset;
        edges[(*n)++] = (uint64_t)e->offset + (uint64_t)e->size;
    }
    ckpt_bundle_reader_free(r);
    return edges;
}

static int near_edge(const uint64_t *edges, size_t n, size_t at)
{
    for (size_t i = 0; i < n; i++)
        if (at + RECORD_EDGE >= edges[i] && at < edges[i] + RECORD_EDGE)
            return 1;
    return 0;
}

static void sweep_bundle(sweep *s, uint8_t *in, size_t size)
{
    size_t index_len, data_len, edge_count = 0;
    uint64_t *edges;
    if (size < BUNDLE_HEADER || get_len(in + 1) > size - BUNDLE_HEADER) {
        fprintf(stderr, "%s: not in the bundle target's layout\n", s->seed);
        exit(1);
    }
    index_len = get_len(in + 1);
    data_len = size - BUNDLE_HEADER - index_len;
    edges = record_edges(in, size, &edge_count);
    for (int keep = 0; keep < 2; keep++) {
        in[0] = (uint8_t)((in[0] & ~KEEP_CRCS) | (keep ? KEEP_CRCS : 0));
        for (size_t at = 0; at < index_len; at += s->stride)
            mutate_byte(s, in, size, BUNDLE_HEADER + at, "index byte", 0);
        /* the index cut to `len` bytes, the data after it as before */
        for (size_t len = 0; len < index_len; len += s->stride) {
            reserve(s, size);
            memcpy(s->work, in, BUNDLE_HEADER + len);
            put_len(s->work + 1, len);
            memcpy(s->work + BUNDLE_HEADER + len,
                   in + BUNDLE_HEADER + index_len, data_len);
            run(s, BUNDLE_HEADER + len + data_len, "index cut", len, keep);
        }
    }
    in[0] &= (uint8_t)~KEEP_CRCS;
    for (size_t at = 0; at < data_len; at++)
        if ((at < DATA_HEAD && at % s->stride == 0) ||
            near_edge(edges, edge_count, at))
            mutate_byte(s, in, size, BUNDLE_HEADER + index_len + at,
                        "data byte", 1);
    /* the data cut at each record's edges */
    for (size_t i = 0; i < edge_count; i++)
        if (edges[i] < data_len)
            run(s, BUNDLE_HEADER + index_len + (size_t)edges[i], "data cut",
                (size_t)edges[i], 0);
    free(edges);
}

/* ---- state -------------------------------------------------------------- */

/* Run the target over `text` with its line [from, to) replaced by `line`
 * (len bytes) `copies` times. */
static void run_line_edit(sweep *s, const uint8_t *text, size_t n, size_t from,
                          size_t to, const char *line, size_t len, int copies,
                          const char *what)
{
    size_t out = 0;
    reserve(s, n + (size_t)copies * len);
    memcpy(s->work, text, from);
    out = from;
    for (int c = 0; c < copies; c++) {
        memcpy(s->work + out, line, len);
        out += len;
    }
    memcpy(s->work + out, text + to, n - to);
    out += n - to;
    run(s, out, what, from, copies);
}

/* Each line of the text: doubled, dropped, CRLF-ended, and its quoted
 * value replaced by odd paths. */
static void sweep_lines(sweep *s, const uint8_t *text, size_t n)
{
    static const char *const odd[] = {
        "..",     "../x", "/abs/ckpt-1",  "a/../../b", "./ckpt-1", "ckpt-1/",
        "//x//y", "",     "ckpt-1\\000x", "ckpt-1\\n", "\\\"",     "ckpt-1\\r",
    };
    char *big = xmalloc(LONG_PATH + 64);
    size_t from = 0;
    while (from < n) {
        const uint8_t *nl = memchr(text + from, '\n', n - from);
        size_t to = nl ? (size_t)(nl - text) + 1 : n;
        size_t len = to - from;
        char *crlf = xmalloc(len + 2);
        const uint8_t *q = memchr(text + from, '"', len);
        memcpy(crlf, text + from, len);
        if (nl) {
            crlf[len - 1] = '\r';
            crlf[len] = '\n';
        }
        run_line_edit(s, text, n, from, to, (const char *)text + from, len, 2,
                      "line doubled");
        run_line_edit(s, text, n, from, to, "", 0, 1, "line dropped");
        run_line_edit(s, text, n, from, to, crlf, nl ? len + 1 : len, 1,
                      "line CRLF");
        if (q) {
            size_t key = (size_t)(q - text) - from;
            for (size_t i = 0; i < sizeof(odd) / sizeof(odd[0]) + 2; i++) {
                int m;
                if (i < sizeof(odd) / sizeof(odd[0]))
                    m = snprintf(big, LONG_PATH + 64, "%.*s\"%s\"\n", (int)key,
                                 (const char *)text + from, odd[i]);
                else {
                    /* a path of LONG_PATH bytes, a component or many */
                    size_t k =
                        (size_t)snprintf(big, LONG_PATH + 64, "%.*s\"",
                                         (int)key, (const char *)text + from);
                    for (size_t j = 0; j < LONG_PATH; j++)
                        big[k + j] = (i % 2 && j % 8 == 7) ? '/' : 'a';
                    k += LONG_PATH;
                    big[k++] = '"';
                    big[k++] = '\n';
                    m = (int)k;
                }
                run_line_edit(s, text, n, from, to, big, (size_t)m, 1,
                              "odd path");
            }
        }
        free(crlf);
        from = to;
    }
    free(big);
}

static void sweep_state(sweep *s, const uint8_t *text, size_t n)
{
    for (size_t at = 0; at < n; at += s->stride)
        mutate_byte(s, text, n, at, "state byte", 0);
    for (size_t len = 0; len < n; len += s->stride) {
        reserve(s, n);
        memcpy(s->work, text, len);
        run(s, len, "state cut", len, 0);
    }
    sweep_lines(s, text, n);
}

static int ends_with(const char *s, const char *suffix)
{
    size_t n = strlen(s), m = strlen(suffix);
    return n >= m && strcmp(s + n - m, suffix) == 0;
}

/* The checkpoint whose index is `index_path` in the bundle target's
 * layout: its index, then its first data file (none: no data). */
static int read_checkpoint(const char *index_path, uint8_t **out, size_t *len)
{
    uint8_t *index = NULL, *data = NULL;
    size_t index_len = 0, data_len = 0;
    char pattern[4096];
    glob_t g;
    snprintf(pattern, sizeof(pattern), "%.*s.data-00000-of-*",
             (int)(strlen(index_path) - strlen(".index")), index_path);
    if (read_whole(index_path, &index, &index_len) < 0)
        return -1;
    if (glob(pattern, 0, NULL, &g) == 0) {
        if (read_whole(g.gl_pathv[0], &data, &data_len) < 0) {
            globfree(&g);
            free(index);
            return -1;
        }
        globfree(&g);
    }
    *len = BUNDLE_HEADER + index_len + data_len;
    *out = xmalloc(*len);
    (*out)[0] = 0;
    put_len(*out + 1, index_len);
    memcpy(*out + BUNDLE_HEADER, index, index_len);
    if (data_len)
        memcpy(*out + BUNDLE_HEADER + index_len, data, data_len);
    free(index);
    free(data);
    return 0;
}

static int sweep_file(sweep *s, const char *path, int state)
{
    uint8_t *in = NULL;
    size_t size = 0;
    int rc = !state && ends_with(path, ".index")
                 ? read_checkpoint(path, &in, &size)
                 : read_whole(path, &in, &size);
    if (rc < 0)
        return -1;
    s->seed = path;
    fprintf(stderr, "%s\n", path);
    if (state)
        sweep_state(s, in, size);
    else
        sweep_bundle(s, in, size);
    free(in);
    return 0;
}

static int skipped(const char *name, int state)
{
    return name[0] == '.' || strncmp(name, "README", 6) == 0 ||
           (!state && (strstr(name, ".data-") != NULL ||
                       strcmp(name, "checkpoint") == 0));
}

/* `path`, or each file of it when it is a directory. */
static int sweep_path(sweep *s, const char *path, int state)
{
    struct stat st;
    struct dirent **names = NULL;
    int n, rc = 0;
    if (stat(path, &st) != 0 || !S_ISDIR(st.st_mode))
        return sweep_file(s, path, state);
    n = scandir(path, &names, NULL, alphasort);
    if (n < 0) {
        fprintf(stderr, "%s: %s\n", path, strerror(errno));
        return -1;
    }
    for (int i = 0; i < n; i++) {
        char child[4096];
        snprintf(child, sizeof(child), "%s/%s", path, names[i]->d_name);
        if (rc == 0 && !skipped(names[i]->d_name, state) &&
            stat(child, &st) == 0 && S_ISREG(st.st_mode))
            rc = sweep_file(s, child, state);
        free(names[i]);
    }
    free(names);
    return rc;
}

int main(int argc, char **argv)
{
    sweep s;
    int i = 1, state;
    memset(&s, 0, sizeof(s));
    s.stride = 1;
    for (; i + 1 < argc && argv[i][0] == '-'; i++) {
        if (strcmp(argv[i], "--verbose") == 0)
            s.verbose = 1;
        else if (strcmp(argv[i], "--stride") == 0 && i + 2 < argc)
            s.stride = (size_t)strtoul(argv[++i], NULL, 10);
        else
            break;
    }
    if (s.stride == 0)
        s.stride = 1;
    if (i + 1 >= argc ||
        (strcmp(argv[i], "bundle") != 0 && strcmp(argv[i], "state") != 0)) {
        fprintf(stderr,
                "usage: ckpt_fuzz_mutate [--stride N] [--verbose] bundle|state "
                "SEED...\n");
        return 2;
    }
    state = strcmp(argv[i], "state") == 0;
    s.fn = state ? ckpt_fuzz_state : ckpt_fuzz_bundle;
    for (i++; i < argc; i++)
        if (sweep_path(&s, argv[i], state) < 0)
            return 1;
    if (s.runs == 0) {
        fprintf(stderr, "ckpt_fuzz_mutate: no input found\n");
        return 1;
    }
    fprintf(stderr, "ckpt_fuzz_mutate: %zu mutations, all passed\n", s.runs);
    free(s.work);
    return 0;
}
