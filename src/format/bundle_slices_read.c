/* format/bundle_slices_read.c - partitioned tensors (docs/format.md §6), the
 * reading side: the full entries' encoded protos kept by the reader, and
 * the assembly of a whole tensor from its pieces.
 *
 * Assembly: each piece's TensorSliceProto gives its key; the piece's record
 * (row-major in the piece's shape) is copied run by run into the full
 * tensor, where a run is the piece's innermost dimensions that are
 * contiguous in the full tensor. A bitmap of the full tensor's elements
 * finds overlaps; the pieces' element counts must add up to the tensor's. */
#include "format/bundle_slices.h"

#include "common/internal.h"
#include "format/bundle_reader_internal.h"
#include "format/bundle_text.h"
#include "util/pb_wire.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* BundleEntryProto field number of `slices`. */
#define ENTRY_SLICES 7

/* ---- reader: kept entries -------------------------------------------------
 */

struct ckpt__sliced_value {
    size_t entry_index;
    uint8_t *value;
    size_t n;
};

int ckpt__sliced_entries_add(ckpt__sliced_entries *s, size_t entry_index,
                             const uint8_t *value, size_t n)
{
    struct ckpt__sliced_value *v;
    if (s->count > 0 && s->items[s->count - 1].entry_index >= entry_index)
        return ckpt__error(CKPT_EINVAL,
                           "sliced entries: entry %zu added out of order",
                           entry_index);
    if (ckpt__reserve_one(&s->items, &s->cap, s->count, sizeof(*s->items), 8) <
        0)
        return CKPT_ENOMEM;
    v = &s->items[s->count];
    v->value = ckpt__malloc(n ? n : 1);
    if (!v->value)
        return ckpt__error_oom();
    if (n)
        memcpy(v->value, value, n);
    v->n = n;
    v->entry_index = entry_index;
    s->count++;
    return 0;
}

int ckpt__sliced_entries_get(const ckpt__sliced_entries *s, size_t entry_index,
                             const uint8_t **value, size_t *n)
{
    size_t lo = 0, hi = s->count;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (s->items[mid].entry_index == entry_index) {
            *value = s->items[mid].value;
            *n = s->items[mid].n;
            return 0;
        }
        if (s->items[mid].entry_index < entry_index)
            lo = mid + 1;
        else
            hi = mid;
    }
    return ckpt__error(CKPT_ENOTFOUND, "sliced entries: no entry %zu",
                       entry_index);
}

void ckpt__sliced_entries_dispose(ckpt__sliced_entries *s)
{
    if (!s)
        return;
    for (size_t i = 0; i < s->count; i++)
        ckpt__free(s->items[i].value);
    ckpt__free(s->items);
    s->items = NULL;
    s->count = 0;
    s->cap = 0;
}

/* ---- reader: assembly -----------------------------------------------------
 */

static int by_index(const void *a, const void *b)
{
    size_t x = *(const size_t *)a, y = *(const size_t *)b;
    return (x > y) - (x < y);
}

struct assembly {
    const ckpt__partitioned_read *pr;
    const ckpt_tensor_entry *e;
    const char *name; /* shown */
    size_t esize;
    uint8_t *dst;
    uint8_t *covered; /* one bit per element of the full tensor */
    uint64_t total;   /* elements covered so far */
    bool size_only;   /* only check each piece's record and add its size */
    bool check_only;  /* stream each piece (CRC) and mark it, no dst */
    bool layout_only; /* mark each piece without reading its record */
    uint64_t stored;  /* bytes of the pieces' records (size_only) */
    size_t *picked;   /* size_only: each slice's entry (reader's index) */
    size_t npicked, cap_picked;
    ckpt_buf key;
    ckpt_buf record;
    ckpt_buf spec; /* the current piece in slice-spec notation */
    /* The current piece's entry, filled from the reader's index for as
     * long as the piece is handled (no public entry is made for it), and
     * its index there. */
    ckpt_tensor_entry piece;
    size_t piece_at;
};

/* Start a walk over the pieces of `pr`'s tensor (assembling or sizing):
 * every field zero but the tensor and its shown name (in `sn`). */
