/* mpi/mpi_commit.c - rank 0's second phase of a distributed save, once
 * every rank reported its data file durable: the merge of docs/format.md §7
 * done without copying data. Every rank's entries already carry their
 * final shard id (the rank) and offsets, so rank 0
 *   1. unlists and unindexes an older checkpoint of the same name,
 *   2. renames each rank's temporary data file to <prefix>.data-<r>-of-<N>
 *      and fsyncs the directory,
 *   3. writes <prefix>.index over all entries, plus one full entry per
 *      partitioned tensor listing every rank's piece (§6 there), last,
 *   4. names the checkpoint in the state file and applies retention; the
 *      checkpoints it evicts are deleted by the background thread after
 *      the commit (deleting a 128 MiB file took 30-45 ms on an ext4
 *      mounted with discard, a third of a sync save there), so the save
 *      ends once the new checkpoint is named.
 * Any failure removes what this commit put in place (unless the state file
 * may already name it), its index first and durably so (its data files stay
 * when that cannot be made durable); the ranks' temporary files are
 * removed too. */
#include "mpi_internal.h"

#include "format/bundle_index.h"
#include "io/fs_internal.h"

#include <string.h>

/* One rank's blob, parsed. */
typedef struct shard_blob {
    ckpt_buf temp_name; /* its temporary data file's name in the directory
                           (empty: none known, nothing to remove) */
    uint32_t count;
    const uint8_t *entries;
    const uint8_t *end;
} shard_blob;

static int get_u32(const uint8_t **p, const uint8_t *end, uint32_t *out)
{
    if ((size_t)(end - *p) < sizeof(*out))
        return ckpt__error(CKPT_ECORRUPT, "mpi commit: truncated entries");
    memcpy(out, *p, sizeof(*out));
    *p += sizeof(*out);
    return 0;
}

static int get_bytes(const uint8_t **p, const uint8_t *end,
                     const uint8_t **data, uint32_t *len)
{
    int err = get_u32(p, end, len);
    if (err == 0 && (size_t)(end - *p) < *len)
        err = ckpt__error(CKPT_ECORRUPT, "mpi commit: truncated entries");
    if (err == 0) {
        *data = *p;
        *p += *len;
    }
    return err;
}

/* `b` from rank r's blob p[0..n): the name of its temporary data file
 * must be a file name (ckpt__basename_is_file_name, and no 0 byte): rank
 * 0 joins it to its own path to the directory. */
static int parse_blob(shard_blob *b, const uint8_t *p, size_t n)
{
    const uint8_t *end = p + n;
    const uint8_t *name = NULL;
    uint32_t len = 0;
    int err = get_bytes(&p, end, &name, &len);
    if (err == 0 && memchr(name, 0, len) == NULL)
        err = ckpt__buf_put(&b->temp_name, name, len);
    if (err == 0 && !ckpt__basename_is_file_name(
                        b->temp_name.ptr ? b->temp_name.ptr : "")) {
        ckpt__buf_clear(&b->temp_name);
        err = ckpt__error(CKPT_ECORRUPT,
                          "mpi commit: the data file's name is no file name");
    }
    if (err == 0)
        err = get_u32(&p, end, &b->count);
    b->entries = p;
    b->end = end;
    return err;
}

/* A rank's blob that does not parse: which checkpoint, which rank. */
static int blob_error(const ckpt_mpi_saver *s, int rank, int err)
{
    if (err == CKPT_ECORRUPT)
        return ckpt__error_prefix(err, "%s: rank %d's entries", s->ds.dir,
                                  rank);
    return err;
}

typedef struct merge {
    shard_blob *blobs;
    ckpt__index_kv *kvs;
    size_t nkvs, cap;
    ckpt_buf *full; /* encoded full entries of partitioned tensors */
    size_t nfull;
    int renamed; /* data files renamed so far */
} merge;

static int add_kv(merge *m, const void *key, size_t key_len,
                  const uint8_t *value, size_t value_len)
{
    if (ckpt__reserve_one(&m->kvs, &m->cap, m->nkvs, sizeof(*m->kvs), 64) < 0)
        return CKPT_ENOMEM;
    m->kvs[m->nkvs].key = key;
    m->kvs[m->nkvs].key_len = key_len;
    m->kvs[m->nkvs].value = value;
    m->kvs[m->nkvs].value_len = value_len;
    m->nkvs++;
    return 0;
}

static int collect_entries(merge *m, const shard_blob *b)
{
    const uint8_t *p = b->entries;
    int err = 0;
    for (uint32_t i = 0; err == 0 && i < b->count; i++) {
        const uint8_t *key, *proto;
        uint32_t key_len = 0, proto_len = 0;
        err = get_bytes(&p, b->end, &key, &key_len);
        if (err == 0)
            err = get_bytes(&p, b->end, &proto, &proto_len);
        if (err == 0)
            err = add_kv(m, key, key_len, proto, proto_len);
    }
    return err;
}

