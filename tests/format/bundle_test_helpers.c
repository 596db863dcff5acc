/* tests/format/bundle_test_helpers.c - see bundle_test_helpers.h. */
#include "bundle_test_helpers.h"

#include "format/table.h"
#include "util/coding.h"
#include "util/crc32c.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

char *bt_path(const char *dir, const char *name)
{
    size_t n = strlen(dir) + strlen(name) + 2;
    char *p = malloc(n);
    assert_non_null(p);
    snprintf(p, n, "%s/%s", dir, name);
    return p;
}

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

/* block bytes + trailer (type 0, masked CRC of block || type) */
static void put_block(ckpt_buf *file, const ckpt_buf *block)
{
    uint8_t type = 0;
    uint32_t crc =
        ckpt__crc32c_extend(ckpt__crc32c(block->ptr, block->size), &type, 1);
    assert_ckpt_ok(ckpt__buf_put(file, block->ptr, block->size));
    assert_ckpt_ok(ckpt__buf_put(file, &type, 1));
    assert_ckpt_ok(ckpt__put_fixed32(file, ckpt__crc32c_mask(crc)));
}

void bt_write_raw_table(const char *path, const bt_kv *kvs, size_t n,
                        const char *index_key)
{
    ckpt_buf file = CKPT_BUF_INIT;
    ckpt_buf block = CKPT_BUF_INIT;
    ckpt_buf restarts = CKPT_BUF_INIT;
    ckpt_buf footer = CKPT_BUF_INIT;
    ckpt_buf handle = CKPT_BUF_INIT;
    uint64_t meta_off, meta_size, index_off, index_size;
    size_t klen = strlen(index_key);

    for (size_t i = 0; i < n; i++) {
        assert_ckpt_ok(ckpt__put_fixed32(&restarts, (uint32_t)block.size));
        assert_ckpt_ok(ckpt__put_varint32(&block, 0));
        assert_ckpt_ok(ckpt__put_varint32(&block, (uint32_t)kvs[i].key_len));
        assert_ckpt_ok(ckpt__put_varint32(&block, (uint32_t)kvs[i].value_len));
        assert_ckpt_ok(ckpt__buf_put(&block, kvs[i].key, kvs[i].key_len));
        assert_ckpt_ok(ckpt__buf_put(&block, kvs[i].value, kvs[i].value_len));
    }
    if (n == 0)
        assert_ckpt_ok(ckpt__put_fixed32(&restarts, 0));
    assert_ckpt_ok(ckpt__buf_put(&block, restarts.ptr, restarts.size));
    assert_ckpt_ok(ckpt__put_fixed32(&block, n ? (uint32_t)n : 1));
    uint64_t data_size = block.size;
    put_block(&file, &block);

    /* empty metaindex */
    ckpt__buf_clear(&block);
    assert_ckpt_ok(ckpt__put_fixed32(&block, 0));
    assert_ckpt_ok(ckpt__put_fixed32(&block, 1));
    meta_off = file.size;
    meta_size = block.size;
    put_block(&file, &block);

    /* index: one entry, index_key -> handle(0, data_size) */
    ckpt__buf_clear(&block);
    assert_ckpt_ok(ckpt__put_varint64(&handle, 0));
    assert_ckpt_ok(ckpt__put_varint64(&handle, data_size));
    assert_ckpt_ok(ckpt__put_varint32(&block, 0));
    assert_ckpt_ok(ckpt__put_varint32(&block, (uint32_t)klen));
    assert_ckpt_ok(ckpt__put_varint32(&block, (uint32_t)handle.size));
    assert_ckpt_ok(ckpt__buf_put(&block, index_key, klen));
    assert_ckpt_ok(ckpt__buf_put(&block, handle.ptr, handle.size));
    assert_ckpt_ok(ckpt__put_fixed32(&block, 0));
    assert_ckpt_ok(ckpt__put_fixed32(&block, 1));
    index_off = file.size;
    index_size = block.size;
    put_block(&file, &block);

    assert_ckpt_ok(ckpt__put_varint64(&footer, meta_off));
    assert_ckpt_ok(ckpt__put_varint64(&footer, meta_size));
    assert_ckpt_ok(ckpt__put_varint64(&footer, index_off));
    assert_ckpt_ok(ckpt__put_varint64(&footer, index_size));
    while (footer.size < 40)
        assert_ckpt_ok(ckpt__buf_put(&footer, "", 1));
    assert_ckpt_ok(ckpt__put_fixed64(&footer, CKPT__TABLE_MAGIC));
    assert_ckpt_ok(ckpt__buf_put(&file, footer.ptr, footer.size));
    test_write_file(path, file.ptr, file.size);
    ckpt_buf_dispose(&file);
    ckpt_buf_dispose(&block);
    ckpt_buf_dispose(&restarts);
    ckpt_buf_dispose(&footer);
    ckpt_buf_dispose(&handle);
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

int bt_setup(void **state)
{
    bt_fixture *f = calloc(1, sizeof(*f));
    assert_non_null(f);
    f->dir = test_make_temp_dir();
    f->prefix = bt_path(f->dir, "ckpt");
    *state = f;
    return 0;
}

int bt_teardown(void **state)
{
    bt_fixture *f = *state;
    free(f->prefix);
    test_remove_tree(f->dir);
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