static void assembly_start(struct assembly *as,
                           const ckpt__partitioned_read *pr,
                           ckpt__shown_name *sn)
{
    memset(as, 0, sizeof(*as));
    as->pr = pr;
    as->e = pr->entry;
    as->name = ckpt__show_name(sn, pr->entry->name, pr->entry->name_len);
}

/* Free what a walk allocated, whichever kind it was. */
static void assembly_end(struct assembly *as)
{
    ckpt__free(as->covered);
    ckpt__free(as->picked);
    ckpt_buf_dispose(&as->key);
    ckpt_buf_dispose(&as->record);
    ckpt_buf_dispose(&as->spec);
}

/* Mark elements [a, a + n) as covered; true when one already was. */
static bool mark_covered(uint8_t *bits, uint64_t a, uint64_t n)
{
    uint64_t end = a + n;
    while (a < end && (a & 7) != 0) {
        uint8_t m = (uint8_t)(1u << (a & 7));
        if (bits[a >> 3] & m)
            return true;
        bits[a >> 3] |= m;
        a++;
    }
    while (end - a >= 8) {
        if (bits[a >> 3] != 0)
            return true;
        bits[a >> 3] = 0xff;
        a += 8;
    }
    while (a < end) {
        uint8_t m = (uint8_t)(1u << (a & 7));
        if (bits[a >> 3] & m)
            return true;
        bits[a >> 3] |= m;
        a++;
    }
    return false;
}

/* Copy the piece's record (row-major in `lo`..`hi` of each dimension) into
 * the full tensor. */
static int scatter(struct assembly *as, int index, const int64_t *lo,
                   const int64_t *hi, const uint8_t *src)
{
    const ckpt_shape *full = &as->e->shape;
    int rank = full->rank;
    int64_t stride[CKPT_MAX_RANK];
    int64_t idx[CKPT_MAX_RANK];
    int64_t run = 1, runs = 1;
    int inner = rank - 1;

    /* A tensor without elements has nothing to place, and its other
     * dimensions may be as large as int64 allows: no strides then. */
    if (!as->covered)
        return 0;
    /* Every product below is at most the tensor's element count (checked
     * to fit int64 by the reader); the checks keep that true for any
     * input rather than relying on it. */
    stride[rank - 1] = 1;
    for (int d = rank - 2; d >= 0; d--) {
        if (ckpt__mul_overflow_i64(stride[d + 1], full->dims[d + 1],
                                   &stride[d]))
            goto overflow;
    }
    /* Dimensions after `inner` are whole, so a run spans inner..rank-1. */
    while (inner > 0 && lo[inner] == 0 && hi[inner] == full->dims[inner])
        inner--;
    for (int d = inner; d < rank; d++) {
        if (ckpt__mul_overflow_i64(run, hi[d] - lo[d], &run))
            goto overflow;
    }
    for (int d = 0; d < inner; d++) {
        if (ckpt__mul_overflow_i64(runs, hi[d] - lo[d], &runs))
            goto overflow;
    }
    if (run == 0 || runs == 0)
        return 0;
    for (int d = 0; d < inner; d++)
        idx[d] = lo[d];
    for (int64_t k = 0; k < runs; k++) {
        /* inside the tensor: lo, idx < dims, so `at` < the element count */
        uint64_t at = (uint64_t)lo[inner] * (uint64_t)stride[inner];
        for (int d = 0; d < inner; d++)
            at += (uint64_t)idx[d] * (uint64_t)stride[d];
        if (mark_covered(as->covered, at, (uint64_t)run))
            return ckpt__error(CKPT_ECORRUPT,
                               "%s: tensor '%s': slice %d (%s) overlaps an "
                               "earlier slice",
                               as->pr->index_path, as->name, index,
                               as->spec.ptr);
        if (src)
            memcpy(as->dst + at * as->esize,
                   src + (size_t)k * (size_t)run * as->esize,
                   (size_t)run * as->esize);
        for (int d = inner - 1; d >= 0; d--) {
            if (++idx[d] < hi[d])
                break;
            idx[d] = lo[d];
        }
    }
    as->total += (uint64_t)run * (uint64_t)runs;
    return 0;
overflow:
    return ckpt__error(CKPT_ECORRUPT,
                       "%s: tensor '%s': slice %d (%s): element count "
                       "overflows",
                       as->pr->index_path, as->name, index, as->spec.ptr);
}

