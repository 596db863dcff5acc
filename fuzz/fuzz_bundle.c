/* fuzz/fuzz_bundle.c - fuzz target for the bundle reader (ckpt/bundle.h),
 * index and data together, through the in-memory file system.
 *
 *   input:  flags[1] | index_len[4, little-endian] | index | data
 *           flags bit 0: open with skip_data_checksums
 *           flags bit 1: keep the index's block checksums as they are
 *                        (otherwise they are repaired first, see
 *                        ckpt_fuzz_fix_table_crcs)
 *           index_len is cut to what the input holds; the rest is data
 *   files:  /fz/b.index = index, every /fz/b.data-* = data
 *
 * Then: open; every entry looked up by name (when the name has no 0 byte);
 * verify; every record read raw; every fixed-size tensor read (when the
 * data could hold it) and every string tensor read; every fixed-size
 * tensor (partitioned ones too) read again in one read_many. Checks: error
 * codes stay within what each call documents and set the last error; find()
 * returns the entry it was given the name of; read() and read_record()
 * agree (same success, same bytes up to the byte swap); read_many
 * succeeds exactly when each read() alone does, with the same bytes; a bundle
 * that verifies reads every record; string elements lie in their record; no
 * file left open; no allocation above the cap; no leak. */
#include "fuzz.h"

#include "ckpt/bundle.h"
#include "common/internal.h"

#include <stdlib.h>
#include <string.h>

#define PREFIX "/fz/b"
#define HEADER_BYTES 5

static void check_error(int rc)
{
    CKPT_FUZZ_CHECK(rc < 0);
    CKPT_FUZZ_CHECK(ckpt_error_last()->code == rc);
    CKPT_FUZZ_CHECK(ckpt_error_last()->message[0] != '\0');
}

/* Whether `a` equals `b` with every `width`-byte word reversed. */
static int equal_swapped(const uint8_t *a, const uint8_t *b, size_t n,
                         size_t width)
{
    if (width < 2 || n % width != 0)
        return 0;
    for (size_t i = 0; i < n; i += width)
        for (size_t j = 0; j < width; j++)
            if (a[i + j] != b[i + width - 1 - j])
                return 0;
    return 1;
}

static size_t swap_width(int dtype)
{
    if (dtype == CKPT_DT_COMPLEX64)
        return 4;
    if (dtype == CKPT_DT_COMPLEX128)
        return 8;
    return ckpt_dtype_size(dtype);
}

static void read_fixed(ckpt_bundle_reader *r, const ckpt_tensor_entry *e,
                       const ckpt_buf *raw, int raw_rc, size_t data_size)
{
    uint8_t *dst;
    int rc;
    if ((uint64_t)e->size > data_size)
        return; /* cannot lie in the data part: read_record said so */
    dst = malloc(e->size ? (size_t)e->size : 1);
    CKPT_FUZZ_CHECK(dst != NULL);
    rc = ckpt_bundle_reader_read(r, e->name, dst, (size_t)e->size);
    if (rc != 0) {
        check_error(rc);
        CKPT_FUZZ_CHECK(rc == CKPT_ECORRUPT);
        CKPT_FUZZ_CHECK(raw_rc != 0);
    } else {
        CKPT_FUZZ_CHECK(raw_rc == 0);
        CKPT_FUZZ_CHECK(raw->size == (size_t)e->size);
        if (e->dtype == CKPT_DT_BOOL) /* read as C's bool: 0 or 1 */
            for (size_t i = 0; i < raw->size; i++)
                CKPT_FUZZ_CHECK(dst[i] ==
                                (((const uint8_t *)raw->ptr)[i] != 0));
        else
            CKPT_FUZZ_CHECK(raw->size == 0 ||
                            memcmp(dst, raw->ptr, raw->size) == 0 ||
                            equal_swapped(dst, (const uint8_t *)raw->ptr,
                                          raw->size, swap_width(e->dtype)));
    }
    free(dst);
}

