/* format/bundle_reader_entries.c - a bundle reader's index entries, kept
 * compactly (bundle_reader_internal.h draws the layout): a 64-byte record
 * per entry, its key in blocks that never move, its dimensions in an
 * arena, and the public
 * ckpt_tensor_entry (328 bytes) made only for an entry the API hands out.
 * A checkpoint written by many ranks holds 10^5..10^6 entries, most of
 * which a reader never hands out (an MPI restore asks for its own
 * variables' and the pieces overlapping its own); docs/scaling.md has the
 * numbers.
 *
 * bundle.h promises that a handed-out entry stays valid until the reader
 * is freed: the public entries live in a pool of chunks of 16, 32, 64, ...
 * that never move, the keys they point to lie in blocks that never move
 * either, and the arrays are trimmed once when the index is loaded and
 * never touched again. The keys are not one arena grown by doubling: a
 * hostile index whose keys share long prefixes makes them add up to 64
 * times its blocks (block.c), and a doubled arena would hold up to twice
 * that, three times while it is copied (README, "Resource limits when
 * reading", gives the bound). A reader belongs to
 * one thread at a time (docs/threading.md), so filling the pool from a
 * call on a const reader needs no lock. */
#include "common/internal.h"
#include "format/block.h"
#include "format/bundle_reader_internal.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define POOL_FIRST 16        /* public entries in the first chunk */
#define NAME_BLOCK_MIN 256   /* bytes of the first block keys are packed in */
#define NAME_BLOCK_MAX 65536 /* ... and of the largest */
#define NAME_OWN_BLOCK 8192  /* a key (with its NUL) this long: its own */
#define POOL_CHUNKS 48 /* 16 * (2^48 - 1) entries: more than memory holds */

/* A handed-out entry and the index it is of. */
struct entry_slot {
    ckpt_tensor_entry e; /* first: the slot's address is the entry's */
    size_t index;
};

struct ckpt__entry_pool {
    struct entry_slot *chunks[POOL_CHUNKS]; /* chunk k: POOL_FIRST << k */
    size_t used;
};

int ckpt__entry_table_init(ckpt__entry_table *t)
{
    memset(t, 0, sizeof(*t));
    t->pool = ckpt__calloc(1, sizeof(*t->pool));
    return t->pool ? 0 : ckpt__error_oom();
}

/* `p` (holding `len` of `*cap` items of `size` bytes) with room for `more`
 * items, doubling, into *out. 0 or CKPT_ENOMEM (p left as it was). */
static int grow(void *p, size_t *cap, size_t len, size_t more, size_t size,
                void **out)
{
    size_t want, bytes;
    void *q;
    *out = p;
    if (more <= *cap - len)
        return 0;
    if (len > SIZE_MAX - more)
        return ckpt__error_oom();
    want = *cap ? *cap : 16;
    while (want < len + more)
        want = want > SIZE_MAX / 2 ? len + more : want * 2;
    if (__builtin_mul_overflow(want, size, &bytes))
        return ckpt__error_oom();
    q = ckpt__realloc(p, bytes);
    if (!q)
        return ckpt__error_oom();
    *out = q;
    *cap = want;
    return 0;
}

/* Room for a key of `n` bytes with its NUL, in a block that never moves:
 * packed after the keys before it, in a new block when it does not fit
 * (the rest of the old one, under NAME_OWN_BLOCK bytes, left unused), or
 * in a block of its own when it is long. NULL (CKPT_ENOMEM set) without
 * memory. */