static int collect_full_entries(merge *m, const ckpt_mpi_saver *s)
{
    int err = 0;
    m->full = ckpt__calloc(s->nparts + 1, sizeof(*m->full));
    if (!m->full)
        return ckpt__error_oom();
    for (size_t i = 0; err == 0 && i < s->nparts; i++) {
        const ckpt__mpi_partition *part = &s->parts[i];
        ckpt__bundle_entry e;
        if (part->npieces == 0)
            continue;
        memset(&e, 0, sizeof(e));
        e.dtype = part->dtype;
        e.shape = part->global;
        e.num_slices = part->npieces;
        e.slices = part->pieces;
        err = ckpt__bundle_entry_encode(&m->full[m->nfull], &e);
        if (err == 0)
            err = add_kv(m, part->name, strlen(part->name),
                         (const uint8_t *)m->full[m->nfull].ptr,
                         m->full[m->nfull].size);
        m->nfull++;
    }
    return err;
}

static int rename_data_files(ckpt_mpi_saver *s, ckpt__save_op *op, merge *m)
{
    ckpt_buf from = CKPT_BUF_INIT, to = CKPT_BUF_INIT, dir = CKPT_BUF_INIT;
    int err = ckpt__path_dirname(&dir, op->prefix.ptr);
    for (int r = 0; err == 0 && r < s->size; r++) {
        err = ckpt__path_join(&from, dir.ptr, m->blobs[r].temp_name.ptr);
        if (err == 0)
            err = ckpt_bundle_data_path(&to, op->prefix.ptr, r, s->size);
        if (err == 0)
            err = ckpt__fs_rename(s->fs, from.ptr, to.ptr);
        if (err == 0)
            m->renamed = r + 1;
    }
    if (err == 0)
        err = ckpt__fs_sync_dir(s->fs, dir.ptr);
    ckpt_buf_dispose(&from);
    ckpt_buf_dispose(&to);
    ckpt_buf_dispose(&dir);
    return err;
}

/* After a failure: the index (when it was put in place) and the renamed
 * data files, the way retention deletes a checkpoint (index first, its
 * removal made durable by a directory fsync before any data file goes, and
 * the data files kept when that fsync fails: a power cut must not keep a
 * data file's removal and lose the index's), then every rank's temporary
 * data file not renamed. Keeps the last error. */
static void remove_data_files(ckpt_mpi_saver *s, ckpt__save_op *op,
                              const merge *m, int indexed)
{
    ckpt_buf path = CKPT_BUF_INIT, dir = CKPT_BUF_INIT;
    ckpt__saved_error saved;
    ckpt__error_save(&saved);
    if (indexed || m->renamed > 0)
        (void)ckpt__remove_checkpoint_files(s->fs, op->prefix.ptr);
    if (ckpt__path_dirname(&dir, op->prefix.ptr) == 0)
        for (int r = m->renamed; r < s->size; r++)
            if (m->blobs[r].temp_name.size > 0 &&
                ckpt__path_join(&path, dir.ptr, m->blobs[r].temp_name.ptr) == 0)
                ckpt__fs_remove(s->fs, path.ptr);
    ckpt__error_restore(&saved);
    ckpt_buf_dispose(&path);
    ckpt_buf_dispose(&dir);
}

int ckpt__mpi_commit(ckpt_mpi_saver *s, ckpt__save_op *op,
                     uint64_t *index_bytes)
{
    merge m;
    ckpt__kept_list evicted = {0};
    int may_be_named = 0, indexed = 0;
    int err = 0;
    memset(&m, 0, sizeof(m));
    m.blobs = ckpt__calloc((size_t)s->size, sizeof(*m.blobs));
    if (!m.blobs)
        err = ckpt__error_oom();
    /* Every blob parsed before any is collected: a failure leaves each
     * rank's temporary path known, for remove_data_files. */
    for (int r = 0; err == 0 && r < s->size; r++)
        err = blob_error(s, r,
                         parse_blob(&m.blobs[r], op->blobs + op->displs[r],
                                    (size_t)op->counts[r]));
    for (int r = 0; err == 0 && r < s->size; r++)
        err = blob_error(s, r, collect_entries(&m, &m.blobs[r]));
    if (err == 0)
        err = collect_full_entries(&m, s);
    if (err == 0)
        err = ckpt__dir_state_reconcile(&s->ds);
    if (err == 0) {
        ckpt__pending_note_write(&s->ds, op->stored.ptr, NULL);
        err = ckpt__dir_state_forget(&s->ds, op->stored.ptr);
    }
    if (err == 0)
        err = rename_data_files(s, op, &m);
    if (err == 0)
        err = ckpt__bundle_index_write(s->fs, op->prefix.ptr, s->size, m.kvs,
                                       m.nkvs, index_bytes);
    if (err == 0) {
        indexed = 1;
        err = ckpt__dir_state_commit_evicting(&s->ds, op->stored.ptr,
                                              ckpt_clock_wall(s->ds.clock),
                                              &may_be_named, &evicted);
    }
    if (err == 0)
        ckpt__mpi_evict_later(s, &evicted);
    if (err < 0 && !may_be_named) /* nothing of it complete: see save */
        ckpt__pending_note_remove(&s->ds);
    if (err < 0 && !may_be_named && m.blobs)
        remove_data_files(s, op, &m, indexed);
    for (size_t i = 0; m.full && i < m.nfull; i++)
        ckpt_buf_dispose(&m.full[i]);
    ckpt__free(m.full);
    ckpt__free(m.kvs);
    for (int r = 0; m.blobs && r < s->size; r++)
        ckpt_buf_dispose(&m.blobs[r].temp_name);
    ckpt__free(m.blobs);
    return err;
}
