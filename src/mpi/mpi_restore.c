/* mpi/mpi_restore.c - restoring a distributed saver's variables on M ranks
 * from a checkpoint written by any number of ranks (or by one process):
 *   replicated    the whole tensor, on every rank;
 *   partitioned   this rank's piece, cut out of the whole tensor the
 *                 reader assembles from the stored pieces (resharding);
 *   per-rank      "<name>/rank-<r>" for this rank r.
 * Two agreements keep ranks in step: after every rank checked its
 * variables against the index (present, dtype, shape) and after the reads;
 * a failure on any rank is every rank's error. restore_latest lets rank 0
 * read the state file and broadcast the prefix. */
#include "mpi_internal.h"

#include <stdio.h>
#include <string.h>

#define MISSING_OPTIONAL 1

/* Check `v` against the checkpoint; 1 when an optional per-rank value is
 * missing (left as it is). */
static int check_one(ckpt_mpi_saver *s, ckpt_bundle_reader *r,
                     const char *prefix, const ckpt__mvar *v)
{
    const char *key = v->kind == CKPT__MPI_PER_RANK ? v->key.ptr : v->name;
    const ckpt_tensor_entry *e;
    char want[128], have[128];
    int err = ckpt_bundle_reader_find(&e, r, key);
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
    if (e->dtype == v->dtype && ckpt_shape_equal(&e->shape, &v->global))
        return 0;
    ckpt_shape_format(want, sizeof(want), &v->global);
    ckpt_shape_format(have, sizeof(have), &e->shape);
    return ckpt__error(CKPT_EINVAL,
                       "%s: tensor '%s' is %s %s in the checkpoint, the "
                       "variable is %s %s",
                       prefix, key, ckpt_dtype_name(e->dtype), have,
                       ckpt_dtype_name(v->dtype), want);
}

/* Copy the piece `sl` (local shape `local`) out of the whole tensor `full`
 * of shape `g`, row-major, into `dst`. */
static void cut_piece(uint8_t *dst, const uint8_t *full, const ckpt_shape *g,
                      const ckpt__tensor_slice *sl, const ckpt_shape *local,
                      size_t es)
{
    int rank = g->rank;
    int64_t idx[CKPT_MAX_RANK] = {0};
    int64_t stride[CKPT_MAX_RANK];
    size_t row = (size_t)local->dims[rank - 1] * es;
    int64_t rows = 1;
    stride[rank - 1] = 1;
    for (int d = rank - 2; d >= 0; d--)
        stride[d] = stride[d + 1] * g->dims[d + 1];
    for (int d = 0; d < rank - 1; d++)
        rows *= local->dims[d];
    for (int64_t i = 0; i < rows && row > 0; i++) {
        int64_t off = sl->start[rank - 1];
        for (int d = 0; d < rank - 1; d++)
            off += (sl->start[d] + idx[d]) * stride[d];
        memcpy(dst, full + (size_t)off * es, row);
        dst += row;
        for (int d = rank - 2; d >= 0; d--) {
            if (++idx[d] < local->dims[d])
                break;
            idx[d] = 0;
        }
    }
}

/* Read `v`'s value for this rank into `dst` (v->bytes). */
static int read_value(ckpt_bundle_reader *r, const ckpt__mvar *v, void *dst)
{
    int64_t full_bytes;
    uint8_t *full;
    int err;
    if (v->kind != CKPT__MPI_PARTITIONED || v->whole)
        return ckpt_bundle_reader_read(
            r, v->kind == CKPT__MPI_PER_RANK ? v->key.ptr : v->name, dst,
            (size_t)v->bytes);
    if (v->bytes == 0)
        return 0;
    err = ckpt_tensor_byte_size(&full_bytes, v->dtype, &v->global);
    if (err < 0)
        return err;
    full = ckpt__malloc((size_t)full_bytes);
    if (!full)
        return ckpt__error_oom();
    err = ckpt_bundle_reader_read(r, v->name, full, (size_t)full_bytes);
    if (err == 0)
        cut_piece(dst, full, &v->global, &v->slice, &v->local,
                  ckpt_dtype_size(v->dtype));
    ckpt__free(full);
    return err;
}