/* Look up the piece of slice `index` (`s`, whose extents make the shape
 * `want`) in the index into as->piece and check its entry: not
 * partitioned itself, of the tensor's dtype and of shape `want`. */
static int find_piece(struct assembly *as, int index,
                      const ckpt__tensor_slice *s, const ckpt_shape *want,
                      const ckpt_tensor_entry **out)
{
    const ckpt__partitioned_read *pr = as->pr;
    const ckpt_tensor_entry *pe = &as->piece;
    ckpt__shown_shape a, b;
    int err = ckpt__slice_key_encode(&as->key, as->e->name, as->e->name_len, s);
    if (err < 0)
        return err;
    pr->reader->piece_lookups++;
    if (!ckpt__entry_table_search(&pr->reader->tab, as->key.ptr, as->key.size,
                                  &as->piece_at))
        return ckpt__error(CKPT_ECORRUPT,
                           "%s: tensor '%s': slice %d (%s) has no entry in "
                           "the index",
                           pr->index_path, as->name, index, as->spec.ptr);
    ckpt__entry_table_fill(&pr->reader->tab, as->piece_at, &as->piece);
    if (pe->num_slices > 0)
        return ckpt__error(CKPT_ECORRUPT,
                           "%s: tensor '%s': slice %d (%s): its entry is "
                           "itself partitioned",
                           pr->index_path, as->name, index, as->spec.ptr);
    if (pe->dtype != as->e->dtype)
        return ckpt__error(CKPT_ECORRUPT,
                           "%s: tensor '%s': slice %d (%s) is %s, the tensor "
                           "is %s",
                           pr->index_path, as->name, index, as->spec.ptr,
                           ckpt__dtype_label(pe->dtype),
                           ckpt__dtype_label(as->e->dtype));
    if (!ckpt_shape_equal(&pe->shape, want))
        return ckpt__error(CKPT_ECORRUPT,
                           "%s: tensor '%s': slice %d (%s) has shape %s, its "
                           "extents make %s",
                           pr->index_path, as->name, index, as->spec.ptr,
                           ckpt__show_shape(&a, &pe->shape),
                           ckpt__show_shape(&b, want));
    *out = pe;
    return 0;
}

/* Note piece `pe` (entry as->piece_at) of slice `index` (size_only):
 * its entry, its record inside its data file, its bytes. */
static int pick_piece(struct assembly *as, int index,
                      const ckpt_tensor_entry *pe)
{
    const ckpt__partitioned_read *pr = as->pr;
    int err;
    if (ckpt__reserve_one(&as->picked, &as->cap_picked, as->npicked,
                          sizeof(*as->picked), 16) < 0)
        return CKPT_ENOMEM;
    as->picked[as->npicked++] = as->piece_at;
    err = ckpt__bundle_reader_check_record(pr->reader, pe);
    if (err < 0)
        return ckpt__error_prefix(err, "%s: tensor '%s': slice %d (%s)",
                                  pr->index_path, as->name, index,
                                  as->spec.ptr);
    if (ckpt_dtype_size(pe->dtype) == 0) {
        /* no fixed size: each element takes a byte of record at least */
        int64_t elements = 0;
        if (ckpt_shape_num_elements(&elements, &pe->shape) == 0 &&
            pe->size < elements)
            return ckpt__error(CKPT_ECORRUPT,
                               "%s: tensor '%s': slice %d (%s): its record "
                               "holds %lld bytes, too few for its %lld "
                               "elements (each takes one or more)",
                               pr->index_path, as->name, index, as->spec.ptr,
                               (long long)pe->size, (long long)elements);
    }
    /* sizes are >= 0 and each fits its data file: no overflow */
    as->stored += (uint64_t)pe->size;
    return 0;
}

/* Find, check, read and place piece `index`, described by `s`: looked up
 * in the index, or taken from pr->pieces when the pieces were located
 * (and checked) before. */