static char *name_room(ckpt__entry_table *t, size_t n)
{
    size_t size = n >= NAME_OWN_BLOCK ? n : t->next_block;
    char *p;
    void *q;
    if (n <= t->room_left) {
        p = t->room;
        t->room += n;
        t->room_left -= n;
        t->name_blocks[t->room_block].used += n;
        return p;
    }
    if (size < NAME_BLOCK_MIN)
        size = NAME_BLOCK_MIN;
    if (size < n)
        size = n;
    if (grow(t->name_blocks, &t->blocks_cap, t->nblocks, 1,
             sizeof(*t->name_blocks), &q) < 0)
        return NULL;
    t->name_blocks = q;
    p = ckpt__malloc(size);
    if (!p) {
        ckpt__error_oom();
        return NULL;
    }
    t->name_blocks[t->nblocks].bytes = p;
    t->name_blocks[t->nblocks].size = size;
    t->name_blocks[t->nblocks++].used = n;
    t->blocks_sorted = false; /* until trimmed */
    if (n < NAME_OWN_BLOCK) { /* keys are packed here from now on */
        t->room_block = t->nblocks - 1;
        t->room = p + n;
        t->room_left = size - n;
        t->next_block = size < NAME_BLOCK_MAX / 2 ? 2 * size : NAME_BLOCK_MAX;
    }
    return p;
}

int ckpt__entry_table_add(ckpt__entry_table *t, const uint8_t *key,
                          size_t key_len, const ckpt__bundle_entry *be)
{
    ckpt__entry_rec *rec;
    size_t rank = (size_t)be->shape.rank;
    char *name = NULL;
    void *p;
    int err;
    if (key_len > UINT32_MAX) /* a block holds at most 32 MiB */
        return ckpt__error(CKPT_ECORRUPT, "a key of %zu bytes", key_len);
    err = grow(t->recs, &t->cap, t->count, 1, sizeof(*rec), &p);
    t->recs = p;
    if (err == 0)
        err = grow(t->dims, &t->dims_cap, t->dims_len, rank, sizeof(*t->dims),
                   &p);
    if (err == 0)
        t->dims = p;
    if (err == 0) {
        name = name_room(t, key_len + 1);
        err = name ? 0 : CKPT_ENOMEM;
    }
    if (err < 0)
        return err;
    rec = &t->recs[t->count++];
    memset(rec, 0, sizeof(*rec));
    if (key_len > 0)
        memcpy(name, key, key_len);
    name[key_len] = '\0';
    rec->name = name;
    rec->name_len = (uint32_t)key_len;
    rec->dims_off = t->dims_len;
    rec->rank = (uint8_t)rank; /* 0 .. CKPT_MAX_RANK: the decoder checked */
    if (rank > 0)
        memcpy(t->dims + t->dims_len, be->shape.dims, rank * sizeof(*t->dims));
    t->dims_len += rank;
    rec->dtype = be->dtype;
    rec->shard_id = be->shard_id;
    rec->offset = be->offset;
    rec->size = be->size;
    rec->crc32c = be->crc32c;
    rec->num_slices = be->num_slices;
    rec->is_slice_key = key_len > 0 && key[0] == 0;
    return 0;
}

/* `p` shrunk to `len` items of `size` bytes (as it was when the
 * allocator will not). */
static void *trimmed(void *p, size_t *cap, size_t len, size_t size)
{
    void *q;
    if (len == *cap || len == 0)
        return p;
    q = ckpt__realloc(p, len * size);
    if (!q)
        return p;
    *cap = len;
    return q;
}

static int by_block_address(const void *a, const void *b)
{
    uintptr_t x = (uintptr_t)((const struct ckpt__name_block *)a)->bytes;
    uintptr_t y = (uintptr_t)((const struct ckpt__name_block *)b)->bytes;
    return (x > y) - (x < y);
}

void ckpt__entry_table_trim(ckpt__entry_table *t)
{
    t->recs = trimmed(t->recs, &t->cap, t->count, sizeof(*t->recs));
    t->dims = trimmed(t->dims, &t->dims_cap, t->dims_len, sizeof(*t->dims));
    if (t->nblocks > 1)
        qsort(t->name_blocks, t->nblocks, sizeof(*t->name_blocks),
              by_block_address);
    t->blocks_sorted = true;
}

