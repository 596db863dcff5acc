/* tests/format/hostile_bytes.c - byte-level bundle files and bounded runs
 * for the hostile-input tests (see hostile_bytes.h). */
#include "hostile_bytes.h"

#include "bundle_test_helpers.h"
#include "format/bundle_slices.h"

#include "common/internal.h"
#include "format/string_record.h"
#include "test_util.h"
#include "util/coding.h"
#include "util/crc32c.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <snappy-c.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static void put(ckpt_buf *b, const void *p, size_t n)
{
    assert_int_equal(ckpt__buf_put(b, p, n), 0);
}

void hb_varint(ckpt_buf *b, uint64_t v)
{
    uint8_t tmp[10];
    size_t n = 0;
    while (v >= 0x80) {
        tmp[n++] = (uint8_t)(v | 0x80);
        v >>= 7;
    }
    tmp[n++] = (uint8_t)v;
    put(b, tmp, n);
}

void hb_fixed32(ckpt_buf *b, uint32_t v)
{
    uint8_t t[4];
    for (int i = 0; i < 4; i++)
        t[i] = (uint8_t)(v >> (8 * i));
    put(b, t, 4);
}

void hb_fixed64(ckpt_buf *b, uint64_t v)
{
    uint8_t t[8];
    for (int i = 0; i < 8; i++)
        t[i] = (uint8_t)(v >> (8 * i));
    put(b, t, 8);
}

/* Field `number` of wire type 2 holding `msg`. */
static void put_message(ckpt_buf *b, int number, const ckpt_buf *msg)
{
    hb_varint(b, (uint64_t)number << 3 | 2);
    hb_varint(b, msg->size);
    put(b, msg->ptr, msg->size);
}

static void put_varint_field(ckpt_buf *b, int number, uint64_t v)
{
    hb_varint(b, (uint64_t)number << 3);
    hb_varint(b, v);
}

void hb_header(ckpt_buf *out, int num_shards)
{
    put_varint_field(out, 1, (uint64_t)num_shards);
}

void hb_entry(ckpt_buf *out, int dtype, const int64_t *dims, int rank,
              int64_t offset, int64_t size, uint32_t crc,
              const int64_t *slice_lengths)
{
    ckpt_buf shape = CKPT_BUF_INIT, dim = CKPT_BUF_INIT;
    put_varint_field(out, 1, (uint64_t)dtype);
    for (int d = 0; d < rank; d++) {
        ckpt__buf_clear(&dim);
        put_varint_field(&dim, 1, (uint64_t)dims[d]);
        put_message(&shape, 2, &dim);
    }
    put_message(out, 2, &shape);
    if (!slice_lengths) {
        if (offset)
            put_varint_field(out, 4, (uint64_t)offset);
        if (size)
            put_varint_field(out, 5, (uint64_t)size);
        hb_varint(out, 6 << 3 | 5);
        hb_fixed32(out, crc);
    } else {
        ckpt_buf slice = CKPT_BUF_INIT, extent = CKPT_BUF_INIT;
        for (int d = 0; d < rank; d++) {
            ckpt__buf_clear(&extent);
            put_varint_field(&extent, 2, (uint64_t)slice_lengths[d]);
            put_message(&slice, 1, &extent);
        }
        put_message(out, 7, &slice);
        ckpt_buf_dispose(&slice);
        ckpt_buf_dispose(&extent);
    }
    ckpt_buf_dispose(&shape);
    ckpt_buf_dispose(&dim);
}

