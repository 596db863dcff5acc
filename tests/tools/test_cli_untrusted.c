/* Tests for the `ckpt` tool on untrusted checkpoints and directories, built
 * byte by byte (index tables written by hand, names and state files with
 * control bytes, NUL bytes and bytes that are not UTF-8), each run held to
 * CPU, wall-clock and memory limits:
 *   - `ls` on state-file paths ending in '/', naming '/', '..' or other
 *     directories, empty paths (and every command on an empty
 *     model_checkpoint_path), and on 100,000 entries naming one
 *     subdirectory;
 *   - names never reaching the terminal raw, JSON always valid;
 *   - a tensor name holding a NUL byte, variant records "not checked",
 *     repack naming a partitioned tensor, long paths in messages, the same
 *     exit status for a damaged state file from every command;
 *   - `verify DIR` checking the checkpoint the state file names, and
 *     every command that resolves DIR warning when that lies outside DIR,
 *     also in a directory whose path is longer than PATH_MAX (where `ls`
 *     finds its checkpoints too), and state-file paths no file can have
 *     (too long, symbolic links that loop) missing, not unreadable, and a
 *     prefix that is itself a looping link named as one. */
#include "cli_bounded.h"
#include "cli_json.h"

#include "format/bundle_slices.h"
#include "format/bundle_test_helpers.h"
#include "util/crc32c.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#ifndef CKPT_CLI_PATH
#error "CKPT_CLI_PATH must name the built ckpt binary"
#endif

/* Generous: a run on these inputs takes well under a second. */
static const cli_limits limits = {20, 120, (uint64_t)1 << 30};

/* ---- building checkpoints byte by byte ----------------------------------- */

typedef struct tensor_spec {
    const char *name;
    size_t name_len;
    int dtype;
    int64_t dim0; /* rank 1 [dim0]; < 0: rank 0 */
    const void *record;
    size_t record_len;
    int bad_crc; /* store a checksum the record does not have */
    int pieces;  /* > 1: partitioned along dim0 into this many equal pieces,
                    each its own record under its slice key */
} tensor_spec;

/* One key and value of the index being built. */
typedef struct index_kv {
    ckpt_buf key, value;
} index_kv;

static int by_key(const void *a, const void *b)
{
    const ckpt_buf *x = &((const index_kv *)a)->key;
    const ckpt_buf *y = &((const index_kv *)b)->key;
    size_t n = x->size < y->size ? x->size : y->size;
    int c = n ? memcmp(x->ptr, y->ptr, n) : 0;
    if (c != 0)
        return c;
    return x->size < y->size ? -1 : x->size > y->size;
}

/* Append the record of `n` bytes to `data` and its entry (rank 1 [dim0],
 * or rank 0) under `key` to `kv`. */
static void put_record(index_kv *kv, ckpt_buf *data, const tensor_spec *t,
                       int64_t dim0, const void *record, size_t n)
{
    uint32_t crc = ckpt__crc32c_mask(ckpt__crc32c((const uint8_t *)record, n));
    ckpt__bundle_entry e =
        bt_make_entry(t->dtype, dim0, 0, (int64_t)data->size, (int64_t)n,
                      crc ^ (t->bad_crc ? 1 : 0));
    bt_entry(&kv->value, &e);
    assert_ckpt_ok(ckpt__buf_put(data, record, n));
}

/* The full entry of partitioned tensor `t` and, for each piece, its slice
 * key and record. Returns how many keys it added at `kv`. */
static size_t put_pieces(index_kv *kv, ckpt_buf *data, const tensor_spec *t)
{
    ckpt__tensor_slice slices[8];
    const int64_t len = t->dim0 / t->pieces;
    const size_t piece_bytes = t->record_len / (size_t)t->pieces;
    ckpt__bundle_entry full = bt_make_entry(t->dtype, t->dim0, 0, 0, 0, 0);
    assert_true(t->pieces <= 8 && len * t->pieces == t->dim0);
    for (int k = 0; k < t->pieces; k++) {
        memset(&slices[k], 0, sizeof(slices[k]));
        slices[k].rank = 1;
        slices[k].start[0] = k * len;
        slices[k].length[0] = len;
        assert_ckpt_ok(ckpt__slice_key_encode(&kv[1 + k].key, t->name,
                                              t->name_len, &slices[k]));
        put_record(&kv[1 + k], data, t, len,
                   (const uint8_t *)t->record + (size_t)k * piece_bytes,
                   piece_bytes);
    }
    full.num_slices = t->pieces;
    full.slices = slices;
    assert_ckpt_ok(ckpt__buf_put(&kv[0].key, t->name, t->name_len));
    bt_entry(&kv[0].value, &full);
    return 1 + (size_t)t->pieces;
}

/* <prefix>.index (a hand-made table) and <prefix>.data-00000-of-00001. */
static void write_bundle(const char *prefix, tensor_spec *t, size_t n)
{
    ckpt_buf data = CKPT_BUF_INIT;
    size_t cap = 1, m = 1;
    index_kv *kv;
    bt_kv *kvs;
    char path[4400];
    for (size_t i = 0; i < n; i++)
        cap += t[i].pieces > 1 ? 1 + (size_t)t[i].pieces : 1;
    kv = calloc(cap, sizeof(*kv));
    kvs = calloc(cap, sizeof(*kvs));
    assert_non_null(kv);
    assert_non_null(kvs);
    bt_header(&kv[0].value, 1, CKPT__BUNDLE_LITTLE_ENDIAN); /* key "" */
    for (size_t i = 0; i < n; i++) {
        if (t[i].pieces > 1) {
            m += put_pieces(&kv[m], &data, &t[i]);
            continue;
        }
        assert_ckpt_ok(ckpt__buf_put(&kv[m].key, t[i].name, t[i].name_len));
        put_record(&kv[m++], &data, &t[i], t[i].dim0, t[i].record,
                   t[i].record_len);
    }
    qsort(kv, m, sizeof(*kv), by_key);
    for (size_t i = 0; i < m; i++)
        kvs[i] = (bt_kv){kv[i].key.ptr ? kv[i].key.ptr : "", kv[i].key.size,
                         kv[i].value.ptr, kv[i].value.size};
    snprintf(path, sizeof(path), "%s.index", prefix);
    /* an index key past every name (names may hold NUL bytes) */
    bt_write_raw_table(path, kvs, m, "\xff\xff\xff");
    snprintf(path, sizeof(path), "%s.data-00000-of-00001", prefix);
    test_write_file(path, data.ptr, data.size);
    for (size_t i = 0; i < m; i++) {
        ckpt_buf_dispose(&kv[i].key);
        ckpt_buf_dispose(&kv[i].value);
    }
    ckpt_buf_dispose(&data);
    free(kv);
    free(kvs);
}

static void write_text(const char *dir, const char *name, const char *text)
{
    char *p = test_path(dir, name);
    test_write_file(p, text, strlen(text));
    free(p);
}

/* A one-tensor checkpoint <dir>/<name> ("w", float32 [2]). */
static void write_simple(const char *dir, const char *name)
{
    static const float v[2] = {1.5f, -2.0f};
    tensor_spec t = {"w", 1, CKPT_DT_FLOAT, 2, v, sizeof(v), 0, 0};
    char *prefix = test_path(dir, name);
    write_bundle(prefix, &t, 1);
    free(prefix);
}

/* ---- output checks ------------------------------------------------------- */

/* No byte a terminal acts on (other than newline) and nothing that is not
 * UTF-8. */
static void expect_terminal_safe(const char *what, const char *text)
{
    for (const unsigned char *p = (const unsigned char *)text; *p; p++)
        if ((*p < 0x20 && *p != '\n') || *p == 0x7f)
            fail_msg("%s: raw control byte 0x%02x at %zu in:\n%s", what, *p,
                     (size_t)(p - (const unsigned char *)text), text);
    if (!cli_valid_utf8((const unsigned char *)text, strlen(text)))
        fail_msg("%s: not UTF-8:\n%s", what, text);
}

/* The JSON string `s` holds exactly the n bytes `want`. */
static void expect_json_bytes(json_object *s, const char *want, size_t n)
{
    assert_int_equal((size_t)json_object_get_string_len(s), n);
    assert_memory_equal(json_object_get_string(s), want, n);
}

/* ---- class 0 and 6: ls on hostile state-file paths ----------------------- */

/* State-file paths ending in '/' (an empty base name), naming '/', '..' or
 * a directory outside DIR: no crash, nothing outside DIR listed, each
 * path reported for what it is; an absolute path into DIR is DIR's. */
static void test_ls_paths_ending_in_slash_or_outside(void **state)
{
    char *dir = test_make_temp_dir();
    char *outside = test_make_temp_dir();
    char text[8192];
    json_object *root, *rows, *strays;
    cli_run r;
    (void)state;
    write_simple(dir, "model.ckpt-1");
    write_simple(outside, "far-3");
    {
        char *sub = test_path(dir, "sub");
        assert_int_equal(mkdir(sub, 0755), 0);
        free(sub);
    }
    snprintf(text, sizeof(text),
             "model_checkpoint_path: \"model.ckpt-1\"\n"
             "all_model_checkpoint_paths: \"/\"\n"
             "all_model_checkpoint_paths: \"sub/\"\n"
             "all_model_checkpoint_paths: \"../\"\n"
             "all_model_checkpoint_paths: \"/usr/\"\n"
             "all_model_checkpoint_paths: \"/usr/lib/x-2\"\n"
             "all_model_checkpoint_paths: \"%s/far-3\"\n"
             "all_model_checkpoint_paths: \"%s/model.ckpt-1\"\n"
             "all_model_checkpoint_paths: \"model.ckpt-1\"\n",
             outside, dir);
    write_text(dir, "checkpoint", text);
    RUN_EXPECT(r, &limits, 0, "ls", "--json", dir);
    root = parse_json(r.out);
    rows = jget(root, "checkpoints");
    /* the absolute path into DIR and the relative one name one checkpoint,
     * listed once, at the later place, marked latest once */
    assert_int_equal(json_object_array_length(rows), 7);
    for (size_t i = 0; i < 4; i++) { /* "/", "sub/", "../", "/usr/" */
        json_object *row = json_object_array_get_idx(rows, i);
        assert_string_equal(json_object_get_string(jget(row, "problem")),
                            "not a checkpoint prefix (ends in '/')");
        assert_int_equal(json_object_get_int64(jget(row, "bytes")), 0);
    }
    assert_string_equal(json_object_get_string(jget(
                            json_object_array_get_idx(rows, 4), "problem")),
                        "missing index");
    /* a checkpoint outside DIR: its index looked up, no directory listed */
    assert_string_equal(json_object_get_string(jget(
                            json_object_array_get_idx(rows, 5), "problem")),
                        "outside the directory; data files not checked");
    {
        json_object *row = json_object_array_get_idx(rows, 6);
        assert_true(json_object_get_boolean(jget(row, "complete")));
        assert_true(json_object_get_boolean(jget(row, "latest")));
        assert_true(json_object_get_int64(jget(row, "bytes")) > 8);
        assert_string_equal(json_object_get_string(jget(row, "prefix")),
                            "model.ckpt-1");
    }
    strays = jget(root, "stray");
    assert_int_equal(json_object_array_length(strays), 0);
    json_object_put(root);
    run_free(&r);
    RUN_EXPECT(r, &limits, 0, "ls", dir);
    expect_contains(r.out, "(not a checkpoint prefix (ends in '/'))");
    run_free(&r);
    test_remove_tree(outside);
    test_remove_tree(dir);
}

