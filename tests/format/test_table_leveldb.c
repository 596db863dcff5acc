/* LevelDB as an independent checker of format/table: tables written by our
 * builder are opened by LevelDB's own reader (checksums verified) through
 * tests/format/leveldb_table_dump and every key/value compared; tables
 * written by LevelDB's builder with TensorFlow's settings must be
 * byte-identical to ours. Skips when LevelDB was not found at build time. */
#include "test_util.h"

#include "common/internal.h"
#include "format/table.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifdef CKPT_LEVELDB_DUMP

struct ckpt_file {
    ckpt_buf data;
};

static int mem_write(ckpt_file *f, const void *buf, size_t n, void *payload)
{
    (void)payload;
    return ckpt__buf_put(&f->data, buf, n);
}

static const ckpt_fs mem_fs = {.version = CKPT_FS_VERSION, .write = mem_write};

/* A list of entries, kept as the dump's text form as well. */
typedef struct table_spec {
    ckpt_buf keys;   /* concatenated keys */
    ckpt_buf values; /* concatenated values */
    size_t *klen, *vlen;
    size_t n, cap;
    ckpt_buf text; /* "<hexkey> <hexvalue>\n" per entry */
} table_spec;

static void put_hex(ckpt_buf *b, const char *p, size_t n)
{
    if (n == 0) {
        assert_ckpt_ok(ckpt__buf_puts(b, "-"));
        return;
    }
    for (size_t i = 0; i < n; i++)
        assert_ckpt_ok(ckpt__buf_printf(b, "%02x", (unsigned)(uint8_t)p[i]));
}

static void spec_add(table_spec *s, const void *k, size_t kn, const void *v,
                     size_t vn)
{
    if (s->n == s->cap) {
        s->cap = s->cap ? 2 * s->cap : 64;
        s->klen = realloc(s->klen, s->cap * sizeof(size_t));
        s->vlen = realloc(s->vlen, s->cap * sizeof(size_t));
        assert_non_null(s->klen);
        assert_non_null(s->vlen);
    }
    s->klen[s->n] = kn;
    s->vlen[s->n] = vn;
    s->n++;
    assert_ckpt_ok(ckpt__buf_put(&s->keys, k, kn));
    assert_ckpt_ok(ckpt__buf_put(&s->values, v, vn));
    put_hex(&s->text, k, kn);
    assert_ckpt_ok(ckpt__buf_puts(&s->text, " "));
    put_hex(&s->text, v, vn);
    assert_ckpt_ok(ckpt__buf_puts(&s->text, "\n"));
}

static void spec_free(table_spec *s)
{
    ckpt_buf_dispose(&s->keys);
    ckpt_buf_dispose(&s->values);
    ckpt_buf_dispose(&s->text);
    free(s->klen);
    free(s->vlen);
    memset(s, 0, sizeof(*s));
}

static void build_ours(ckpt_buf *out, const table_spec *s)
{
    struct ckpt_file f = {CKPT_BUF_INIT};
    ckpt__table_builder *t = NULL;
    size_t ko = 0, vo = 0;
    assert_ckpt_ok(ckpt__table_builder_new(&t, &mem_fs, &f, "ours.index", 0));
    for (size_t i = 0; i < s->n; i++) {
        assert_ckpt_ok(ckpt__table_builder_add(t, s->keys.ptr + ko, s->klen[i],
                                               s->values.ptr + vo, s->vlen[i]));
        ko += s->klen[i];
        vo += s->vlen[i];
    }
    assert_ckpt_ok(ckpt__table_builder_finish(t));
    ckpt__table_builder_free(t);
    *out = f.data;
}

/* Run the dump on `path`; returns its exit status, output in `out`. */
static int run_dump(const char *path, ckpt_buf *out)
{
    char cmd[8192];
    char chunk[65536];
    FILE *p;
    size_t n;
    int status;
    snprintf(cmd, sizeof(cmd), "'%s' '%s' 2>/dev/null", CKPT_LEVELDB_DUMP,
             path);
    p = popen(cmd, "r");
    assert_non_null(p);
    ckpt__buf_clear(out);
    while ((n = fread(chunk, 1, sizeof(chunk), p)) > 0)
        assert_ckpt_ok(ckpt__buf_put(out, chunk, n));
    status = pclose(p);
    return status;
}

/* Build `s` with LevelDB's TableBuilder into `path`. */
static void run_build(const char *path, const table_spec *s)
{
    char cmd[8192];
    FILE *p;
    snprintf(cmd, sizeof(cmd), "'%s' --build '%s'", CKPT_LEVELDB_DUMP, path);
    p = popen(cmd, "w");
    assert_non_null(p);
    if (s->text.size)
        assert_int_equal(fwrite(s->text.ptr, 1, s->text.size, p), s->text.size);
    assert_int_equal(pclose(p), 0);
}

/* Write our table of `s`, have LevelDB read it back, and (when
 * `same_bytes`) have LevelDB build the same entries: identical files. */