void hb_write_repeated_handles(const char *path, const void *block,
                               size_t block_len, int type, size_t n)
{
    ckpt_buf file = CKPT_BUF_INIT, handle = CKPT_BUF_INIT;
    ckpt_buf meta = CKPT_BUF_INIT, mh = CKPT_BUF_INIT, ih = CKPT_BUF_INIT;
    ckpt_buf index = CKPT_BUF_INIT;
    char(*keys)[32] = calloc(n, sizeof(*keys));
    bt_kv *kvs = calloc(n, sizeof(*kvs));
    assert_true(keys && kvs);
    bt_put_block(&file, block, block_len, type, &handle);
    for (size_t i = 0; i < n; i++) {
        snprintf(keys[i], sizeof(keys[i]), "k%08zu", i);
        kvs[i] = (bt_kv){keys[i], strlen(keys[i]), handle.ptr, handle.size};
    }
    bt_block(&meta, NULL, 0);
    bt_put_block(&file, meta.ptr, meta.size, 0, &mh);
    bt_block(&index, kvs, n);
    bt_put_block(&file, index.ptr, index.size, 0, &ih);
    bt_put_footer(&file, &mh, &ih);
    test_write_file(path, file.ptr, file.size);
    free(keys);
    free(kvs);
    ckpt_buf_dispose(&file);
    ckpt_buf_dispose(&handle);
    ckpt_buf_dispose(&meta);
    ckpt_buf_dispose(&mh);
    ckpt_buf_dispose(&ih);
    ckpt_buf_dispose(&index);
}

uint8_t *hb_restart_flood(size_t *n)
{
    const size_t size = (size_t)1 << 20;
    uint8_t *b = calloc(1, size);
    uint32_t count = (uint32_t)(size / 4 - 1);
    assert_non_null(b);
    for (int i = 0; i < 4; i++)
        b[size - 4 + (size_t)i] = (uint8_t)(count >> (8 * i));
    *n = size;
    return b;
}

uint8_t *hb_restart_flood_snappy(size_t *n)
{
    size_t len;
    uint8_t *block = hb_restart_flood(&len);
    size_t clen = snappy_max_compressed_length(len);
    char *packed = malloc(clen);
    assert_non_null(packed);
    assert_int_equal(snappy_compress((const char *)block, len, packed, &clen),
                     SNAPPY_OK);
    assert_true(clen < 100000);
    free(block);
    *n = clen;
    return (uint8_t *)packed;
}

void hb_write_index(const char *path, const char *const *names,
                    const ckpt_buf *entries, size_t n)
{
    bt_kv *kvs = calloc(n + 1, sizeof(*kvs));
    ckpt_buf header = CKPT_BUF_INIT;
    assert_non_null(kvs);
    hb_header(&header, 1);
    kvs[0] = (bt_kv){"", 0, header.ptr, header.size};
    for (size_t i = 0; i < n; i++)
        kvs[i + 1] = (bt_kv){names[i], strlen(names[i]), entries[i].ptr,
                             entries[i].size};
    /* "\xff" sorts after every name the tests use */
    bt_write_raw_table(path, kvs, n + 1, "\xff");
    ckpt_buf_dispose(&header);
    free(kvs);
}

void hb_write_partitioned(const char *index, const char *data,
                          const int64_t *dims, const int64_t *lengths, int rank,
                          uint64_t piece_bytes)
{
    ckpt_buf full = CKPT_BUF_INIT, piece = CKPT_BUF_INIT, key = CKPT_BUF_INIT;
    ckpt_buf header = CKPT_BUF_INIT;
    ckpt__tensor_slice s;
    bt_kv kvs[3];
    memset(&s, 0, sizeof(s));
    s.rank = rank;
    for (int d = 0; d < rank; d++)
        s.length[d] = lengths[d];
    assert_int_equal(ckpt__slice_key_encode(&key, "w", 1, &s), 0);
    hb_header(&header, 1);
    hb_entry(&full, CKPT_DT_FLOAT, dims, rank, 0, 0, 0, lengths);
    hb_entry(&piece, CKPT_DT_FLOAT, lengths, rank, 0, (int64_t)piece_bytes,
             hb_zeros_crc(piece_bytes), NULL);
    /* key order: "", the slice key (it starts with a 0 byte), "w" */
    kvs[0] = (bt_kv){"", 0, header.ptr, header.size};
    kvs[1] = (bt_kv){key.ptr, key.size, piece.ptr, piece.size};
    kvs[2] = (bt_kv){"w", 1, full.ptr, full.size};
    bt_write_raw_table(index, kvs, 3, "w");
    hb_write_sparse(data, piece_bytes, NULL, 0);
    ckpt_buf_dispose(&full);
    ckpt_buf_dispose(&piece);
    ckpt_buf_dispose(&key);
    ckpt_buf_dispose(&header);
}

