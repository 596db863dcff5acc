/* format/bundle_reader.c - ckpt_bundle_reader, opening: loads and
 * validates a whole bundle index when opened (read block by block, never
 * held whole; records that overlap in a data file are refused), looks
 * entries up by name, and frees the reader. The entries are kept
 * compactly, public ckpt_tensor_entry made only for those handed out
 * (bundle_reader_entries.c). Reading records from the data
 * shards is bundle_reader_data.c's job, and the other files of the reading
 * side are listed in bundle_reader_internal.h.
 *
 *   <prefix>.index:  SSTable { "" -> BundleHeaderProto (first key),
 *                              name -> BundleEntryProto ... }
 *   <prefix>.data-SSSSS-of-NNNNN:  records located by (offset, size) only
 *   string record:  varint64 len[n] | fixed32 masked length CRC | bytes
 *
 * Every check a record needs before it is read (dtype, shape, shard range,
 * size against dtype x shape) is done at open; only the data file's length,
 * the CRCs and the string layout are checked when a record is read, and
 * nothing is allocated beyond what the index and data file sizes allow.
 * Dtypes TensorFlow knows but this library cannot decode (variant,
 * resource, the sub-byte ints) are listed; reading them fails with
 * CKPT_ENOTSUP. Unknown dtype numbers make the index corrupt. */
#include "ckpt/bundle.h"

#include "common/internal.h"
#include "format/block.h"
#include "format/bundle_proto.h"
#include "format/bundle_reader_internal.h"
#include "format/bundle_slices.h"
#include "format/bundle_text.h"
#include "format/table.h"
#include "io/fs_internal.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- options, accessors, lookup --------------------------------------- */

int ckpt_bundle_reader_options_init(ckpt_bundle_reader_options *opts,
                                    unsigned int version)
{
    static const ckpt_bundle_reader_options defaults =
        CKPT_BUNDLE_READER_OPTIONS_INIT;
    CKPT__CHECK_ARG(opts);
    return ckpt__options_init(opts, &defaults, sizeof(defaults), version,
                              CKPT_BUNDLE_READER_OPTIONS_VERSION,
                              "bundle reader options",
                              "CKPT_BUNDLE_READER_OPTIONS_INIT");
}

const char *ckpt_bundle_reader_prefix(const ckpt_bundle_reader *r)
{
    return r ? r->prefix : NULL;
}

int ckpt_bundle_reader_num_shards(const ckpt_bundle_reader *r)
{
    return r ? r->num_shards : 0;
}

int ckpt_bundle_reader_big_endian(const ckpt_bundle_reader *r)
{
    return r && r->endianness == CKPT__BUNDLE_BIG_ENDIAN;
}

size_t ckpt_bundle_reader_count(const ckpt_bundle_reader *r)
{
    return r ? r->tab.count : 0;
}

const ckpt_tensor_entry *ckpt_bundle_reader_entry(const ckpt_bundle_reader *r,
                                                  size_t i)
{
    const ckpt_tensor_entry *e;
    if (!r || i >= r->tab.count)
        return NULL;
    e = ckpt__entry_table_get(&r->tab, i);
    if (!e)
        ckpt__error_prefix(CKPT_ENOMEM, "%s: entry %zu", r->index_path.ptr, i);
    return e;
}

int ckpt_bundle_reader_entry_fill(ckpt_tensor_entry *out,
                                  const ckpt_bundle_reader *r, size_t i)
{
    CKPT__CHECK_ARG(out);
    memset(out, 0, sizeof(*out));
    CKPT__CHECK_ARG(r);
    if (i >= r->tab.count)
        return ckpt__error(CKPT_EINVAL,
                           "ckpt_bundle_reader_entry_fill: %s: entry %zu of "
                           "%zu",
                           r->index_path.ptr, i, r->tab.count);
    ckpt__entry_table_fill(&r->tab, i, out);
    return 0;
}

static int search_key(const ckpt_bundle_reader *r, const char *name,
                      size_t *at);

/* The public entry is made here, and kept until the reader is freed, as
 * bundle.h promises; the library's own lookups fill one instead
 * (ckpt__bundle_reader_lookup). */
