/* format/bundle_reader_entries.c - a bundle reader's index entries, kept
 * compactly (bundle_reader_internal.h draws the layout): a 64-byte record
 * per entry, its key and dimensions in two arenas, and the public
 * ckpt_tensor_entry (328 bytes) made only for an entry the API hands out.
 * A checkpoint written by many ranks holds 10^5..10^6 entries, most of
 * which a reader never hands out (an MPI restore asks for its own
 * variables' and the pieces overlapping its own); docs/scaling.md has the
 * numbers.
 *
 * bundle.h promises that a handed-out entry stays valid until the reader
 * is freed: the public entries live in a pool of chunks of 16, 32, 64, ...
 * that never move, and the arenas the entries point into are trimmed once
 * when the index is loaded and never touched again. A reader belongs to
 * one thread at a time (docs/threading.md), so filling the pool from a
 * call on a const reader needs no lock. */
#include "common/internal.h"
#include "format/block.h"
#include "format/bundle_reader_internal.h"

#include <stdint.h>
#include <string.h>

#define POOL_FIRST 16  /* public entries in the first chunk */
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

int ckpt__entry_table_add(ckpt__entry_table *t, const uint8_t *key,
                          size_t key_len, const ckpt__bundle_entry *be)
{
    ckpt__entry_rec *rec;
    size_t rank = (size_t)be->shape.rank;
    void *p;
    int err;
    if (key_len > UINT32_MAX) /* a block holds at most 32 MiB */
        return ckpt__error(CKPT_ECORRUPT, "a key of %zu bytes", key_len);
    err = grow(t->recs, &t->cap, t->count, 1, sizeof(*rec), &p);
    t->recs = p;
    if (err == 0)
        err = grow(t->names, &t->names_cap, t->names_len, key_len + 1, 1, &p);
    if (err == 0)
        t->names = p;
    if (err == 0)
        err = grow(t->dims, &t->dims_cap, t->dims_len, rank, sizeof(*t->dims),
                   &p);
    if (err == 0)
        t->dims = p;
    if (err < 0)
        return err;
    rec = &t->recs[t->count++];
    memset(rec, 0, sizeof(*rec));
    rec->name_off = t->names_len;
    rec->name_len = (uint32_t)key_len;
    if (key_len > 0)
        memcpy(t->names + t->names_len, key, key_len);
    t->names[t->names_len + key_len] = '\0';
    t->names_len += key_len + 1;
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

void ckpt__entry_table_trim(ckpt__entry_table *t)
{
    t->recs = trimmed(t->recs, &t->cap, t->count, sizeof(*t->recs));
    t->names = trimmed(t->names, &t->names_cap, t->names_len, 1);
    t->dims = trimmed(t->dims, &t->dims_cap, t->dims_len, sizeof(*t->dims));
}

void ckpt__entry_table_dispose(ckpt__entry_table *t)
{
    if (t->pool) {
        for (int k = 0; k < POOL_CHUNKS; k++)
            ckpt__free(t->pool->chunks[k]);
        ckpt__free(t->pool);
    }
    ckpt__free(t->recs);
    ckpt__free(t->names);
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

bool ckpt__entry_table_owns(const ckpt__entry_table *t,
                            const ckpt_tensor_entry *e, size_t *at)
{
    uintptr_t name = (uintptr_t)e->name, names = (uintptr_t)t->names;
    ckpt_tensor_entry mine;
    if (ckpt__entry_table_handed_out(t, e, at))
        return true;
    /* the name is read only once it is known to be the table's */
    if (!t->names || name < names || name - names >= t->names_len ||
        e->name_len >= t->names_len - (name - names) || e->shape.rank < 0 ||
        e->shape.rank > CKPT_MAX_RANK ||
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
