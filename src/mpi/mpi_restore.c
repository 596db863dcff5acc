/* mpi/mpi_restore.c - restoring a distributed saver's variables on M ranks
 * from a checkpoint written by any number of ranks (or by one process):
 *   replicated    the whole tensor, on every rank;
 *   partitioned   this rank's piece, copied from whichever stored pieces
 *                 overlap it (resharding; only those records are read);
 *   per-rank      "<name>/rank-<r>" for this rank r.
 * Two agreements keep ranks in step: after every rank checked its
 * variables against the index (present, dtype, shape, and every record
 * or stored piece it will read located inside its data file, pieces
 * covering what is read once) and after the reads;
 * a failure on any rank is every rank's error. restore_latest lets rank 0
 * read the state file and broadcast the prefix.
 *
 * The stored pieces of partitioned tensors are found through one index of
 * the checkpoint's slice keys, decoded once per restore and sorted by
 * tensor name: linear in the entries, not in entries times variables, and
 * small per piece (a checkpoint may hold millions): 32 bytes, the
 * extents of the dimensions it has (16 bytes each), one copy of each
 * tensor name.
 * Variables read whole into their own memory go through one
 * ckpt_bundle_reader_read_many (file order; large uncached files
 * streamed by the reader's threads). */
#include "mpi_internal.h"

#include "format/bundle_reader_internal.h"
#include "format/bundle_slices.h"
#include "io/fs_internal.h"
#include "util/coding.h"
#include "util/crc32c.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MISSING_OPTIONAL 1

/* One stored piece: its tensor's name (shared by the pieces of one
 * tensor), its entry and its slice: `rank` pairs (start, length) at `ext`,
 * in the extents' pool. A slice is only widened to a ckpt__tensor_slice
 * (CKPT_MAX_RANK dimensions, 520 bytes) one at a time, when read. */
typedef struct slice_ref {
    const char *name;
    const int64_t *ext;
    size_t entry;
    int rank;
} slice_ref;

/* The extents of every piece, in blocks that never move (the refs point
 * into them). A block holds the extents of many pieces. */
#define EXT_BLOCK 8192 /* int64 values: 64 KiB */

typedef struct ext_pool {
    int64_t **blocks;
    size_t nblocks, cap;
    size_t used; /* values used in the last block */
} ext_pool;

/* What one restore reads with: the reader, a record buffer reused across
 * pieces, and the slice keys' index (built at the first partitioned
 * tensor that needs it). */
typedef struct restore_ctx {
    ckpt_mpi_saver *s;
    ckpt_bundle_reader *r;
    const char *prefix;
    ckpt_buf rec;
    slice_ref *refs; /* sorted by name, then entry */
    size_t nrefs;
    char **names; /* each distinct name the refs point to, once */
    size_t nnames, names_cap;
    ext_pool pool;
    ckpt__tensor_slice sl; /* the piece being read, widened */
    int indexed;
} restore_ctx;

static int by_name_then_entry(const void *a, const void *b)
{
    const slice_ref *x = a, *y = b;
    int c = strcmp(x->name, y->name);
    if (c != 0)
        return c;
    return x->entry < y->entry ? -1 : x->entry > y->entry;
}

/* Room for `n` values in the pool; NULL when out of memory. */
static int64_t *pool_take(ext_pool *p, size_t n)
{
    if (p->nblocks == 0 || p->used + n > EXT_BLOCK) {
        if (ckpt__reserve_one(&p->blocks, &p->cap, p->nblocks,
                              sizeof(*p->blocks), 16) < 0)
            return NULL;
        p->blocks[p->nblocks] = ckpt__malloc(EXT_BLOCK * sizeof(int64_t));
        if (!p->blocks[p->nblocks])
            return NULL;
        p->nblocks++;
        p->used = 0;
    }
    p->used += n;
    return p->blocks[p->nblocks - 1] + p->used - n;
}

static void pool_dispose(ext_pool *p)
{
    for (size_t i = 0; i < p->nblocks; i++)
        ckpt__free(p->blocks[i]);
    ckpt__free(p->blocks);
}

/* The name for a new ref: the previous ref's when equal (the index is
 * sorted by key, so one tensor's pieces come together), else a copy kept
 * in c->names. NULL when out of memory. */
static const char *ref_name(restore_ctx *c, const char *name)
{
    char *copy;
    if (c->nrefs > 0 && strcmp(c->refs[c->nrefs - 1].name, name) == 0)
        return c->refs[c->nrefs - 1].name;
    if (ckpt__reserve_one(&c->names, &c->names_cap, c->nnames,
                          sizeof(*c->names), 16) < 0)
        return NULL;
    copy = ckpt__strdup(name);
    if (copy)
        c->names[c->nnames++] = copy;
    return copy;
}

/* Keep piece `entry` of tensor `name` covering `sl`. */
static int add_ref(restore_ctx *c, const char *name, size_t entry,
                   const ckpt__tensor_slice *sl)
{
    slice_ref *ref = &c->refs[c->nrefs];
    int64_t *ext = pool_take(&c->pool, 2 * (size_t)sl->rank);
    ref->name = ext ? ref_name(c, name) : NULL;
    if (!ref->name)
        return ckpt__error_oom();
    for (int d = 0; d < sl->rank; d++) {
        ext[2 * d] = sl->start[d];
        ext[2 * d + 1] = sl->length[d];
    }
    ref->ext = ext;
    ref->rank = sl->rank;
    ref->entry = entry;
    c->nrefs++;
    return 0;
}

/* Widen a ref's slice to a ckpt__tensor_slice. */
static void ref_slice(const slice_ref *ref, ckpt__tensor_slice *sl)
{
    sl->rank = ref->rank;
    for (int d = 0; d < ref->rank; d++) {
        sl->start[d] = ref->ext[2 * d];
        sl->length[d] = ref->ext[2 * d + 1];
    }
}