int ckpt_bundle_reader_find(const ckpt_tensor_entry **out,
                            const ckpt_bundle_reader *r, const char *name)
{
    ckpt__shown_name sn;
    size_t at;
    int err;
    CKPT__CHECK_ARG(out);
    *out = NULL;
    CKPT__CHECK_ARG(r);
    CKPT__CHECK_ARG(name);
    err = search_key(r, name, &at);
    if (err < 0)
        return err;
    *out = ckpt__entry_table_get(&r->tab, at);
    if (*out)
        return 0;
    return ckpt__error_prefix(CKPT_ENOMEM, "%s: tensor '%s'", r->index_path.ptr,
                              ckpt__show_name(&sn, name, strlen(name)));
}

int ckpt__bundle_reader_lookup(ckpt_tensor_entry *out, size_t *at,
                               const ckpt_bundle_reader *r, const char *name)
{
    size_t i;
    int err = search_key(r, name, &i);
    if (err < 0)
        return err;
    ckpt__entry_table_fill(&r->tab, i, out);
    if (at)
        *at = i;
    return 0;
}

/* Whether the n bytes at `key` are an entry's key. */
static bool has_key(const ckpt_bundle_reader *r, const void *key, size_t n)
{
    size_t at;
    return ckpt__entry_table_search(&r->tab, key, n, &at);
}

/* A hint's advice "'KEY'": `n` bytes of `name` then `suffix`, spelt out
 * only when the name is shown whole (a name cut short for the message
 * would not be the key); else `instead` ("the name without it"). */
typedef struct key_advice {
    char text[sizeof(ckpt__shown_name) + 64];
} key_advice;

static const char *advise_key(key_advice *a, const char *name, size_t n,
                              const char *suffix, const char *instead)
{
    ckpt__shown_name sn;
    if (n > CKPT__NAME_SHOWN)
        return instead;
    snprintf(a->text, sizeof(a->text), "'%s%s'", ckpt__show_name(&sn, name, n),
             suffix);
    return a->text;
}

/* The index of the entry named `name` in *at: 0, or CKPT_ENOTFOUND (with
 * a hint when the name looks like a graph tensor's, a TensorFlow 2 object
 * path or a partitioned variable's part). */
static int search_key(const ckpt_bundle_reader *r, const char *name, size_t *at)
{
    const char *key = name;
    size_t n = strlen(name);
    size_t base = ckpt__without_output_suffix(name, n);
    ckpt__shown_name sn;
    key_advice a;
    ckpt_tensor_entry full;
    if (ckpt__entry_table_search(&r->tab, key, n, at))
        return 0;
    if (base < n && has_key(r, key, base))
        return ckpt__error(
            CKPT_ENOTFOUND,
            "%s: no tensor named '%s' (checkpoint keys are "
            "variable names, without a graph tensor's output "
            "suffix ':%.*s': use %s)",
            r->index_path.ptr, ckpt__show_name(&sn, name, n),
            (int)(n - base - 1), name + base + 1,
            advise_key(&a, name, base, "", "the name without it"));
    if (ckpt__bundle_reader_has_tf2_value(r, name, n))
        return ckpt__error(
            CKPT_ENOTFOUND,
            "%s: no tensor named '%s' (a TensorFlow 2 checkpoint stores a "
            "variable's value under its object path followed by '%s': use "
            "%s)",
            r->index_path.ptr, ckpt__show_name(&sn, name, n),
            CKPT__TF2_VALUE_SUFFIX,
            advise_key(&a, name, n, CKPT__TF2_VALUE_SUFFIX,
                       "the name followed by it"));
    if (ckpt__bundle_reader_partition_of(r, name, n, &full))
        return ckpt__error(
            CKPT_ENOTFOUND,
            "%s: no tensor named '%s' (TensorFlow saves the parts of a "
            "partitioned variable as pieces of one tensor under the "
            "variable's name: use %s, which reads them assembled)",
            r->index_path.ptr, ckpt__show_name(&sn, name, n),
            advise_key(&a, name, ckpt__without_part_suffix(name, n), "",
                       "the name without the part"));
    return ckpt__error(CKPT_ENOTFOUND, "%s: no tensor named '%s'",
                       r->index_path.ptr, ckpt__show_name(&sn, name, n));
}