/* A state file listing one checkpoint twice (as a hand edit or another
 * tool may leave it): one row, at its later place, and one "latest" (both
 * rows were marked latest). */
static void test_ls_checkpoint_listed_twice(void **state)
{
    char *dir = test_make_temp_dir();
    json_object *root, *rows;
    cli_run r;
    const char *p;
    int marks = 0;
    (void)state;
    write_simple(dir, "m-1");
    write_simple(dir, "m-2");
    write_text(dir, "checkpoint",
               "model_checkpoint_path: \"m-1\"\n"
               "all_model_checkpoint_paths: \"m-1\"\n"
               "all_model_checkpoint_paths: \"m-2\"\n"
               "all_model_checkpoint_paths: \"m-1\"\n");
    RUN_EXPECT(r, &limits, 0, "ls", "--json", dir);
    root = parse_json(r.out);
    rows = jget(root, "checkpoints");
    assert_int_equal(json_object_array_length(rows), 2);
    assert_string_equal(json_object_get_string(
                            jget(json_object_array_get_idx(rows, 0), "prefix")),
                        "m-2");
    assert_false(json_object_get_boolean(
        jget(json_object_array_get_idx(rows, 0), "latest")));
    assert_string_equal(json_object_get_string(
                            jget(json_object_array_get_idx(rows, 1), "prefix")),
                        "m-1");
    assert_true(json_object_get_boolean(
        jget(json_object_array_get_idx(rows, 1), "latest")));
    json_object_put(root);
    run_free(&r);
    RUN_EXPECT(r, &limits, 0, "ls", dir);
    for (p = strstr(r.out, "latest"); p; p = strstr(p + 1, "latest"))
        marks++;
    assert_int_equal(marks, 1);
    run_free(&r);
    test_remove_tree(dir);
}

/* An empty state-file path: `ls` says it is empty (it used to say "ends in
 * '/'", the reason of "DIR/", listed next to it here); an empty
 * model_checkpoint_path is an invalid state file to every command, said so
 * with the state file named. */
static void test_empty_state_file_paths(void **state)
{
    char *dir = test_make_temp_dir();
    char *state_file = test_path(dir, "checkpoint");
    char text[8192];
    static const struct {
        const char *command;
        int status;
    } commands[] = {
        {"ls", 1}, {"inspect", 1}, {"verify", 1}, {"repack", 1}, {"diff", 2}};
    json_object *root, *rows;
    cli_run r;
    (void)state;
    write_simple(dir, "model.ckpt-1");
    snprintf(text, sizeof(text),
             "model_checkpoint_path: \"model.ckpt-1\"\n"
             "all_model_checkpoint_paths: \"\"\n"
             "all_model_checkpoint_paths: \"%s/\"\n"
             "all_model_checkpoint_paths: \"model.ckpt-1\"\n",
             dir);
    write_text(dir, "checkpoint", text);
    RUN_EXPECT(r, &limits, 0, "ls", "--json", dir);
    root = parse_json(r.out);
    rows = jget(root, "checkpoints");
    assert_int_equal(json_object_array_length(rows), 3);
    assert_string_equal(json_object_get_string(jget(
                            json_object_array_get_idx(rows, 0), "problem")),
                        "empty path (not a checkpoint prefix)");
    assert_string_equal(json_object_get_string(jget(
                            json_object_array_get_idx(rows, 1), "problem")),
                        "not a checkpoint prefix (ends in '/')");
    assert_true(json_object_get_boolean(
        jget(json_object_array_get_idx(rows, 2), "complete")));
    json_object_put(root);
    run_free(&r);
    RUN_EXPECT(r, &limits, 0, "ls", dir);
    expect_contains(r.out, "(empty path (not a checkpoint prefix))");
    run_free(&r);
    /* model_checkpoint_path "" (an older listed one intact) */
    write_text(dir, "checkpoint",
               "model_checkpoint_path: \"\"\n"
               "all_model_checkpoint_paths: \"model.ckpt-1\"\n");
    for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++) {
        char *out = test_path(dir, "out");
        const char *args[5] = {commands[i].command, dir, NULL, NULL, NULL};
        if (strcmp(commands[i].command, "repack") == 0)
            args[2] = out;
        else if (strcmp(commands[i].command, "diff") == 0)
            args[2] = dir;
        RUN_EXPECT_ARGV(r, &limits, commands[i].status, args);
        expect_contains(r.err, state_file);
        expect_contains(r.err, "model_checkpoint_path is empty");
        run_free(&r);
        free(out);
    }
    free(state_file);
    test_remove_tree(dir);
}

/* A state file as long as the reader takes (16 MiB: 330,000 entries):
 * `ls --json` writes its document a row at a time, in a few hundred MiB
 * (building the whole document as json-c objects took 1.5 GB). */
static void test_ls_json_long_state_file_memory(void **state)
{
    static const cli_limits tight = {30, 120, (uint64_t)512 << 20};
    /* the memory limit is the point: none is set under a sanitizer */
    const int entries = cli_under_memcheck()   ? 2000
                        : cli_tool_sanitized() ? 60000
                                               : 330000;
    char *dir = test_make_temp_dir();
    char *state_path = test_path(dir, "checkpoint");
    json_object *root;
    FILE *f;
    cli_run r;
    (void)state;
    f = fopen(state_path, "w");
    assert_non_null(f);
    fprintf(f, "model_checkpoint_path: \"model.ckpt-%d\"\n", entries - 1);
    for (int i = 0; i < entries; i++)
        fprintf(f, "all_model_checkpoint_paths: \"model.ckpt-%d\"\n", i);
    assert_int_equal(fclose(f), 0);
    RUN_EXPECT(r, &tight, 0, "ls", dir, "--json");
    root = parse_json(r.out);
    assert_int_equal(json_object_array_length(jget(root, "checkpoints")),
                     entries);
    json_object_put(root);
    run_free(&r);
    free(state_path);
    test_remove_tree(dir);
}

/* One checkpoint in a 3,000-file subdirectory, which the state file names
 * 2,000 ways ("big/m", "./big/m", "././big/m", ...) and through 100
 * symbolic links to it: the subdirectory was listed, a stat per file, once
 * per spelling (6 million stat calls here; hours for a 16 MiB state file).
 * Now the spellings are one row, and the directory is listed once for all
 * the paths that lead to it. */
static void test_ls_one_directory_many_spellings(void **state)
{
    static const cli_limits tight = {5, 60, (uint64_t)1 << 30};
    enum { FILLER = 3000, LINKS = 100 };
    const int spellings = cli_under_memcheck() ? 100 : 2000;
    char *dir = test_make_temp_dir();
    char *big = test_path(dir, "big");
    char *state_path = test_path(dir, "checkpoint");
    char name[64];
    json_object *root, *rows;
    FILE *f;
    cli_run r;
    size_t latest = 0;
    (void)state;
    assert_int_equal(mkdir(big, 0755), 0);
    for (int i = 0; i < FILLER; i++) {
        char *p;
        snprintf(name, sizeof(name), "filler%d", i);
        p = test_path(big, name);
        test_write_file(p, "", 0);
        free(p);
    }
    write_simple(big, "m");
    for (int i = 0; i < LINKS; i++) {
        char *p;
        snprintf(name, sizeof(name), "l%d", i);
        p = test_path(dir, name);
        assert_int_equal(symlink("big", p), 0);
        free(p);
    }
    f = fopen(state_path, "w");
    assert_non_null(f);
    fprintf(f, "model_checkpoint_path: \"big/m\"\n");
    for (int i = 0; i < spellings; i++) { /* each spelling its own */
        fputs("all_model_checkpoint_paths: \"", f);
        for (int k = 0; k < 11; k++)
            fputs(i >> k & 1 ? ".//" : "./", f);
        fputs("big/m\"\n", f);
    }
    for (int i = 0; i < LINKS; i++)
        fprintf(f, "all_model_checkpoint_paths: \"l%d/m\"\n", i);
    fprintf(f, "all_model_checkpoint_paths: \"big/./m\"\n");
    assert_int_equal(fclose(f), 0);
    RUN_EXPECT(r, &tight, 0, "ls", "--json", dir);
    root = parse_json(r.out);
    rows = jget(root, "checkpoints");
    assert_int_equal(json_object_array_length(rows), LINKS + 1);
    for (size_t i = 0; i < LINKS + 1; i++) {
        json_object *row = json_object_array_get_idx(rows, i);
        assert_true(json_object_get_boolean(jget(row, "complete")));
        latest += json_object_get_boolean(jget(row, "latest"));
    }
    /* the last place of big/m's spellings is its row: the latest, which
     * the list lacks as spelled, added after it */
    expect_json_bytes(jget(json_object_array_get_idx(rows, LINKS), "prefix"),
                      "big/m", 5);
    assert_true(json_object_get_boolean(
        jget(json_object_array_get_idx(rows, LINKS), "latest")));
    assert_int_equal(latest, 1);
    json_object_put(root);
    run_free(&r);
    free(state_path);
    free(big);
    test_remove_tree(dir);
}

/* A 13 MiB state file naming one checkpoint 400,000 times, in a directory
 * whose path is 3,000 bytes long: ls made a row and a joined path for
 * each before dropping the repeats (2.4 GB here; 13 GB in the hostile-
 * input helper's run). Now the repeats are dropped first: one row, in
 * well under 512 MiB. */
static void test_ls_repeated_entries_memory(void **state)
{
    static const cli_limits tight = {30, 120, (uint64_t)512 << 20};
    /* the memory limit is the point: none is set under a sanitizer */
    const int entries = cli_under_memcheck()   ? 2000
                        : cli_tool_sanitized() ? 20000
                                               : 400000;
    char *dir = test_make_temp_dir();
    char *deep = test_path(dir, ".");
    char *state_path;
    json_object *root;
    FILE *f;
    cli_run r;
    (void)state;
    for (int i = 0; i < 14; i++) {
        char comp[201];
        char *next;
        memset(comp, 'd', 200);
        comp[200] = '\0';
        next = test_path(deep, comp);
        assert_int_equal(mkdir(next, 0755), 0);
        free(deep);
        deep = next;
    }
    write_simple(deep, "m");
    state_path = test_path(deep, "checkpoint");
    f = fopen(state_path, "w");
    assert_non_null(f);
    fprintf(f, "model_checkpoint_path: \"m\"\n");
    for (int i = 0; i < entries; i++)
        fputs("all_model_checkpoint_paths: \"m\"\n", f);
    assert_int_equal(fclose(f), 0);
    RUN_EXPECT(r, &tight, 0, "ls", "--json", deep);
    root = parse_json(r.out);
    assert_int_equal(json_object_array_length(jget(root, "checkpoints")), 1);
    json_object_put(root);
    run_free(&r);
    free(state_path);
    free(deep);
    test_remove_tree(dir);
}