/* Decode every slice key of the checkpoint once. Left out: keys naming
 * the empty tensor or one with a NUL byte (no variable has such a name),
 * and keys that do not decode as a slice key (a name starting with a 0
 * byte, then a bad rank or extent), as the single-process reader and
 * verify leave them: a piece is found by a slice its full entry lists,
 * which such a key cannot hold, so a listed piece whose key is damaged is
 * a hole in the pieces, reported with its tensor. Left out too: a key
 * that decodes but is not how its slice is written (a full extent stored
 * with a length of -5, not -1): the single-process reader looks a piece
 * up by the slice's written key and never finds it, and two keys of one
 * slice would let the rank count choose which piece a rank reads. */
static int index_slices(restore_ctx *c)
{
    const ckpt__entry_table *t = &c->r->tab; /* no public entries made */
    size_t n = 0;
    ckpt_buf name = CKPT_BUF_INIT, written = CKPT_BUF_INIT;
    ckpt__tensor_slice sl;
    int err = 0;
    c->indexed = 1;
    for (size_t i = 0; i < t->count; i++)
        n += t->recs[i].is_slice_key != 0;
    c->refs = ckpt__calloc(n ? n : 1, sizeof(*c->refs));
    if (!c->refs)
        return ckpt__error_oom();
    for (size_t i = 0; err == 0 && i < t->count; i++) {
        const ckpt__entry_rec *rec = &t->recs[i];
        if (!rec->is_slice_key)
            continue;
        err = ckpt__slice_key_decode(&name, &sl, ckpt__entry_rec_name(t, rec),
                                     rec->name_len);
        if (err == CKPT_ECORRUPT) {
            ckpt_error_clear();
            err = 0;
            continue;
        }
        if (err < 0 || name.size == 0 || memchr(name.ptr, 0, name.size))
            continue;
        err = ckpt__slice_key_encode(&written, name.ptr, name.size, &sl);
        if (err < 0)
            break;
        if (written.size != rec->name_len ||
            memcmp(written.ptr, ckpt__entry_rec_name(t, rec), rec->name_len))
            continue;
        err = add_ref(c, name.ptr, i, &sl);
    }
    ckpt_buf_dispose(&name);
    ckpt_buf_dispose(&written);
    if (c->nrefs > 1)
        qsort(c->refs, c->nrefs, sizeof(*c->refs), by_name_then_entry);
    return err;
}

