/* mpi/mpi_vars.c - the distributed saver's variables: local registration
 * (replicated, partitioned, per-rank) and the collective check that fixes
 * them. Every rank sends rank 0 a description of its variables:
 *
 *   per variable: i32 kind | i32 flags | i32 dtype | i32 rank |
 *                 i64 dims[rank] | (partitioned) i64 start[rank],
 *                 i64 length[rank] (-1: whole dimension) | u64 bytes |
 *                 u32 name_len | name
 *
 * (host byte order: all ranks run one build on one kind of machine). Rank 0
 * compares every rank's list with its own, checks that each partitioned
 * tensor's pieces tile its shape, assigns each replicated variable to the
 * rank with the fewest bytes so far (largest first), and broadcasts the
 * verdict and the assignment. */
#include "mpi_internal.h"

#include "common/mem_ranges.h"
#include "format/bundle_slices.h"
#include "util/crc32c.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *kind_label(int kind)
{
    switch (kind) {
    case CKPT__MPI_REPLICATED:
        return "replicated";
    case CKPT__MPI_PARTITIONED:
        return "partitioned";
    default:
        return "per-rank";
    }
}

/* ---- registration ------------------------------------------------------ */

int ckpt__mpi_per_rank_key(ckpt_buf *out, const char *name, int rank)
{
    ckpt__buf_clear(out);
    return ckpt__buf_printf(out, "%s/rank-%d", name, rank);
}

static int check_var(const ckpt_mpi_saver *s, const ckpt_var *var)
{
    const char *dir = s->ds.dir;
    ckpt_buf who = CKPT_BUF_INIT;
    int64_t n;
    int err = ckpt__buf_printf(&who, "mpi saver %s", dir);
    if (err == 0)
        err = ckpt__check_var_name(who.ptr, var->name);
    ckpt_buf_dispose(&who);
    if (err < 0)
        return err;
    if (s->checked || s->closed)
        return ckpt__error(CKPT_ESTATE,
                           "mpi saver %s: variable '%s': variables are fixed "
                           "after the first save, restore or check; "
                           "register every variable before them",
                           dir, var->name);
    if (ckpt_dtype_size(var->dtype) == 0)
        return ckpt__error(CKPT_ENOTSUP,
                           "mpi saver %s: variable '%s': dtype %d (%s) is not "
                           "a fixed-size dtype; register it with a "
                           "fixed-size dtype",
                           dir, var->name, var->dtype,
                           ckpt__dtype_label(var->dtype));
    err = ckpt_shape_num_elements(&n, &var->shape);
    if (err < 0) /* keeps the reason: the rank or the dim */
        return ckpt__error_prefix(err, "mpi saver %s: variable '%s'", dir,
                                  var->name);
    if (ckpt__name_index_find(&s->names, var->name) != SIZE_MAX)
        return ckpt__error(CKPT_EEXISTS,
                           "mpi saver %s: variable '%s' is already "
                           "registered; register each name once, as one "
                           "kind",
                           dir, var->name);
    return 0;
}

/* Data or both callbacks, unless this rank's part is an empty piece of a
 * partitioned variable (nothing to copy or fill). */
static int check_data(const ckpt_mpi_saver *s, const ckpt__mvar *v)
{
    const ckpt_var *var = &v->user;
    if (var->data || (var->read && var->write) ||
        (v->kind == CKPT__MPI_PARTITIONED && v->bytes == 0))
        return 0;
    return ckpt__error(
        CKPT_EINVAL,
        "mpi saver %s: variable '%s': %s; give it data or both callbacks "
        "(the distributed saver restores every variable it saves); only an "
        "empty piece of a partitioned variable may have neither",
        s->ds.dir, var->name,
        var->read    ? "a read callback without data or a write callback"
        : var->write ? "a write callback without data or a read callback"
                     : "no data and no read/write callbacks");
}

static int has_no_elements(const ckpt_shape *shape)
{
    for (int d = 0; d < shape->rank; d++)
        if (shape->dims[d] == 0)
            return 1;
    return 0;
}