static int place_piece(struct assembly *as, int index,
                       const ckpt__tensor_slice *s)
{
    const ckpt__partitioned_read *pr = as->pr;
    const ckpt_shape *full = &as->e->shape;
    const ckpt_tensor_entry *pe = NULL;
    ckpt__shown_shape a;
    ckpt_shape want;
    int64_t lo[CKPT_MAX_RANK], hi[CKPT_MAX_RANK];
    int err = ckpt__tensor_slice_format(&as->spec, s);
    if (err < 0)
        return err;
    if (s->rank != full->rank)
        return ckpt__error(CKPT_ECORRUPT,
                           "%s: tensor '%s': slice %d (%s) has %d extents, "
                           "the tensor's rank is %d",
                           pr->index_path, as->name, index, as->spec.ptr,
                           s->rank, full->rank);
    if (s->rank < 1) /* a slice key needs at least one extent */
        return ckpt__error(CKPT_ECORRUPT,
                           "%s: tensor '%s': slice %d of a scalar: a "
                           "partitioned tensor has rank 1 or more",
                           pr->index_path, as->name, index);
    memset(&want, 0, sizeof(want));
    want.rank = full->rank;
    for (int d = 0; d < full->rank; d++) {
        int64_t dim = full->dims[d];
        if (!ckpt__slice_extent_inside(s, d, dim))
            return ckpt__error(CKPT_ECORRUPT,
                               "%s: tensor '%s': slice %d (%s) lies outside "
                               "the shape %s",
                               pr->index_path, as->name, index, as->spec.ptr,
                               ckpt__show_shape(&a, full));
        ckpt__slice_extent_range(s, d, dim, &lo[d], &hi[d]);
        want.dims[d] = hi[d] - lo[d];
    }
    if (!pr->pieces) {
        err = find_piece(as, index, s, &want, &pe);
        if (err < 0)
            return err;
    } else if ((size_t)index < pr->npieces) {
        as->piece_at = pr->pieces[index];
        ckpt__entry_table_fill(&pr->reader->tab, as->piece_at, &as->piece);
        pe = &as->piece;
    } else {
        return ckpt__error(CKPT_ECORRUPT,
                           "%s: tensor '%s': slice %d (%s) was not located",
                           pr->index_path, as->name, index, as->spec.ptr);
    }
    if (as->size_only)
        return pick_piece(as, index, pe);
    if (as->layout_only)
        return scatter(as, index, lo, hi, NULL);
    if (as->check_only) {
        err = ckpt__bundle_reader_record_check(pr->reader, pe);
        if (err < 0)
            return ckpt__error_prefix(err, "%s: tensor '%s': slice %d (%s)",
                                      pr->index_path, as->name, index,
                                      as->spec.ptr);
        return scatter(as, index, lo, hi, NULL);
    }
    ckpt__buf_clear(&as->record);
    err = ckpt_bundle_reader_read_record(pr->reader, pe, &as->record);
    if (err < 0)
        return ckpt__error_prefix(err, "%s: tensor '%s': slice %d (%s)",
                                  pr->index_path, as->name, index,
                                  as->spec.ptr);
    /* The reader checked size = elements x dtype size when it opened. */
    return scatter(as, index, lo, hi, (const uint8_t *)as->record.ptr);
}

int ckpt__partitioned_for_each_slice(const ckpt__partitioned_read *pr,
                                     const char *shown,
                                     ckpt__slice_visit_fn visit, void *payload)
{
    ckpt__pb_reader rd;
    ckpt__pb_field f;
    int index = 0;

    ckpt__pb_reader_init(&rd, pr->proto, pr->proto_len);
    for (;;) {
        const uint8_t *field = rd.p;
        ckpt__tensor_slice s;
        int rc = ckpt__pb_next(&rd, &f);
        if (rc < 0)
            return ckpt__error(
                CKPT_ECORRUPT, "%s: tensor '%s': malformed entry (byte %zu)",
                pr->index_path, shown, (size_t)(field - pr->proto));
        if (rc == 0)
            return 0;
        if (f.number != ENTRY_SLICES)
            continue;
        /* Decode this one field as a message holding a single slice. */
        rc = ckpt__bundle_entry_get_slice(&s, field, (size_t)(rd.p - field), 0);
        if (rc < 0)
            return ckpt__error_prefix(rc, "%s: tensor '%s': slice %d",
                                      pr->index_path, shown, index);
        rc = visit(index, &s, payload);
        if (rc < 0)
            return rc;
        index++;
    }
}