void ckpt__entry_table_dispose(ckpt__entry_table *t)
{
    if (t->pool) {
        for (int k = 0; k < POOL_CHUNKS; k++)
            ckpt__free(t->pool->chunks[k]);
        ckpt__free(t->pool);
    }
    for (size_t i = 0; i < t->nblocks; i++)
        ckpt__free(t->name_blocks[i].bytes);
    ckpt__free(t->name_blocks);
    ckpt__free(t->recs);
    ckpt__free(t->dims);
    memset(t, 0, sizeof(*t));
}

void ckpt__entry_table_fill(const ckpt__entry_table *t, size_t i,
                            ckpt_tensor_entry *out)
{
    const ckpt__entry_rec *rec = &t->recs[i];
    memset(out, 0, sizeof(*out));
    out->name = ckpt__entry_rec_name(t, rec);
    out->name_len = rec->name_len;
    out->dtype = rec->dtype;
    out->shape.rank = rec->rank;
    if (rec->rank > 0)
        memcpy(out->shape.dims, t->dims + rec->dims_off,
               rec->rank * sizeof(*t->dims));
    out->shard_id = rec->shard_id;
    out->offset = rec->offset;
    out->size = rec->size;
    out->crc32c = rec->crc32c;
    out->num_slices = rec->num_slices;
    out->is_slice_key = rec->is_slice_key;
}

/* The chunk and the place in it of the pool's slot `p`. */
static void slot_place(size_t p, int *chunk, size_t *at)
{
    size_t q = p / POOL_FIRST + 1;
    int k = 63 - __builtin_clzll((unsigned long long)q);
    *chunk = k;
    *at = p - POOL_FIRST * (((size_t)1 << k) - 1);
}

const ckpt_tensor_entry *ckpt__entry_table_get(const ckpt__entry_table *t,
                                               size_t i)
{
    ckpt__entry_rec *rec = &t->recs[i];
    struct ckpt__entry_pool *pool = t->pool;
    struct entry_slot *slot;
    size_t at;
    int k;
    if (rec->cached) {
        slot_place(rec->cached - 1, &k, &at);
        return &pool->chunks[k][at].e;
    }
    slot_place(pool->used, &k, &at);
    if (!pool->chunks[k]) {
        pool->chunks[k] =
            ckpt__malloc(((size_t)POOL_FIRST << k) * sizeof(struct entry_slot));
        if (!pool->chunks[k]) {
            ckpt__error_oom();
            return NULL;
        }
    }
    slot = &pool->chunks[k][at];
    ckpt__entry_table_fill(t, i, &slot->e);
    slot->index = i;
    rec->cached = ++pool->used;
    return &slot->e;
}