int ckpt__bundle_reader_has_tf2_value(const ckpt_bundle_reader *r,
                                      const char *name, size_t n)
{
    size_t sn = sizeof(CKPT__TF2_VALUE_SUFFIX) - 1;
    char *key;
    int found;
    if (n > SIZE_MAX - sn || has_key(r, name, n))
        return 0;
    key = ckpt__malloc(n + sn);
    if (!key)
        return 0; /* only a hint: without memory, none */
    memcpy(key, name, n);
    memcpy(key + n, CKPT__TF2_VALUE_SUFFIX, sn);
    found = has_key(r, key, n + sn);
    ckpt__free(key);
    return found;
}

int ckpt__bundle_reader_partition_of(const ckpt_bundle_reader *r,
                                     const char *name, size_t n,
                                     ckpt_tensor_entry *full)
{
    size_t base = ckpt__without_part_suffix(name, n);
    size_t i;
    if (base == n || has_key(r, name, n) ||
        !ckpt__entry_table_search(&r->tab, name, base, &i))
        return 0;
    ckpt__entry_table_fill(&r->tab, i, full);
    return full->num_slices > 0;
}

/* ---- open: the index ------------------------------------------------- */

struct load_state {
    ckpt_bundle_reader *r;
    bool have_header;
};

static int load_header(ckpt_bundle_reader *r, const uint8_t *key,
                       size_t key_len, const uint8_t *value, size_t value_len)
{
    ckpt__bundle_header h;
    const char *path = r->index_path.ptr;
    int err;

    if (key_len != 0)
        return ckpt__error(CKPT_ECORRUPT,
                           "%s: first key is not the bundle header (\"\")",
                           path);
    (void)key;
    err = ckpt__bundle_header_decode(&h, value, value_len);
    if (err < 0)
        return ckpt__error_prefix(err, "%s", path);
    if (h.num_shards < 1)
        return ckpt__error(CKPT_ECORRUPT, "%s: header: num_shards is %d", path,
                           (int)h.num_shards);
    if (h.endianness != CKPT__BUNDLE_LITTLE_ENDIAN &&
        h.endianness != CKPT__BUNDLE_BIG_ENDIAN)
        return ckpt__error(CKPT_ECORRUPT, "%s: header: bad endianness %d", path,
                           (int)h.endianness);
    err = ckpt__bundle_header_check_version(&h);
    if (err < 0)
        return ckpt__error_prefix(err, "%s", path);
    r->num_shards = h.num_shards;
    r->endianness = h.endianness;
    return 0;
}

/* Checks 2-4 of docs/format.md §4.3 (no data file needed). */
static int validate_entry(const ckpt_bundle_reader *r,
                          const ckpt__bundle_entry *be, const char *name)
{
    const char *path = r->index_path.ptr;
    int64_t count, need;
    size_t esize = ckpt_dtype_size(be->dtype);

    if (!ckpt__dtype_known(be->dtype))
        return ckpt__error(CKPT_ECORRUPT, "%s: tensor '%s': unknown dtype %d",
                           path, name, (int)be->dtype);
    if (be->unknown_rank)
        return ckpt__error(CKPT_ECORRUPT,
                           "%s: tensor '%s': shape has an unknown rank", path,
                           name);
    if (ckpt_shape_num_elements(&count, &be->shape) < 0)
        return ckpt__error(CKPT_ECORRUPT,
                           "%s: tensor '%s': shape's element count overflows",
                           path, name);
    if (be->num_slices > 0)
        return 0; /* a partitioned tensor's full entry owns no record */
    if (be->shard_id < 0 || be->shard_id >= r->num_shards)
        return ckpt__error(CKPT_ECORRUPT,
                           "%s: tensor '%s': shard %d out of range (%d "
                           "shards)",
                           path, name, (int)be->shard_id, r->num_shards);
    if (be->offset < 0 || be->size < 0 || be->offset > INT64_MAX - be->size)
        return ckpt__error(
            CKPT_ECORRUPT, "%s: tensor '%s': bad record offset %lld size %lld",
            path, name, (long long)be->offset, (long long)be->size);
    if (esize > 0) {
        if (ckpt__mul_overflow_i64(count, (int64_t)esize, &need))
            return ckpt__error(CKPT_ECORRUPT,
                               "%s: tensor '%s': byte size of the shape "
                               "overflows",
                               path, name);
        if (need != be->size)
            return ckpt__error(CKPT_ECORRUPT,
                               "%s: tensor '%s': record size %lld, a %s "
                               "tensor of %lld elements needs %lld",
                               path, name, (long long)be->size,
                               ckpt__dtype_label(be->dtype), (long long)count,
                               (long long)need);
    } else if (be->dtype == CKPT_DT_STRING && be->size < count) {
        /* every element takes at least its one-byte length */
        return ckpt__error(CKPT_ECORRUPT,
                           "%s: tensor '%s': string record of %lld bytes "
                           "cannot hold %lld elements",
                           path, name, (long long)be->size, (long long)count);
    }
    return 0;
}