void hb_write_stray_piece(const char *index, const char *data, const void *key,
                          size_t key_len)
{
    ckpt_buf header = CKPT_BUF_INIT, piece = CKPT_BUF_INIT;
    ckpt_buf plain = CKPT_BUF_INIT;
    int64_t two = 2;
    bt_kv kvs[3];
    hb_header(&header, 1);
    hb_entry(&piece, CKPT_DT_FLOAT, &two, 1, 0, 8, hb_zeros_crc(8), NULL);
    hb_entry(&plain, CKPT_DT_FLOAT, &two, 1, 8, 8, hb_zeros_crc(8), NULL);
    kvs[0] = (bt_kv){"", 0, header.ptr, header.size};
    kvs[1] = (bt_kv){key, key_len, piece.ptr, piece.size};
    kvs[2] = (bt_kv){"x", 1, plain.ptr, plain.size};
    bt_write_raw_table(index, kvs, 3, "x");
    hb_write_sparse(data, 16, NULL, 0);
    ckpt_buf_dispose(&header);
    ckpt_buf_dispose(&piece);
    ckpt_buf_dispose(&plain);
}

/* The slice of rows [start, start + len) of a [rows, cols] tensor: its
 * TensorSliceProto into `proto` and its slice key into `key`. */
static void row_slice(ckpt_buf *proto, ckpt_buf *key, int64_t start,
                      int64_t len, int64_t cols)
{
    ckpt_buf extent = CKPT_BUF_INIT;
    ckpt__tensor_slice s;
    memset(&s, 0, sizeof(s));
    s.rank = 2;
    s.start[0] = start;
    s.length[0] = len;
    s.length[1] = cols;
    if (start)
        put_varint_field(&extent, 1, (uint64_t)start);
    put_varint_field(&extent, 2, (uint64_t)len);
    put_message(proto, 1, &extent);
    ckpt__buf_clear(&extent);
    put_varint_field(&extent, 2, (uint64_t)cols);
    put_message(proto, 1, &extent);
    assert_int_equal(ckpt__slice_key_encode(key, "w", 1, &s), 0);
    ckpt_buf_dispose(&extent);
}

void hb_write_row_pieces(const char *index, const char *data, int64_t rows,
                         int64_t cols, int k, int repeat_first)
{
    const int64_t len = rows / k;
    const uint64_t piece_bytes = (uint64_t)(len * cols * 4);
    ckpt_buf header = CKPT_BUF_INIT, full = CKPT_BUF_INIT;
    ckpt_buf *keys = calloc((size_t)k, sizeof(*keys));
    ckpt_buf *entries = calloc((size_t)k, sizeof(*entries));
    bt_kv *kvs = calloc((size_t)k + 2, sizeof(*kvs));
    int64_t dims[2] = {rows, cols}, piece_dims[2] = {len, cols};
    uint32_t crc = hb_zeros_crc(piece_bytes);
    assert_true(keys && entries && kvs && k > 0);
    hb_header(&header, 1);
    if (repeat_first == HB_LEAVE_LAST_UNLISTED)
        dims[0] = rows - len; /* what the listed pieces cover */
    hb_entry(&full, CKPT_DT_FLOAT, dims, 2, 0, 0, 0, NULL);
    /* hb_entry ended the entry with an offset/size/crc; slices follow */
    for (int i = 0; i < k; i++) {
        ckpt_buf proto = CKPT_BUF_INIT;
        int listed = repeat_first == 1 && i == k - 1 ? 0 : i;
        row_slice(&proto, &keys[i], i * len, len, cols);
        hb_entry(&entries[i], CKPT_DT_FLOAT, piece_dims, 2,
                 (int64_t)((uint64_t)i * piece_bytes), (int64_t)piece_bytes,
                 crc, NULL);
        if (listed != i) {
            ckpt_buf other = CKPT_BUF_INIT;
            ckpt__buf_clear(&proto);
            row_slice(&proto, &other, listed * len, len, cols);
            ckpt_buf_dispose(&other);
        }
        if (!(repeat_first == HB_LEAVE_LAST_UNLISTED && i == k - 1))
            put_message(&full, 7, &proto);
        ckpt_buf_dispose(&proto);
    }
    kvs[0] = (bt_kv){"", 0, header.ptr, header.size};
    for (int i = 0; i < k; i++)
        kvs[i + 1] =
            (bt_kv){keys[i].ptr, keys[i].size, entries[i].ptr, entries[i].size};
    kvs[k + 1] = (bt_kv){"w", 1, full.ptr, full.size};
    bt_write_raw_table(index, kvs, (size_t)k + 2, "w");
    hb_write_sparse(data, piece_bytes * (uint64_t)k, NULL, 0);
    for (int i = 0; i < k; i++) {
        ckpt_buf_dispose(&keys[i]);
        ckpt_buf_dispose(&entries[i]);
    }
    free(keys);
    free(entries);
    free(kvs);
    ckpt_buf_dispose(&header);
    ckpt_buf_dispose(&full);
}