bool ckpt__entry_table_search(const ckpt__entry_table *t, const void *key,
                              size_t n, size_t *at)
{
    size_t lo = 0, hi = t->count;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        const ckpt__entry_rec *rec = &t->recs[mid];
        int c = ckpt__key_compare(ckpt__entry_rec_name(t, rec), rec->name_len,
                                  key, n);
        if (c == 0) {
            *at = mid;
            return true;
        }
        if (c < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return false;
}

bool ckpt__entry_table_handed_out(const ckpt__entry_table *t,
                                  const ckpt_tensor_entry *e, size_t *at)
{
    const struct ckpt__entry_pool *pool = t->pool;
    uintptr_t a = (uintptr_t)e;
    size_t first = 0; /* the pool slot of the chunk's first entry */
    for (int k = 0; k < POOL_CHUNKS && pool && pool->chunks[k]; k++) {
        size_t n = (size_t)POOL_FIRST << k;
        uintptr_t b = (uintptr_t)pool->chunks[k];
        size_t off = (size_t)(a - b);
        if (a >= b && off < n * sizeof(struct entry_slot) &&
            off % sizeof(struct entry_slot) == 0) {
            size_t slot = off / sizeof(struct entry_slot);
            if (first + slot >= pool->used)
                return false;
            *at = pool->chunks[k][slot].index;
            return true;
        }
        first += n;
    }
    return false;
}

/* Whether `a` and `b` describe one entry the same way (the name by its
 * address: both point into the table's names). */
static bool same_entry(const ckpt_tensor_entry *a, const ckpt_tensor_entry *b)
{
    return a->name == b->name && a->name_len == b->name_len &&
           a->dtype == b->dtype && a->shape.rank == b->shape.rank &&
           (a->shape.rank <= 0 ||
            memcmp(a->shape.dims, b->shape.dims,
                   (size_t)a->shape.rank * sizeof(a->shape.dims[0])) == 0) &&
           a->shard_id == b->shard_id && a->offset == b->offset &&
           a->size == b->size && a->crc32c == b->crc32c &&
           a->num_slices == b->num_slices && a->is_slice_key == b->is_slice_key;
}

/* Whether `name`, with `len` bytes and its NUL, lies inside the bytes
 * keys were written to in block `b`. */
static bool inside_block(const struct ckpt__name_block *b, const char *name,
                         size_t len)
{
    uintptr_t a = (uintptr_t)name, start = (uintptr_t)b->bytes;
    return a >= start && a - start < b->used && len < b->used - (a - start);
}

size_t ckpt__entry_table_name_block(const ckpt__entry_table *t,
                                    const char *name, size_t len,
                                    size_t *probes)
{
    uintptr_t a = (uintptr_t)name;
    size_t lo = 0, hi = t->nblocks, looked = 0, found = SIZE_MAX;
    if (!t->blocks_sorted) { /* still loading: in the order made */
        for (size_t k = 0; k < t->nblocks && found == SIZE_MAX; k++) {
            looked++;
            if (inside_block(&t->name_blocks[k], name, len))
                found = k;
        }
    } else {
        /* the last block starting at or before `name`: the only one
         * that may hold it */
        while (lo < hi) {
            size_t mid = lo + (hi - lo) / 2;
            looked++;
            if ((uintptr_t)t->name_blocks[mid].bytes <= a)
                lo = mid + 1;
            else
                hi = mid;
        }
        if (lo > 0 && inside_block(&t->name_blocks[lo - 1], name, len))
            found = lo - 1;
    }
    if (probes)
        *probes += looked;
    return found;
}

bool ckpt__entry_table_owns(const ckpt__entry_table *t,
                            const ckpt_tensor_entry *e, size_t *at)
{
    ckpt_tensor_entry mine;
    if (ckpt__entry_table_handed_out(t, e, at))
        return true;
    /* the name is read only once it is known to be the table's */
    if (!e->name ||
        ckpt__entry_table_name_block(t, e->name, e->name_len, NULL) ==
            SIZE_MAX ||
        e->shape.rank < 0 || e->shape.rank > CKPT_MAX_RANK ||
        !ckpt__entry_table_search(t, e->name, e->name_len, at))
        return false;
    ckpt__entry_table_fill(t, *at, &mine);
    return same_entry(e, &mine);
}

bool ckpt__entry_table_index_of(const ckpt__entry_table *t,
                                const ckpt_tensor_entry *e, size_t *at)
{
    return ckpt__entry_table_handed_out(t, e, at) ||
           ckpt__entry_table_search(t, e->name, e->name_len, at);
}

int ckpt__rec_by_record_position(const void *a, const void *b)
{
    const ckpt__entry_rec *x = *(const ckpt__entry_rec *const *)a;
    const ckpt__entry_rec *y = *(const ckpt__entry_rec *const *)b;
    if (x->shard_id != y->shard_id)
        return x->shard_id < y->shard_id ? -1 : 1;
    if (x->offset != y->offset)
        return x->offset < y->offset ? -1 : 1;
    if (x->size != y->size)
        return x->size < y->size ? -1 : 1;
    return 0;
}