static void read_strings(ckpt_bundle_reader *r, const ckpt_tensor_entry *e,
                         int raw_rc, int skip_crc)
{
    ckpt_string_array a;
    int64_t count = 0;
    int rc = ckpt_bundle_reader_read_strings(r, e->name, &a);
    if (rc != 0) {
        check_error(rc);
        CKPT_FUZZ_CHECK(rc == CKPT_ECORRUPT);
        CKPT_FUZZ_CHECK(a.strings == NULL && a.count == 0);
        /* without checksums, read_record does not look at the layout */
        CKPT_FUZZ_CHECK(skip_crc || raw_rc != 0);
        return;
    }
    CKPT_FUZZ_CHECK(raw_rc == 0);
    CKPT_FUZZ_CHECK(ckpt_shape_num_elements(&count, &e->shape) == 0);
    /* an empty record is an empty tensor; otherwise one per element */
    CKPT_FUZZ_CHECK(a.count == 0 ? (e->size == 0 || count == 0)
                                 : a.count == (uint64_t)count);
    for (size_t i = 0; i < a.count; i++) {
        CKPT_FUZZ_CHECK(a.strings[i].len <= (size_t)e->size);
        if (a.strings[i].len > 0)
            ckpt_fuzz_touch(a.strings[i].ptr, a.strings[i].len);
    }
    ckpt_string_array_dispose(&a);
}

static void read_all(ckpt_bundle_reader *r, size_t data_size, int skip_crc)
{
    size_t count = ckpt_bundle_reader_count(r);
    ckpt_buf raw = CKPT_BUF_INIT;
    int verify_rc = ckpt_bundle_reader_verify(r);

    if (verify_rc != 0) {
        check_error(verify_rc);
        CKPT_FUZZ_CHECK(verify_rc == CKPT_ECORRUPT);
    }
    CKPT_FUZZ_CHECK(ckpt_bundle_reader_entry(r, count) == NULL);
    {
        ckpt_tensor_entry past;
        CKPT_FUZZ_CHECK(ckpt_bundle_reader_entry_fill(&past, r, count) ==
                        CKPT_EINVAL);
        ckpt_error_clear();
    }
    for (size_t i = 0; i < count; i++) {
        const ckpt_tensor_entry *e = ckpt_bundle_reader_entry(r, i);
        const ckpt_tensor_entry *found = NULL;
        int plain_name, raw_rc, rc;

        ckpt_tensor_entry filled;

        CKPT_FUZZ_CHECK(e != NULL && e->name != NULL);
        ckpt_fuzz_touch(e->name, e->name_len + 1);
        /* the caller-owned form is the same entry, and the reader's own */
        CKPT_FUZZ_CHECK(ckpt_bundle_reader_entry_fill(&filled, r, i) == 0);
        CKPT_FUZZ_CHECK(
            filled.name == e->name && filled.name_len == e->name_len &&
            filled.dtype == e->dtype && filled.shape.rank == e->shape.rank &&
            filled.shard_id == e->shard_id && filled.offset == e->offset &&
            filled.size == e->size && filled.crc32c == e->crc32c &&
            filled.num_slices == e->num_slices &&
            filled.is_slice_key == e->is_slice_key);
        plain_name = strlen(e->name) == e->name_len;
        if (plain_name) {
            rc = ckpt_bundle_reader_find(&found, r, e->name);
            CKPT_FUZZ_CHECK(rc == 0 && found == e);
        }
        ckpt__buf_clear(&raw);
        raw_rc = ckpt_bundle_reader_read_record(r, e, &raw);
        if (raw_rc != 0) {
            check_error(raw_rc);
            CKPT_FUZZ_CHECK(raw_rc == CKPT_ECORRUPT ||
                            (raw_rc == CKPT_ENOTSUP && e->num_slices > 0));
            CKPT_FUZZ_CHECK(verify_rc != 0 || e->num_slices > 0);
        } else {
            CKPT_FUZZ_CHECK(raw.size == (size_t)e->size);
            ckpt_fuzz_touch(raw.ptr, raw.size);
        }
        if (!plain_name || e->num_slices > 0)
            continue;
        if (e->dtype == CKPT_DT_STRING)
            read_strings(r, e, raw_rc, skip_crc);
        else if (ckpt_dtype_size(e->dtype) > 0)
            read_fixed(r, e, &raw, raw_rc, data_size);
    }
    ckpt_buf_dispose(&raw);
}