/* This rank's piece of a partitioned variable: slice, local shape. */
static int set_piece(const char *dir, ckpt__mvar *v,
                     const ckpt_slice_extent *extents)
{
    int whole = 1;
    if (!extents)
        return ckpt__error(CKPT_EINVAL,
                           "mpi saver %s: partitioned variable '%s': no "
                           "extents; pass one extent per dimension",
                           dir, v->name);
    if (v->global.rank < 1)
        return ckpt__error(CKPT_EINVAL,
                           "mpi saver %s: partitioned variable '%s': a scalar "
                           "cannot be partitioned; register it replicated "
                           "or per-rank",
                           dir, v->name);
    v->slice.rank = v->global.rank;
    v->local.rank = v->global.rank;
    for (int d = 0; d < v->global.rank; d++) {
        int64_t dim = v->global.dims[d];
        int64_t start = extents[d].start, len = extents[d].length;
        if (len == CKPT_SLICE_FULL && start == 0)
            len = dim;
        else if (len == CKPT_SLICE_FULL)
            return ckpt__error(CKPT_EINVAL,
                               "mpi saver %s: partitioned variable '%s': "
                               "extent %d has length CKPT_SLICE_FULL with "
                               "start %lld; a full extent starts at 0",
                               dir, v->name, d, (long long)start);
        else if (start < 0 || len < 0 || start > dim || len > dim - start)
            return ckpt__error(CKPT_EINVAL,
                               "mpi saver %s: partitioned variable '%s': "
                               "extent %d (start %lld, length %lld) lies "
                               "outside dimension %lld; give extents inside "
                               "the global shape",
                               dir, v->name, d, (long long)extents[d].start,
                               (long long)extents[d].length, (long long)dim);
        v->slice.start[d] = start;
        v->slice.length[d] = len;
        v->local.dims[d] = len;
        if (start != 0 || len != dim)
            whole = 0;
    }
    if (has_no_elements(&v->global)) {
        /* No elements at all: every piece is empty, and the tensor is
         * stored whole, once, by rank 0 (its shape is all it holds). */
        whole = 1;
        v->local = v->global;
    }
    v->whole = whole;
    if (whole)
        return ckpt__buf_set(&v->key, v->name);
    return ckpt__slice_key_encode(&v->key, v->name, strlen(v->name), &v->slice);
}

int ckpt__mpi_add_var(ckpt_mpi_saver *s, int kind, const ckpt_var *var,
                      const ckpt_slice_extent *extents, int flags)
{
    ckpt__mvar *v;
    int64_t bytes;
    int err = check_var(s, var);
    if (err == 0)
        err = ckpt__name_index_reserve(&s->names, s->nvars + 1);
    if (err < 0)
        return err;
    if (ckpt__reserve_one(&s->vars, &s->cap_vars, s->nvars, sizeof(*s->vars),
                          16) < 0)
        return CKPT_ENOMEM;
    v = &s->vars[s->nvars];
    memset(v, 0, sizeof(*v));
    v->kind = kind;
    v->flags = flags;
    v->dtype = var->dtype;
    v->global = var->shape;
    v->local = var->shape;
    v->user = *var;
    v->name = ckpt__strdup(var->name);
    if (!v->name)
        return ckpt__error_oom();
    v->user.name = v->name;
    if (kind == CKPT__MPI_PARTITIONED)
        err = set_piece(s->ds.dir, v, extents);
    else if (kind == CKPT__MPI_PER_RANK)
        err = ckpt__mpi_per_rank_key(&v->key, v->name, s->rank);
    else
        err = ckpt__buf_set(&v->key, v->name);
    if (err == 0)
        err = ckpt_tensor_byte_size(&bytes, v->dtype, &v->local);
    if (err == 0) {
        v->bytes = (uint64_t)bytes;
        err = check_data(s, v);
    }
    if (err < 0) {
        ckpt__free(v->name);
        ckpt_buf_dispose(&v->key);
        return err;
    }
    /* Replicated: decided by the check. An empty piece stores nothing; a
     * tensor of no elements is stored by rank 0. */
    v->owned = kind == CKPT__MPI_PER_RANK ||
               (kind == CKPT__MPI_PARTITIONED &&
                (bytes > 0 || (v->whole && s->rank == 0)));
    s->nvars++;
    ckpt__name_index_put(&s->names, v->name, s->nvars - 1);
    return 0;
}

/* Rank 0's record of the partitioned tensors (rebuilt by each check). */
static void parts_dispose(ckpt_mpi_saver *s)
{
    for (size_t i = 0; i < s->nparts; i++) {
        ckpt__free(s->parts[i].name);
        ckpt__free(s->parts[i].pieces);
    }
    ckpt__free(s->parts);
    s->parts = NULL;
    s->nparts = 0;
}