void hb_string_record(ckpt_buf *rec, uint32_t *crc, const char *const *strs,
                      int n, bool big_endian)
{
    uint32_t c = 0;
    uint8_t word[4];
    for (int i = 0; i < n; i++) {
        assert_int_equal(ckpt__put_varint64(rec, strlen(strs[i])), 0);
        c = ckpt__string_length_crc(c, strlen(strs[i]), big_endian);
    }
    ckpt__string_checksum_put(word, ckpt__crc32c_mask(c), big_endian);
    assert_int_equal(ckpt__buf_put(rec, word, 4), 0);
    c = ckpt__crc32c_extend(c, word, 4);
    for (int i = 0; i < n; i++) {
        assert_int_equal(ckpt__buf_put(rec, strs[i], strlen(strs[i])), 0);
        c = ckpt__crc32c_extend(c, strs[i], strlen(strs[i]));
    }
    *crc = ckpt__crc32c_mask(c);
}

uint32_t hb_zeros_crc(uint64_t n)
{
    static const uint8_t zeros[65536];
    uint32_t crc = 0;
    while (n > 0) {
        size_t k = n < sizeof(zeros) ? (size_t)n : sizeof(zeros);
        crc = ckpt__crc32c_extend(crc, zeros, k);
        n -= k;
    }
    return ckpt__crc32c_mask(crc);
}

void hb_write_sparse(const char *path, uint64_t size, const void *tail,
                     size_t n)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    assert_true(fd >= 0);
    assert_int_equal(ftruncate(fd, (off_t)size), 0);
    if (n > 0)
        assert_int_equal(pwrite(fd, tail, n, (off_t)(size - n)), (ssize_t)n);
    assert_int_equal(close(fd), 0);
}

int hb_bounded(int (*fn)(void *), void *arg, uint64_t max_memory,
               unsigned seconds, char *msg, size_t cap)
{
    int fds[2];
    pid_t pid;
    int st = 0;
    size_t got = 0;
    assert_int_equal(pipe(fds), 0);
    fflush(NULL);
    pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        int rc;
        const char *m;
        close(fds[0]);
        test_limit_self(max_memory, seconds);
        rc = fn(arg);
        m = rc < 0 ? ckpt_error_last()->message : "";
        if (write(fds[1], m, strlen(m)) < 0)
            _exit(120);
        _exit(rc < 0 ? -rc : 0);
    }
    close(fds[1]);
    for (;;) {
        ssize_t k = read(fds[0], msg + got, cap - 1 - got);
        if (k < 0 && errno == EINTR)
            continue;
        if (k <= 0 || (got += (size_t)k) == cap - 1)
            break;
    }
    msg[got] = '\0';
    close(fds[0]);
    while (waitpid(pid, &st, 0) < 0)
        assert_int_equal(errno, EINTR);
    if (WIFSIGNALED(st)) {
        snprintf(msg, cap, "killed by signal %d (%s)", WTERMSIG(st),
                 WTERMSIG(st) == SIGALRM ? "time limit" : "crash");
        return HB_KILLED;
    }
    assert_true(WIFEXITED(st));
    return -WEXITSTATUS(st);
}