static int load_entry(ckpt_bundle_reader *r, const uint8_t *key, size_t key_len,
                      const uint8_t *value, size_t value_len)
{
    ckpt__bundle_entry be;
    ckpt__shown_name sn;
    const char *name = ckpt__show_name(&sn, (const char *)key, key_len);
    int err;

    err = ckpt__bundle_entry_decode(&be, value, value_len);
    if (err < 0)
        return ckpt__error_prefix(err, "%s: tensor '%s'", r->index_path.ptr,
                                  name);
    err = validate_entry(r, &be, name);
    if (err < 0)
        return err;
    err = ckpt__entry_table_add(&r->tab, key, key_len, &be);
    if (err == CKPT_ECORRUPT)
        return ckpt__error_prefix(err, "%s: tensor '%s'", r->index_path.ptr,
                                  name);
    if (err < 0)
        return err;
    if (be.num_slices > 0) /* kept to find the pieces when it is read */
        return ckpt__sliced_entries_add(&r->sliced, r->tab.count - 1, value,
                                        value_len);
    return 0;
}

static int load_cb(const uint8_t *key, size_t key_len, const uint8_t *value,
                   size_t value_len, void *payload)
{
    struct load_state *st = payload;
    if (!st->have_header) {
        st->have_header = true;
        return load_header(st->r, key, key_len, value, value_len);
    }
    return load_entry(st->r, key, key_len, value, value_len);
}

/* No two records share a byte of a data file (TensorFlow's writer appends
 * each tensor once): otherwise a small index could make every read or
 * verify of the bundle go over the same data again and again. */
static int check_no_overlap(const ckpt_bundle_reader *r)
{
    const ckpt__entry_table *t = &r->tab;
    const ckpt__entry_rec **recs;
    size_t n = 0;
    int err = 0;
    if (t->count < 2)
        return 0;
    recs = ckpt__calloc(t->count, sizeof(*recs));
    if (!recs)
        return ckpt__error_oom();
    for (size_t i = 0; i < t->count; i++) {
        if (t->recs[i].num_slices == 0 && t->recs[i].size > 0)
            recs[n++] = &t->recs[i];
    }
    qsort(recs, n, sizeof(*recs), ckpt__rec_by_record_position);
    for (size_t i = 1; i < n && err == 0; i++) {
        const ckpt__entry_rec *a = recs[i - 1], *b = recs[i];
        ckpt__shown_name sa, sb;
        /* offset + size cannot overflow: validate_entry checked it */
        if (a->shard_id != b->shard_id || a->offset + a->size <= b->offset)
            continue;
        err = ckpt__error(
            CKPT_ECORRUPT,
            "%s: tensors '%s' and '%s' overlap in data file "
            "%d (records at offset %lld, %lld bytes, and at "
            "offset %lld, %lld bytes)",
            r->index_path.ptr,
            ckpt__show_name(&sa, ckpt__entry_rec_name(t, a), a->name_len),
            ckpt__show_name(&sb, ckpt__entry_rec_name(t, b), b->name_len),
            a->shard_id, (long long)a->offset, (long long)a->size,
            (long long)b->offset, (long long)b->size);
    }
    ckpt__free(recs);
    return err;
}