void ckpt__mpi_vars_dispose(ckpt_mpi_saver *s)
{
    for (size_t i = 0; i < s->nvars; i++) {
        ckpt__free(s->vars[i].name);
        ckpt_buf_dispose(&s->vars[i].key);
    }
    ckpt__free(s->vars);
    ckpt__name_index_dispose(&s->names);
    parts_dispose(s);
    ckpt__free(s->owned);
    ckpt__free(s->owned_idx);
}

/* ---- descriptions -------------------------------------------------------- */

typedef struct desc {
    int kind, flags, dtype;
    ckpt_shape shape;
    ckpt__tensor_slice slice;
    uint64_t bytes;
    char *name; /* NUL-terminated copy */
} desc;

typedef struct rank_list {
    desc *d;
    size_t n;
} rank_list;

static int put_i32(ckpt_buf *b, int32_t v)
{
    return ckpt__buf_put(b, &v, sizeof(v));
}

static int put_i64(ckpt_buf *b, int64_t v)
{
    return ckpt__buf_put(b, &v, sizeof(v));
}

static int encode_vars(const ckpt_mpi_saver *s, ckpt_buf *out)
{
    int err = 0;
    for (size_t i = 0; err == 0 && i < s->nvars; i++) {
        const ckpt__mvar *v = &s->vars[i];
        uint32_t len = (uint32_t)strlen(v->name);
        err = put_i32(out, v->kind);
        if (err == 0)
            err = put_i32(out, v->flags);
        if (err == 0)
            err = put_i32(out, v->dtype);
        if (err == 0)
            err = put_i32(out, v->global.rank);
        for (int d = 0; err == 0 && d < v->global.rank; d++)
            err = put_i64(out, v->global.dims[d]);
        for (int d = 0;
             err == 0 && v->kind == CKPT__MPI_PARTITIONED && d < v->global.rank;
             d++) {
            err = put_i64(out, v->slice.start[d]);
            if (err == 0)
                err = put_i64(out, v->slice.length[d]);
        }
        if (err == 0)
            err = put_i64(out, (int64_t)v->bytes);
        if (err == 0)
            err = ckpt__buf_put(out, &len, sizeof(len));
        if (err == 0)
            err = ckpt__buf_put(out, v->name, len);
    }
    return err;
}

struct reader {
    const uint8_t *p, *end;
};

static int take(struct reader *r, void *dst, size_t n)
{
    if ((size_t)(r->end - r->p) < n)
        return ckpt__error(CKPT_ECORRUPT, "mpi saver: truncated description");
    memcpy(dst, r->p, n);
    r->p += n;
    return 0;
}

static int decode_one(struct reader *r, desc *d)
{
    int32_t f[4] = {0, 0, 0, 0};
    uint32_t len = 0;
    int err = take(r, f, sizeof(f));
    if (err == 0 && (f[3] < 0 || f[3] > CKPT_MAX_RANK))
        err = ckpt__error(CKPT_ECORRUPT, "mpi saver: bad rank in description");
    if (err < 0)
        return err;
    d->kind = f[0];
    d->flags = f[1];
    d->dtype = f[2];
    d->shape.rank = f[3];
    d->slice.rank = f[3];
    for (int i = 0; err == 0 && i < f[3]; i++)
        err = take(r, &d->shape.dims[i], sizeof(int64_t));
    for (int i = 0; err == 0 && d->kind == CKPT__MPI_PARTITIONED && i < f[3];
         i++) {
        err = take(r, &d->slice.start[i], sizeof(int64_t));
        if (err == 0)
            err = take(r, &d->slice.length[i], sizeof(int64_t));
    }
    if (err == 0)
        err = take(r, &d->bytes, sizeof(d->bytes));
    if (err == 0)
        err = take(r, &len, sizeof(len));
    if (err == 0 && (size_t)(r->end - r->p) < len)
        err = ckpt__error(CKPT_ECORRUPT, "mpi saver: truncated description");
    if (err < 0)
        return err;
    d->name = ckpt__strndup((const char *)r->p, len);
    if (!d->name)
        return ckpt__error_oom();
    r->p += len;
    return 0;
}

static int cmp_desc(const void *a, const void *b)
{
    const desc *x = a, *y = b;
    if (x->kind != y->kind)
        return x->kind < y->kind ? -1 : 1;
    return strcmp(x->name, y->name);
}