static int place_visit(int index, const ckpt__tensor_slice *s, void *payload)
{
    return place_piece(payload, index, s);
}

/* Walk the `slices` fields of the full entry and place each piece. */
static int place_all(struct assembly *as)
{
    return ckpt__partitioned_for_each_slice(as->pr, as->name, place_visit, as);
}

/* How assemble treats the pieces' records. */
enum assemble_mode {
    ASSEMBLE_INTO_DST, /* read, check and copy into dst */
    ASSEMBLE_CHECK,    /* stream with their CRCs, no dst */
    ASSEMBLE_LAYOUT    /* not read at all: only where the pieces lie */
};

/* Place every piece of the tensor into `dst` or, as `mode` says, only into
 * the bitmap, and check that they cover it exactly once. */
static int assemble(const ckpt__partitioned_read *pr, void *dst,
                    size_t dst_size, enum assemble_mode mode)
{
    const ckpt_tensor_entry *e = pr->entry;
    struct assembly as;
    ckpt__shown_name sn;
    int64_t count = 0;
    int err;

    assembly_start(&as, pr, &sn);
    as.esize = ckpt_dtype_size(e->dtype);
    as.dst = dst;
    as.check_only = mode == ASSEMBLE_CHECK;
    as.layout_only = mode == ASSEMBLE_LAYOUT;
    if (ckpt_shape_num_elements(&count, &e->shape) < 0)
        return ckpt__error(CKPT_ECORRUPT, "%s: tensor '%s': bad shape",
                           pr->index_path, as.name);
    if (e->shape.rank == 0)
        return ckpt__error(CKPT_ECORRUPT,
                           "%s: tensor '%s': a scalar with %d slices",
                           pr->index_path, as.name, e->num_slices);
    if (count > 0) {
        /* one bit per element: 1/8 of dst, or of the pieces' records that
         * ckpt__bundle_partitioned_size checked first */
        as.covered = ckpt__calloc((size_t)(((uint64_t)count + 7) / 8), 1);
        if (!as.covered)
            return ckpt__error_oom();
    }
    err = place_all(&as);
    if (err == 0 && as.total != (uint64_t)count)
        err = ckpt__error(CKPT_ECORRUPT,
                          "%s: tensor '%s': slices cover %llu of %lld "
                          "elements",
                          pr->index_path, as.name, (unsigned long long)as.total,
                          (long long)count);
    if (err == 0 && dst && pr->swap && ckpt__record_word_width(e->dtype) > 1)
        ckpt__record_swap_words(dst, dst_size,
                                ckpt__record_word_width(e->dtype));
    if (err == 0 && dst && e->dtype == CKPT_DT_BOOL)
        ckpt__record_bools_to_host(dst, dst_size);
    assembly_end(&as);
    return err;
}

int ckpt__bundle_read_partitioned(const ckpt__partitioned_read *pr, void *dst,
                                  size_t dst_size)
{
    /* dtype (fixed-size), shape and dst_size were checked by the reader
     * (check_read_target) before it came here. */
    return assemble(pr, dst, dst_size, ASSEMBLE_INTO_DST);
}

/* The pieces' sizes against the shape, then coverage as `mode` says. */
static int check_partitioned(const ckpt__partitioned_read *pr,
                             enum assemble_mode mode)
{
    uint64_t bytes = 0;
    int err = ckpt__bundle_partitioned_size(pr, &bytes);
    if (err == 0)
        err = assemble(pr, NULL, 0, mode);
    return err;
}

int ckpt__bundle_check_partitioned(const ckpt__partitioned_read *pr)
{
    return check_partitioned(pr, ASSEMBLE_CHECK);
}

int ckpt__bundle_check_partitioned_layout(const ckpt__partitioned_read *pr)
{
    return check_partitioned(pr, ASSEMBLE_LAYOUT);
}

int ckpt__bundle_partitioned_coverage(const ckpt__partitioned_read *pr)
{
    return assemble(pr, NULL, 0, ASSEMBLE_LAYOUT);
}