/* 100,000 state-file entries naming checkpoints in a 300-file
 * subdirectory, 150 of them there: the subdirectory is listed once and
 * each entry looked up (it used to be listed, with a stat per file, for
 * every entry: 30 million stat calls). */
static void test_ls_many_entries_one_subdirectory(void **state)
{
    enum { FILES = 300 };
    /* fewer under memcheck, which is here for memory errors, not time */
    const int entries = cli_under_memcheck() ? 5000 : 100000;
    char *dir = test_make_temp_dir();
    char *sub = test_path(dir, "s");
    char name[64];
    FILE *f;
    char *state_path = test_path(dir, "checkpoint");
    json_object *root, *rows;
    cli_run r;
    (void)state;
    assert_int_equal(mkdir(sub, 0755), 0);
    for (int i = 0; i < FILES / 2; i++) {
        char *p;
        snprintf(name, sizeof(name), "c%d.index", i);
        p = test_path(sub, name);
        test_write_file(p, "i", 1);
        free(p);
        snprintf(name, sizeof(name), "c%d.data-00000-of-00001", i);
        p = test_path(sub, name);
        test_write_file(p, "dd", 2);
        free(p);
    }
    f = fopen(state_path, "w");
    assert_non_null(f);
    fprintf(f, "model_checkpoint_path: \"s/c0\"\n");
    for (int i = 0; i < entries; i++)
        fprintf(f, "all_model_checkpoint_paths: \"s/c%d\"\n", i);
    assert_int_equal(fclose(f), 0);
    RUN_EXPECT(r, &limits, 0, "ls", "--json", dir);
    root = parse_json(r.out);
    rows = jget(root, "checkpoints");
    assert_int_equal(json_object_array_length(rows), (size_t)entries);
    for (size_t i = 0; i < (size_t)entries; i += i < FILES ? 7 : 997) {
        json_object *row = json_object_array_get_idx(rows, i);
        int there = i < FILES / 2;
        assert_int_equal(json_object_get_boolean(jget(row, "complete")), there);
        assert_int_equal(json_object_get_int64(jget(row, "bytes")),
                         there ? 3 : 0);
    }
    json_object_put(root);
    run_free(&r);
    free(state_path);
    free(sub);
    test_remove_tree(dir);
}

/* ---- class 7: names never reach the terminal raw ------------------------- */

static const char esc_name[] = "evil\x1b[2J\x1b]0;owned\x07";
static const char latin_name[] = "latin\xff\xfe";
static const char nul_name[] = "nul\0inside";
static const char utf8_name[] = "caf\xc3\xa9";

/* A checkpoint whose names hold ESC sequences, bytes that are not UTF-8, a
 * NUL byte and plain UTF-8, in DIR with a stray file whose name holds ESC
 * and a state file whose path does. */
static char *write_hostile_names(void)
{
    static const float v1[1] = {1.0f};
    static const float v2[2] = {2.0f, 3.0f};
    char *dir = test_make_temp_dir();
    char *prefix = test_path(dir, "m\x1b[31m-1");
    tensor_spec t[] = {
        {esc_name, sizeof(esc_name) - 1, CKPT_DT_FLOAT, 1, v1, 4, 0, 0},
        {latin_name, sizeof(latin_name) - 1, CKPT_DT_FLOAT, 2, v2, 8, 0, 0},
        {nul_name, sizeof(nul_name) - 1, CKPT_DT_FLOAT, 1, v1, 4, 0, 0},
        {utf8_name, sizeof(utf8_name) - 1, CKPT_DT_FLOAT, 1, v1, 4, 0, 0},
    };
    write_bundle(prefix, t, 4);
    write_text(dir, "checkpoint", "model_checkpoint_path: \"m\\033[31m-1\"\n");
    write_text(dir, "stray\x1b[1m.tmp", "x");
    free(prefix);
    return dir;
}

static void expect_both_safe(const cli_run *r)
{
    expect_terminal_safe("stdout", r->out);
    expect_terminal_safe("stderr", r->err);
}

static void test_names_escaped_in_text_output(void **state)
{
    char *dir = write_hostile_names();
    char *prefix = test_path(dir, "m\x1b[31m-1");
    cli_run r;
    (void)state;
    RUN_EXPECT(r, &limits, 0, "inspect", dir, "--values");
    expect_both_safe(&r);
    expect_contains(r.out, "evil\\x1b[2J\\x1b]0;owned\\x07");
    expect_contains(r.out, "latin\\xff\\xfe");
    expect_contains(r.out, "nul\\x00inside");
    expect_contains(r.out, "caf\xc3\xa9 "); /* printable UTF-8 as is */
    expect_contains(r.out, "m\\x1b[31m-1: 4 tensors");
    run_free(&r);
    RUN_EXPECT(r, &limits, 0, "verify", dir);
    expect_both_safe(&r);
    expect_contains(r.out, "m\\x1b[31m-1: OK, 4 tensors");
    run_free(&r);
    RUN_EXPECT(r, &limits, 0, "ls", dir);
    expect_both_safe(&r);
    expect_contains(r.out, "m\\x1b[31m-1");
    expect_contains(r.out, "stray\\x1b[1m.tmp");
    run_free(&r);
    RUN_EXPECT(r, &limits, 0, "diff", dir, prefix);
    expect_both_safe(&r);
    run_free(&r);
    /* error messages that quote names and paths: stderr */
    RUN_EXPECT(r, &limits, 2, "inspect", dir, "--tensor", "no\x1b[5mpe");
    expect_both_safe(&r);
    expect_contains(r.err, "no tensor named 'no\\x1b[5mpe'");
    run_free(&r);
    RUN_EXPECT(r, &limits, 2, "inspect",
               "gone\x1b[1m\x9b"
               "1m");
    expect_both_safe(&r);
    /* named once: the library's part shows the path escaped, and the
     * tool, looking for the raw bytes there, used to name it again */
    assert_string_equal(r.err,
                        "ckpt inspect: gone\\x1b[1m\\x9b1m: no such "
                        "checkpoint: open_read gone\\x1b[1m\\x9b1m.index: No "
                        "such file or directory\n");
    run_free(&r);
    /* the temporary file of an interrupted repack to DST, removed and
     * named (its path was printed raw); the tensor whose name holds a NUL
     * is left out, as repack refuses to copy it (its own test is in
     * test_cli_hostile.c) */
    {
        char *dst = test_path(dir, "out\x1b[7m");
        write_text(dir, "out\x1b[7m.index.tempstate1f", "partial");
        RUN_EXPECT(r, &limits, 0, "repack", prefix, dst, "--exclude", "^nul");
        expect_both_safe(&r);
        expect_contains(r.err, "removed ");
        expect_contains(r.err, "out\\x1b[7m.index.tempstate1f (left by");
        run_free(&r);
        free(dst);
    }
    free(prefix);
    test_remove_tree(dir);
}

/* The terminal columns of the first `n` bytes of UTF-8 `s`, for the names
 * below: one per character, two for the CJK ones (lead byte 0xE6). */
static size_t columns_of(const char *s, size_t n)
{
    size_t c = 0;
    for (size_t i = 0; i < n; i++) {
        unsigned char b = (unsigned char)s[i];
        if (b < 0x80 || b >= 0xC0)
            c += b == 0xE6 ? 2 : 1;
    }
    return c;
}

/* Where `needle` starts on each line holding it, in columns; all equal. */
static void expect_aligned(const char *out, const char *needle, int lines)
{
    long at = -1;
    int seen = 0;
    for (const char *line = out; line && *line;) {
        const char *end = strchr(line, '\n');
        const char *hit = strstr(line, needle);
        if (hit && (!end || hit < end)) {
            long col = (long)columns_of(line, (size_t)(hit - line));
            if (at < 0)
                at = col;
            assert_int_equal(col, at);
            seen++;
        }
        line = end ? end + 1 : NULL;
    }
    assert_int_equal(seen, lines);
}

/* Columns line up by what a terminal shows, not by bytes: names of
 * two-byte and three-byte (wide) characters were padded as if each byte
 * took a column, pushing the next columns out of line. */
static void test_text_columns_count_characters(void **state)
{
    static const float v[1] = {1.0f};
    static const char wide[] = "\xe6\x97\xa5\xe6\x9c\xac/w";
    char *dir = test_make_temp_dir();
    char *prefix = test_path(dir, "m-1");
    tensor_spec t[] = {
        {"ascii/w", 7, CKPT_DT_FLOAT, 1, v, 4, 0, 0},
        {utf8_name, sizeof(utf8_name) - 1, CKPT_DT_FLOAT, 1, v, 4, 0, 0},
        {wide, sizeof(wide) - 1, CKPT_DT_FLOAT, 1, v, 4, 0, 0},
    };
    cli_run r;
    (void)state;
    write_bundle(prefix, t, 3);
    write_text(dir, "checkpoint", "model_checkpoint_path: \"m-1\"\n");
    write_text(dir, "\xe6\x97\xa5\xe6\x9c\xac.tmp", "x");
    write_text(dir, "ab.tmp", "x");
    RUN_EXPECT(r, &limits, 0, "inspect", dir);
    expect_aligned(r.out, "float32", 3);
    run_free(&r);
    RUN_EXPECT(r, &limits, 0, "ls", dir);
    expect_aligned(r.out, "  temporary file", 2); /* the strays */
    run_free(&r);
    free(prefix);
    test_remove_tree(dir);
}

static json_object *find_named(json_object *list, const char *name, size_t n)
{
    for (size_t i = 0; i < json_object_array_length(list); i++) {
        json_object *t = json_object_array_get_idx(list, i);
        json_object *s = jget(t, "name");
        if ((size_t)json_object_get_string_len(s) == n &&
            memcmp(json_object_get_string(s), name, n) == 0)
            return t;
    }
    fail_msg("no tensor of %zu bytes named \"%s...\"", n, name);
    return NULL;
}

static void test_names_valid_json(void **state)
{
    char *dir = write_hostile_names();
    json_object *root, *list;
    cli_run r;
    (void)state;
    RUN_EXPECT(r, &limits, 0, "inspect", dir, "--json", "--values");
    root = parse_json(r.out);
    list = jget(root, "tensors");
    assert_int_equal(json_object_array_length(list), 4);
    /* UTF-8 names (control characters included) exactly, NUL included */
    find_named(list, esc_name, sizeof(esc_name) - 1);
    find_named(list, nul_name, sizeof(nul_name) - 1);
    find_named(list, utf8_name, sizeof(utf8_name) - 1);
    /* bytes that are not UTF-8: each byte one code point U+0000..U+00FF */
    find_named(list, "latin\xc3\xbf\xc3\xbe", 9);
    {
        char *want = test_path(dir, "m\x1b[31m-1");
        expect_json_bytes(jget(root, "prefix"), want, strlen(want));
        free(want);
    }
    json_object_put(root);
    run_free(&r);
    RUN_EXPECT(r, &limits, 0, "ls", dir, "--json");
    root = parse_json(r.out);
    expect_json_bytes(
        jget(json_object_array_get_idx(jget(root, "stray"), 0), "file"),
        "stray\x1b[1m.tmp", 13);
    json_object_put(root);
    run_free(&r);
    RUN_EXPECT(r, &limits, 0, "verify", dir, "--json");
    json_object_put(parse_json(r.out));
    run_free(&r);
    test_remove_tree(dir);
}