static int decode_list(rank_list *l, const uint8_t *p, size_t n)
{
    struct reader r = {p, p + n};
    size_t cap = 0;
    int err = 0;
    while (err == 0 && r.p < r.end) {
        if (ckpt__reserve_one(&l->d, &cap, l->n, sizeof(*l->d), 16) < 0)
            return CKPT_ENOMEM;
        memset(&l->d[l->n], 0, sizeof(desc));
        err = decode_one(&r, &l->d[l->n]);
        if (err == 0)
            l->n++;
    }
    if (err == 0 && l->n > 1)
        qsort(l->d, l->n, sizeof(desc), cmp_desc);
    return err;
}

static void lists_dispose(rank_list *lists, int n)
{
    for (int r = 0; lists && r < n; r++) {
        for (size_t i = 0; i < lists[r].n; i++)
            ckpt__free(lists[r].d[i].name);
        ckpt__free(lists[r].d);
    }
    ckpt__free(lists);
}

/* ---- rank 0's checks --------------------------------------------------- */

/* What a mismatch message tells the caller to do. */
#define SAME_LISTS_HINT                                                        \
    "register the same variables on every rank (name, kind, dtype and "        \
    "shape; order does not matter) before the first save, restore or check"

/* The variable `name` of kind `kind` in list `l`, or NULL. */
static const desc *find_desc(const rank_list *l, int kind, const char *name)
{
    desc key;
    memset(&key, 0, sizeof(key));
    key.kind = kind;
    key.name = (char *)name;
    return bsearch(&key, l->d, l->n, sizeof(desc), cmp_desc);
}

/* The variable `name` as list `l` registered it, of any kind, or NULL. */
static const desc *find_any_kind(const rank_list *l, const char *name)
{
    static const int kinds[] = {CKPT__MPI_REPLICATED, CKPT__MPI_PARTITIONED,
                                CKPT__MPI_PER_RANK};
    for (size_t k = 0; k < sizeof(kinds) / sizeof(kinds[0]); k++) {
        const desc *d = find_desc(l, kinds[k], name);
        if (d)
            return d;
    }
    return NULL;
}

/* Both registrations the same (kind, dtype, shape), or both absent. */
static int same_registration(const desc *a, const desc *b)
{
    if (!a || !b)
        return a == b;
    return a->kind == b->kind && a->dtype == b->dtype &&
           ckpt_shape_equal(&a->shape, &b->shape);
}

/* The first variable rank r registered otherwise than rank 0 (on one
 * only, or another kind, dtype or shape), or NULL. */
static const char *first_difference(const rank_list *l0, const rank_list *lr)
{
    size_t i = 0, j = 0;
    while (i < l0->n || j < lr->n) {
        int c = i == l0->n   ? 1
                : j == lr->n ? -1
                             : cmp_desc(&l0->d[i], &lr->d[j]);
        if (c < 0)
            return l0->d[i].name;
        if (c > 0)
            return lr->d[j].name;
        if (!same_registration(&l0->d[i], &lr->d[j]))
            return l0->d[i].name;
        i++;
        j++;
    }
    return NULL;
}

/* "registered it as replicated float32 [4]" or "did not register it". */
static int describe_registration(ckpt_buf *b, const desc *d)
{
    char sh[128];
    if (!d)
        return ckpt__buf_printf(b, "did not register it");
    ckpt_shape_format(sh, sizeof(sh), &d->shape);
    return ckpt__buf_printf(b, "registered it as %s %s %s", kind_label(d->kind),
                            ckpt_dtype_name(d->dtype), sh);
}

/* Whether variable `name` is registered otherwise on lists `a` and `b`
 * (on one only, or as another kind, dtype or shape). */
static int differs(const rank_list *a, const rank_list *b, const char *name)
{
    return !same_registration(find_any_kind(a, name), find_any_kind(b, name));
}

/* How many of the other variables registered otherwise are named. */
#define OTHER_NAMES_SHOWN 4

/* The variables other than `name` that rank 0 and rank r register
 * otherwise, rank 0's first, each once: how many, and (with `b`) the
 * first `show` of them appended as "'a', 'b'". */
static size_t other_differences(const rank_list *lists, int r, const char *name,
                                ckpt_buf *b, size_t show, int *err)
{
    const rank_list *sides[2] = {&lists[0], &lists[r]};
    size_t count = 0;
    for (int side = 0; side < 2; side++)
        for (size_t i = 0; i < sides[side]->n; i++) {
            const char *other = sides[side]->d[i].name;
            /* a name rank 0 registered is counted from rank 0's side */
            if (strcmp(other, name) == 0 ||
                (side == 1 && find_any_kind(&lists[0], other)) ||
                !differs(&lists[0], &lists[r], other))
                continue;
            if (b && count < show && *err == 0)
                *err = ckpt__buf_printf(b, "%s'%s'", count ? ", " : "", other);
            count++;
        }
    return count;
}

