/* format/bundle_slices_write.c - partitioned tensors (docs/format.md §6), the
 * writing side: each piece given to ckpt_bundle_writer_add_slice is checked
 * (extents inside the full shape, size, dtype and full shape like the
 * earlier pieces, no overlap) and recorded, so the full entry's `slices`
 * list grows in the order pieces are added. */
#include "format/bundle_slices.h"

#include "common/internal.h"
#include "format/bundle_text.h"
#include "util/pb_wire.h"

#include <stdint.h>
#include <stdio.h>
#include <string.h>

/* ---- writer ---------------------------------------------------------------
 */

/* A partitioned tensor's pieces, in the order they were added, and an
 * interval tree over them that a new piece is checked against for
 * overlap (bundle_slice_overlap.c), not each piece in turn. */
struct ckpt__sliced_tensor {
    size_t entry_index;
    int dtype;
    ckpt_shape full;
    ckpt__tensor_slice *slices;
    int count;
    int cap;
    ckpt__slice_overlap_index overlap;
};

/* Check one extent and store it in p; `dim` is the full dimension. */
static int prepare_extent(ckpt__slice_piece *p, const char *prefix,
                          const char *name, int d, ckpt_slice_extent e,
                          int64_t dim)
{
    if (e.length == CKPT_SLICE_FULL) {
        if (e.start != 0)
            return ckpt__error(CKPT_EINVAL,
                               "%s: tensor '%s': extent %d is full "
                               "(CKPT_SLICE_FULL) but starts at %lld",
                               prefix, name, d, (long long)e.start);
        p->slice.start[d] = 0;
        p->slice.length[d] = -1;
        p->shape.dims[d] = dim;
        return 0;
    }
    if (e.start < 0 || e.length < 0 || e.start > dim ||
        e.length > dim - e.start)
        return ckpt__error(CKPT_EINVAL,
                           "%s: tensor '%s': extent %d (start %lld, length "
                           "%lld) lies outside dimension %d of size %lld",
                           prefix, name, d, (long long)e.start,
                           (long long)e.length, d, (long long)dim);
    p->slice.start[d] = e.start;
    p->slice.length[d] = e.length;
    p->shape.dims[d] = e.length;
    return 0;
}

int ckpt__slice_piece_prepare(ckpt__slice_piece *p, const char *prefix,
                              const char *name, int dtype,
                              const ckpt_shape *full_shape,
                              const ckpt_slice_extent *extents,
                              const void *data, size_t nbytes)
{
    ckpt__shown_shape ss;
    int64_t count, need;
    size_t esize = ckpt_dtype_size(dtype);
    int err;

    memset(p, 0, sizeof(*p));
    if (!name || !*name)
        return ckpt__error(CKPT_EINVAL, "%s: tensor name is %s", prefix,
                           name ? "empty" : "NULL");
    if (dtype == CKPT_DT_STRING)
        return ckpt__error(CKPT_ENOTSUP,
                           "%s: tensor '%s': partitioned string tensors are "
                           "not supported",
                           prefix, name);
    if (esize == 0)
        return ckpt__error(CKPT_ENOTSUP,
                           "%s: tensor '%s': dtype %d (%s) is not supported",
                           prefix, name, dtype, ckpt__dtype_label(dtype));
    if (!full_shape)
        return ckpt__error(CKPT_EINVAL, "%s: tensor '%s': NULL shape", prefix,
                           name);
    err = ckpt_shape_num_elements(&count, full_shape);
    if (err < 0)
        return ckpt__error_prefix(err, "%s: tensor '%s'", prefix, name);
    if (full_shape->rank > 0 && !extents)
        return ckpt__error(CKPT_EINVAL, "%s: tensor '%s': NULL extents", prefix,
                           name);
    p->slice.rank = full_shape->rank;
    p->shape.rank = full_shape->rank;
    p->whole = true;
    for (int d = 0; d < full_shape->rank; d++) {
        err =
            prepare_extent(p, prefix, name, d, extents[d], full_shape->dims[d]);
        if (err < 0)
            return err;
        if (p->shape.dims[d] != full_shape->dims[d])
            p->whole = false;
    }
    /* The piece lies inside the full shape, so its count cannot overflow. */
    if (ckpt_shape_num_elements(&count, &p->shape) < 0 ||
        ckpt__mul_overflow_i64(count, (int64_t)esize, &need))
        return ckpt__error(CKPT_EINVAL,
                           "%s: tensor '%s': byte size of the piece overflows",
                           prefix, name);
    if ((uint64_t)need != (uint64_t)nbytes)
        return ckpt__error(CKPT_EINVAL,
                           "%s: tensor '%s': %zu bytes given, a %s piece of "
                           "shape %s needs %lld",
                           prefix, name, nbytes, ckpt__dtype_label(dtype),
                           ckpt__show_shape(&ss, &p->shape), (long long)need);
    if (!data && nbytes > 0)
        return ckpt__error(CKPT_EINVAL, "%s: tensor '%s': NULL data", prefix,
                           name);
    if (p->whole)
        return 0;
    return ckpt__slice_key_encode(&p->key, name, strlen(name), &p->slice);
}

void ckpt__slice_piece_dispose(ckpt__slice_piece *p)
{
    if (p)
        ckpt_buf_dispose(&p->key);
}

