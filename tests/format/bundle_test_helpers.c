/* tests/format/bundle_test_helpers.c - see bundle_test_helpers.h. */
#include "bundle_test_helpers.h"

#include "format/table.h"
#include "util/coding.h"
#include "util/crc32c.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static bool ends_with(const char *s, const char *suffix)
{
    size_t a = strlen(s), b = strlen(suffix);
    return a >= b && memcmp(s + a - b, suffix, b) == 0;
}

size_t bt_count_files(const char *dir, const char *suffix, const char *contains)
{
    DIR *d = opendir(dir);
    struct dirent *e;
    size_t n = 0;
    assert_non_null(d);
    while ((e = readdir(d)) != NULL) {
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
            continue;
        if (suffix && !ends_with(e->d_name, suffix))
            continue;
        if (contains && !strstr(e->d_name, contains))
            continue;
        n++;
    }
    closedir(d);
    return n;
}

void bt_list_files(const char *dir)
{
    DIR *d = opendir(dir);
    struct dirent *e;
    if (!d)
        return;
    while ((e = readdir(d)) != NULL)
        print_message("  %s\n", e->d_name);
    closedir(d);
}

void bt_write_table(const char *path, const bt_kv *kvs, size_t n)
{
    const ckpt_fs *fs = ckpt_fs_posix();
    ckpt__table_builder *t = NULL;
    ckpt_file *f = NULL;
    assert_ckpt_ok(fs->open_write(&f, path, CKPT_OPEN_TRUNC, fs->payload));
    assert_ckpt_ok(ckpt__table_builder_new(&t, fs, f, path, 0));
    for (size_t i = 0; i < n; i++)
        assert_ckpt_ok(ckpt__table_builder_add(t, kvs[i].key, kvs[i].key_len,
                                               kvs[i].value, kvs[i].value_len));
    assert_ckpt_ok(ckpt__table_builder_finish(t));
    ckpt__table_builder_free(t);
    assert_ckpt_ok(fs->close(f, fs->payload));
}

void bt_block(ckpt_buf *out, const bt_kv *kvs, size_t n)
{
    ckpt_buf restarts = CKPT_BUF_INIT;
    for (size_t i = 0; i < n; i++) {
        assert_ckpt_ok(ckpt__put_fixed32(&restarts, (uint32_t)out->size));
        assert_ckpt_ok(ckpt__put_varint32(out, 0));
        assert_ckpt_ok(ckpt__put_varint32(out, (uint32_t)kvs[i].key_len));
        assert_ckpt_ok(ckpt__put_varint32(out, (uint32_t)kvs[i].value_len));
        assert_ckpt_ok(ckpt__buf_put(out, kvs[i].key, kvs[i].key_len));
        assert_ckpt_ok(ckpt__buf_put(out, kvs[i].value, kvs[i].value_len));
    }
    if (n == 0)
        assert_ckpt_ok(ckpt__put_fixed32(&restarts, 0));
    assert_ckpt_ok(ckpt__buf_put(out, restarts.ptr, restarts.size));
    assert_ckpt_ok(ckpt__put_fixed32(out, n ? (uint32_t)n : 1));
    ckpt_buf_dispose(&restarts);
}

void bt_put_block(ckpt_buf *file, const void *block, size_t n, int type,
                  ckpt_buf *handle)
{
    uint8_t t = (uint8_t)type;
    uint32_t crc = ckpt__crc32c_extend(ckpt__crc32c(block, n), &t, 1);
    if (handle) {
        assert_ckpt_ok(ckpt__put_varint64(handle, file->size));
        assert_ckpt_ok(ckpt__put_varint64(handle, n));
    }
    assert_ckpt_ok(ckpt__buf_put(file, block, n));
    assert_ckpt_ok(ckpt__buf_put(file, &t, 1));
    assert_ckpt_ok(ckpt__put_fixed32(file, ckpt__crc32c_mask(crc)));
}

void bt_put_footer(ckpt_buf *file, const ckpt_buf *meta_handle,
                   const ckpt_buf *index_handle)
{
    static const uint8_t zeros[40];
    size_t start = file->size;
    assert_ckpt_ok(ckpt__buf_put(file, meta_handle->ptr, meta_handle->size));
    assert_ckpt_ok(ckpt__buf_put(file, index_handle->ptr, index_handle->size));
    assert_ckpt_ok(ckpt__buf_put(file, zeros, 40 - (file->size - start)));
    assert_ckpt_ok(ckpt__put_fixed64(file, CKPT__TABLE_MAGIC));
}