/* "; 2 other variables differ between rank 0 and rank 1 too: 'a', 'b'"
 * (up to OTHER_NAMES_SHOWN named, then how many more), or nothing when
 * `name` is the only one. */
static int describe_other_differences(ckpt_buf *b, const rank_list *lists,
                                      int r, const char *name)
{
    int err = 0;
    size_t count = other_differences(lists, r, name, NULL, 0, &err);
    if (count == 0)
        return 0;
    err = ckpt__buf_printf(b,
                           "; %zu other variable%s between rank 0 and rank "
                           "%d too: ",
                           count, count == 1 ? " differs" : "s differ", r);
    if (err == 0)
        (void)other_differences(lists, r, name, b, OTHER_NAMES_SHOWN, &err);
    if (err == 0 && count > OTHER_NAMES_SHOWN)
        err = ckpt__buf_printf(b, " and %zu more", count - OTHER_NAMES_SHOWN);
    return err;
}

/* Every rank's list against rank 0's: the same variables of each kind.
 * The first variable found registered otherwise is named with rank 0's
 * registration, the first differing rank's, and every rank that differs
 * from rank 0 on it (up to eight), then the other variables that rank
 * registered otherwise (up to four named), so each rank reads the same
 * verdict. */
static int compare_lists(const rank_list *lists, int size)
{
    ckpt_buf b = CKPT_BUF_INIT;
    const char *name = NULL;
    const desc *d0;
    int first = 0, listed = 0, err;
    for (int r = 1; !name && r < size; r++) {
        name = first_difference(&lists[0], &lists[r]);
        first = r;
    }
    if (!name)
        return 0;
    d0 = find_any_kind(&lists[0], name);
    err = ckpt__buf_printf(&b,
                           "mismatched variable lists: variable '%s': "
                           "rank 0 ",
                           name);
    if (err == 0)
        err = describe_registration(&b, d0);
    if (err == 0)
        err = ckpt__buf_printf(&b, ", rank %d ", first);
    if (err == 0)
        err = describe_registration(&b, find_any_kind(&lists[first], name));
    if (err == 0)
        err = ckpt__buf_printf(&b, " (ranks that differ from rank 0 on it:");
    for (int r = first; err == 0 && r < size; r++) {
        if (same_registration(d0, find_any_kind(&lists[r], name)))
            continue;
        if (listed++ < 8)
            err = ckpt__buf_printf(&b, "%s %d", listed > 1 ? "," : "", r);
    }
    if (err == 0 && listed > 8)
        err = ckpt__buf_printf(&b, " and %d more", listed - 8);
    if (err == 0)
        err = ckpt__buf_printf(&b, ")");
    if (err == 0)
        err = describe_other_differences(&b, lists, first, name);
    if (err == 0)
        err = ckpt__error(CKPT_EINVAL, "%s; %s", b.ptr, SAME_LISTS_HINT);
    ckpt_buf_dispose(&b);
    return err;
}

static int64_t piece_volume(const ckpt__tensor_slice *s, const ckpt_shape *g)
{
    int64_t v = 1;
    for (int d = 0; d < g->rank; d++)
        v *= s->length[d];
    return v;
}

static int pieces_overlap(const ckpt__tensor_slice *a,
                          const ckpt__tensor_slice *b, int rank)
{
    for (int d = 0; d < rank; d++) {
        int64_t lo = a->start[d] > b->start[d] ? a->start[d] : b->start[d];
        int64_t ha = a->start[d] + a->length[d];
        int64_t hb = b->start[d] + b->length[d];
        if (lo >= (ha < hb ? ha : hb))
            return 0;
    }
    return 1;
}

static void format_piece(char *out, size_t n, const ckpt__tensor_slice *s)
{
    ckpt_buf b = CKPT_BUF_INIT;
    if (ckpt__tensor_slice_format(&b, s) == 0)
        snprintf(out, n, "%s", b.ptr);
    else
        snprintf(out, n, "?");
    ckpt_buf_dispose(&b);
}

/* The pieces of partitioned tensor `k` (index into each sorted list) tile
 * its shape; record them for the merged index. */