/* `inspect --json` of an index of many entries prints a tensor at a time:
 * it needs the memory of the decoded entries, as the text form does, not
 * of json-c objects for all of them (about 130 times the index, 450 MB
 * for 200,000 entries, before it streamed). */
static void test_inspect_json_many_entries_memory(void **state)
{
    static const cli_limits tight = {30, 120, (uint64_t)256 << 20};
    const int entries = cli_under_memcheck()   ? 2000
                        : cli_tool_sanitized() ? 20000
                                               : 200000;
    char *dir = test_make_temp_dir();
    char *prefix = test_path(dir, "many");
    ckpt_bundle_writer *w = NULL;
    ckpt_shape empty = {1, {0}};
    json_object *root;
    char name[32];
    cli_run r;
    (void)state;
    assert_ckpt_ok(ckpt_bundle_writer_open(&w, prefix, NULL));
    for (int i = 0; i < entries; i++) {
        snprintf(name, sizeof(name), "t%07d", i);
        assert_ckpt_ok(
            ckpt_bundle_writer_add(w, name, CKPT_DT_FLOAT, &empty, NULL, 0));
    }
    assert_ckpt_ok(ckpt_bundle_writer_finish(w));
    ckpt_bundle_writer_free(w);
    RUN_EXPECT(r, &tight, 0, "inspect", prefix, "--json");
    root = parse_json(r.out);
    assert_int_equal(json_object_array_length(jget(root, "tensors")), entries);
    json_object_put(root);
    run_free(&r);
    free(prefix);
    test_remove_tree(dir);
}

/* Two checkpoints of `entries` empty tensors t0000000.. whose dtypes
 * differ (float in A, int32 in B): every tensor a difference, no data. */
static void write_dtype_differences(const char *a, const char *b, int entries)
{
    const char *prefixes[2] = {a, b};
    ckpt_shape empty = {1, {0}};
    char name[32];
    for (int k = 0; k < 2; k++) {
        ckpt_bundle_writer *w = NULL;
        int dtype = k == 0 ? CKPT_DT_FLOAT : CKPT_DT_INT32;
        assert_ckpt_ok(ckpt_bundle_writer_open(&w, prefixes[k], NULL));
        for (int i = 0; i < entries; i++) {
            snprintf(name, sizeof(name), "t%07d", i);
            assert_ckpt_ok(
                ckpt_bundle_writer_add(w, name, dtype, &empty, NULL, 0));
        }
        assert_ckpt_ok(ckpt_bundle_writer_finish(w));
        ckpt_bundle_writer_free(w);
    }
}

/* `diff --json` of two checkpoints of 100,000 tensors that all differ
 * keeps each difference as its text: the memory of the two indexes and
 * the document, not of a json-c object per difference (about 1.4 KiB
 * each: it needed over 200 MB and was refused in 160 MB). The document
 * is the one it printed before, every difference in it. */
static void test_diff_json_many_differences_memory(void **state)
{
    static const cli_limits tight = {30, 120, (uint64_t)160 << 20};
    const int entries = cli_under_memcheck()   ? 1000
                        : cli_tool_sanitized() ? 10000
                                               : 100000;
    char *dir = test_make_temp_dir();
    char *a = test_path(dir, "a"), *b = test_path(dir, "b");
    json_object *root, *list, *last;
    char name[32];
    cli_run r;
    (void)state;
    write_dtype_differences(a, b, entries);
    RUN_EXPECT(r, &tight, 1, "diff", a, b, "--json");
    root = parse_json(r.out);
    assert_false(json_object_get_boolean(jget(root, "equal")));
    assert_int_equal(json_object_get_int64(jget(root, "tensors")), entries);
    list = jget(root, "differences");
    assert_int_equal(json_object_array_length(list), entries);
    last = json_object_array_get_idx(list, (size_t)entries - 1);
    snprintf(name, sizeof(name), "t%07d", entries - 1);
    assert_string_equal(json_object_get_string(jget(last, "name")), name);
    assert_string_equal(json_object_get_string(jget(last, "reason")), "dtype");
    assert_string_equal(json_object_get_string(jget(last, "dtype_a")),
                        "float32");
    assert_string_equal(json_object_get_string(jget(last, "dtype_b")), "int32");
    json_object_put(root);
    run_free(&r);
    free(a);
    free(b);
    test_remove_tree(dir);
}

/* `verify --json` of a checkpoint whose 50,000 tensors are all damaged
 * keeps each finding as its text, as diff does: it needed a json-c object
 * per damaged tensor (over 100 MB of address space; refused in 96 MB).
 * The document names every damaged tensor with its message. */
static void test_verify_json_many_damaged_memory(void **state)
{
    static const cli_limits tight = {30, 120, (uint64_t)96 << 20};
    const int entries = cli_under_memcheck()   ? 500
                        : cli_tool_sanitized() ? 5000
                                               : 50000;
    char *dir = test_make_temp_dir();
    char *prefix = test_path(dir, "m");
    char *data = test_path(dir, "m.data-00000-of-00001");
    ckpt_bundle_writer *w = NULL;
    ckpt_shape four = {1, {4}};
    json_object *root, *list, *last;
    uint8_t *bytes;
    size_t n = 0;
    char name[32];
    cli_run r;
    (void)state;
    assert_ckpt_ok(ckpt_bundle_writer_open(&w, prefix, NULL));
    for (int i = 0; i < entries; i++) {
        float v[4] = {(float)i, 1.0f, 2.0f, 3.0f};
        snprintf(name, sizeof(name), "t%07d", i);
        assert_ckpt_ok(
            ckpt_bundle_writer_add(w, name, CKPT_DT_FLOAT, &four, v, 16));
    }
    assert_ckpt_ok(ckpt_bundle_writer_finish(w));
    ckpt_bundle_writer_free(w);
    bytes = test_read_file(data, &n);
    assert_int_equal(n, (size_t)entries * 16);
    for (size_t i = 0; i < n; i += 16)
        bytes[i] ^= 1; /* every record's checksum now wrong */
    test_write_file(data, bytes, n);
    free(bytes);
    RUN_EXPECT(r, &tight, 1, "verify", prefix, "--json");
    root = parse_json(r.out);
    assert_false(json_object_get_boolean(jget(root, "ok")));
    assert_int_equal(json_object_get_int64(jget(root, "tensors")), entries);
    list = jget(root, "damaged");
    assert_int_equal(json_object_array_length(list), entries);
    last = json_object_array_get_idx(list, (size_t)entries - 1);
    snprintf(name, sizeof(name), "t%07d", entries - 1);
    assert_string_equal(json_object_get_string(jget(last, "name")), name);
    expect_contains(json_object_get_string(jget(last, "error")),
                    "': checksum mismatch (stored 0x");
    assert_int_equal(json_object_array_length(jget(root, "not_checked")), 0);
    json_object_put(root);
    run_free(&r);
    free(data);
    free(prefix);
    test_remove_tree(dir);
}

/* `inspect --values=all --json` of a tensor of a million floats keeps
 * the values as their text until the record's checksum is checked: a
 * json-c object per value took about 120 bytes (30 times the tensor:
 * over 96 MB of address space for 4 MB; refused in 64 MB). */
static void test_inspect_json_all_values_memory(void **state)
{
    static const cli_limits tight = {30, 120, (uint64_t)64 << 20};
    const int64_t count = cli_under_memcheck()   ? 10000
                          : cli_tool_sanitized() ? 100000
                                                 : 1000000;
    char *dir = test_make_temp_dir();
    char *prefix = test_path(dir, "m");
    ckpt_bundle_writer *w = NULL;
    ckpt_shape shape = {1, {count}};
    float *v = malloc((size_t)count * sizeof(*v));
    json_object *root, *values;
    cli_run r;
    (void)state;
    assert_non_null(v);
    for (int64_t i = 0; i < count; i++)
        v[i] = (float)i + 0.5f;
    assert_ckpt_ok(ckpt_bundle_writer_open(&w, prefix, NULL));
    assert_ckpt_ok(ckpt_bundle_writer_add(w, "w", CKPT_DT_FLOAT, &shape, v,
                                          (size_t)count * sizeof(*v)));
    assert_ckpt_ok(ckpt_bundle_writer_finish(w));
    ckpt_bundle_writer_free(w);
    free(v);
    RUN_EXPECT(r, &tight, 0, "inspect", prefix, "--json", "--values=all");
    root = parse_json(r.out);
    values =
        jget(json_object_array_get_idx(jget(root, "tensors"), 0), "values");
    assert_int_equal(json_object_array_length(values), count);
    assert_true(json_object_get_double(json_object_array_get_idx(values, 0)) ==
                0.5);
    assert_true(json_object_get_double(json_object_array_get_idx(
                    values, (size_t)count - 1)) == (double)count - 0.5);
    json_object_put(root);
    run_free(&r);
    free(prefix);
    test_remove_tree(dir);
}

/* `repack --include/--exclude` patterns that glibc's regex matches in
 * time exponential in a name's length (back-references: the one below
 * ran past any limit on a 68-byte name) or compiles into more memory than
 * the machine has (a{32767}{32767}: a billion positions; x{0,16000} and
 * (a?){4000}, whose positions each reach thousands of others) or take
 * minutes to match are usage errors saying why, before regcomp sees them;
 * bounds of POSIX's size nested once still work, and so do optional
 * copies in their hundreds. */
static void test_repack_pathological_patterns(void **state)
{
    static const cli_limits tight = {10, 60, (uint64_t)512 << 20};
    static const float v[2] = {1.0f, 2.0f};
    static const struct {
        const char *option, *pattern, *why;
    } refused[] = {
        {"--exclude", "(.*)(.*)(.*)(.*)(.*)\\5\\4\\3\\2\\1z",
         "back-reference \\5: not supported (matching one can take time "
         "exponential in a name's length)"},
        {"--include", "(a*)*\\1b", "back-reference \\1: not supported"},
        {"--exclude", "a{32767}{32767}",
         "its bounded repetitions ({m,n}) expand to more than 65536 "
         "positions"},
        {"--exclude", "((a{100}){100}){100}", "more than 65536 positions"},
        /* {,n} is glibc's {0,n}: it was not counted, and this ran past 6 GiB */
        {"--include", "x{,255}{,255}{,255}", "more than 65536 positions"},
        /* few positions, but each optional copy reaches the others: 548
         * MiB; x{0,16000} 2 GiB */
        {"--include", "x{0,255}{0,255}",
         "its repetitions make about 24936 thousand links between "
         "positions (more than 131 thousand), which regcomp keeps and "
         "matching walks at each character of a name"},
        {"--include", "x{0,16000}", "thousand links between positions"},
        /* copies of what matches nothing: past 4 GiB */
        {"--exclude", "(a?){255}{255}", "more than 65536 positions"},
        {"--exclude", "(a?){200}{20}", "thousand links between positions"},
        {"--exclude", "(()){4000}", "thousand links between positions"},
        /* compiled in 0.5 s, then 207 s to match 200 b's */
        {"--exclude", "b.{0,100}{255}x{5}", "thousand links"},
        /* a loop over what matches nothing: 13 s to compile */
        {"--exclude", "((){0,30}{2})+", "thousand links"},
        /* built once even when repeated no times */
        {"--exclude", "(x{0,255}{0,255}){0}", "thousand links"},
    };
    char name[69];
    char *dir = test_make_temp_dir();
    char *src = test_path(dir, "src"), *dst = test_path(dir, "dst");
    tensor_spec t = {name, 68, CKPT_DT_FLOAT, 2, v, sizeof(v), 0, 0};
    cli_run r;
    (void)state;
    memset(name, 'a', 68);
    name[68] = '\0';
    write_bundle(src, &t, 1);
    for (size_t i = 0; i < sizeof(refused) / sizeof(refused[0]); i++) {
        RUN_EXPECT(r, &tight, 2, "repack", src, dst, refused[i].option,
                   refused[i].pattern);
        expect_contains(r.err, "ckpt repack: bad ");
        expect_contains(r.err, refused[i].option);
        expect_contains(r.err, refused[i].pattern);
        expect_contains(r.err, "; needs a POSIX extended regex, e.g. ");
        expect_contains(r.err, refused[i].why);
        run_free(&r);
    }
    RUN_EXPECT(r, &tight, 0, "repack", src, dst, "--exclude", "^a{255}{255}",
               "--exclude", "^(a{10}){6}a{8}$", "--include", "^x{0,500}",
               "--include", "(a?){400}", "--include", "^a{,68}$", "--include",
               "^(a|b|)*$");
    expect_contains(r.out, "0 of 1 tensor");
    run_free(&r);
    free(src);
    free(dst);
    test_remove_tree(dir);
}

