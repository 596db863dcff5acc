/* fuzz/fuzz_common.c - the capped counting allocator installed with
 * ckpt_set_allocator() by every fuzz target, the leak check run after each
 * input, and the abort helpers of fuzz.h.
 *
 *   block:  [header: size, magic | padding to 16] [the caller's bytes]
 *
 * Each block carries its size so that live bytes can be counted; an
 * allocation above CKPT_FUZZ_ALLOC_CAP, or one that would make the live
 * total exceed CKPT_FUZZ_LIVE_CAP, aborts with the size in the message
 * (libFuzzer then saves the input as a crash). The counters are atomic:
 * the library allocates and frees on its own threads too (the restore
 * target's helper threads), while the target's thread checks them.
 *
 * Also: repairing the block checksums of a table image, so that mutated
 * inputs get past the CRC checks into the block and Snappy decoders, and
 * splitting the bundle and files targets' inputs into index and rest. */
#include "fuzz.h"

#include "ckpt/errors.h"
#include "ckpt/sys/alloc.h"
#include "format/table.h"
#include "util/coding.h"
#include "util/crc32c.h"

#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define HEADER_SIZE 16
#define BLOCK_MAGIC 0x636b7074u /* "ckpt" */

typedef struct block_header {
    size_t size;
    uint32_t magic;
} block_header;

/* Updated from any thread the library allocates on; begin_blocks and
 * installed only from the thread that runs the targets. */
static atomic_size_t live_blocks;
static atomic_size_t live_bytes;
static size_t begin_blocks;
static int installed;
static volatile unsigned char touch_sink;

void ckpt_fuzz_fail(const char *file, int line, const char *what)
{
    fprintf(stderr, "fuzz check failed at %s:%d: %s\n", file, line, what);
    fflush(stderr);
    abort();
}

static void check_size(size_t n)
{
    if (n > CKPT_FUZZ_ALLOC_CAP) {
        fprintf(stderr,
                "fuzz: the library asked for %zu bytes in one allocation "
                "(cap %zu)\n",
                n, CKPT_FUZZ_ALLOC_CAP);
        fflush(stderr);
        abort();
    }
    size_t live = atomic_load(&live_bytes);
    if (live + n > CKPT_FUZZ_LIVE_CAP) {
        fprintf(stderr,
                "fuzz: the library would hold %zu bytes at once (cap %zu)\n",
                live + n, CKPT_FUZZ_LIVE_CAP);
        fflush(stderr);
        abort();
    }
}

static block_header *header_of(void *p)
{
    block_header *h = (block_header *)(void *)((char *)p - HEADER_SIZE);
    if (h->magic != BLOCK_MAGIC)
        ckpt_fuzz_fail(__FILE__, __LINE__,
                       "freed or reallocated a block not from this "
                       "allocator");
    return h;
}

static void *cap_malloc(size_t n, void *payload)
{
    block_header *h;
    (void)payload;
    check_size(n);
    h = malloc(HEADER_SIZE + n);
    if (!h)
        return NULL;
    h->size = n;
    h->magic = BLOCK_MAGIC;
    atomic_fetch_add(&live_blocks, 1);
    atomic_fetch_add(&live_bytes, n);
    return (char *)h + HEADER_SIZE;
}

static void cap_free(void *p, void *payload)
{
    block_header *h;
    (void)payload;
    if (!p)
        return;
    h = header_of(p);
    atomic_fetch_sub(&live_blocks, 1);
    atomic_fetch_sub(&live_bytes, h->size);
    h->magic = 0;
    free(h);
}

static void *cap_realloc(void *p, size_t n, void *payload)
{
    block_header *h;
    block_header *nh;
    size_t old;
    if (!p)
        return cap_malloc(n, payload);
    h = header_of(p);
    old = h->size;
    if (n > old)
        check_size(n - old);
    if (n > CKPT_FUZZ_ALLOC_CAP)
        check_size(n);
    nh = realloc(h, HEADER_SIZE + n);
    if (!nh)
        return NULL;
    nh->size = n;
    atomic_fetch_add(&live_bytes, n);
    atomic_fetch_sub(&live_bytes, old);
    return (char *)nh + HEADER_SIZE;
}

void ckpt_fuzz_begin(void)
{
    if (!installed) {
        ckpt_allocator a;
        memset(&a, 0, sizeof(a));
        a.version = CKPT_ALLOCATOR_VERSION;
        a.malloc = cap_malloc;
        a.realloc = cap_realloc;
        a.free = cap_free;
        if (ckpt_set_allocator(&a) != 0)
            ckpt_fuzz_fail(__FILE__, __LINE__, "ckpt_set_allocator failed");
        installed = 1;
    }
    begin_blocks = atomic_load(&live_blocks);
}