static int check_tiling(ckpt_mpi_saver *s, const rank_list *lists, size_t k,
                        ckpt__mpi_partition *part)
{
    const desc *d0 = &lists[0].d[k];
    int64_t total = 0, covered = 0;
    int whole = 0;
    ckpt_shape_num_elements(&total, &d0->shape);
    part->name = ckpt__strdup(d0->name);
    part->pieces = ckpt__calloc((size_t)s->size, sizeof(*part->pieces));
    if (!part->name || !part->pieces)
        return ckpt__error_oom();
    part->dtype = d0->dtype;
    part->global = d0->shape;
    for (int r = 0; r < s->size; r++) {
        const desc *dr = &lists[r].d[k];
        int64_t vol = piece_volume(&dr->slice, &d0->shape);
        if (vol == 0)
            continue;
        for (int q = 0; q < r; q++) {
            const desc *dq = &lists[q].d[k];
            char a[256], b[256];
            if (piece_volume(&dq->slice, &d0->shape) == 0 ||
                !pieces_overlap(&dq->slice, &dr->slice, d0->shape.rank))
                continue;
            format_piece(a, sizeof(a), &dq->slice);
            format_piece(b, sizeof(b), &dr->slice);
            return ckpt__error(CKPT_EINVAL,
                               "partitioned variable '%s': the pieces of "
                               "rank %d (%s) and rank %d (%s) overlap; "
                               "give each rank extents that no other rank's "
                               "overlap (a rank holding none registers a "
                               "zero length)",
                               d0->name, q, a, r, b);
        }
        covered += vol;
        if (vol == total)
            whole = 1;
        part->pieces[part->npieces++] = dr->slice;
    }
    if (covered != total) {
        char sh[128];
        ckpt_shape_format(sh, sizeof(sh), &d0->shape);
        return ckpt__error(CKPT_EINVAL,
                           "partitioned variable '%s' %s: the pieces of "
                           "all %d ranks cover %lld of its %lld elements "
                           "(a hole); give the ranks extents that together "
                           "cover every element",
                           d0->name, sh, s->size, (long long)covered,
                           (long long)total);
    }
    if (whole)
        part->npieces = 0; /* one rank stores it as an ordinary entry */
    return 0;
}

/* No per-rank variable's stored name "<name>/rank-<r>" is another
 * variable's name. */
static int check_stored_names(const ckpt_mpi_saver *s, const rank_list *l0)
{
    ckpt_buf b = CKPT_BUF_INIT;
    int err = 0;
    for (size_t i = 0; err == 0 && i < l0->n; i++) {
        if (l0->d[i].kind != CKPT__MPI_PER_RANK)
            continue;
        for (int r = 0; err == 0 && r < s->size; r++) {
            err = ckpt__mpi_per_rank_key(&b, l0->d[i].name, r);
            if (err == 0 && (find_desc(l0, CKPT__MPI_REPLICATED, b.ptr) ||
                             find_desc(l0, CKPT__MPI_PARTITIONED, b.ptr)))
                err = ckpt__error(CKPT_EINVAL,
                                  "per-rank variable '%s' is stored as "
                                  "'%s', which is also the name of another "
                                  "variable; rename one of them",
                                  l0->d[i].name, b.ptr);
        }
    }
    ckpt_buf_dispose(&b);
    return err;
}

struct rep_order {
    size_t idx; /* among the replicated variables, by name */
    uint64_t bytes;
};

static int cmp_rep(const void *a, const void *b)
{
    const struct rep_order *x = a, *y = b;
    if (x->bytes != y->bytes)
        return x->bytes > y->bytes ? -1 : 1;
    return x->idx < y->idx ? -1 : (x->idx > y->idx);
}

/* Owners of the replicated variables (in name order), balancing bytes: the
 * largest first, each to the rank with the fewest bytes so far. */
static int assign_owners(const ckpt_mpi_saver *s, const rank_list *lists,
                         int *owners, size_t nrep)
{
    uint64_t *load = ckpt__calloc((size_t)s->size, sizeof(*load));
    struct rep_order *order = ckpt__calloc(nrep ? nrep : 1, sizeof(*order));
    int err = 0;
    if (!load || !order) {
        err = ckpt__error_oom();
        goto done;
    }
    for (int r = 0; r < s->size; r++)
        for (size_t i = 0; i < lists[r].n; i++)
            if (lists[r].d[i].kind != CKPT__MPI_REPLICATED)
                load[r] += lists[r].d[i].bytes;
    for (size_t i = 0; i < nrep; i++) {
        order[i].idx = i;
        order[i].bytes = lists[0].d[i].bytes;
    }
    qsort(order, nrep, sizeof(*order), cmp_rep);
    for (size_t i = 0; i < nrep; i++) {
        int best = 0;
        for (int r = 1; r < s->size; r++)
            if (load[r] < load[best])
                best = r;
        owners[order[i].idx] = best;
        load[best] += order[i].bytes;
    }
done:
    ckpt__free(load);
    ckpt__free(order);
    return err;
}