/* Names of valid UTF-8 holding code points a terminal acts on (C1 CSI,
 * right-to-left override, DEL): \x-escaped in text, \u-escaped in JSON
 * (parse_json refuses them raw), and the same bytes once parsed. */
static void test_unicode_controls_escaped(void **state)
{
    static const float v1[1] = {1.0f};
    static const char c1_name[] = "csi\xc2\x9b"
                                  "31m";
    static const char rlo_name[] = "rlo\xe2\x80\xae"
                                   "txt\x7f";
    char *dir = test_make_temp_dir();
    char *prefix = test_path(dir, "u-1");
    tensor_spec t[] = {
        {c1_name, sizeof(c1_name) - 1, CKPT_DT_FLOAT, 1, v1, 4, 0, 0},
        {rlo_name, sizeof(rlo_name) - 1, CKPT_DT_FLOAT, 1, v1, 4, 0, 0},
    };
    json_object *root, *list;
    cli_run r;
    (void)state;
    write_bundle(prefix, t, 2);
    RUN_EXPECT(r, &limits, 0, "inspect", prefix);
    expect_contains(r.out, "csi\\xc2\\x9b31m");
    expect_contains(r.out, "rlo\\xe2\\x80\\xaetxt\\x7f");
    run_free(&r);
    RUN_EXPECT(r, &limits, 0, "inspect", prefix, "--json");
    expect_contains(r.out, "csi\\u009b31m");
    expect_contains(r.out, "rlo\\u202etxt\\u007f");
    root = parse_json(r.out);
    list = jget(root, "tensors");
    find_named(list, c1_name, sizeof(c1_name) - 1);
    find_named(list, rlo_name, sizeof(rlo_name) - 1);
    json_object_put(root);
    run_free(&r);
    free(prefix);
    test_remove_tree(dir);
}

/* ---- class 9: names and messages that mislead ---------------------------- */

/* "a" and "a\0b" are two tensors: verify checks each by its whole name (it
 * used to read "a" for "a\0b" and report damage on intact records), and
 * blames the right one when one is damaged. */
static void test_nul_in_name_is_part_of_it(void **state)
{
    static const float one[1] = {7.0f};
    static const float two[2] = {8.0f, 9.0f};
    char *dir = test_make_temp_dir();
    char *prefix = test_path(dir, "ck");
    tensor_spec t[] = {
        {"a", 1, CKPT_DT_FLOAT, 1, one, sizeof(one), 0, 0},
        {"a\0b", 3, CKPT_DT_FLOAT, 2, two, sizeof(two), 0, 0},
    };
    cli_run r;
    (void)state;
    write_bundle(prefix, t, 2);
    RUN_EXPECT(r, &limits, 0, "verify", prefix);
    expect_contains(r.out, ": OK, 2 tensors, 12 bytes checked");
    run_free(&r);
    t[0].bad_crc = 0;
    t[1].bad_crc = 1; /* "a\0b" */
    write_bundle(prefix, t, 2);
    RUN_EXPECT(r, &limits, 1, "verify", prefix);
    expect_contains(r.err, "tensor 'a\\x00b': checksum mismatch");
    expect_lacks(r.err, "tensor 'a':");
    expect_contains(r.out, "DAMAGED, 1 of 2 tensors");
    run_free(&r);
    free(prefix);
    test_remove_tree(dir);
}

/* `inspect --values` reads a tensor by its whole name, NUL included: the
 * partitioned "a\0b" is assembled from its own pieces (it used to be looked
 * up by the C string "a", so it was never shown), and the plain "a\0c" is
 * streamed from its own record. */
static void test_values_of_nul_names(void **state)
{
    static const float one[2] = {7.0f, 7.5f};
    static const float four[4] = {8.0f, 9.0f, 10.0f, 11.0f};
    static const float plain[1] = {3.0f};
    char *dir = test_make_temp_dir();
    char *prefix = test_path(dir, "ck");
    tensor_spec t[] = {
        {"a", 1, CKPT_DT_FLOAT, 2, one, sizeof(one), 0, 0},
        {"a\0b", 3, CKPT_DT_FLOAT, 4, four, sizeof(four), 0, 2},
        {"a\0c", 3, CKPT_DT_FLOAT, 1, plain, sizeof(plain), 0, 0},
    };
    json_object *root, *list;
    cli_run r;
    (void)state;
    write_bundle(prefix, t, 3);
    RUN_EXPECT(r, &limits, 0, "inspect", prefix, "--values");
    expect_contains(r.out, "a\\x00b ");
    expect_contains(r.out, "(partitioned, 2 slices)\n    [8, 9, 10, 11]\n");
    expect_contains(r.out, "a\\x00c ");
    expect_contains(r.out, "0\n    [3]\n");
    expect_lacks(r.out, "not supported");
    run_free(&r);
    RUN_EXPECT(r, &limits, 0, "inspect", prefix, "--values", "--json");
    root = parse_json(r.out);
    list = jget(root, "tensors");
    {
        json_object *v = jget(find_named(list, "a\0b", 3), "values");
        assert_int_equal(json_object_array_length(v), 4);
        for (size_t i = 0; i < 4; i++)
            assert_true(json_object_get_double(json_object_array_get_idx(
                            v, i)) == (double)four[i]);
        v = jget(find_named(list, "a\0c", 3), "values");
        assert_int_equal(json_object_array_length(v), 1);
        assert_true(json_object_get_double(json_object_array_get_idx(v, 0)) ==
                    3.0);
    }
    json_object_put(root);
    run_free(&r);
    free(prefix);
    test_remove_tree(dir);
}

/* A DT_VARIANT record is read but its checksum is not computed: verify
 * says "not checked" for it instead of counting it OK. */
static void test_verify_variant_not_checked(void **state)
{
    static const float v[1] = {1.0f};
    static const char variant_record[] = "opaque variant bytes";
    char *dir = test_make_temp_dir();
    char *prefix = test_path(dir, "ck");
    tensor_spec t[] = {
        {"plain", 5, CKPT_DT_FLOAT, 1, v, sizeof(v), 0, 0},
        {"var", 3, CKPT_DT_VARIANT, -1, variant_record,
         sizeof(variant_record) - 1, 1, 0},
    };
    json_object *root, *list;
    cli_run r;
    (void)state;
    write_bundle(prefix, t, 2);
    RUN_EXPECT(r, &limits, 0, "verify", prefix);
    expect_contains(r.out, "var: not checked (variant records");
    expect_contains(r.out, "no damage found in 1 of 2 tensors (4 bytes "
                           "checked); 1 not checked");
    expect_lacks(r.out, ": OK,"); /* not the all-clear line; a temporary
                                   * path may contain "OK" */
    run_free(&r);
    RUN_EXPECT(r, &limits, 0, "verify", prefix, "--json");
    root = parse_json(r.out);
    list = jget(root, "not_checked");
    assert_int_equal(json_object_array_length(list), 1);
    expect_json_bytes(jget(json_object_array_get_idx(list, 0), "name"), "var",
                      3);
    assert_int_equal(json_object_get_int64(jget(root, "bytes")), 4);
    json_object_put(root);
    run_free(&r);
    free(prefix);
    test_remove_tree(dir);
}

/* verify reads the fixed-size records in one pass per data file, which
 * stops at the first damage; every damaged tensor is still named (the
 * pass's finding makes it check each tensor on its own), the intact ones
 * are not, and a partitioned tensor next to them is checked too. */
static void test_verify_names_every_damaged_tensor(void **state)
{
    static const float v[4] = {1.0f, 2.0f, 3.0f, 4.0f};
    char *dir = test_make_temp_dir();
    char *prefix = test_path(dir, "ck");
    tensor_spec t[] = {
        {"a", 1, CKPT_DT_FLOAT, 4, v, sizeof(v), 1, 0},
        {"b", 1, CKPT_DT_FLOAT, 4, v, sizeof(v), 0, 0},
        {"c", 1, CKPT_DT_FLOAT, 4, v, sizeof(v), 1, 0},
        {"d", 1, CKPT_DT_FLOAT, 4, v, sizeof(v), 0, 2},
    };
    json_object *root, *list;
    cli_run r;
    (void)state;
    write_bundle(prefix, t, 3);
    RUN_EXPECT(r, &limits, 1, "verify", prefix);
    expect_contains(r.err, "'a'");
    expect_contains(r.err, "'c'");
    expect_lacks(r.err, "'b'");
    expect_contains(r.out, "DAMAGED, 2 of 3 tensors");
    run_free(&r);
    RUN_EXPECT(r, &limits, 1, "verify", prefix, "--json");
    root = parse_json(r.out);
    list = jget(root, "damaged");
    assert_int_equal(json_object_array_length(list), 2);
    expect_json_bytes(jget(json_object_array_get_idx(list, 0), "name"), "a", 1);
    expect_json_bytes(jget(json_object_array_get_idx(list, 1), "name"), "c", 1);
    json_object_put(root);
    run_free(&r);
    /* intact: the one pass checks them all, the partitioned one alone */
    t[0].bad_crc = 0;
    t[2].bad_crc = 0;
    write_bundle(prefix, t, 4);
    RUN_EXPECT(r, &limits, 0, "verify", prefix);
    expect_contains(r.out, ": OK, 4 tensors, 64 bytes checked");
    run_free(&r);
    free(prefix);
    test_remove_tree(dir);
}

/* repack names the partitioned tensor it refuses, and drops the slices
 * of one that is excluded. */