void ckpt_fuzz_end(const char *target)
{
    size_t live = atomic_load(&live_blocks);
    if (live != begin_blocks) {
        fprintf(stderr,
                "fuzz %s: the library still holds %zu allocation(s) after "
                "the input was handled (a leak)\n",
                target, live - begin_blocks);
        fflush(stderr);
        abort();
    }
}

void ckpt_fuzz_touch(const void *p, size_t n)
{
    const volatile unsigned char *b = p;
    unsigned char acc = 0;
    for (size_t i = 0; i < n; i++)
        acc ^= b[i];
    touch_sink = acc;
}

/* ---- table checksum repair ---------------------------------------------- */

/* Rewrite the trailer CRC of the block at `off` (`size` bytes, then the
 * type byte) when the block lies before the footer. */
static int fix_block(uint8_t *img, size_t n, uint64_t off, uint64_t size)
{
    uint64_t limit = n - CKPT__TABLE_FOOTER_SIZE;
    uint32_t crc;
    if (off > limit || size > limit - off ||
        CKPT__TABLE_TRAILER_SIZE > limit - off - size)
        return 0;
    crc = ckpt__crc32c_mask(ckpt__crc32c(img + off, (size_t)size + 1));
    ckpt__encode_fixed32(img + off + size + 1, crc);
    return 1;
}

struct fix_state {
    uint8_t *img;
    size_t n;
    int fixed;
};

static int fix_data_block(const uint8_t *key, size_t key_len,
                          const uint8_t *value, size_t value_len, void *payload)
{
    struct fix_state *s = payload;
    const uint8_t *p = value;
    uint64_t off, size;
    (void)key;
    (void)key_len;
    if (ckpt__get_varint64(&p, value + value_len, &off) &&
        ckpt__get_varint64(&p, value + value_len, &size))
        s->fixed += fix_block(s->img, s->n, off, size);
    return 0;
}

int ckpt_fuzz_fix_table_crcs(uint8_t *img, size_t n)
{
    const uint8_t *p, *end;
    uint64_t meta_off, meta_size, index_off, index_size;
    struct fix_state s;
    if (n < CKPT__TABLE_FOOTER_SIZE)
        return 0;
    p = img + n - CKPT__TABLE_FOOTER_SIZE;
    end = p + CKPT__TABLE_FOOTER_SIZE - 8;
    if (!ckpt__get_varint64(&p, end, &meta_off) ||
        !ckpt__get_varint64(&p, end, &meta_size) ||
        !ckpt__get_varint64(&p, end, &index_off) ||
        !ckpt__get_varint64(&p, end, &index_size))
        return 0;
    s.img = img;
    s.n = n;
    s.fixed = fix_block(img, n, meta_off, meta_size);
    if (!fix_block(img, n, index_off, index_size))
        return s.fixed;
    s.fixed++;
    /* Data block handles are in the index block when it is stored plain;
     * the block reader is the library's (itself under test). */
    if (img[index_off + index_size] == CKPT__BLOCK_TYPE_NONE)
        ckpt__block_iterate(img + index_off, (size_t)index_size, "fix",
                            fix_data_block, &s);
    ckpt_error_clear();
    return s.fixed;
}

void ckpt_fuzz_split_index(ckpt_fuzz_split *s, const uint8_t *data, size_t size,
                           size_t header, size_t len_at, int fix_crcs)
{
    const uint8_t *l = data + len_at;
    s->index_len = (size_t)l[0] | (size_t)l[1] << 8 | (size_t)l[2] << 16 |
                   (size_t)l[3] << 24;
    s->index = data + header;
    if (s->index_len > size - header)
        s->index_len = size - header;
    s->rest = s->index + s->index_len;
    s->rest_len = size - header - s->index_len;
    s->owned = NULL;
    if (!fix_crcs)
        return;
    s->owned = malloc(s->index_len ? s->index_len : 1);
    CKPT_FUZZ_CHECK(s->owned != NULL);
    if (s->index_len)
        memcpy(s->owned, s->index, s->index_len);
    ckpt_fuzz_fix_table_crcs(s->owned, s->index_len);
    s->index = s->owned;
}

void ckpt_fuzz_make_temp_dir(char *dir, size_t cap, const char *tag)
{
    const char *tmp = getenv("TMPDIR");
    snprintf(dir, cap, "%s/ckpt-fuzz-%s-XXXXXX", tmp && *tmp ? tmp : "/tmp",
             tag);
    CKPT_FUZZ_CHECK(mkdtemp(dir) != NULL);
}