int ckpt__bundle_partitioned_size(const ckpt__partitioned_read *pr,
                                  uint64_t *bytes)
{
    return ckpt__bundle_partitioned_locate(pr, bytes, NULL, NULL);
}

int ckpt__bundle_partitioned_locate(const ckpt__partitioned_read *pr,
                                    uint64_t *bytes, size_t **pieces,
                                    size_t *npieces)
{
    const ckpt_tensor_entry *e = pr->entry;
    struct assembly as;
    ckpt__shown_name sn;
    int fixed = ckpt_dtype_size(e->dtype) > 0;
    int64_t need = 0;     /* bytes; elements when not `fixed` */
    size_t *order = NULL; /* as->picked in slice order, for *pieces */
    int err;

    assembly_start(&as, pr, &sn);
    as.size_only = true;
    if (!fixed) {
        /* its elements' count: each takes a byte of record at least */
        if (ckpt_shape_num_elements(&need, &e->shape) < 0)
            return ckpt__error(CKPT_ECORRUPT, "%s: tensor '%s': bad shape",
                               pr->index_path, as.name);
    } else if (ckpt_tensor_byte_size(&need, e->dtype, &e->shape) < 0)
        return ckpt__error(CKPT_ECORRUPT,
                           "%s: tensor '%s': byte size of the shape overflows",
                           pr->index_path, as.name);
    if (pieces) {
        *pieces = NULL;
        *npieces = 0;
    }
    err = place_all(&as);
    if (err == 0 && pieces && as.npicked > 0) {
        order = ckpt__malloc(as.npicked * sizeof(*order));
        if (!order)
            err = ckpt__error_oom();
        else
            memcpy(order, as.picked, as.npicked * sizeof(*order));
    }
    /* A piece named by two slices would count its record twice: a few
     * bytes of index could then pass for a tensor far larger than the
     * files (distinct pieces' records cannot share bytes: the reader
     * refused overlapping records at open). */
    if (err == 0 && as.npicked > 1) {
        qsort(as.picked, as.npicked, sizeof(*as.picked), by_index);
        for (size_t i = 1; err == 0 && i < as.npicked; i++)
            if (as.picked[i] == as.picked[i - 1]) {
                ckpt__shown_name pn;
                ckpt__entry_table_fill(&pr->reader->tab, as.picked[i],
                                       &as.piece);
                err = ckpt__error(
                    CKPT_ECORRUPT,
                    "%s: tensor '%s': two of its slices name the same "
                    "piece, '%s'",
                    pr->index_path, as.name,
                    ckpt__bundle_entry_shown(&pn, &as.piece));
            }
    }
    if (err == 0 && !fixed && as.stored < (uint64_t)need) {
        ckpt__shown_shape ss;
        err =
            ckpt__error(CKPT_ECORRUPT,
                        "%s: tensor '%s': its slices' records hold %llu "
                        "bytes, too few for the %lld elements of shape %s "
                        "(each takes one or more): slices are missing",
                        pr->index_path, as.name, (unsigned long long)as.stored,
                        (long long)need, ckpt__show_shape(&ss, &e->shape));
    }
    if (err == 0 && fixed && as.stored != (uint64_t)need) {
        ckpt__shown_shape ss;
        size_t esize = ckpt_dtype_size(e->dtype);
        err = ckpt__error(CKPT_ECORRUPT,
                          "%s: tensor '%s': slices %s %llu of %llu elements "
                          "(their records hold %llu bytes, the shape %s "
                          "needs %lld)",
                          pr->index_path, as.name,
                          as.stored < (uint64_t)need ? "cover" : "hold",
                          (unsigned long long)(as.stored / esize),
                          (unsigned long long)((uint64_t)need / esize),
                          (unsigned long long)as.stored,
                          ckpt__show_shape(&ss, &e->shape), (long long)need);
    }
    if (err == 0)
        *bytes = fixed ? (uint64_t)need : as.stored;
    if (err == 0 && pieces) {
        *pieces = order;
        *npieces = as.npicked;
        order = NULL;
    }
    ckpt__free(order);
    assembly_end(&as);
    return err;
}