static void test_repack_names_partitioned_tensor(void **state)
{
    char *dir = test_make_temp_dir();
    char *src = test_path(dir, "src"), *dst = test_path(dir, "dst");
    ckpt_bundle_writer *w = NULL;
    ckpt_shape full = {.rank = 1, .dims = {4}};
    ckpt_shape one = {.rank = 1, .dims = {1}};
    ckpt_slice_extent lo[1] = {{0, 2}}, hi[1] = {{2, 2}};
    float v[4] = {1, 2, 3, 4};
    cli_run r;
    (void)state;
    assert_ckpt_ok(ckpt_bundle_writer_open(&w, src, NULL));
    assert_ckpt_ok(ckpt_bundle_writer_add_slice(w, "part/kernel", CKPT_DT_FLOAT,
                                                &full, lo, v, 8));
    assert_ckpt_ok(ckpt_bundle_writer_add_slice(w, "part/kernel", CKPT_DT_FLOAT,
                                                &full, hi, v + 2, 8));
    assert_ckpt_ok(
        ckpt_bundle_writer_add(w, "bias", CKPT_DT_FLOAT, &one, v, 4));
    assert_ckpt_ok(ckpt_bundle_writer_finish(w));
    ckpt_bundle_writer_free(w);
    RUN_EXPECT(r, &limits, 2, "repack", src, dst);
    expect_contains(r.err, "tensor 'part/kernel' is partitioned");
    expect_contains(r.err, "(leave it out with --exclude '^part/kernel$')\n");
    expect_lacks(r.err, "(slice)");
    run_free(&r);
    RUN_EXPECT(r, &limits, 0, "repack", src, dst, "--exclude", "^part/");
    expect_contains(r.out, ": 1 of 2 tensors, 4 bytes, 1 shard");
    run_free(&r);
    free(src);
    free(dst);
    test_remove_tree(dir);
}

/* A path of about 3 KiB in front of a damaged index: the message keeps the
 * whole path and the error after it. */
static void test_long_path_keeps_the_error(void **state)
{
    char *dir = test_make_temp_dir();
    char path[4096];
    size_t n = (size_t)snprintf(path, sizeof(path), "%s", dir);
    cli_run r;
    (void)state;
    while (n < 3000) {
        n += (size_t)snprintf(path + n, sizeof(path) - n, "/%0200d", 0);
        assert_int_equal(mkdir(path, 0755), 0);
    }
    snprintf(path + n, sizeof(path) - n, "/ck.index");
    test_write_file(path, "this is not a table, it is far too short", 40);
    path[n] = '\0';
    strncat(path, "/ck", sizeof(path) - n - 1);
    RUN_EXPECT(r, &limits, 1, "inspect", path);
    expect_contains(r.err, path);
    expect_contains(r.err, "ck.index");
    /* the error itself, after the path */
    assert_true(strlen(strstr(r.err, "ck.index")) > 12);
    run_free(&r);
    test_remove_tree(dir);
}

/* Descend from the current directory through `levels` new directories of
 * 200-byte names, so that the current directory's absolute path is longer
 * than PATH_MAX (realpath(3) cannot give it). */
static void descend_deep(int levels)
{
    char name[201];
    memset(name, 'p', 200);
    name[200] = '\0';
    for (int i = 0; i < levels; i++) {
        assert_int_equal(mkdir(name, 0755), 0);
        assert_int_equal(chdir(name), 0);
    }
}

/* Undo descend_deep(levels) from its deepest directory, removing it. */
static void climb_out_removing(int levels)
{
    char name[201];
    memset(name, 'p', 200);
    name[200] = '\0';
    for (int i = 0; i < levels; i++) {
        assert_int_equal(chdir(".."), 0);
        assert_int_equal(rmdir(name), 0);
    }
}

/* `ls` of a directory whose absolute path is longer than PATH_MAX (run from
 * inside it, with a short relative path): its checkpoints, one in a
 * subdirectory, are found and the one outside is said to be outside, and
 * `verify` warns of a symbolic link out of it. It
 * used to report every checkpoint as "missing index" and their own index
 * files as "not listed in the state file", and `verify` followed the link
 * without a warning, because they compared the directories through
 * realpath(3), which fails there. */
static void test_ls_directory_deeper_than_path_max(void **state)
{
    char *top = test_make_temp_dir();
    int home = open(".", O_RDONLY | O_DIRECTORY);
    json_object *root, *rows;
    cli_run r;
    (void)state;
    assert_true(home >= 0);
    assert_int_equal(chdir(top), 0);
    descend_deep(22);
    assert_int_equal(mkdir("out", 0755), 0);
    assert_int_equal(mkdir("d", 0755), 0);
    assert_int_equal(mkdir("d/sub", 0755), 0);
    write_simple("d", "model.ckpt-1");
    write_simple("d/sub", "model.ckpt-2");
    write_simple("out", "far-3");
    write_text("d", "checkpoint",
               "model_checkpoint_path: \"model.ckpt-1\"\n"
               "all_model_checkpoint_paths: \"../out/far-3\"\n"
               "all_model_checkpoint_paths: \"sub/model.ckpt-2\"\n"
               "all_model_checkpoint_paths: \"model.ckpt-1\"\n");
    RUN_EXPECT(r, &limits, 0, "ls", "d");
    expect_lacks(r.out, "missing index");
    expect_lacks(r.out, "not listed in the state file");
    expect_contains(r.out, "outside the directory; data files not checked");
    run_free(&r);
    RUN_EXPECT(r, &limits, 0, "ls", "--json", "d");
    root = parse_json(r.out);
    rows = jget(root, "checkpoints");
    assert_int_equal(json_object_array_length(rows), 3);
    assert_string_equal(json_object_get_string(jget(
                            json_object_array_get_idx(rows, 0), "problem")),
                        "outside the directory; data files not checked");
    for (size_t i = 1; i < 3; i++) {
        json_object *row = json_object_array_get_idx(rows, i);
        assert_true(json_object_get_boolean(jget(row, "complete")));
        assert_true(json_object_get_int64(jget(row, "bytes")) > 8);
    }
    assert_int_equal(json_object_array_length(jget(root, "stray")), 0);
    json_object_put(root);
    run_free(&r);
    /* a symbolic link out of DIR: warned about, as anywhere else */
    assert_int_equal(symlink("../out", "d/link"), 0);
    write_text("d", "checkpoint", "model_checkpoint_path: \"link/far-3\"\n");
    RUN_EXPECT(r, &limits, 0, "verify", "d");
    expect_contains(r.err, "d/checkpoint names a checkpoint outside d: ");
    run_free(&r);
    test_remove_tree(strdup("d"));
    test_remove_tree(strdup("out"));
    climb_out_removing(22);
    assert_int_equal(fchdir(home), 0);
    close(home);
    test_remove_tree(top);
}

/* State-file paths no file can have (a name past NAME_MAX, a symbolic link
 * that loops): `ls` lists them as missing next to the good one (it used to
 * exit 2, "File name too long", listing nothing), and `verify DIR` reports
 * the named one missing (exit 1) and points to the older one (it exited 2
 * with only the file system's message). */
static void test_state_paths_no_file_can_have(void **state)
{
    char *dir = test_make_temp_dir();
    char *loop = test_path(dir, "loop");
    char text[1024], name[301];
    cli_run r;
    (void)state;
    memset(name, 'n', 300);
    name[300] = '\0';
    assert_int_equal(symlink("loop", loop), 0);
    write_simple(dir, "model.ckpt-1");
    snprintf(text, sizeof(text),
             "model_checkpoint_path: \"%s\"\n"
             "all_model_checkpoint_paths: \"model.ckpt-1\"\n"
             "all_model_checkpoint_paths: \"loop/model.ckpt-2\"\n"
             "all_model_checkpoint_paths: \"%s\"\n",
             name, name);
    write_text(dir, "checkpoint", text);
    RUN_EXPECT(r, &limits, 0, "ls", dir);
    expect_contains(r.out, "3 checkpoints");
    expect_contains(r.out, "model.ckpt-1 ");
    expect_contains(r.out, "loop/model.ckpt-2");
    expect_contains(r.out, "(missing index)");
    run_free(&r);
    RUN_EXPECT(r, &limits, 1, "verify", dir);
    expect_contains(r.err, "no such checkpoint");
    expect_contains(r.err, "File name too long");
    expect_contains(r.err, ") is missing");
    expect_contains(r.err, "an older listed checkpoint has its index: ");
    run_free(&r);
    snprintf(text, sizeof(text),
             "model_checkpoint_path: \"loop/model.ckpt-2\"\n"
             "all_model_checkpoint_paths: \"model.ckpt-1\"\n"
             "all_model_checkpoint_paths: \"loop/model.ckpt-2\"\n");
    write_text(dir, "checkpoint", text);
    RUN_EXPECT(r, &limits, 1, "verify", dir);
    expect_contains(r.err, "Too many levels of symbolic links");
    expect_contains(r.err, "loop/model.ckpt-2) is missing");
    run_free(&r);
    RUN_EXPECT(r, &limits, 0, "inspect", dir);
    expect_contains(r.out, "model.ckpt-1: 1 tensor, 1 shard");
    run_free(&r);
    free(loop);
    test_remove_tree(dir);
}

/* A checkpoint prefix that is itself a symbolic link that loops (and has
 * no index): verify and inspect name the loop (they said only "no such
 * checkpoint: ... No such file or directory"), and exit 2 as for any
 * checkpoint that is not there. */
static void test_prefix_itself_a_loop(void **state)
{
    char *dir = test_make_temp_dir();
    char *loop = test_path(dir, "loop");
    static const char *const cmds[] = {"verify", "inspect"};
    cli_run r;
    (void)state;
    assert_int_equal(symlink("loop", loop), 0);
    for (size_t i = 0; i < 2; i++) {
        RUN_EXPECT(r, &limits, 2, cmds[i], loop);
        expect_contains(r.err, "no such checkpoint (no ");
        expect_contains(r.err, "loop itself cannot be looked up: stat ");
        expect_contains(r.err, "Too many levels of symbolic links");
        run_free(&r);
    }
    free(loop);
    test_remove_tree(dir);
}

/* A damaged state file is damage (exit 1) for every command that reads
 * it, as the README's exit-status rule says (ls used to exit 2, inspect
 * 1). */
static void test_damaged_state_file_same_status(void **state)
{
    char *dir = test_make_temp_dir();
    static const char *const commands[] = {"ls", "inspect", "verify"};
    cli_run r;
    (void)state;
    write_simple(dir, "model.ckpt-1");
    write_text(dir, "checkpoint",
               "model_checkpoint_path: \"model.ckpt-1\"\n\x01\x02garbage{{\n");
    for (size_t i = 0; i < 3; i++) {
        RUN_EXPECT(r, &limits, 1, commands[i], dir);
        expect_both_safe(&r);
        expect_contains(r.err, "checkpoint:2:");
        run_free(&r);
    }
    test_remove_tree(dir);
}

/* ---- class 10: verify DIR checks the checkpoint the state file names ---- */

/* <dir>/model.ckpt-1 intact, and a state file naming model.ckpt-2 (listed
 * after it), which has no files. */
static void write_named_missing(const char *dir)
{
    write_simple(dir, "model.ckpt-1");
    write_text(dir, "checkpoint",
               "model_checkpoint_path: \"model.ckpt-2\"\n"
               "all_model_checkpoint_paths: \"model.ckpt-1\"\n"
               "all_model_checkpoint_paths: \"model.ckpt-2\"\n");
}

