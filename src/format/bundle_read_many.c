/* format/bundle_read_many.c - ckpt_bundle_reader_read_many: several
 * tensors read at once. Every request is checked before anything is read
 * (every record located in its data file, the pieces of a partitioned
 * tensor too, and that they cover it exactly once); the records are then read
 * in file order, each data file's records in one ckpt__read_extents
 * (io/buffered_read.h: straight into the destinations through the page cache,
 * or streamed around it when a probe shows that faster), one by one only when
 * records overlap; partitioned tensors are assembled last. A tensor asked for
 * twice is read once and copied. The report of the last group stays with the
 * reader for ckpt__bundle_reader_stream (bundle_read_report.h). */
#include "ckpt/bundle.h"

#include "common/internal.h"
#include "format/bundle_read_report.h"
#include "format/bundle_reader_internal.h"
#include "io/buffered_read.h"

#include <stdlib.h>
#include <string.h>

/* A request's entry is kept as its compact record (the reader's own),
 * filled into a ckpt_tensor_entry on the stack where one is needed: no
 * public entry is made per tensor read. */
typedef struct planned_read {
    const ckpt__entry_rec *rec;
    size_t at; /* its index */
    void *dst;
    size_t dst_size;
    size_t *pieces; /* a partitioned tensor's, located when checked */
    size_t npieces;
} planned_read;

/* Records in file order; partitioned tensors (assembled from pieces
 * elsewhere) last. */
static int by_shard_then_offset(const void *a, const void *b)
{
    const ckpt__entry_rec *x = ((const planned_read *)a)->rec;
    const ckpt__entry_rec *y = ((const planned_read *)b)->rec;
    if ((x->num_slices > 0) != (y->num_slices > 0))
        return x->num_slices > 0 ? 1 : -1;
    if (x->num_slices > 0)
        return 0;
    if (x->shard_id != y->shard_id)
        return x->shard_id < y->shard_id ? -1 : 1;
    if (x->offset != y->offset)
        return x->offset < y->offset ? -1 : 1;
    if (x != y) /* requests for one tensor end up side by side */
        return x < y ? -1 : 1;
    return 0;
}

/* Read the records plan[0..n) of one data file with ckpt__read_extents
 * (keeping its report in r->stream). CKPT_ENOTSUP (nothing read, last
 * error left as it was) when records overlap. */
static int read_group(ckpt_bundle_reader *r, planned_read *plan, size_t n)
{
    ckpt__extent *ext;
    size_t *first_of; /* plan index whose extent request i shares */
    size_t next = 0;
    uint64_t total = 0, end = 0;
    struct ckpt__bundle_shard *s;
    ckpt_tensor_entry e; /* the record being located or checked */
    int err;

    for (size_t i = 0; i < n; i++) {
        const ckpt__entry_rec *rec = plan[i].rec;
        if (i > 0 && rec == plan[i - 1].rec)
            continue; /* the same tensor again: copied after the read */
        if (rec->size > 0 && (uint64_t)rec->offset < end)
            return CKPT_ENOTSUP; /* overlapping records: read one by one */
        if (rec->size > 0)
            end = (uint64_t)(rec->offset + rec->size);
        total += (uint64_t)rec->size;
    }
    ext = ckpt__calloc(n, sizeof(*ext));
    first_of = ckpt__calloc(n, sizeof(*first_of));
    if (!ext || !first_of) {
        err = ckpt__error_oom();
        goto done;
    }
    for (size_t i = 0; i < n; i++) {
        if (i > 0 && plan[i].rec == plan[i - 1].rec) {
            first_of[i] = first_of[i - 1];
            continue;
        }
        first_of[i] = i;
        ext[next].offset = (uint64_t)plan[i].rec->offset;
        ext[next].size = (uint64_t)plan[i].rec->size;
        ext[next].dst = plan[i].dst;
        next++;
    }
    ckpt__entry_table_fill(&r->tab, plan[0].at, &e);
    err = ckpt__bundle_reader_locate(r, &e,
                                     &s); /* sets r->path to the data file */
    if (err == 0)
        err = ckpt__read_extents(r->fs, r->path.ptr, s->file, ext, next,
                                 &r->stream);
    if (err == 0)
        r->stream_bytes = total;
    for (size_t i = 0, k = 0; i < n && err == 0; i++) {
        if (first_of[i] != i) {
            if (plan[i].dst_size > 0)
                memcpy(plan[i].dst, plan[first_of[i]].dst, plan[i].dst_size);
            continue;
        }
        ckpt__entry_table_fill(&r->tab, plan[i].at, &e);
        if (!r->skip_crc)
            err = ckpt__bundle_reader_compare_crc(r, &e, ext[k].crc);
        if (err == 0)
            ckpt__bundle_reader_to_host(r, &e, plan[i].dst);
        k++;
    }
done:
    ckpt__free(first_of);
    ckpt__free(ext);
    return err;
}