static size_t count_kind(const rank_list *l, int kind)
{
    size_t n = 0;
    for (size_t i = 0; i < l->n; i++)
        n += l->d[i].kind == kind;
    return n;
}

/* Everything rank 0 checks, on the gathered descriptions. */
static int check_on_root(ckpt_mpi_saver *s, const uint8_t *all,
                         const int *counts, const int *displs, int *owners,
                         size_t *nrep_out)
{
    rank_list *lists = ckpt__calloc((size_t)s->size, sizeof(*lists));
    size_t nrep, npart;
    int err = 0;
    if (!lists)
        return ckpt__error_oom();
    for (int r = 0; err == 0 && r < s->size; r++)
        err = decode_list(&lists[r], all + displs[r], (size_t)counts[r]);
    if (err == 0)
        err = compare_lists(lists, s->size);
    if (err == 0)
        err = check_stored_names(s, &lists[0]);
    nrep = count_kind(&lists[0], CKPT__MPI_REPLICATED);
    npart = count_kind(&lists[0], CKPT__MPI_PARTITIONED);
    parts_dispose(s); /* an earlier check that failed */
    if (err == 0 && npart > 0) {
        s->parts = ckpt__calloc(npart, sizeof(*s->parts));
        if (!s->parts)
            err = ckpt__error_oom();
    }
    for (size_t k = 0; err == 0 && k < npart; k++) {
        err = check_tiling(s, lists, nrep + k, &s->parts[k]);
        s->nparts = k + 1;
    }
    if (err == 0)
        err = assign_owners(s, lists, owners, nrep);
    *nrep_out = nrep;
    lists_dispose(lists, s->size);
    return err;
}

/* ---- the collective ----------------------------------------------------- */

static int cmp_mvar_name(const void *a, const void *b)
{
    const ckpt__mvar *const *x = a, *const *y = b;
    return strcmp((*x)->name, (*y)->name);
}

/* Mark the replicated variables this rank writes (owners in name order). */
static int apply_owners(ckpt_mpi_saver *s, const int *owners, size_t nrep)
{
    ckpt__mvar **rep = ckpt__calloc(nrep ? nrep : 1, sizeof(*rep));
    size_t n = 0;
    if (!rep)
        return ckpt__error_oom();
    for (size_t i = 0; i < s->nvars && n < nrep; i++)
        if (s->vars[i].kind == CKPT__MPI_REPLICATED)
            rep[n++] = &s->vars[i];
    qsort(rep, n, sizeof(*rep), cmp_mvar_name);
    for (size_t i = 0; i < n; i++)
        rep[i]->owned = owners[i] == s->rank;
    ckpt__free(rep);
    return 0;
}

/* CKPT_EINVAL: `op` ("save", "restore", ...) found no variables. A save
 * would write nothing; a restore would restore nothing, and the first
 * saves evict what it meant to resume from. */
static int no_variables(const ckpt_mpi_saver *s, const char *op)
{
    if (strncmp(op, "save", 4) == 0)
        return ckpt__error(CKPT_EINVAL,
                           "mpi saver %s: %s: no variables to save; register "
                           "them first (ckpt_mpi_saver_add_replicated, "
                           "_partitioned, _per_rank)",
                           s->ds.dir, op);
    return ckpt__error(CKPT_EINVAL,
                       "mpi saver %s: %s: no variables registered, so "
                       "nothing would be restored (register them first: "
                       "ckpt_mpi_saver_add_replicated, _partitioned, "
                       "_per_rank)",
                       s->ds.dir, op);
}

/* The memory this rank's variable `i` uses, for the check that each has
 * its own, as ckpt_saver requires (a variable with both callbacks never
 * touches its data). */