void bt_write_raw_table(const char *path, const bt_kv *kvs, size_t n,
                        const char *index_key)
{
    ckpt_buf file = CKPT_BUF_INIT, block = CKPT_BUF_INIT;
    ckpt_buf data_handle = CKPT_BUF_INIT, meta_handle = CKPT_BUF_INIT;
    ckpt_buf index_handle = CKPT_BUF_INIT;
    bt_kv index_entry;

    bt_block(&block, kvs, n);
    bt_put_block(&file, block.ptr, block.size, 0, &data_handle);
    ckpt__buf_clear(&block); /* an empty metaindex */
    bt_block(&block, NULL, 0);
    bt_put_block(&file, block.ptr, block.size, 0, &meta_handle);
    /* the index: one entry, index_key -> the data block */
    index_entry = (bt_kv){index_key, strlen(index_key), data_handle.ptr,
                          data_handle.size};
    ckpt__buf_clear(&block);
    bt_block(&block, &index_entry, 1);
    bt_put_block(&file, block.ptr, block.size, 0, &index_handle);
    bt_put_footer(&file, &meta_handle, &index_handle);
    test_write_file(path, file.ptr, file.size);
    ckpt_buf_dispose(&file);
    ckpt_buf_dispose(&block);
    ckpt_buf_dispose(&data_handle);
    ckpt_buf_dispose(&meta_handle);
    ckpt_buf_dispose(&index_handle);
}

void bt_header(ckpt_buf *out, int num_shards, int endianness)
{
    ckpt__bundle_header h;
    ckpt__bundle_header_init(&h, num_shards);
    h.endianness = endianness;
    ckpt__buf_clear(out);
    assert_ckpt_ok(ckpt__bundle_header_encode(out, &h));
}

void bt_entry(ckpt_buf *out, const ckpt__bundle_entry *e)
{
    ckpt__buf_clear(out);
    assert_ckpt_ok(ckpt__bundle_entry_encode(out, e));
}

ckpt__bundle_entry bt_make_entry(int dtype, int64_t dim0, int shard,
                                 int64_t offset, int64_t size, uint32_t crc)
{
    ckpt__bundle_entry e;
    memset(&e, 0, sizeof(e));
    e.dtype = dtype;
    if (dim0 >= 0) {
        e.shape.rank = 1;
        e.shape.dims[0] = dim0;
    }
    e.shard_id = shard;
    e.offset = offset;
    e.size = size;
    e.crc32c = crc;
    return e;
}

void bt_fixture_make(bt_fixture *f)
{
    f->dir = test_make_temp_dir();
    f->prefix = test_path(f->dir, "ckpt");
    f->index = test_path(f->dir, "ckpt.index");
    f->data0 = test_path(f->dir, "ckpt.data-00000-of-00001");
    f->state = test_path(f->dir, "checkpoint");
}

void bt_fixture_remove(bt_fixture *f)
{
    free(f->prefix);
    free(f->index);
    free(f->data0);
    free(f->state);
    test_remove_tree(f->dir);
}

int bt_setup(void **state)
{
    bt_fixture *f = calloc(1, sizeof(*f));
    assert_non_null(f);
    bt_fixture_make(f);
    *state = f;
    return 0;
}

int bt_teardown(void **state)
{
    bt_fixture *f = *state;
    bt_fixture_remove(f);
    free(f);
    return 0;
}

ckpt_shape bt_shape(int rank, const int64_t *dims)
{
    ckpt_shape s;
    memset(&s, 0, sizeof(s));
    s.rank = rank;
    for (int i = 0; i < rank; i++)
        s.dims[i] = dims[i];
    return s;
}

#ifdef CKPT_LEVELDB_DUMP
static void put_hex(ckpt_buf *out, const uint8_t *p, size_t n)
{
    static const char hex[] = "0123456789abcdef";
    if (n == 0)
        assert_ckpt_ok(ckpt__buf_puts(out, "-"));
    for (size_t i = 0; i < n; i++) {
        char h[2] = {hex[p[i] >> 4], hex[p[i] & 15]};
        assert_ckpt_ok(ckpt__buf_put(out, h, 2));
    }
}

static int hex_line(const uint8_t *key, size_t key_len, const uint8_t *value,
                    size_t value_len, void *payload)
{
    ckpt_buf *out = payload;
    put_hex(out, key, key_len);
    assert_ckpt_ok(ckpt__buf_puts(out, " "));
    put_hex(out, value, value_len);
    assert_ckpt_ok(ckpt__buf_puts(out, "\n"));
    return 0;
}

void bt_expect_leveldb_reads_same(const char *index, ckpt_buf *ours)
{
    ckpt_buf theirs = CKPT_BUF_INIT;
    char cmd[4096];
    char line[65536];
    uint8_t *data;
    size_t n;
    FILE *p;
    data = test_read_file(index, &n);
    assert_non_null(data);
    assert_ckpt_ok(ckpt__table_iterate(data, n, index, hex_line, ours));
    free(data);
    snprintf(cmd, sizeof(cmd), "'%s' '%s'", CKPT_LEVELDB_DUMP, index);
    p = popen(cmd, "r");
    assert_non_null(p);
    while (fgets(line, sizeof(line), p))
        assert_ckpt_ok(ckpt__buf_puts(&theirs, line));
    assert_int_equal(pclose(p), 0);
    assert_int_equal(theirs.size, ours->size);
    assert_memory_equal(theirs.ptr, ours->ptr, ours->size);
    ckpt_buf_dispose(&theirs);
}
#endif