static void test_verify_dir_checks_named_checkpoint(void **state)
{
    char *dir = test_make_temp_dir();
    char *older = test_path(dir, "model.ckpt-1");
    char *index2 = test_path(dir, "model.ckpt-2.index");
    cli_run r;
    (void)state;
    write_named_missing(dir);
    /* the named one has no index: missing, however intact model.ckpt-1 is */
    RUN_EXPECT(r, &limits, 1, "verify", dir);
    expect_contains(r.err, "model.ckpt-2) is missing");
    expect_contains(r.err, "an older listed checkpoint has its index: ");
    expect_contains(r.err, older);
    expect_lacks(r.out, ": OK,"); /* not the all-clear line; a temporary
                                   * path may contain "OK" */
    run_free(&r);
    /* --json: still one document, naming the missing checkpoint */
    RUN_EXPECT(r, &limits, 1, "verify", dir, "--json");
    expect_contains(r.err, "model.ckpt-2) is missing");
    {
        json_object *root = parse_json(r.out);
        char *named = test_path(dir, "model.ckpt-2");
        expect_json_bytes(jget(root, "command"), "verify", 6);
        assert_false(json_object_get_boolean(jget(root, "ok")));
        expect_json_bytes(jget(root, "prefix"), named, strlen(named));
        expect_json_bytes(jget(root, "named_checkpoint"), "missing", 7);
        expect_json_bytes(jget(root, "older"), older, strlen(older));
        expect_contains(json_object_get_string(jget(root, "error")),
                        "model.ckpt-2) is missing");
        json_object_put(root);
        free(named);
    }
    run_free(&r);
    /* its index is there but damaged */
    test_write_file(index2, "garbage, not a table", 20);
    RUN_EXPECT(r, &limits, 1, "verify", dir);
    expect_contains(r.err, "model.ckpt-2) is damaged");
    run_free(&r);
    /* its index is a directory: damaged, as a data file that is one is (it
     * was exit 2 without the named checkpoint in the document) */
    assert_int_equal(unlink(index2), 0);
    assert_int_equal(mkdir(index2, 0700), 0);
    RUN_EXPECT(r, &limits, 1, "verify", dir, "--json");
    expect_contains(r.err, "model.ckpt-2.index: a directory, not a regular "
                           "file; refused");
    expect_contains(r.err, "model.ckpt-2) is damaged");
    {
        json_object *root = parse_json(r.out);
        expect_json_bytes(jget(root, "named_checkpoint"), "damaged", 7);
        json_object_put(root);
    }
    run_free(&r);
    assert_int_equal(rmdir(index2), 0);
    /* the older one named directly still verifies */
    RUN_EXPECT(r, &limits, 0, "verify", older);
    run_free(&r);
    free(older);
    free(index2);
    test_remove_tree(dir);
}

/* The child of a run as another user: root reads any file, so a file
 * this process may not read is made so by running as nobody. */
static void become_nobody(const void *arg)
{
    (void)arg;
    if (geteuid() == 0 && (setgid(65534) != 0 || setuid(65534) != 0))
        _exit(126);
}

#define RUN_AS_NOBODY(r, ...)                                                  \
    do {                                                                       \
        const char *args_[] = {__VA_ARGS__, NULL};                             \
        (r) = cli_run_with(CKPT_CLI_PATH, NULL, args_, become_nobody, NULL);   \
    } while (0)

/* A data file or a named index the tool may not read (permission denied)
 * is unreadable, so damage, as a missing one is: verify listed the tensor
 * as "not checked", exited 2 and said "ok": true in its document (which
 * is true only for exit 0), and repack exited 2 where inspect --values
 * exits 1. Now verify, inspect --values and repack all exit 1. */
static void test_unreadable_files_are_damage(void **state)
{
    char *dir = test_make_temp_dir();
    char *prefix = test_path(dir, "model.ckpt-1");
    char *data = test_path(dir, "model.ckpt-1.data-00000-of-00001");
    char *index = test_path(dir, "model.ckpt-1.index");
    char *out_dir = test_path(dir, "out");
    char *dst = test_path(out_dir, "copy");
    cli_run r;
    (void)state;
    if (cli_under_memcheck()) { /* its script's logs are root's */
        test_remove_tree(dir);
        free(prefix), free(data), free(index), free(out_dir), free(dst);
        skip();
        return;
    }
    assert_int_equal(chmod(dir, 0755), 0);
    assert_int_equal(mkdir(out_dir, 0777), 0);
    assert_int_equal(chmod(out_dir, 0777), 0);
    write_simple(dir, "model.ckpt-1");
    write_text(dir, "checkpoint", "model_checkpoint_path: \"model.ckpt-1\"\n");
    assert_int_equal(chmod(index, 0644), 0);
    assert_int_equal(chmod(data, 0644), 0);
    RUN_AS_NOBODY(r, "verify", prefix);
    if (r.status != 0) { /* e.g. the build directory is closed to nobody */
        print_message("SKIPPED: cannot run the tool as nobody (exit %d): "
                      "%s\n",
                      r.status, r.err);
        run_free(&r);
        test_remove_tree(dir);
        free(prefix), free(data), free(index), free(out_dir), free(dst);
        skip();
        return;
    }
    run_free(&r);
    assert_int_equal(chmod(data, 0), 0);
    RUN_AS_NOBODY(r, "verify", prefix, "--json");
    expect_status(&r, 1);
    {
        json_object *root = parse_json(r.out);
        json_object *damaged = jget(root, "damaged");
        assert_false(json_object_get_boolean(jget(root, "ok")));
        assert_int_equal(json_object_array_length(damaged), 1);
        expect_contains(json_object_get_string(jget(
                            json_object_array_get_idx(damaged, 0), "error")),
                        "ermission denied");
        assert_int_equal(json_object_array_length(jget(root, "not_checked")),
                         0);
        json_object_put(root);
    }
    run_free(&r);
    RUN_AS_NOBODY(r, "verify", prefix);
    expect_status(&r, 1);
    expect_contains(r.out, "DAMAGED, 1 of 1 tensor");
    run_free(&r);
    RUN_AS_NOBODY(r, "inspect", prefix, "--values");
    expect_status(&r, 1);
    run_free(&r);
    RUN_AS_NOBODY(r, "repack", prefix, dst);
    expect_status(&r, 1);
    expect_contains(r.err, "ermission denied");
    run_free(&r);
    /* the index the state file names: unreadable, as a directory is */
    assert_int_equal(chmod(data, 0644), 0);
    assert_int_equal(chmod(index, 0), 0);
    RUN_AS_NOBODY(r, "verify", dir, "--json");
    expect_status(&r, 1);
    expect_contains(r.err, "model.ckpt-1) is unreadable");
    {
        json_object *root = parse_json(r.out);
        assert_false(json_object_get_boolean(jget(root, "ok")));
        expect_json_bytes(jget(root, "named_checkpoint"), "unreadable", 10);
        json_object_put(root);
    }
    run_free(&r);
    assert_int_equal(chmod(index, 0644), 0);
    test_remove_tree(dir);
    free(prefix), free(data), free(index), free(out_dir), free(dst);
}

/* A state file that is a symbolic link looping on itself: ls and the
 * library (ckpt_latest_checkpoint) fail on it, but verify, inspect, repack
 * and diff given DIR took it for no state file and read the directory's
 * only checkpoint (exit 0). Now they fail on it too, naming it. And a
 * prefix that is also a directory (m/ beside m.index) is read as the
 * directory, as TensorFlow does; the message now says how to read the
 * checkpoint it hides. */
static void test_state_file_loop_and_hidden_prefix(void **state)
{
    char *dir = test_make_temp_dir();
    char *state_path = test_path(dir, "checkpoint");
    char *m = test_path(dir, "m");
    char want[4200];
    static const char *const commands[] = {"verify", "inspect", "repack",
                                           "diff"};
    cli_run r;
    (void)state;
    write_simple(dir, "m");
    assert_int_equal(symlink("checkpoint", state_path), 0);
    for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++) {
        char *dst = test_path(dir, "copy");
        const char *args[] = {commands[i], dir, NULL, NULL};
        if (strcmp(commands[i], "repack") == 0)
            args[2] = dst;
        else if (strcmp(commands[i], "diff") == 0)
            args[2] = m;
        RUN_EXPECT_ARGV(r, &limits, 2, args);
        expect_contains(r.err, "checkpoint");
        expect_contains(r.err, "symbolic links in a loop, not a regular file");
        run_free(&r);
        free(dst);
    }
    assert_int_equal(unlink(state_path), 0);
    assert_int_equal(mkdir(m, 0755), 0);
    snprintf(want, sizeof(want),
             "%s: no checkpoint state file and no .index file; %s.index "
             "exists: give that file's name to read the checkpoint %s, "
             "which the directory of that name hides",
             m, m, m);
    RUN_EXPECT(r, &limits, 2, "verify", m);
    expect_contains(r.err, want);
    run_free(&r);
    snprintf(want, sizeof(want), "%s.index", m);
    RUN_EXPECT(r, &limits, 0, "verify", want);
    run_free(&r);
    free(state_path);
    free(m);
    test_remove_tree(dir);
}

/* inspect, diff and repack given DIR whose state file names a checkpoint
 * without an index read the newest listed one that has it, as
 * ckpt_latest_checkpoint chooses, and now say so on stderr (they used to
 * read the older one silently: a repack meant as a copy of the latest
 * copied an older step); the exit status is unchanged. */
static void test_dir_fallback_is_warned(void **state)
{
    char *dir = test_make_temp_dir();
    char *older = test_path(dir, "model.ckpt-1");
    char *named = test_path(dir, "model.ckpt-2");
    char *dst = test_path(dir, "copy");
    char want[2048];
    cli_run r;
    (void)state;
    write_named_missing(dir);
    snprintf(want, sizeof(want),
             "warning: %s/checkpoint names %s, which has no index: reading "
             "the newest listed checkpoint that has one instead, %s\n",
             dir, named, older);
    RUN_EXPECT(r, &limits, 0, "inspect", dir);
    expect_contains(r.err, "ckpt inspect: ");
    expect_contains(r.err, want);
    expect_contains(r.out, "model.ckpt-1: 1 tensor, 1 shard");
    run_free(&r);
    RUN_EXPECT(r, &limits, 0, "inspect", dir, "--json");
    expect_contains(r.err, want);
    {
        json_object *root = parse_json(r.out);
        expect_json_bytes(jget(root, "prefix"), older, strlen(older));
        assert_true(json_object_get_boolean(jget(root, "ok")));
        json_object_put(root);
    }
    run_free(&r);
    RUN_EXPECT(r, &limits, 0, "diff", dir, older);
    expect_contains(r.err, "ckpt diff: ");
    expect_contains(r.err, want);
    run_free(&r);
    RUN_EXPECT(r, &limits, 0, "repack", dir, dst);
    expect_contains(r.err, "ckpt repack: ");
    expect_contains(r.err, want);
    run_free(&r);
    /* the named one there: no warning */
    write_simple(dir, "model.ckpt-2");
    RUN_EXPECT(r, &limits, 0, "inspect", dir);
    expect_lacks(r.err, "warning");
    expect_contains(r.out, "model.ckpt-2: 1 tensor, 1 shard");
    run_free(&r);
    free(older);
    free(named);
    free(dst);
    test_remove_tree(dir);
}