static int restore_one(ckpt_bundle_reader *r, const ckpt__mvar *v)
{
    void *tmp;
    int err;
    if (v->user.data)
        return read_value(r, v, v->user.data);
    tmp = ckpt__malloc(v->bytes ? (size_t)v->bytes : 1);
    if (!tmp)
        return ckpt__error_oom();
    err = read_value(r, v, tmp);
    if (err == 0) {
        int rc = v->user.write(tmp, 0, (size_t)v->bytes, v->user.payload);
        if (rc != 0)
            err = ckpt__error(CKPT_EUSER,
                              "variable '%s': write callback failed (%d)",
                              v->name, rc);
    }
    ckpt__free(tmp);
    return err;
}

int ckpt_mpi_saver_restore(ckpt_mpi_saver *s, const char *prefix)
{
    ckpt_bundle_reader_options ro = CKPT_BUNDLE_READER_OPTIONS_INIT;
    ckpt_bundle_reader *r = NULL;
    char *skip = NULL;
    int err;
    if (!s)
        return ckpt__error(CKPT_EINVAL, "mpi saver: restore: NULL saver");
    if (s->op.state != OP_IDLE)
        ckpt__mpi_op_finish(s);
    err = ckpt__mpi_check(s);
    if (err < 0)
        return err;
    if (!prefix || !*prefix)
        err = ckpt__error(CKPT_EINVAL, "mpi saver: restore: no prefix");
    ro.fs = s->fs;
    if (err == 0)
        err = ckpt_bundle_reader_open(&r, prefix, &ro);
    if (err == 0) {
        skip = ckpt__calloc(s->nvars + 1, 1);
        if (!skip)
            err = ckpt__error_oom();
    }
    for (size_t i = 0; err == 0 && i < s->nvars; i++) {
        int rc = check_one(s, r, prefix, &s->vars[i]);
        if (rc == MISSING_OPTIONAL)
            skip[i] = 1;
        else
            err = rc;
    }
    err = ckpt__mpi_agree(s, s->comm_ctl, err, "checking a restore");
    if (err == 0) { /* every rank passed the checks: all read, then agree */
        for (size_t i = 0; err == 0 && i < s->nvars; i++)
            if (!skip[i])
                err = restore_one(r, &s->vars[i]);
        err = ckpt__mpi_agree(s, s->comm_ctl, err, "restoring");
    }
    ckpt__free(skip);
    ckpt_bundle_reader_free(r);
    return err;
}

int ckpt_mpi_saver_restore_latest(ckpt_mpi_saver *s, ckpt_buf *prefix_out)
{
    ckpt_buf prefix = CKPT_BUF_INIT;
    int len = 0;
    MPI_Request req;
    int err;
    if (!s)
        return ckpt__error(CKPT_EINVAL,
                           "mpi saver: restore_latest: NULL saver");
    if (s->op.state != OP_IDLE)
        ckpt__mpi_op_finish(s);
    err = 0;
    if (s->rank == 0) {
        err = ckpt_latest_checkpoint(&prefix, s->fs, s->ds.dir);
        if (err == CKPT_ENOTFOUND)
            err = ckpt__error(CKPT_ENOTFOUND, "%s: no checkpoint to restore",
                              s->ds.dir);
        len = err == 0 ? (int)prefix.size : 0;
    }
    err = ckpt__mpi_bcast_outcome(s, s->comm_ctl, err,
                                  "agreeing on the latest checkpoint");
    if (err < 0)
        goto done;
    MPI_Ibcast(&len, 1, MPI_INT, 0, s->comm_ctl, &req);
    ckpt__mpi_wait_all(s, &req, 1, "agreeing on the latest checkpoint");
    if (s->rank != 0) {
        err = ckpt__buf_grow(&prefix, (size_t)len);
        if (err < 0)
            ckpt__mpi_abort(s, "out of memory agreeing on a checkpoint");
        prefix.size = (size_t)len;
    }
    MPI_Ibcast(prefix.ptr, len, MPI_CHAR, 0, s->comm_ctl, &req);
    ckpt__mpi_wait_all(s, &req, 1, "agreeing on the latest checkpoint");
    prefix.ptr[len] = '\0';
    err = ckpt_mpi_saver_restore(s, prefix.ptr);
    if (err == 0 && prefix_out)
        err = ckpt__buf_set(prefix_out, prefix.ptr);
done:
    ckpt_buf_dispose(&prefix);
    return err;
}