static struct ckpt__sliced_tensor *set_find(const ckpt__slice_set *s,
                                            size_t entry_index)
{
    size_t lo = 0, hi = s->count;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (s->items[mid].entry_index == entry_index)
            return &s->items[mid];
        if (s->items[mid].entry_index < entry_index)
            lo = mid + 1;
        else
            hi = mid;
    }
    return NULL;
}

bool ckpt__slice_set_has(const ckpt__slice_set *s, size_t entry_index)
{
    return set_find(s, entry_index) != NULL;
}

/* The first piece of `t`, in the order added, that `s` overlaps, or -1. */
static int first_overlap(const struct ckpt__sliced_tensor *t,
                         const ckpt__tensor_slice *s)
{
    if (!ckpt__slice_overlap_any(&t->overlap, t->slices, s))
        return -1;
    /* the message names the earliest piece it overlaps: a scan, once */
    for (int i = 0; i < t->count; i++)
        if (ckpt__slices_overlap(&t->slices[i], s, &t->full))
            return i;
    return -1;
}

int ckpt__slice_set_check(const ckpt__slice_set *s, const char *prefix,
                          const char *name, size_t entry_index, bool is_new,
                          int dtype, const ckpt_shape *full_shape,
                          const ckpt__slice_piece *p)
{
    const struct ckpt__sliced_tensor *t;
    ckpt__shown_shape a, b;
    ckpt_buf x = CKPT_BUF_INIT, y = CKPT_BUF_INIT;
    int err = 0, i;

    if (is_new)
        return 0;
    t = set_find(s, entry_index);
    if (!t)
        return ckpt__error(CKPT_EEXISTS,
                           "%s: tensor '%s' was already added as a whole "
                           "tensor",
                           prefix, name);
    if (t->dtype != dtype)
        return ckpt__error(CKPT_EINVAL,
                           "%s: tensor '%s': piece of dtype %s, the earlier "
                           "pieces are %s",
                           prefix, name, ckpt__dtype_label(dtype),
                           ckpt__dtype_label(t->dtype));
    if (!ckpt_shape_equal(&t->full, full_shape))
        return ckpt__error(CKPT_EINVAL,
                           "%s: tensor '%s': full shape %s differs from the "
                           "earlier pieces' %s",
                           prefix, name, ckpt__show_shape(&a, full_shape),
                           ckpt__show_shape(&b, &t->full));
    i = first_overlap(t, &p->slice);
    if (i >= 0) {
        err = ckpt__tensor_slice_format(&x, &p->slice);
        if (err == 0)
            err = ckpt__tensor_slice_format(&y, &t->slices[i]);
        if (err == 0)
            err = ckpt__error(CKPT_EINVAL,
                              "%s: tensor '%s': piece %s overlaps piece %d "
                              "(%s)",
                              prefix, name, x.ptr, i, y.ptr);
    }
    ckpt_buf_dispose(&x);
    ckpt_buf_dispose(&y);
    return err;
}

int ckpt__slice_set_append(ckpt__slice_set *s, size_t entry_index, int dtype,
                           const ckpt_shape *full_shape,
                           const ckpt__slice_piece *p, ckpt__bundle_entry *full)
{
    struct ckpt__sliced_tensor *t = set_find(s, entry_index);
    size_t i;
    if (!t) {
        if (s->count > 0 && s->items[s->count - 1].entry_index > entry_index)
            return ckpt__error(CKPT_EINVAL,
                               "slice set: entry %zu added out of order",
                               entry_index);
        if (ckpt__reserve_one(&s->items, &s->cap, s->count, sizeof(*s->items),
                              8) < 0)
            return CKPT_ENOMEM;
        t = &s->items[s->count++];
        memset(t, 0, sizeof(*t));
        t->entry_index = entry_index;
        t->dtype = dtype;
        t->full = *full_shape;
        ckpt__slice_overlap_init(&t->overlap, &p->slice, full_shape);
    }
    if (t->count == t->cap) {
        int cap;
        ckpt__tensor_slice *q;
        if (t->cap > (1 << 29))
            return ckpt__error(CKPT_EINVAL, "slice set: too many pieces");
        cap = t->cap ? t->cap * 2 : 4;
        q = ckpt__realloc(t->slices, (size_t)cap * sizeof(*q));
        if (!q)
            return ckpt__error_oom();
        t->slices = q;
        if (ckpt__slice_overlap_reserve(&t->overlap, cap) < 0)
            return CKPT_ENOMEM;
        t->cap = cap;
    }
    t->slices[t->count++] = p->slice;
    ckpt__slice_overlap_insert(&t->overlap, t->slices, t->count - 1);
    ckpt__slice_set_describe(s, (size_t)(t - s->items), &i, full);
    return 0;
}

void ckpt__slice_set_describe(const ckpt__slice_set *s, size_t k,
                              size_t *entry_index, ckpt__bundle_entry *full)
{
    const struct ckpt__sliced_tensor *t = &s->items[k];
    *entry_index = t->entry_index;
    memset(full, 0, sizeof(*full));
    full->dtype = t->dtype;
    full->shape = t->full;
    full->num_slices = t->count;
    full->slices = t->slices;
}

void ckpt__slice_set_dispose(ckpt__slice_set *s)
{
    if (!s)
        return;
    for (size_t i = 0; i < s->count; i++) {
        ckpt__free(s->items[i].slices);
        ckpt__slice_overlap_dispose(&s->items[i].overlap);
    }
    ckpt__free(s->items);
    s->items = NULL;
    s->count = 0;
    s->cap = 0;
}