/* The stored pieces of tensor `name`: refs [*first, *end). */
static void pieces_of(const restore_ctx *c, const char *name, size_t *first,
                      size_t *end)
{
    size_t lo = 0, hi = c->nrefs;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (strcmp(c->refs[mid].name, name) < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    *first = lo;
    while (lo < c->nrefs && strcmp(c->refs[lo].name, name) == 0)
        lo++;
    *end = lo;
}

static void restore_ctx_dispose(restore_ctx *c)
{
    for (size_t i = 0; i < c->nnames; i++)
        ckpt__free(c->names[i]);
    ckpt__free(c->names);
    pool_dispose(&c->pool);
    ckpt__free(c->refs);
    ckpt_buf_dispose(&c->rec);
}

/* Check `v` against the checkpoint; 1 when an optional per-rank value is
 * missing (left as it is). */
static int check_one(ckpt_mpi_saver *s, ckpt_bundle_reader *r,
                     const char *prefix, const ckpt__mvar *v)
{
    const char *key = v->kind == CKPT__MPI_PER_RANK ? v->key.ptr : v->name;
    ckpt_tensor_entry e; /* filled, not handed out: nothing kept per
                            variable */
    char want[128], have[128];
    int err = ckpt__bundle_reader_lookup(&e, NULL, r, key);
    if (err == CKPT_ENOTFOUND && v->kind == CKPT__MPI_PER_RANK) {
        if (v->flags & CKPT_MPI_OPTIONAL) {
            ckpt_error_clear();
            return MISSING_OPTIONAL;
        }
        return ckpt__error(CKPT_ENOTFOUND,
                           "%s: per-rank variable '%s' has no value for "
                           "rank %d ('%s' is missing; the checkpoint was "
                           "written by %d rank(s), this job has %d)",
                           prefix, v->name, s->rank, key,
                           ckpt_bundle_reader_num_shards(r), s->size);
    }
    if (err == CKPT_ENOTFOUND)
        return ckpt__error(
            CKPT_ENOTFOUND, "%s: %s variable '%s' is not in the checkpoint",
            prefix,
            v->kind == CKPT__MPI_REPLICATED ? "replicated" : "partitioned",
            key);
    if (err < 0)
        return err;
    if (e.dtype == v->dtype && ckpt_shape_equal(&e.shape, &v->global))
        return 0;
    ckpt_shape_format(want, sizeof(want), &v->global);
    ckpt_shape_format(have, sizeof(have), &e.shape);
    return ckpt__error(CKPT_EINVAL,
                       "%s: tensor '%s' is %s %s in the checkpoint, the "
                       "variable is %s %s",
                       prefix, key, ckpt_dtype_name(e.dtype), have,
                       ckpt_dtype_name(v->dtype), want);
}

/* Copy the box [lo, hi) (global coordinates, `rank` dimensions) from a
 * row-major block of shape `ss` whose first element is at global `so`, into
 * a block of shape `ds` at global `dso`. */
static void copy_box(uint8_t *dst, const int64_t *dso, const ckpt_shape *ds,
                     const uint8_t *src, const int64_t *so,
                     const ckpt_shape *ss, const int64_t *lo, const int64_t *hi,
                     int rank, size_t es)
{
    int64_t idx[CKPT_MAX_RANK], sstride[CKPT_MAX_RANK], dstride[CKPT_MAX_RANK];
    size_t row = (size_t)(hi[rank - 1] - lo[rank - 1]) * es;
    sstride[rank - 1] = dstride[rank - 1] = 1;
    for (int d = rank - 2; d >= 0; d--) {
        sstride[d] = sstride[d + 1] * ss->dims[d + 1];
        dstride[d] = dstride[d + 1] * ds->dims[d + 1];
    }
    for (int d = 0; d < rank; d++) {
        if (lo[d] >= hi[d])
            return;
        idx[d] = lo[d];
    }
    for (;;) {
        int64_t s_off = 0, d_off = 0;
        int d;
        for (d = 0; d < rank; d++) {
            s_off += (idx[d] - so[d]) * sstride[d];
            d_off += (idx[d] - dso[d]) * dstride[d];
        }
        memcpy(dst + (size_t)d_off * es, src + (size_t)s_off * es, row);
        for (d = rank - 2; d >= 0; d--) {
            if (++idx[d] < hi[d])
                break;
            idx[d] = lo[d];
        }
        if (d < 0)
            return;
    }
}

/* This rank's piece bounds [lo, hi) of `v`. */
static void piece_bounds(const ckpt__mvar *v, int64_t *lo, int64_t *hi)
{
    for (int d = 0; d < v->global.rank; d++) {
        lo[d] = v->slice.start[d];
        hi[d] = v->slice.start[d] + v->slice.length[d];
    }
}

/* The whole tensor, then this rank's piece cut out of it (a checkpoint
 * that stored it as one ordinary entry). */
static int read_from_whole(ckpt_bundle_reader *r, const ckpt__mvar *v,
                           uint8_t *dst)
{
    int64_t full_bytes, lo[CKPT_MAX_RANK], hi[CKPT_MAX_RANK];
    int64_t zero[CKPT_MAX_RANK] = {0};
    uint8_t *full;
    int err = ckpt_tensor_byte_size(&full_bytes, v->dtype, &v->global);
    if (err < 0)
        return err;
    full = ckpt__malloc(full_bytes ? (size_t)full_bytes : 1);
    if (!full)
        return ckpt__error_oom();
    err = ckpt_bundle_reader_read(r, v->name, full, (size_t)full_bytes);
    piece_bounds(v, lo, hi);
    if (err == 0)
        copy_box(dst, lo, &v->local, full, zero, &v->global, lo, hi,
                 v->global.rank, ckpt_dtype_size(v->dtype));
    ckpt__free(full);
    return err;
}

typedef struct box {
    int64_t lo[CKPT_MAX_RANK], hi[CKPT_MAX_RANK];
} box;

static int boxes_overlap(const box *a, const box *b, int rank)
{
    for (int d = 0; d < rank; d++)
        if ((a->lo[d] > b->lo[d] ? a->lo[d] : b->lo[d]) >=
            (a->hi[d] < b->hi[d] ? a->hi[d] : b->hi[d]))
            return 0;
    return 1;
}

/* Mark the elements of `b` (inside this rank's piece, which starts at
 * `mylo` and has the shape v->local) in `seen`, one bit per element of the
 * piece in row-major order; 1 when one was marked already (pieces overlap).
 * Time linear in the box's elements, so checking k pieces costs the
 * piece's size, never k * k. */
static int mark_box(uint8_t *seen, const ckpt__mvar *v, const int64_t *mylo,
                    const box *b)
{
    int rank = v->global.rank;
    int64_t idx[CKPT_MAX_RANK];
    int64_t run = b->hi[rank - 1] - b->lo[rank - 1];
    for (int d = 0; d < rank; d++)
        idx[d] = b->lo[d];
    for (;;) {
        int64_t at = 0;
        int d;
        for (d = 0; d < rank; d++)
            at = at * v->local.dims[d] + (idx[d] - mylo[d]);
        for (int64_t k = at; k < at + run; k++) {
            if (seen[k >> 3] & (1u << (k & 7)))
                return 1;
            seen[k >> 3] |= (uint8_t)(1u << (k & 7));
        }
        /* the next row: count up the dimensions before the last */
        for (d = rank - 2; d >= 0; d--) {
            if (++idx[d] < b->hi[d])
                break;
            idx[d] = b->lo[d];
        }
        if (d < 0)
            return 0;
    }
}

/* Where piece [slo, shi) starts in this rank's value when it lies wholly
 * inside it on contiguous memory (every dimension after the first whole in
 * both), else -1. */
static int64_t direct_offset(const ckpt__mvar *v, const int64_t *slo,
                             const int64_t *shi, const int64_t *mylo,
                             const int64_t *myhi)
{
    int64_t row = (int64_t)ckpt_dtype_size(v->dtype);
    if (slo[0] < mylo[0] || shi[0] > myhi[0])
        return -1;
    for (int d = 1; d < v->global.rank; d++) {
        if (slo[d] != mylo[d] || shi[d] != myhi[d])
            return -1;
        row *= v->local.dims[d];
    }
    return (slo[0] - mylo[0]) * row;
}

/* `err` of a read or check of an entry the index holds: CKPT_ENOTFOUND
 * there is a data file the index names, so an incomplete checkpoint, not
 * an absent one. */
static int incomplete_if_missing(int err, const char *prefix)
{
    if (err == CKPT_ENOTFOUND)
        return ckpt__error_prefix(CKPT_ECORRUPT, "%s: incomplete checkpoint",
                                  prefix);
    return err;
}

/* The record of `e` inside its data file (opened, kept by the reader), as
 * read_many checks every record before it reads any: a truncated data
 * file fails every rank before any variable is written. */
static int locate_record(ckpt_bundle_reader *r, const char *prefix,
                         const ckpt_tensor_entry *e)
{
    return incomplete_if_missing(ckpt__bundle_reader_check_record(r, e),
                                 prefix);
}

/* Stored piece `e` (slice `sl`) of `v`: checked, and the part of it
 * inside this rank's piece copied to `dst` (NULL: checked only, nothing
 * read, but a piece that overlaps the rank's has its record located in
 * its data file); its box in `*got` (empty when it does not overlap). */
static int copy_overlap(ckpt_bundle_reader *r, const char *prefix,
                        const ckpt__mvar *v, const ckpt_tensor_entry *e,
                        const ckpt__tensor_slice *sl, uint8_t *dst, box *got,
                        ckpt_buf *rec)
{
    int rank = v->global.rank;
    int64_t slo[CKPT_MAX_RANK], shi[CKPT_MAX_RANK], mylo[CKPT_MAX_RANK],
        myhi[CKPT_MAX_RANK], bytes;
    ckpt_shape sshape;
    int err;
    sshape.rank = rank;
    piece_bounds(v, mylo, myhi);
    for (int d = 0; d < rank && sl->rank == rank; d++) {
        if (!ckpt__slice_extent_inside(sl, d, v->global.dims[d]))
            return ckpt__error(CKPT_ECORRUPT,
                               "%s: tensor '%s': a stored piece lies outside "
                               "the tensor's shape (dimension %d: start %lld, "
                               "length %lld, size %lld)",
                               prefix, v->name, d, (long long)sl->start[d],
                               (long long)sl->length[d],
                               (long long)v->global.dims[d]);
        ckpt__slice_extent_range(sl, d, v->global.dims[d], &slo[d], &shi[d]);
        sshape.dims[d] = shi[d] - slo[d];
        got->lo[d] = slo[d] > mylo[d] ? slo[d] : mylo[d];
        got->hi[d] = shi[d] < myhi[d] ? shi[d] : myhi[d];
        if (got->lo[d] >= got->hi[d])
            got->hi[d] = got->lo[d];
    }
    if (e->num_slices > 0) /* it has no record of its own */
        return ckpt__error(CKPT_ECORRUPT,
                           "%s: tensor '%s': a stored piece's entry is itself "
                           "partitioned",
                           prefix, v->name);
    if (sl->rank != rank || e->dtype != v->dtype ||
        !ckpt_shape_equal(&e->shape, &sshape))
        return ckpt__error(CKPT_ECORRUPT,
                           "%s: tensor '%s': a stored piece does not match "
                           "its slice, dtype or the tensor's rank",
                           prefix, v->name);
    for (int d = 0; d < rank; d++)
        if (got->lo[d] >= got->hi[d])
            return 0;
    err = ckpt_tensor_byte_size(&bytes, v->dtype, &sshape);
    if (err == 0 && e->size != bytes)
        return ckpt__error(CKPT_ECORRUPT,
                           "%s: tensor '%s': a stored piece holds %lld "
                           "bytes, its shape needs %lld",
                           prefix, v->name, (long long)e->size,
                           (long long)bytes);
    if (err < 0)
        return err;
    if (!dst)
        return locate_record(r, prefix, e);
    if (direct_offset(v, slo, shi, mylo, myhi) >= 0) {
        uint8_t *at = dst + direct_offset(v, slo, shi, mylo, myhi);
        err = ckpt__mpi_read_piece_into(r, e, v->name, at);
        if (err == 0) /* e->size == bytes: checked above */
            ckpt__bundle_reader_to_host(r, e, at);
        return err;
    }
    ckpt__buf_clear(rec);
    if (err == 0)
        err = ckpt_bundle_reader_read_record(r, e, rec);
    if (err == 0 && rec->size != (size_t)bytes)
        err = ckpt__error(CKPT_ECORRUPT,
                          "%s: tensor '%s': a stored piece holds %zu bytes, "
                          "its shape needs %lld",
                          prefix, v->name, rec->size, (long long)bytes);
    if (err == 0)
        ckpt__bundle_reader_to_host(r, e, rec->ptr);
    if (err == 0)
        copy_box(dst, mylo, &v->local, (const uint8_t *)rec->ptr, slo, &sshape,
                 got->lo, got->hi, rank, ckpt_dtype_size(v->dtype));
    return err;
}

/* Order of slices as stored: rank, then each extent's start and length
 * (a full extent is (0, -1) both in a slice key and in an entry). */
static int ref_slice_cmp(const void *a, const void *b)
{
    const slice_ref *x = a, *y = b;
    if (x->rank != y->rank)
        return x->rank < y->rank ? -1 : 1;
    for (int k = 0; k < 2 * x->rank; k++)
        if (x->ext[k] != y->ext[k])
            return x->ext[k] < y->ext[k] ? -1 : 1;
    return 0;
}

/* The stored pieces of one tensor (refs sorted by slice) and which of them
 * its full entry lists: read_overlapping reads only those (as the
 * single-process reader does), so every rank count reads the same pieces.
 * One byte per stored piece: nothing is allocated per listed slice, whose
 * count comes from the file. A slice listed twice is an overlap, as the
 * single-process reader finds it (its piece would be counted once). */
typedef struct listed_marks {
    const slice_ref *refs;
    size_t n;
    uint8_t *listed;
    const char *index_path, *name; /* for messages */
} listed_marks;

static int mark_listed(int index, const ckpt__tensor_slice *sl, void *payload)
{
    listed_marks *m = payload;
    int64_t ext[2 * CKPT_MAX_RANK];
    slice_ref key = {0};
    const slice_ref *hit;
    ckpt_buf spec = CKPT_BUF_INIT;
    int err;
    for (int d = 0; d < sl->rank; d++) {
        ext[2 * d] = sl->start[d];
        ext[2 * d + 1] = sl->length[d];
    }
    key.rank = sl->rank;
    key.ext = ext;
    hit = bsearch(&key, m->refs, m->n, sizeof(*m->refs), ref_slice_cmp);
    if (hit && !m->listed[hit - m->refs]) {
        m->listed[hit - m->refs] = 1;
        return 0;
    }
    /* a listed slice without its piece is damage on every rank count, as
     * for the single-process reader (it was skipped here: one rank
     * refused the checkpoint, two read it) */
    err = ckpt__tensor_slice_format(&spec, sl);
    if (err == 0 && !hit)
        err = ckpt__error(CKPT_ECORRUPT,
                          "%s: tensor '%s': slice %d (%s) has no entry in "
                          "the index",
                          m->index_path, m->name, index, spec.ptr);
    else if (err == 0)
        err = ckpt__error(CKPT_ECORRUPT,
                          "%s: tensor '%s': slice %d (%s) overlaps an "
                          "earlier slice",
                          m->index_path, m->name, index, spec.ptr);
    ckpt_buf_dispose(&spec);
    return err;
}

/* Sort the stored pieces refs[first, end) by slice and mark those the
 * full entry lists into *listed_out (end - first bytes, to be freed). */
static int mark_listed_pieces(restore_ctx *c, const ckpt__mvar *v,
                              const ckpt_tensor_entry *full, size_t first,
                              size_t end, uint8_t **listed_out)
{
    ckpt__partitioned_read pr;
    listed_marks m;
    int err;
    m.refs = c->refs + first;
    m.n = end - first;
    m.listed = ckpt__calloc(m.n ? m.n : 1, 1);
    *listed_out = m.listed;
    if (!m.listed)
        return ckpt__error_oom();
    if (m.n > 1)
        qsort(c->refs + first, m.n, sizeof(*c->refs), ref_slice_cmp);
    err = ckpt__bundle_reader_partitioned_read_of(&pr, c->r, full);
    m.index_path = pr.index_path;
    m.name = v->name;
    if (err == 0)
        err = ckpt__partitioned_for_each_slice(&pr, v->name, mark_listed, &m);
    return err;
}

/* Pieces checked pairwise for overlaps before read_overlapping marks
 * elements instead. */
#define PAIRWISE_BOXES 64

static int overlap_error(const char *prefix, const ckpt__mvar *v)
{
    return ckpt__error(CKPT_ECORRUPT, "%s: tensor '%s': stored pieces overlap",
                       prefix, v->name);
}

/* This rank's piece of a partitioned tensor, from whichever stored pieces
 * overlap it (the checkpoint may have been written by any number of ranks,
 * partitioned in any other way). The pieces it uses must cover it exactly
 * once. With `dst` NULL only the layout is checked (every piece in the
 * shape, matching its entry, none overlapping, this rank's piece covered;
 * each record it would read, a whole entry's too, inside its data file),
 * nothing read: the restore does that for every variable before it
 * writes any. */
static int read_overlapping(restore_ctx *c, const ckpt__mvar *v, uint8_t *dst)
{
    ckpt_tensor_entry whole; /* the tensor's entry, filled */
    const ckpt_tensor_entry *full = &whole;
    int64_t mylo[CKPT_MAX_RANK], myhi[CKPT_MAX_RANK];
    uint8_t *seen = NULL; /* one bit per element, past PAIRWISE_BOXES */
    box *boxes = NULL;
    uint8_t *listed = NULL;
    size_t nboxes = 0, first = 0, end = 0;
    int64_t want = 1, covered = 0;
    int rank = v->global.rank;
    const char *prefix = c->prefix;
    int err = ckpt__bundle_reader_lookup(&whole, NULL, c->r, v->name);
    if (err < 0)
        return err;
    if (full->num_slices == 0) /* stored whole: its record located first */
        return dst ? read_from_whole(c->r, v, dst)
                   : locate_record(c->r, prefix, full);
    if (!c->indexed) {
        err = index_slices(c);
        if (err < 0)
            return err;
    }
    for (int d = 0; d < rank; d++)
        want *= v->local.dims[d];
    piece_bounds(v, mylo, myhi);
    pieces_of(c, v->name, &first, &end);
    err = mark_listed_pieces(c, v, full, first, end, &listed);
    boxes = ckpt__calloc(PAIRWISE_BOXES, sizeof(*boxes));
    if (!boxes && err == 0)
        err = ckpt__error_oom();
    for (size_t i = first; err == 0 && i < end; i++) {
        ckpt_tensor_entry e; /* filled for this piece alone: most pieces
                                of a checkpoint of many ranks are other
                                ranks', so none is made a public entry */
        box got;
        int64_t vol = 1;
        if (!listed[i - first])
            continue; /* a stored piece its entry does not list */
        ckpt__entry_table_fill(&c->r->tab, c->refs[i].entry, &e);
        ref_slice(&c->refs[i], &c->sl);
        err = copy_overlap(c->r, prefix, v, &e, &c->sl, dst, &got, &c->rec);
        for (int d = 0; err == 0 && d < rank; d++)
            vol *= got.hi[d] - got.lo[d];
        if (err < 0 || vol == 0)
            continue;
        if (nboxes == (size_t)full->num_slices)
            err = ckpt__error(CKPT_ECORRUPT,
                              "%s: tensor '%s': more pieces than its entry "
                              "lists",
                              prefix, v->name);
        /* overlaps: pairwise among the first few pieces, then by marking
         * the elements each covers (linear however many pieces there are) */
        if (err == 0 && nboxes == PAIRWISE_BOXES && !seen) {
            seen = ckpt__calloc((size_t)((want + 7) / 8), 1);
            if (!seen)
                err = ckpt__error_oom();
            for (size_t k = 0; err == 0 && k < nboxes; k++)
                (void)mark_box(seen, v, mylo, &boxes[k]);
        }
        if (err == 0 && seen && mark_box(seen, v, mylo, &got))
            err = overlap_error(prefix, v);
        for (size_t k = 0; err == 0 && !seen && k < nboxes; k++)
            if (boxes_overlap(&boxes[k], &got, rank))
                err = overlap_error(prefix, v);
        if (err == 0) {
            if (!seen)
                boxes[nboxes] = got;
            nboxes++;
            covered += vol;
        }
    }
    ckpt__free(seen);
    ckpt__free(listed);
    if (err == 0 && covered != want)
        err = ckpt__error(CKPT_ECORRUPT,
                          "%s: tensor '%s': the stored pieces cover %lld of "
                          "the %lld elements of this rank's piece",
                          prefix, v->name, (long long)covered, (long long)want);
    ckpt__free(boxes);
    return err;
}

/* Read `v`'s value for this rank into `dst` (v->bytes). */
static int read_value(restore_ctx *c, const ckpt__mvar *v, void *dst)
{
    if (v->kind != CKPT__MPI_PARTITIONED || v->whole)
        return ckpt_bundle_reader_read(
            c->r, v->kind == CKPT__MPI_PER_RANK ? v->key.ptr : v->name, dst,
            (size_t)v->bytes);
    if (v->bytes == 0)
        return 0;
    return read_overlapping(c, v, dst);
}

static int restore_one(restore_ctx *c, const ckpt__mvar *v)
{
    void *tmp;
    int err;
    if (v->user.data)
        return read_value(c, v, v->user.data);
    if (!v->user.write) { /* an empty piece given no data: nothing to fill */
        char none;
        return read_value(c, v, &none);
    }
    tmp = ckpt__malloc(v->bytes ? (size_t)v->bytes : 1);
    if (!tmp)
        return ckpt__error_oom();
    err = read_value(c, v, tmp);
    if (err == 0)
        err = ckpt__var_write(&v->user, v->name, tmp, (size_t)v->bytes);
    ckpt__free(tmp);
    return err;
}

/* Whether `v` is read whole from one entry into its own memory. */
static int whole_in_memory(const ckpt__mvar *v)
{
    return v->user.data && v->bytes > 0 &&
           (v->kind != CKPT__MPI_PARTITIONED || v->whole);
}

/* A replicated or per-rank variable behind a write callback, checked as
 * a read of it would check it before reading
 * (ckpt__bundle_reader_check_read): its record inside its data file, or
 * its pieces there and covering it once. Such a variable is read after
 * the others (restore_one), so this runs with the checks, before any
 * variable is written; those in memory are read first, by one read_many,
 * which checks them all before it reads any (read_whole_values). */
static int check_callback_read(restore_ctx *c, const ckpt__mvar *v)
{
    return incomplete_if_missing(
        ckpt__bundle_reader_check_read(
            c->r, v->kind == CKPT__MPI_PER_RANK ? v->key.ptr : v->name,
            (size_t)v->bytes),
        c->prefix);
}

/* Every variable read whole into its own memory (replicated, per-rank, a
 * partitioned one stored whole on a single rank), in one
 * ckpt_bundle_reader_read_many: records in file order, and a large data
 * file not in the page cache streamed by the reader's threads; even one
 * alone, so that read_many's checks of it come before any other variable
 * is written (restore_one reads partitioned ones after it). Those
 * variables are marked done in `skip`. */
static int read_whole_values(restore_ctx *c, char *skip)
{
    ckpt_mpi_saver *s = c->s;
    ckpt_read_request *reqs;
    size_t n = 0;
    int err;
    for (size_t i = 0; i < s->nvars; i++)
        n += !skip[i] && whole_in_memory(&s->vars[i]);
    if (n == 0)
        return 0;
    reqs = ckpt__calloc(n, sizeof(*reqs));
    if (!reqs)
        return ckpt__error_oom();
    n = 0;
    for (size_t i = 0; i < s->nvars; i++) {
        const ckpt__mvar *v = &s->vars[i];
        if (skip[i] || !whole_in_memory(v))
            continue;
        reqs[n].name = v->kind == CKPT__MPI_PER_RANK ? v->key.ptr : v->name;
        reqs[n].dst = v->user.data;
        reqs[n].dst_size = (size_t)v->bytes;
        n++;
    }
    err = ckpt_bundle_reader_read_many(c->r, reqs, n);
    ckpt__free(reqs);
    for (size_t i = 0; err == 0 && i < s->nvars; i++)
        if (!skip[i] && whole_in_memory(&s->vars[i]))
            skip[i] = 1;
    return err;
}

/* Rank 0, after a restore onto fewer ranks than wrote the checkpoint: say
 * which per-rank values no rank of this job restored (the next save will
 * not hold them). */
static void warn_unrestored_per_rank(ckpt_mpi_saver *s, ckpt_bundle_reader *r,
                                     const char *prefix)
{
    const ckpt_saver_options *o = &s->opts.base;
    ckpt_buf key = CKPT_BUF_INIT;
    for (size_t i = 0; i < s->nvars; i++) {
        const ckpt__mvar *v = &s->vars[i];
        ckpt_tensor_entry e;
        int last = s->size - 1;
        if (v->kind != CKPT__MPI_PER_RANK)
            continue;
        for (;;) { /* the stored ranks past this job's */
            if (ckpt__mpi_per_rank_key(&key, v->name, last + 1) < 0 ||
                ckpt__bundle_reader_lookup(&e, NULL, r, key.ptr) < 0)
                break;
            last++;
        }
        ckpt_error_clear();
        if (last > s->size)
            ckpt__log(o->log, o->log_payload, o->log_level, CKPT_LOG_WARN,
                      "%s: per-rank variable '%s' has values for ranks %d to "
                      "%d that this %d-rank job does not restore; the next "
                      "save will not hold them",
                      prefix, v->name, s->size, last, s->size);
        else if (last == s->size)
            ckpt__log(o->log, o->log_payload, o->log_level, CKPT_LOG_WARN,
                      "%s: per-rank variable '%s' has a value for rank %d "
                      "that this %d-rank job does not restore; the next save "
                      "will not hold it",
                      prefix, v->name, last, s->size);
    }
    ckpt_buf_dispose(&key);
}

/* What both restores do first (`what` names the call), after their
 * CKPT__CHECK_ARG(s): refuse the saver's own thread, finish the save in flight,
 * and check the variable lists (collective; also when there is no checkpoint,
 * so a mismatch is found before training starts); none is CKPT_EINVAL on
 * every rank, the list left open. */
static int begin_restore(ckpt_mpi_saver *s, const char *what)
{
    if (ckpt__mpi_refuse_worker(s, what) < 0)
        return CKPT_ESTATE;
    ckpt__mpi_snapshot_complete(s); /* before the variables change */
    if (s->op.state != OP_IDLE)
        ckpt__mpi_op_finish(s);
    return ckpt__mpi_check(s, what);
}

/* What tells one checkpoint from another on every rank, whatever path
 * reaches it: its entries (name, dtype, shape, place and checksum of each
 * tensor), as the reader validated them, and their count. */
typedef struct index_print {
    uint64_t count;
    uint32_t crc;
    int ok;
} index_print;

/* The print of the checkpoint `r` holds, from its entries in memory: no
 * file is read again (an index's size, which a hole in it may make any,
 * sets no work here). Fields go in as little-endian integers. */
static int print_index(const ckpt_bundle_reader *r, index_print *p)
{
    uint8_t field[8];
    uint32_t crc = 0;
    size_t n = ckpt_bundle_reader_count(r);
    for (size_t i = 0; i < n; i++) {
        ckpt_tensor_entry e;
        int64_t v[CKPT_MAX_RANK + 8];
        size_t k = 0;
        int err = ckpt_bundle_reader_entry_fill(&e, r, i);
        if (err < 0)
            return err;
        v[k++] = (int64_t)e.name_len;
        v[k++] = e.dtype;
        v[k++] = e.shape.rank;
        for (int d = 0; d < e.shape.rank && d < CKPT_MAX_RANK; d++)
            v[k++] = e.shape.dims[d];
        v[k++] = e.shard_id;
        v[k++] = e.offset;
        v[k++] = e.size;
        v[k++] = (int64_t)e.crc32c;
        v[k++] = e.num_slices;
        crc = ckpt__crc32c_extend(crc, e.name, e.name_len);
        for (size_t j = 0; j < k; j++) {
            ckpt__encode_fixed64(field, (uint64_t)v[j]);
            crc = ckpt__crc32c_extend(crc, field, sizeof(field));
        }
    }
    p->count = n;
    p->crc = crc;
    p->ok = 1;
    return 0;
}

/* Every rank must restore the same checkpoint (a rank given another
 * step's prefix restored it and every rank returned 0): rank 0 sends its
 * index's print, and a rank whose differs fails, which the agreement
 * after the checks passes to every rank. `err` is this rank's outcome so
 * far; every rank takes part whatever it is. */
static int check_same_checkpoint(ckpt_mpi_saver *s, const char *prefix,
                                 const ckpt_bundle_reader *r, int err)
{
    index_print mine, root;
    MPI_Request req;
    memset(&mine, 0, sizeof(mine));
    if (err == 0)
        err = print_index(r, &mine);
    root = mine;
    MPI_Ibcast(&root, (int)sizeof(root), MPI_BYTE, 0, s->comm_ctl, &req);
    ckpt__mpi_wait_all(s, &req, 1,
                       "checking every rank restores one "
                       "checkpoint");
    if (err < 0 || s->rank == 0 || !root.ok)
        return err;
    if (root.count != mine.count || root.crc != mine.crc)
        return ckpt__error(CKPT_EINVAL,
                           "ckpt_mpi_saver_restore: %s is not the checkpoint "
                           "rank 0 restores (their index files differ): give "
                           "every rank the same checkpoint "
                           "(ckpt_mpi_saver_restore_latest agrees on one)",
                           prefix);
    return 0;
}

static int restore_call(ckpt_mpi_saver *s, const char *prefix)
{
    ckpt_bundle_reader_options ro = CKPT_BUNDLE_READER_OPTIONS_INIT;
    ckpt_bundle_reader *r = NULL;
    char *skip = NULL;
    restore_ctx c;
    int err;
    if (!s) /* named as the public call */
        return ckpt__error_null_arg("ckpt_mpi_saver_restore", "s");
    err = begin_restore(s, "restore");
    if (err < 0)
        return err;
    /* A rank's own prefix may differ from the others': its check is
     * folded into the agreement below, so no rank leaves before a
     * collective the others enter. */
    if (!prefix)
        err = ckpt__error_null_arg("ckpt_mpi_saver_restore", "prefix");
    else if (!*prefix)
        err = ckpt__error(CKPT_EINVAL, "%s: prefix is empty",
                          "ckpt_mpi_saver_restore");
    ro.fs = s->fs;
    if (err == 0)
        err = ckpt_bundle_reader_open(&r, prefix, &ro);
    if (err == 0) {
        skip = ckpt__calloc(s->nvars + 1, 1);
        if (!skip)
            err = ckpt__error_oom();
    }
    memset(&c, 0, sizeof(c));
    c.s = s;
    c.r = r;
    c.prefix = prefix;
    if (err == 0) {
        /* every variable checked: the first mismatch is the error, the
         * others are named with it (the first few), as ckpt_saver_restore
         * does, so that one run shows everything to fix */
        ckpt__mismatches m;
        ckpt__mismatches_init(&m);
        for (size_t i = 0; i < s->nvars; i++) {
            const ckpt__mvar *v = &s->vars[i];
            int rc = check_one(s, r, prefix, v);
            if (rc == MISSING_OPTIONAL) {
                skip[i] = 1;
                rc = 0;
            }
            /* a partitioned one's stored pieces: their layout; one
             * behind a write callback: that it can be read; before any
             * variable is written */
            if (rc == 0 && !skip[i] && v->kind == CKPT__MPI_PARTITIONED &&
                v->bytes > 0)
                rc = read_overlapping(&c, v, NULL);
            else if (rc == 0 && !skip[i] && v->bytes > 0 && !v->user.data)
                rc = check_callback_read(&c, v);
            ckpt__mismatches_add(&m, rc, v->name);
        }
        err = ckpt__mismatches_finish(&m);
    }
    err = check_same_checkpoint(s, prefix, r, err);
    err = ckpt__mpi_agree(s, s->comm_ctl, err, "checking a restore");
    if (err == 0) { /* every rank passed the checks: all read, then agree */
        err = read_whole_values(&c, skip);
        for (size_t i = 0; err == 0 && i < s->nvars; i++)
            if (!skip[i])
                err = restore_one(&c, &s->vars[i]);
        /* Every entry was found: a missing file is a data file the index
         * names. */
        err = incomplete_if_missing(err, prefix);
        err = ckpt__mpi_agree(s, s->comm_ctl, err, "restoring");
        if (err == 0 && s->rank == 0)
            warn_unrestored_per_rank(s, r, prefix);
    }
    restore_ctx_dispose(&c);
    ckpt__free(skip);
    ckpt_bundle_reader_free(r);
    return err;
}

/* Rank 0: where the last '/' of `prefix` starts its name, when the
 * checkpoint lies in the saver's own directory (the usual case, whatever
 * the state file's paths: relative, or absolute with absolute_paths),
 * else -1. Every rank then joins that name to its own path of the
 * directory, which may differ from rank 0's (relative to another working
 * directory, another mount point). */
static long name_in_own_dir(const ckpt_mpi_saver *s, const ckpt_buf *prefix)
{
    const char *slash = strrchr(prefix->ptr, '/');
    ckpt_buf parent = CKPT_BUF_INIT;
    /* realpath asks the operating system (a ckpt_fs resolves no paths),
     * into the stack: the allocator seam is kept */
    char a[PATH_MAX], b[PATH_MAX];
    long at = slash ? (long)(slash - prefix->ptr) + 1 : 0;
    int same;
    if (ckpt__buf_put(&parent, prefix->ptr, slash ? (size_t)at : 0) < 0)
        return -1;
    if (parent.size == 0 && ckpt__buf_puts(&parent, ".") < 0) {
        ckpt_buf_dispose(&parent);
        return -1;
    }
    same = realpath(parent.ptr, a) &&
           realpath(s->ds.dir[0] ? s->ds.dir : ".", b) && strcmp(a, b) == 0;
    ckpt_buf_dispose(&parent);
    return same ? at : -1;
}

int ckpt__mpi_latest(ckpt_mpi_saver *s, ckpt_buf *prefix)
{
    int sent[2] = {0, 0}; /* the bytes sent; whether a name in the dir */
    long at = -1;
    MPI_Request req;
    ckpt_buf got = CKPT_BUF_INIT;
    int err = 0;
    if (s->op.state != OP_IDLE)
        ckpt__mpi_op_finish(s);
    if (s->rank == 0) {
        err = ckpt_latest_checkpoint(prefix, s->fs, s->ds.dir);
        if (err == CKPT_ENOTFOUND) { /* the reason kept (a damaged state) */
            ckpt_buf note = CKPT_BUF_INIT;
            /* and checkpoints a program would start afresh beside */
            ckpt__dir_state_unnamed_note(&s->ds, "ckpt_mpi_saver_restore",
                                         &note);
            err = ckpt__error_prefix(CKPT_ENOTFOUND,
                                     "%s: no checkpoint to restore", s->ds.dir);
            if (note.size > 0) {
                ckpt__saved_error saved;
                ckpt__error_save(&saved);
                err = ckpt__error(CKPT_ENOTFOUND, "%s%s", saved.message,
                                  note.ptr);
            }
            ckpt_buf_dispose(&note);
        }
        if (err == 0)
            at = name_in_own_dir(s, prefix);
        sent[0] =
            err == 0 ? (int)(prefix->size - (at < 0 ? 0 : (size_t)at)) : 0;
        sent[1] = at >= 0;
    }
    err = ckpt__mpi_bcast_outcome(s, s->comm_ctl, err,
                                  "agreeing on the latest checkpoint");
    if (err < 0)
        return err;
    MPI_Ibcast(sent, 2, MPI_INT, 0, s->comm_ctl, &req);
    ckpt__mpi_wait_all(s, &req, 1, "agreeing on the latest checkpoint");
    if (s->rank == 0 && ckpt__buf_put(&got, prefix->ptr + (at < 0 ? 0 : at),
                                      (size_t)sent[0]) < 0)
        ckpt__mpi_abort(s, "out of memory agreeing on a checkpoint");
    if (s->rank != 0) {
        if (ckpt__buf_grow(&got, (size_t)sent[0]) < 0)
            ckpt__mpi_abort(s, "out of memory agreeing on a checkpoint");
        got.size = (size_t)sent[0];
    }
    MPI_Ibcast(got.ptr, sent[0], MPI_CHAR, 0, s->comm_ctl, &req);
    ckpt__mpi_wait_all(s, &req, 1, "agreeing on the latest checkpoint");
    got.ptr[sent[0]] = '\0';
    if (s->rank != 0)
        err = sent[1] ? ckpt__path_join(prefix, s->ds.dir, got.ptr)
                      : ckpt__buf_set(prefix, got.ptr);
    ckpt_buf_dispose(&got);
    if (err < 0)
        ckpt__mpi_abort(s, "out of memory agreeing on a checkpoint");
    return 0;
}

static int restore_latest_call(ckpt_mpi_saver *s, ckpt_buf *prefix_out)
{
    ckpt_buf prefix = CKPT_BUF_INIT;
    int err;
    if (!s) /* named as the public call */
        return ckpt__error_null_arg("ckpt_mpi_saver_restore_latest", "s");
    err = begin_restore(s, "restore_latest");
    if (err < 0)
        return err;
    err = ckpt__mpi_latest(s, &prefix);
    if (err == 0)
        err =
            ckpt__restore_latest_outcome(ckpt_mpi_saver_restore(s, prefix.ptr));
    if (err == CKPT_ECORRUPT) { /* the same message on every rank */
        ckpt__saved_error saved;
        ckpt__error_save(&saved);
        err = ckpt__error(CKPT_ECORRUPT,
                          "%s (restore_latest does not fall back by itself: "
                          "ckpt_state_read lists the older checkpoints, "
                          "ckpt_mpi_saver_restore restores the one chosen)",
                          saved.message);
    }
    if (err == 0 && prefix_out)
        err = ckpt__buf_set(prefix_out, prefix.ptr);
    ckpt_buf_dispose(&prefix);
    return err;
}

/* ---- the public calls: each runs with cancellation disabled ------------ */

int ckpt_mpi_saver_restore(ckpt_mpi_saver *s, const char *prefix)
{
    CKPT__RETURN_UNCANCELLED(restore_call(s, prefix));
}

int ckpt_mpi_saver_restore_latest(ckpt_mpi_saver *s, ckpt_buf *prefix_out)
{
    CKPT__RETURN_UNCANCELLED(restore_latest_call(s, prefix_out));
}