static void check_spec(const table_spec *s, bool same_bytes)
{
    char *dir = test_make_temp_dir();
    char ours_path[4096], theirs_path[4096];
    ckpt_buf ours, dump = CKPT_BUF_INIT;
    snprintf(ours_path, sizeof(ours_path), "%s/ours.index", dir);
    snprintf(theirs_path, sizeof(theirs_path), "%s/leveldb.index", dir);
    build_ours(&ours, s);
    test_write_file(ours_path, ours.ptr, ours.size);
    assert_int_equal(run_dump(ours_path, &dump), 0);
    assert_int_equal(dump.size, s->text.size);
    if (s->text.size)
        assert_memory_equal(dump.ptr, s->text.ptr, s->text.size);
    if (same_bytes) {
        size_t n = 0;
        uint8_t *theirs;
        run_build(theirs_path, s);
        theirs = test_read_file(theirs_path, &n);
        assert_non_null(theirs);
        assert_int_equal(n, ours.size);
        assert_memory_equal(theirs, ours.ptr, n);
        free(theirs);
    }
    ckpt_buf_dispose(&ours);
    ckpt_buf_dispose(&dump);
    test_remove_tree(dir);
}

static void test_example_and_empty(void **state)
{
    table_spec s = {0};
    (void)state;
    check_spec(&s, true); /* empty table */
    spec_add(&s, "", 0, "\x08\x01\x1a\x02\x08\x01", 6);
    spec_add(&s, "x", 1,
             "\x08\x01\x12\x08\x12\x02\x08\x02\x12\x02\x08\x03\x28\x18\x35"
             "\x7a\xeb\xf5\xab",
             19);
    check_spec(&s, true);
    spec_free(&s);
}

static void test_multi_block(void **state)
{
    table_spec s = {0};
    char val[200];
    (void)state;
    spec_add(&s, "", 0, "\x08\x04\x1a\x02\x08\x01", 6);
    /* sorted keys with shared prefixes and varying gaps */
    for (size_t i = 0; i < 7000; i++) {
        char key[64];
        size_t vn = 20 + i % 150;
        snprintf(key, sizeof(key), "model/layer-%05zu/%s", i * 13 + (i % 5),
                 (i % 2) ? "bias" : "kernel");
        for (size_t k = 0; k < vn; k++)
            val[k] = (char)(i * 31 + k);
        spec_add(&s, key, strlen(key), val, vn);
    }
    assert_true(s.values.size > 2 * CKPT__TABLE_BLOCK_SIZE);
    check_spec(&s, true);
    spec_free(&s);
}

static void test_binary_keys(void **state)
{
    table_spec s = {0};
    char key[8];
    (void)state;
    spec_add(&s, "", 0, "", 0);
    /* every two-byte key 00 00 .. ff ff stepping through both bytes */
    for (unsigned a = 0; a < 256; a += 5) {
        for (unsigned b = 0; b < 256; b += 51) {
            key[0] = (char)a;
            key[1] = (char)b;
            spec_add(&s, key, 2, key, (a + b) % 3);
        }
    }
    key[0] = (char)0xff;
    key[1] = (char)0xff;
    key[2] = (char)0xff;
    spec_add(&s, key, 3, "end", 3);
    check_spec(&s, true);
    spec_free(&s);
}

/* TensorFlow's oversize rule makes our layout differ from LevelDB's, but
 * LevelDB must still read every entry. */
static void test_oversize_entry_reads(void **state)
{
    table_spec s = {0};
    size_t big = 2 * CKPT__TABLE_BLOCK_SIZE + 10;
    char *v = malloc(big);
    (void)state;
    assert_non_null(v);
    memset(v, 0x5a, big);
    spec_add(&s, "a", 1, "1", 1);
    spec_add(&s, "b", 1, v, big);
    spec_add(&s, "c", 1, "3", 1);
    check_spec(&s, false);
    spec_free(&s);
    free(v);
}

/* The checker itself rejects a damaged table (so its "ok" means something). */
static void test_leveldb_rejects_damage(void **state)
{
    table_spec s = {0};
    char *dir = test_make_temp_dir();
    char path[4096];
    ckpt_buf ours, dump = CKPT_BUF_INIT;
    (void)state;
    spec_add(&s, "k1", 2, "v1", 2);
    spec_add(&s, "k2", 2, "v2", 2);
    build_ours(&ours, &s);
    ours.ptr[3] ^= 1; /* inside the data block */
    snprintf(path, sizeof(path), "%s/bad.index", dir);
    test_write_file(path, ours.ptr, ours.size);
    assert_int_not_equal(run_dump(path, &dump), 0);
    ckpt_buf_dispose(&ours);
    ckpt_buf_dispose(&dump);
    spec_free(&s);
    test_remove_tree(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_example_and_empty),
        cmocka_unit_test(test_multi_block),
        cmocka_unit_test(test_binary_keys),
        cmocka_unit_test(test_oversize_entry_reads),
        cmocka_unit_test(test_leveldb_rejects_damage),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

#else /* no LevelDB */

static void test_skipped(void **state)
{
    (void)state;
    print_message("SKIPPED: LevelDB was not found at build time\n");
    skip();
}

int main(void)
{
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_skipped)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}

#endif