/* Read and check the index of `r` block by block (it is never held whole:
 * a huge or sparse index costs no more memory than its blocks). */
static int load_index(ckpt_bundle_reader *r)
{
    ckpt_file *f = NULL;
    uint64_t size = 0;
    struct load_state st;
    int err = ckpt__fs_open_read_part(r->fs, &f, r->index_path.ptr);
    if (err == 0)
        err = ckpt__fs_size(r->fs, f, r->index_path.ptr, &size);
    if (err < 0)
        goto done;
    st.r = r;
    st.have_header = false;
    err = ckpt__table_iterate_file(r->fs, f, size, r->index_path.ptr, load_cb,
                                   &st);
    if (err == 0 && !st.have_header)
        err = ckpt__error(CKPT_ECORRUPT, "%s: no bundle header (empty table)",
                          r->index_path.ptr);
    if (err == 0)
        ckpt__entry_table_trim(&r->tab);
    if (err == 0)
        err = check_no_overlap(r);
done:
    ckpt__fs_close_quiet(r->fs, f);
    return err;
}

/* Length of `prefix` less a bundle file's suffix (".index" or
 * ".data-SSSSS-of-NNNNN"), or 0 when it ends in neither. */
static size_t strip_bundle_suffix(const char *prefix)
{
    size_t n = strlen(prefix);
    const char *t;
    if (n > 6 && strcmp(prefix + n - 6, ".index") == 0)
        return n - 6;
    if (n <= 20)
        return 0;
    t = prefix + n - 20;
    if (strncmp(t, ".data-", 6) != 0 || strncmp(t + 11, "-of-", 4) != 0)
        return 0;
    for (int i = 0; i < 5; i++)
        if (!isdigit((unsigned char)t[6 + i]) ||
            !isdigit((unsigned char)t[15 + i]))
            return 0;
    return n - 20;
}

/* Whether no file can be found at the index's path (stat says
 * CKPT_ENOTFOUND: absent, or a name no file can have, too long or through
 * symbolic links that loop), where opening it failed otherwise: such a
 * checkpoint is missing, not unreadable. The last error is kept. */
static int index_has_no_file(const ckpt_bundle_reader *r)
{
    ckpt__saved_error saved;
    int none;
    ckpt__error_save(&saved);
    none =
        ckpt__fs_stat(r->fs, r->index_path.ptr, NULL, NULL) == CKPT_ENOTFOUND;
    ckpt__error_restore(&saved);
    return none;
}

/* What the prefix itself is, when its index is missing and it has no
 * bundle suffix: 2 when something of that name exists (a file or a
 * directory, given instead of a prefix), 3 when the name cannot be looked
 * up for a reason other than its absence (a symbolic link that loops, a
 * name too long: stat's message left in `why`), else 0. */
static int prefix_hint(const ckpt_bundle_reader *r, ckpt_buf *why)
{
    int err = ckpt__fs_stat(r->fs, r->prefix, NULL, NULL);
    if (err == 0)
        return 2;
    if (strstr(ckpt_error_last()->message, strerror(ENOENT)) ||
        ckpt__buf_set(why, ckpt_error_last()->message) < 0)
        return 0;
    return 3;
}

/* The index of `prefix` is missing: when the caller passed one of a
 * checkpoint's files or a directory instead of its prefix, say so; when
 * the name itself cannot be looked up (a symbolic link that loops), say
 * why; when nothing of that name is there, say that no such checkpoint
 * exists ahead of the file system's message (the error stays
 * CKPT_ENOTFOUND). */