/* ---- class 11: a state file naming a checkpoint outside DIR ------------ */

/* Commands resolving DIR follow a state file's path out of DIR (an
 * absolute path, "..") as TensorFlow does, but say so: a warning naming
 * the checkpoint on stderr and, for verify --json, "outside_directory"
 * (verify used to check whatever it was pointed at without a word). A path
 * into DIR, however written, is not warned about. */
static void test_dir_state_file_names_outside(void **state)
{
    char *top = test_make_temp_dir();
    char *dir = test_path(top, "d");
    char *far = test_path(top, "far-3");
    char *gone = test_path(top, "gone-5");
    char *out = test_path(top, "out");
    char text[8192];
    static const char *const relative_out[] = {"../far-3", "sub/../../far-3"};
    json_object *root;
    cli_run r;
    (void)state;
    assert_int_equal(mkdir(dir, 0755), 0);
    {
        char *sub = test_path(dir, "sub");
        assert_int_equal(mkdir(sub, 0755), 0);
        free(sub);
    }
    write_simple(top, "far-3");
    write_simple(dir, "model.ckpt-1");
    /* absolute, out of DIR: read, with the warning */
    snprintf(text, sizeof(text), "model_checkpoint_path: \"%s\"\n", far);
    write_text(dir, "checkpoint", text);
    RUN_EXPECT(r, &limits, 0, "verify", dir);
    expect_contains(r.err, "ckpt verify: warning: ");
    expect_contains(r.err, "/checkpoint names a checkpoint outside ");
    expect_contains(r.err, far);
    expect_contains(r.out, ": OK, 1 tensor");
    run_free(&r);
    RUN_EXPECT(r, &limits, 0, "verify", dir, "--json");
    expect_contains(r.err, "names a checkpoint outside ");
    root = parse_json(r.out);
    assert_true(json_object_get_boolean(jget(root, "ok")));
    assert_true(json_object_get_boolean(jget(root, "outside_directory")));
    expect_json_bytes(jget(root, "prefix"), far, strlen(far));
    json_object_put(root);
    run_free(&r);
    /* the commands that open DIR's latest checkpoint say it too, and their
     * --json documents say which input led outside */
    {
        const char *const cmds[][6] = {{"inspect", dir, "--json", NULL},
                                       {"diff", dir, far, "--json", NULL},
                                       {"diff", far, dir, "--json", NULL},
                                       {"repack", dir, out, "--json", NULL}};
        const char *const key[] = {"outside_directory", "a_outside_directory",
                                   "b_outside_directory", "outside_directory"};
        const char *const other[] = {NULL, "b_outside_directory",
                                     "a_outside_directory", NULL};
        for (size_t i = 0; i < 4; i++) {
            RUN_EXPECT_ARGV(r, &limits, 0, cmds[i]);
            expect_contains(r.err, "names a checkpoint outside ");
            expect_contains(r.err, far);
            root = parse_json(r.out);
            assert_true(json_object_get_boolean(jget(root, key[i])));
            if (other[i])
                assert_false(json_object_get_boolean(jget(root, other[i])));
            json_object_put(root);
            run_free(&r);
        }
    }
    /* relative, climbing out of DIR */
    for (size_t i = 0; i < 2; i++) {
        snprintf(text, sizeof(text), "model_checkpoint_path: \"%s\"\n",
                 relative_out[i]);
        write_text(dir, "checkpoint", text);
        RUN_EXPECT(r, &limits, 0, "verify", dir);
        expect_contains(r.err, "names a checkpoint outside ");
        expect_contains(r.err, relative_out[i]);
        run_free(&r);
    }
    /* out of DIR and missing: damage as before, the warning and the
     * failure document's detail as well */
    snprintf(text, sizeof(text),
             "model_checkpoint_path: \"%s\"\n"
             "all_model_checkpoint_paths: \"model.ckpt-1\"\n",
             gone);
    write_text(dir, "checkpoint", text);
    RUN_EXPECT(r, &limits, 1, "verify", dir, "--json");
    expect_contains(r.err, "names a checkpoint outside ");
    expect_contains(r.err, "gone-5) is missing");
    root = parse_json(r.out);
    assert_false(json_object_get_boolean(jget(root, "ok")));
    assert_true(json_object_get_boolean(jget(root, "outside_directory")));
    json_object_put(root);
    run_free(&r);
    /* into DIR: absolute (as a saver with absolute_paths writes it) or
     * through a subdirectory and back; no warning */
    {
        char *real = realpath(dir, NULL);
        const char *inside[3] = {"model.ckpt-1", "sub/../model.ckpt-1", NULL};
        char *abs_inside;
        assert_non_null(real);
        abs_inside = test_path(real, "model.ckpt-1");
        inside[2] = abs_inside;
        for (size_t i = 0; i < 3; i++) {
            snprintf(text, sizeof(text), "model_checkpoint_path: \"%s\"\n",
                     inside[i]);
            write_text(dir, "checkpoint", text);
            RUN_EXPECT(r, &limits, 0, "verify", dir, "--json");
            expect_lacks(r.err, "outside");
            root = parse_json(r.out);
            assert_false(
                json_object_get_boolean(jget(root, "outside_directory")));
            json_object_put(root);
            run_free(&r);
            RUN_EXPECT(r, &limits, 0, "inspect", dir, "--json");
            expect_lacks(r.err, "outside");
            root = parse_json(r.out);
            assert_false(
                json_object_get_boolean(jget(root, "outside_directory")));
            json_object_put(root);
            run_free(&r);
        }
        free(abs_inside);
        free(real);
    }
    free(dir);
    free(far);
    free(gone);
    free(out);
    test_remove_tree(top);
}

/* A --json run that fails once its arguments are parsed still prints one
 * JSON document on stdout ({"command", "ok": false, "error", ...}, every
 * string escaped by the one rule), with the error on stderr too; usage
 * errors print none. */
static void test_json_failures_one_document(void **state)
{
    char *dir = test_make_temp_dir();
    char *gone = test_path(dir, "gone");
    char *named_utf8 = test_path(dir, "m\x1b[1m-2\xc3\xbf");
    char *bad = test_make_temp_dir();
    struct {
        const char *args[6];
        int status;
        const char *message; /* on stderr and in "error" */
    } cases[] = {
        {{"ls", gone, "--json", NULL}, 2, "No such file or directory"},
        {{"ls", bad, "--json", NULL}, 1, "checkpoint:1:"},
        {{"inspect", bad, "--json", NULL}, 1, "checkpoint:1:"},
        {{"verify", bad, "--json", NULL}, 1, "checkpoint:1:"},
        {{"inspect", gone, "--json", NULL}, 2, "gone"},
        {{"inspect", dir, "--json", "--tensor", "nope", NULL},
         2,
         "no tensor named 'nope'"},
        {{"verify", gone, "--json", NULL}, 2, "gone"},
        {{"diff", dir, gone, "--json", NULL}, 2, "gone"},
        {{"verify", dir, "--json", NULL}, 1, "-2\\xff) is missing"},
    };
    cli_run r;
    (void)state;
    write_simple(dir, "model.ckpt-1");
    write_text(dir, "checkpoint",
               "model_checkpoint_path: \"m\\033[1m-2\\377\"\n"
               "all_model_checkpoint_paths: \"model.ckpt-1\"\n");
    write_text(bad, "checkpoint", "\x01garbage{{\n");
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        json_object *root;
        const char **a = cases[i].args;
        RUN_EXPECT_ARGV(r, &limits, cases[i].status, a);
        expect_both_safe(&r);
        expect_contains(r.err, cases[i].message);
        root = parse_json(r.out);
        expect_json_bytes(jget(root, "command"), a[0], strlen(a[0]));
        assert_false(json_object_get_boolean(jget(root, "ok")));
        if (strcmp(a[0], "verify") == 0 && a[1] == dir) {
            /* the raw bytes, not the terminal's escapes: ESC as is, the
             * byte that is not UTF-8 as U+00FF */
            expect_json_bytes(jget(root, "prefix"), named_utf8,
                              strlen(named_utf8));
            expect_contains(json_object_get_string(jget(root, "error")),
                            "-2\xc3\xbf) is missing");
        } else {
            expect_contains(json_object_get_string(jget(root, "error")),
                            cases[i].message);
        }
        json_object_put(root);
        run_free(&r);
    }
    /* a usage error: the failure document too (test_cli.c has the rest) */
    RUN_EXPECT(r, &limits, 2, "verify", dir, "--json", "--bogus");
    expect_contains(r.err, "unknown option '--bogus'");
    {
        json_object *root = parse_json(r.out);
        assert_string_equal(json_object_get_string(jget(root, "error")),
                            "unknown option '--bogus'");
        json_object_put(root);
    }
    run_free(&r);
    free(gone);
    free(named_utf8);
    test_remove_tree(bad);
    test_remove_tree(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_ls_paths_ending_in_slash_or_outside),
        cmocka_unit_test(test_ls_checkpoint_listed_twice),
        cmocka_unit_test(test_empty_state_file_paths),
        cmocka_unit_test(test_ls_many_entries_one_subdirectory),
        cmocka_unit_test(test_ls_one_directory_many_spellings),
        cmocka_unit_test(test_ls_repeated_entries_memory),
        cmocka_unit_test(test_names_escaped_in_text_output),
        cmocka_unit_test(test_text_columns_count_characters),
        cmocka_unit_test(test_names_valid_json),
        cmocka_unit_test(test_unicode_controls_escaped),
        cmocka_unit_test(test_ls_json_long_state_file_memory),
        cmocka_unit_test(test_inspect_json_many_entries_memory),
        cmocka_unit_test(test_diff_json_many_differences_memory),
        cmocka_unit_test(test_verify_json_many_damaged_memory),
        cmocka_unit_test(test_inspect_json_all_values_memory),
        cmocka_unit_test(test_repack_pathological_patterns),
        cmocka_unit_test(test_nul_in_name_is_part_of_it),
        cmocka_unit_test(test_values_of_nul_names),
        cmocka_unit_test(test_verify_variant_not_checked),
        cmocka_unit_test(test_verify_names_every_damaged_tensor),
        cmocka_unit_test(test_repack_names_partitioned_tensor),
        cmocka_unit_test(test_long_path_keeps_the_error),
        cmocka_unit_test(test_ls_directory_deeper_than_path_max),
        cmocka_unit_test(test_state_paths_no_file_can_have),
        cmocka_unit_test(test_prefix_itself_a_loop),
        cmocka_unit_test(test_damaged_state_file_same_status),
        cmocka_unit_test(test_verify_dir_checks_named_checkpoint),
        cmocka_unit_test(test_unreadable_files_are_damage),
        cmocka_unit_test(test_state_file_loop_and_hidden_prefix),
        cmocka_unit_test(test_dir_fallback_is_warned),
        cmocka_unit_test(test_dir_state_file_names_outside),
        cmocka_unit_test(test_json_failures_one_document),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