/* Every piece of the partitioned tensor of `p` has its entry and its
 * record inside its data file (ckpt__bundle_partitioned_locate locates
 * each), and the pieces cover the tensor exactly once (no hole, no
 * overlap, none outside its shape: ckpt__bundle_partitioned_coverage, from
 * the index alone), so a data file cut short or a bad slice layout fails
 * the call before any destination is written, as an ordinary record's
 * does. The pieces found are kept in `p` for the assembly, which then
 * looks none up again. */
static int locate_pieces(ckpt_bundle_reader *r, planned_read *p)
{
    ckpt__partitioned_read pr;
    ckpt_tensor_entry e;
    uint64_t bytes = 0;
    int err;
    ckpt__entry_table_fill(&r->tab, p->at, &e);
    err = ckpt__bundle_reader_partitioned_read_of(&pr, r, &e);
    if (err == 0)
        err = ckpt__bundle_partitioned_locate(&pr, &bytes, &p->pieces,
                                              &p->npieces);
    if (err == 0) {
        pr.pieces = p->pieces;
        pr.npieces = p->npieces;
        err = ckpt__bundle_partitioned_coverage(&pr);
    }
    return err;
}

/* Assemble the partitioned tensor of `p` from the pieces locate_pieces
 * found. */
static int read_located_pieces(ckpt_bundle_reader *r, const planned_read *p)
{
    ckpt__partitioned_read pr;
    ckpt_tensor_entry e;
    int err;
    ckpt__entry_table_fill(&r->tab, p->at, &e);
    err = ckpt__bundle_reader_partitioned_read_of(&pr, r, &e);
    if (err < 0)
        return err;
    pr.pieces = p->pieces;
    pr.npieces = p->npieces;
    return ckpt__bundle_read_partitioned(&pr, p->dst, p->dst_size);
}

/* Request `i`'s checks, nothing read: the tensor may be read into its
 * destination, and its record (or each of its pieces', which then cover it
 * exactly once) lies inside its data file. Its plan is filled. */
static int plan_request(ckpt_bundle_reader *r, planned_read *p,
                        const ckpt_read_request *req, size_t i)
{
    struct ckpt__bundle_shard *s;
    ckpt_tensor_entry e;
    int err;
    p->dst = req->dst;
    p->dst_size = req->dst_size;
    if (!req->name)
        return ckpt__error(CKPT_EINVAL,
                           "bundle read_many: request %zu has no name", i);
    err = ckpt__bundle_reader_read_target(&e, &p->at, r, req->name, req->dst,
                                          req->dst_size);
    if (err < 0)
        return err;
    p->rec = &r->tab.recs[p->at];
    if (e.num_slices == 0)
        return ckpt__bundle_reader_locate(r, &e, &s);
    return locate_pieces(r, p);
}

int ckpt__bundle_reader_check_read(ckpt_bundle_reader *r, const char *name,
                                   size_t dst_size)
{
    char never_written; /* a destination for the checks, which read none */
    ckpt_read_request req;
    planned_read p;
    int err;
    req.name = name;
    req.dst = &never_written;
    req.dst_size = dst_size;
    memset(&p, 0, sizeof(p));
    err = plan_request(r, &p, &req, 0);
    ckpt__free(p.pieces);
    return err;
}

int ckpt_bundle_reader_read_many(ckpt_bundle_reader *r,
                                 const ckpt_read_request *reqs, size_t n)
{
    planned_read *plan = NULL;
    int err = 0;

    CKPT__CHECK_ARG(r);
    if (n > 0)
        CKPT__CHECK_ARG(reqs);
    if (n == 0)
        return 0;
    memset(&r->stream, 0, sizeof(r->stream));
    r->stream_bytes = 0;
    plan = ckpt__calloc(n, sizeof(*plan));
    if (!plan)
        return ckpt__error_oom();
    for (size_t i = 0; i < n && err == 0; i++)
        err = plan_request(r, &plan[i], &reqs[i], i);
    if (err < 0)
        goto done;
    qsort(plan, n, sizeof(*plan), by_shard_then_offset);
    for (size_t start = 0, end; start < n && err == 0; start = end) {
        if (plan[start].rec->num_slices > 0) {
            end = start + 1;
            err = read_located_pieces(r, &plan[start]);
            continue;
        }
        for (end = start + 1;
             end < n && plan[end].rec->num_slices == 0 &&
             plan[end].rec->shard_id == plan[start].rec->shard_id;)
            end++;
        err = read_group(r, plan + start, end - start);
        if (err != CKPT_ENOTSUP)
            continue;
        err = 0;
        for (size_t i = start; i < end && err == 0; i++) {
            ckpt_tensor_entry e;
            ckpt__entry_table_fill(&r->tab, plan[i].at, &e);
            err = ckpt__bundle_reader_read_checked(r, &e, plan[i].dst);
        }
    }
done:
    for (size_t i = 0; i < n; i++)
        ckpt__free(plan[i].pieces);
    ckpt__free(plan);
    return err;
}

const ckpt__read_report *ckpt__bundle_reader_stream(const ckpt_bundle_reader *r,
                                                    uint64_t *bytes)
{
    if (bytes)
        *bytes = r->stream_bytes;
    return &r->stream;
}