static int explain_missing_index(const ckpt_bundle_reader *r, int err)
{
    size_t n = strip_bundle_suffix(r->prefix);
    ckpt_buf candidate = CKPT_BUF_INIT;
    ckpt__saved_error saved;
    int hint = 0;
    int index_missing;
    ckpt__error_save(&saved); /* the probes below must not replace it */
    index_missing = ckpt__fs_stat(r->fs, r->index_path.ptr, NULL, NULL) != 0;
    if (!index_missing)
        hint = 0; /* the index is there: something else was not found */
    else if (n > 0)
        hint = ckpt__buf_printf(&candidate, "%.*s.index", (int)n, r->prefix) ==
                   0 &&
               ckpt__fs_stat(r->fs, candidate.ptr, NULL, NULL) == 0;
    else
        hint = prefix_hint(r, &candidate);
    ckpt__error_restore(&saved);
    if (hint == 1)
        err = ckpt__error(CKPT_ENOTFOUND,
                          "%s: no such checkpoint; that is one of the "
                          "files of the checkpoint whose prefix is %.*s: "
                          "open the prefix",
                          r->prefix, (int)n, r->prefix);
    else if (hint == 2)
        err = ckpt__error(CKPT_ENOTFOUND,
                          "%s: no such checkpoint (no %s); a checkpoint is "
                          "named by its prefix, not by a file or directory "
                          "(ckpt_latest_checkpoint finds the newest one in "
                          "a directory)",
                          r->prefix, r->index_path.ptr);
    else if (hint == 3)
        err =
            ckpt__error(CKPT_ENOTFOUND,
                        "%s: no such checkpoint (no %s), and the name %s "
                        "itself cannot be looked up: %s",
                        r->prefix, r->index_path.ptr, r->prefix, candidate.ptr);
    else if (index_missing) /* nothing of that name: say what was looked for */
        err = ckpt__error_prefix(err, "%s: no such checkpoint", r->prefix);
    ckpt_buf_dispose(&candidate);
    return err;
}

int ckpt_bundle_reader_open(ckpt_bundle_reader **out, const char *prefix,
                            const ckpt_bundle_reader_options *opts)
{
    ckpt_bundle_reader *r = NULL;
    int err;

    CKPT__CHECK_ARG(out);
    *out = NULL;
    if (!prefix || !*prefix)
        return ckpt__error(CKPT_EINVAL, "bundle reader: empty prefix");
    if (opts) {
        int err_v = ckpt__options_check_version(
            opts->version, CKPT_BUNDLE_READER_OPTIONS_VERSION,
            "bundle reader options", "CKPT_BUNDLE_READER_OPTIONS_INIT");
        if (err_v == 0)
            err_v = ckpt__fs_check(opts->fs, "bundle reader options");
        if (err_v < 0)
            return err_v;
    }
    r = ckpt__calloc(1, sizeof(*r));
    if (!r)
        return ckpt__error_oom();
    err = ckpt__entry_table_init(&r->tab);
    if (err < 0)
        goto done;
    r->fs = ckpt_fs_or_default(opts ? opts->fs : NULL);
    r->skip_crc = opts && opts->skip_data_checksums;
    r->prefix = ckpt__strdup(prefix);
    if (!r->prefix) {
        err = ckpt__error_oom();
        goto done;
    }
    err = ckpt_bundle_index_path(&r->index_path, prefix);
    if (err < 0)
        goto done;
    err = load_index(r);
    if (err < 0 && err != CKPT_ENOTFOUND && index_has_no_file(r))
        err = ckpt__error_recode(CKPT_ENOTFOUND);
    if (err == CKPT_ENOTFOUND)
        err = explain_missing_index(r, err);
done:
    if (err < 0) {
        ckpt__saved_error saved;
        ckpt__error_save(&saved);
        ckpt_bundle_reader_free(r);
        ckpt__error_restore(&saved);
        return err;
    }
    *out = r;
    return 0;
}

void ckpt_bundle_reader_free(ckpt_bundle_reader *r)
{
    if (!r)
        return;
    for (size_t i = 0; i < r->nshards; i++)
        ckpt__fs_close_quiet(r->fs, r->shards[i].file);
    ckpt__entry_table_dispose(&r->tab);
    ckpt__free(r->shards);
    ckpt__free(r->prefix);
    ckpt_buf_dispose(&r->index_path);
    ckpt_buf_dispose(&r->path);
    ckpt__sliced_entries_dispose(&r->sliced);
    ckpt__free(r->piece_marks);
    ckpt__free(r);
}