/* Largest tensor read_many is asked for (a partitioned one is sized by
 * its shape, which the files need not back). */
#define MANY_MAX_BYTES ((uint64_t)1 << 24)

/* Every fixed-size tensor with a plain name in one read_many: it succeeds
 * exactly when each read alone succeeds, with the same bytes; on failure
 * the error is one read_many documents. */
static void read_many_all(ckpt_bundle_reader *r)
{
    size_t count = ckpt_bundle_reader_count(r), n = 0;
    ckpt_read_request *reqs = calloc(count ? count : 1, sizeof(*reqs));
    int all_ok = 1, rc;
    CKPT_FUZZ_CHECK(reqs != NULL);
    for (size_t i = 0; i < count; i++) {
        const ckpt_tensor_entry *e = ckpt_bundle_reader_entry(r, i);
        int64_t bytes = 0;
        if (strlen(e->name) != e->name_len || e->dtype == CKPT_DT_STRING ||
            ckpt_dtype_size(e->dtype) == 0 ||
            ckpt_tensor_byte_size(&bytes, e->dtype, &e->shape) < 0 ||
            (uint64_t)bytes > MANY_MAX_BYTES)
            continue;
        reqs[n].name = e->name;
        reqs[n].dst_size = (size_t)bytes;
        reqs[n].dst = calloc(bytes ? (size_t)bytes : 1, 1);
        CKPT_FUZZ_CHECK(reqs[n].dst != NULL);
        n++;
    }
    rc = ckpt_bundle_reader_read_many(r, reqs, n);
    if (rc != 0)
        check_error(rc);
    for (size_t i = 0; i < n; i++) {
        size_t sz = reqs[i].dst_size;
        uint8_t *one = calloc(sz ? sz : 1, 1);
        int one_rc;
        CKPT_FUZZ_CHECK(one != NULL);
        one_rc = ckpt_bundle_reader_read(r, reqs[i].name, one, sz);
        all_ok = all_ok && one_rc == 0;
        if (rc == 0)
            CKPT_FUZZ_CHECK(one_rc == 0 &&
                            (sz == 0 || memcmp(one, reqs[i].dst, sz) == 0));
        free(one);
        free(reqs[i].dst);
    }
    CKPT_FUZZ_CHECK((rc == 0) == all_ok);
    free(reqs);
}

int ckpt_fuzz_bundle(const uint8_t *data, size_t size)
{
    ckpt_bundle_reader_options opts = CKPT_BUNDLE_READER_OPTIONS_INIT;
    ckpt_bundle_reader *r = NULL;
    ckpt_fuzz_mem_fs mem;
    ckpt_fuzz_split in;
    int skip_crc, rc;

    if (size < HEADER_BYTES)
        return 0;
    ckpt_fuzz_begin();
    skip_crc = data[0] & 1;
    ckpt_fuzz_split_index(&in, data, size, HEADER_BYTES, 1, !(data[0] & 2));

    ckpt_fuzz_mem_fs_init(&mem);
    ckpt_fuzz_mem_fs_add(&mem, PREFIX ".index", in.index, in.index_len, 0);
    ckpt_fuzz_mem_fs_add(&mem, PREFIX ".data-", in.rest, in.rest_len, 1);
    opts.fs = &mem.fs;
    opts.skip_data_checksums = skip_crc;
    rc = ckpt_bundle_reader_open(&r, PREFIX, &opts);
    if (rc != 0) {
        check_error(rc);
        CKPT_FUZZ_CHECK(rc == CKPT_ECORRUPT || rc == CKPT_EVERSION);
        CKPT_FUZZ_CHECK(r == NULL);
    } else {
        CKPT_FUZZ_CHECK(ckpt_bundle_reader_num_shards(r) >= 1);
        read_all(r, in.rest_len, skip_crc);
        read_many_all(r);
        ckpt_bundle_reader_free(r);
    }
    CKPT_FUZZ_CHECK(mem.open_files == 0);
    free(in.owned);
    ckpt_fuzz_end("bundle");
    return 0;
}
