/* format/bundle_slice_overlap.c - whether a new piece of a partitioned
 * tensor overlaps a piece added before, without comparing it with each of
 * them: an interval tree over the pieces' ranges along one dimension (the
 * first the tensor's first piece does not cover whole). The tree is a
 * treap keyed by (start along that dimension, piece number), with
 * priorities hashed from the piece number, and every node holds the
 * largest end in its subtree, so a search visits only the subtrees that
 * can hold a piece starting before the new piece ends and ending after it
 * starts. Pieces that split the tensor along that dimension are found or
 * ruled out in O(log k) expected, added in any order; pieces that share
 * their range there (a grid cut along another dimension too) are compared
 * only with those that share it. */
#include "format/bundle_slices.h"

#include "common/internal.h"

#include <stdint.h>
#include <string.h>

bool ckpt__slices_overlap(const ckpt__tensor_slice *a,
                          const ckpt__tensor_slice *b, const ckpt_shape *full)
{
    for (int d = 0; d < full->rank; d++) {
        int64_t alo, ahi, blo, bhi;
        ckpt__slice_extent_range(a, d, full->dims[d], &alo, &ahi);
        ckpt__slice_extent_range(b, d, full->dims[d], &blo, &bhi);
        if ((alo > blo ? alo : blo) >= (ahi < bhi ? ahi : bhi))
            return false;
    }
    return true;
}

/* Piece `s`'s range [*lo, *hi) along x's dimension. */
static void axis_range(const ckpt__slice_overlap_index *x,
                       const ckpt__tensor_slice *s, int64_t *lo, int64_t *hi)
{
    ckpt__slice_extent_range(s, x->axis, x->full.dims[x->axis], lo, hi);
}

/* A treap priority for piece `n`: a fixed mix of its number, so the tree's
 * shape (and so its depth, O(log k) expected) does not depend on the order
 * the pieces' ranges come in. */
static uint32_t priority(int n)
{
    uint32_t h = (uint32_t)n + 0x9e3779b9u;
    h ^= h >> 16;
    h *= 0x7feb352du;
    h ^= h >> 15;
    h *= 0x846ca68bu;
    h ^= h >> 16;
    return h;
}

/* Recompute node n's reach from its own end and its children's. */
static void update(ckpt__slice_overlap_index *x,
                   const ckpt__tensor_slice *slices, int n)
{
    int64_t lo, hi;
    axis_range(x, &slices[n], &lo, &hi);
    if (x->left[n] >= 0 && x->reach[x->left[n]] > hi)
        hi = x->reach[x->left[n]];
    if (x->right[n] >= 0 && x->reach[x->right[n]] > hi)
        hi = x->reach[x->right[n]];
    x->reach[n] = hi;
}

/* Whether piece a comes before piece b in the tree's order. */
static bool before(const ckpt__slice_overlap_index *x,
                   const ckpt__tensor_slice *slices, int a, int b)
{
    int64_t alo, ahi, blo, bhi;
    axis_range(x, &slices[a], &alo, &ahi);
    axis_range(x, &slices[b], &blo, &bhi);
    return alo < blo || (alo == blo && a < b);
}

/* Insert piece n into the subtree at `root`; its new root. */
static int insert_at(ckpt__slice_overlap_index *x,
                     const ckpt__tensor_slice *slices, int root, int n)
{
    int child;
    if (root < 0) {
        x->left[n] = x->right[n] = -1;
        update(x, slices, n);
        return n;
    }
    if (before(x, slices, n, root)) {
        child = insert_at(x, slices, x->left[root], n);
        x->left[root] = child;
        if (priority(child) > priority(root)) { /* rotate right */
            x->left[root] = x->right[child];
            x->right[child] = root;
            update(x, slices, root);
            root = child;
        }
    } else {
        child = insert_at(x, slices, x->right[root], n);
        x->right[root] = child;
        if (priority(child) > priority(root)) { /* rotate left */
            x->right[root] = x->left[child];
            x->left[child] = root;
            update(x, slices, root);
            root = child;
        }
    }
    update(x, slices, root);
    return root;
}

void ckpt__slice_overlap_init(ckpt__slice_overlap_index *x,
                              const ckpt__tensor_slice *first,
                              const ckpt_shape *full)
{
    memset(x, 0, sizeof(*x));
    x->root = -1;
    x->full = *full;
    for (int d = 0; d < full->rank; d++) {
        int64_t lo, hi;
        ckpt__slice_extent_range(first, d, full->dims[d], &lo, &hi);
        if (lo != 0 || hi != full->dims[d]) {
            x->axis = d;
            break;
        }
    }
}

int ckpt__slice_overlap_reserve(ckpt__slice_overlap_index *x, int cap)
{
    int *left, *right;
    int64_t *reach;
    if (cap <= x->cap)
        return 0;
    left = ckpt__realloc(x->left, (size_t)cap * sizeof(*left));
    if (!left)
        return ckpt__error_oom();
    x->left = left;
    right = ckpt__realloc(x->right, (size_t)cap * sizeof(*right));
    if (!right)
        return ckpt__error_oom();
    x->right = right;
    reach = ckpt__realloc(x->reach, (size_t)cap * sizeof(*reach));
    if (!reach)
        return ckpt__error_oom();
    x->reach = reach;
    x->cap = cap;
    return 0;
}

void ckpt__slice_overlap_insert(ckpt__slice_overlap_index *x,
                                const ckpt__tensor_slice *slices, int n)
{
    x->root = insert_at(x, slices, x->root, n);
}

/* Whether `s` overlaps a piece in the subtree at `n`. */
static bool overlaps_in(const ckpt__slice_overlap_index *x,
                        const ckpt__tensor_slice *slices, int n,
                        const ckpt__tensor_slice *s, int64_t lo, int64_t hi)
{
    while (n >= 0 && x->reach[n] > lo) {
        int64_t nlo, nhi;
        if (overlaps_in(x, slices, x->left[n], s, lo, hi))
            return true;
        axis_range(x, &slices[n], &nlo, &nhi);
        if (nlo >= hi) /* this piece and the ones after it start too late */
            return false;
        if (nhi > lo && ckpt__slices_overlap(&slices[n], s, &x->full))
            return true;
        n = x->right[n];
    }
    return false;
}

bool ckpt__slice_overlap_any(const ckpt__slice_overlap_index *x,
                             const ckpt__tensor_slice *slices,
                             const ckpt__tensor_slice *s)
{
    int64_t lo, hi;
    axis_range(x, s, &lo, &hi);
    return overlaps_in(x, slices, x->root, s, lo, hi);
}

void ckpt__slice_overlap_dispose(ckpt__slice_overlap_index *x)
{
    ckpt__free(x->left);
    ckpt__free(x->right);
    ckpt__free(x->reach);
    memset(x, 0, sizeof(*x));
    x->root = -1;
}