static int memory_of(const void *vars, size_t i, const char **name,
                     const void **data, uint64_t *bytes)
{
    const ckpt__mvar *v = (const ckpt__mvar *)vars + i;
    *name = v->name;
    *data = v->user.data;
    *bytes = v->bytes;
    return v->user.data && v->bytes > 0 && !(v->user.read && v->user.write);
}

static int check_own_memory(const ckpt_mpi_saver *s)
{
    int err = ckpt__check_own_memory(s->vars, s->nvars, memory_of);
    return err < 0 ? ckpt__error_prefix(err, "mpi saver %s", s->ds.dir) : 0;
}

int ckpt__mpi_check(ckpt_mpi_saver *s, const char *needs)
{
    ckpt_buf mine = CKPT_BUF_INIT;
    int *counts = NULL, *displs = NULL, *owners = NULL;
    uint8_t *all = NULL;
    int32_t len = 0;
    size_t nrep = 0;
    int64_t total = 0;
    MPI_Request req;
    int err;

    /* The lists match on every rank once checked: no variables on one is
     * none on all. */
    if (s->checked && (!needs || s->nvars > 0))
        return 0;
    if (needs && s->nvars == 0)
        err = no_variables(s, needs);
    else
        err = encode_vars(s, &mine);
    if (s->checked)
        return err;
    if (err == 0)
        err = check_own_memory(s);
    if (err == 0 && mine.size > INT32_MAX)
        err = ckpt__error(CKPT_EINVAL,
                          "mpi saver %s: the description of its %zu "
                          "variables exceeds 2 GiB; register fewer "
                          "variables",
                          s->ds.dir, s->nvars);
    err = ckpt__mpi_agree(s, s->comm_ctl, err, "checking variables");
    if (err < 0)
        goto done;
    len = (int32_t)mine.size;
    if (s->rank == 0) {
        counts = ckpt__calloc((size_t)s->size, sizeof(int));
        displs = ckpt__calloc((size_t)s->size, sizeof(int));
        owners = ckpt__calloc(s->nvars + 1, sizeof(int));
        if (!counts || !displs || !owners)
            ckpt__mpi_abort(s, "out of memory checking variables");
    }
    MPI_Igather(&len, 1, MPI_INT, counts, 1, MPI_INT, 0, s->comm_ctl, &req);
    ckpt__mpi_wait_all(s, &req, 1, "checking variables");
    if (s->rank == 0) {
        for (int r = 0; r < s->size; r++) {
            displs[r] = (int)total;
            total += counts[r];
        }
        if (total > INT32_MAX)
            ckpt__mpi_abort(s, "variable descriptions too large");
        all = ckpt__malloc(total ? (size_t)total : 1);
        if (!all)
            ckpt__mpi_abort(s, "out of memory checking variables");
    }
    MPI_Igatherv(mine.ptr, len, MPI_BYTE, all, counts, displs, MPI_BYTE, 0,
                 s->comm_ctl, &req);
    ckpt__mpi_wait_all(s, &req, 1, "checking variables");
    if (s->rank == 0)
        err = check_on_root(s, all, counts, displs, owners, &nrep);
    if (err < 0) /* every rank reads which saver it is */
        err = ckpt__error_prefix(err, "mpi saver %s: checking variables",
                                 s->ds.dir);
    err = ckpt__mpi_bcast_outcome(s, s->comm_ctl, err, "checking variables");
    if (err < 0)
        goto done;
    if (s->rank != 0) {
        for (size_t i = 0; i < s->nvars; i++)
            nrep += s->vars[i].kind == CKPT__MPI_REPLICATED;
        owners = ckpt__calloc(nrep + 1, sizeof(int));
        if (!owners)
            ckpt__mpi_abort(s, "out of memory checking variables");
    }
    MPI_Ibcast(owners, (int)nrep, MPI_INT, 0, s->comm_ctl, &req);
    ckpt__mpi_wait_all(s, &req, 1, "checking variables");
    err = apply_owners(s, owners, nrep);
    if (err == 0)
        err = ckpt__mpi_shard_plan(s);
    err = ckpt__mpi_agree(s, s->comm_ctl, err, "checking variables");
    if (err == 0) {
        s->checked = 1;
        /* Whether long fused copies stream is measured once per process
         * (a few ms of copies): here, where a session restores, rather
         * than inside the first snapshot. */
        (void)ckpt__crc32c_copy_streams();
    }
done:
    ckpt_buf_dispose(&mine);
    ckpt__free(counts);
    ckpt__free(displs);
    ckpt__free(owners);
    ckpt__free(all);
    return err;
}
