/* fuzz/fuzz_restore.c - fuzz target for the saver's restore path: the input
 * becomes a checkpoint directory of real files (index, one or two data
 * files, the `checkpoint` state file), a saver is opened on it
 * (ckpt_saver_open: recovery of the state file, the directory lock),
 * variables are registered and restored with ckpt_saver_restore_latest and
 * ckpt_saver_restore_subset (helper threads, the read choice, write
 * callbacks, byte swapping, partitioned tensors).
 *
 *   input:  flags[1] | pick[1] | state_len[2, LE] | index_len[4, LE] |
 *           data0_len[4, LE] | index | state | data0 | data1
 *           (each length cut to the bytes there are)
 *           flags bit 0: the `checkpoint` file holds `state` (otherwise
 *                        one naming model.ckpt-1, and `state` is unused)
 *           flags bit 1: keep the index's block CRCs as they are
 *                        (otherwise repaired, ckpt_fuzz_fix_table_crcs)
 *           flags bit 2: two data files, data0 and data1 (otherwise one,
 *                        data0 and data1 together)
 *           flags bit 3: odd-numbered variables restored through a write
 *                        callback (the others straight into memory)
 *           flags bit 4: the picked variable registered with another
 *                        dtype of the same element size
 *           flags bit 5: the picked variable registered with one more
 *                        element in its outermost dimension
 *           flags bit 6: one more variable, which the checkpoint lacks
 *           pick bits 0-3: the variable bits 4 and 5 change (modulo the
 *                        count); bits 4-7: the one restore_subset restores
 *                        alone (15: an empty subset)
 *   files:  <tmp>/model.ckpt-1.index, <tmp>/model.ckpt-1.data-0000N-of-0000M,
 *           <tmp>/checkpoint; the directory and whatever the saver wrote
 *           in it are removed after each input.
 *
 * The variables are the bundle's own fixed-size tensors of up to 1 MiB
 * (as the bundle reader lists them, at most 8, partitioned ones included),
 * or, when it lists none, a fixed set of four of different dtypes and
 * shapes. Checks: the saver opens (an unparsable state file is treated as
 * empty); every variable registers; errors are documented codes with a
 * message; a restore that succeeds restored every variable with the bytes
 * the bundle reader reads for it (whose entry has the variable's dtype and
 * shape), every byte of a callback variable written once; the allocation
 * cap and the leak check of fuzz_common.c (atomic: the library allocates
 * on its helper threads too). */
#include "fuzz.h"

#include "ckpt/bundle.h"
#include "ckpt/errors.h"
#include "ckpt/saver.h"

#include <dirent.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define HEADER_BYTES 12
#define MAX_VARS 10 /* 8 from the bundle, the fixed set's 4 + the missing */
#define MAX_BUNDLE_VARS 8
#define VAR_MAX_BYTES ((uint64_t)1 << 20)
#define EMPTY_SUBSET 15
#define FILL_BYTE 0xa5
#define MISSING_NAME "fuzz/not in the checkpoint"

enum {
    STATE_FROM_INPUT = 1,
    KEEP_CRCS = 2,
    TWO_DATA_FILES = 4,
    WRITE_CALLBACKS = 8,
    OTHER_DTYPE = 16,
    LONGER_SHAPE = 32,
    MISSING_VAR = 64,
};

typedef struct restore_var {
    char *name;
    ckpt_var var;
    uint8_t *bytes; /* the variable's memory (also behind the callback) */
    size_t size;
    atomic_size_t written; /* bytes the write callback stored */
} restore_var;

typedef struct restore_dir {
    char dir[256];
    char prefix[300];
} restore_dir;

static void check_error(int rc)
{
    CKPT_FUZZ_CHECK(rc < 0);
    CKPT_FUZZ_CHECK(ckpt_error_last()->code == rc);
    CKPT_FUZZ_CHECK(ckpt_error_last()->message[0] != '\0');
}

/* A restore's documented outcomes (the checkpoint, a variable or a data
 * file missing; a mismatch; a damaged or unreadable record). */
static void check_restore_error(int rc)
{
    check_error(rc);
    CKPT_FUZZ_CHECK(rc == CKPT_ENOTFOUND || rc == CKPT_EINVAL ||
                    rc == CKPT_ECORRUPT || rc == CKPT_EIO ||
                    rc == CKPT_EVERSION || rc == CKPT_ENOTSUP);
}

static uint32_t le32(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
           (uint32_t)p[3] << 24;
}

static void write_file(const char *path, const uint8_t *p, size_t n)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    CKPT_FUZZ_CHECK(fd >= 0);
    CKPT_FUZZ_CHECK(n == 0 || write(fd, p, n) == (ssize_t)n);
    CKPT_FUZZ_CHECK(close(fd) == 0);
}

/* Remove `dir` and everything in it (the saver may have written files of
 * its own: a rewritten state file, temporaries). */
static void remove_tree(const char *dir)
{
    DIR *d = opendir(dir);
    struct dirent *e;
    char path[600];
    CKPT_FUZZ_CHECK(d != NULL);
    while ((e = readdir(d)) != NULL) {
        struct stat st;
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
            continue;
        snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
        CKPT_FUZZ_CHECK(lstat(path, &st) == 0);
        if (S_ISDIR(st.st_mode))
            remove_tree(path);
        else
            CKPT_FUZZ_CHECK(unlink(path) == 0);
    }
    CKPT_FUZZ_CHECK(closedir(d) == 0);
    CKPT_FUZZ_CHECK(rmdir(dir) == 0);
}

static void make_dir(restore_dir *d)
{
    ckpt_fuzz_make_temp_dir(d->dir, sizeof(d->dir), "restore");
    snprintf(d->prefix, sizeof(d->prefix), "%s/model.ckpt-1", d->dir);
}

/* Write the input's files into the fresh directory `d`. */
static void write_files(const restore_dir *d, int flags,
                        const ckpt_fuzz_split *in, const uint8_t *header)
{
    static const char named_state[] =
        "model_checkpoint_path: \"model.ckpt-1\"\n"
        "all_model_checkpoint_paths: \"model.ckpt-1\"\n";
    size_t state_len = (size_t)header[2] | (size_t)header[3] << 8;
    size_t data0_len = le32(header + 8);
    const uint8_t *state = in->rest, *data;
    char path[400];
    if (state_len > in->rest_len)
        state_len = in->rest_len;
    data = state + state_len;
    snprintf(path, sizeof(path), "%s.index", d->prefix);
    write_file(path, in->index, in->index_len);
    snprintf(path, sizeof(path), "%s/checkpoint", d->dir);
    if (flags & STATE_FROM_INPUT)
        write_file(path, state, state_len);
    else
        write_file(path, (const uint8_t *)named_state, sizeof(named_state) - 1);
    if (flags & TWO_DATA_FILES) {
        size_t rest = in->rest_len - state_len;
        if (data0_len > rest)
            data0_len = rest;
        snprintf(path, sizeof(path), "%s.data-00000-of-00002", d->prefix);
        write_file(path, data, data0_len);
        snprintf(path, sizeof(path), "%s.data-00001-of-00002", d->prefix);
        write_file(path, data + data0_len, rest - data0_len);
    } else {
        snprintf(path, sizeof(path), "%s.data-00000-of-00001", d->prefix);
        write_file(path, data, in->rest_len - state_len);
    }
}

static int write_to_var(const void *src, uint64_t offset, size_t n,
                        void *payload)
{
    restore_var *v = payload;
    CKPT_FUZZ_CHECK(offset <= v->size && n <= v->size - offset);
    memcpy(v->bytes + offset, src, n);
    atomic_fetch_add(&v->written, n);
    return 0;
}

/* A saver takes no variable without a way to save it (never called
 * here: nothing is saved). */
static int read_from_var(void *dst, uint64_t offset, size_t n, void *payload)
{
    restore_var *v = payload;
    CKPT_FUZZ_CHECK(offset <= v->size && n <= v->size - offset);
    memcpy(dst, v->bytes + offset, n);
    return 0;
}

/* Make `v` a variable of `dtype` and `shape` named `name` (copied). */
static void init_var(restore_var *v, const char *name, int dtype,
                     const ckpt_shape *shape)
{
    int64_t bytes = 0;
    memset(v, 0, sizeof(*v));
    v->name = strdup(name);
    CKPT_FUZZ_CHECK(v->name != NULL);
    CKPT_FUZZ_CHECK(ckpt_tensor_byte_size(&bytes, dtype, shape) == 0);
    v->size = (size_t)bytes;
    v->bytes = malloc(v->size ? v->size : 1);
    CKPT_FUZZ_CHECK(v->bytes != NULL);
    v->var.name = v->name;
    v->var.dtype = dtype;
    v->var.shape = *shape;
}

static void add_var(restore_var *vars, int *count, const char *name, int dtype,
                    const ckpt_shape *shape)
{
    init_var(&vars[(*count)++], name, dtype, shape);
}

static int has_var(const restore_var *vars, int count, const char *name)
{
    for (int i = 0; i < count; i++)
        if (strcmp(vars[i].name, name) == 0)
            return 1;
    return 0;
}

/* The bundle's fixed-size tensors of up to VAR_MAX_BYTES whose names hold
 * no NUL byte, as variables. */
static void vars_from_bundle(restore_var *vars, int *count, const char *prefix)
{
    ckpt_bundle_reader *r = NULL;
    size_t n;
    if (ckpt_bundle_reader_open(&r, prefix, NULL) != 0)
        return;
    n = ckpt_bundle_reader_count(r);
    for (size_t i = 0; i < n && *count < MAX_BUNDLE_VARS; i++) {
        const ckpt_tensor_entry *e = ckpt_bundle_reader_entry(r, i);
        int64_t bytes = 0;
        if (e->is_slice_key || strlen(e->name) != e->name_len ||
            ckpt_dtype_size(e->dtype) == 0 ||
            ckpt_tensor_byte_size(&bytes, e->dtype, &e->shape) != 0 ||
            (uint64_t)bytes > VAR_MAX_BYTES)
            continue;
        add_var(vars, count, e->name, e->dtype, &e->shape);
    }
    ckpt_bundle_reader_free(r);
}

static void fixed_vars(restore_var *vars, int *count)
{
    ckpt_shape s;
    memset(&s, 0, sizeof(s));
    s.rank = 2;
    s.dims[0] = 2;
    s.dims[1] = 3;
    add_var(vars, count, "dense/kernel", CKPT_DT_FLOAT, &s);
    s.rank = 0;
    add_var(vars, count, "global_step", CKPT_DT_INT64, &s);
    s.rank = 1;
    s.dims[0] = 4;
    add_var(vars, count, "mask", CKPT_DT_BOOL, &s);
    s.dims[0] = 3;
    add_var(vars, count, "emb/bf16", CKPT_DT_BFLOAT16, &s);
}

/* Another dtype of the same element size (float for the others). */
static int other_dtype(int dtype)
{
    switch (ckpt_dtype_size(dtype)) {
    case 1:
        return dtype == CKPT_DT_UINT8 ? CKPT_DT_INT8 : CKPT_DT_UINT8;
    case 2:
        return dtype == CKPT_DT_HALF ? CKPT_DT_BFLOAT16 : CKPT_DT_HALF;
    case 4:
        return dtype == CKPT_DT_FLOAT ? CKPT_DT_INT32 : CKPT_DT_FLOAT;
    case 8:
        return dtype == CKPT_DT_INT64 ? CKPT_DT_DOUBLE : CKPT_DT_INT64;
    default:
        return dtype == CKPT_DT_FLOAT ? CKPT_DT_INT32 : CKPT_DT_FLOAT;
    }
}

/* Register the picked variable unlike the checkpoint's entry (flags bits
 * 4 and 5): its buffer is made again for the new size. */
static void change_var(restore_var *v, int flags)
{
    ckpt_shape s = v->var.shape;
    int dtype = v->var.dtype;
    char *name = v->name;
    int64_t bytes = 0;
    if (flags & OTHER_DTYPE)
        dtype = other_dtype(dtype);
    if (flags & LONGER_SHAPE) {
        if (s.rank == 0) {
            s.rank = 1;
            s.dims[0] = 1;
        } else {
            s.dims[0]++;
        }
        if (ckpt_tensor_byte_size(&bytes, dtype, &s) != 0 ||
            (uint64_t)bytes > 2 * VAR_MAX_BYTES)
            s = v->var.shape;
    }
    free(v->bytes);
    init_var(v, name, dtype, &s);
    free(name);
}

static void use_callbacks(restore_var *v)
{
    v->var.data = NULL;
    v->var.read = read_from_var;
    v->var.write = write_to_var;
    v->var.payload = v;
}

static void fill_vars(restore_var *vars, int count)
{
    for (int i = 0; i < count; i++) {
        memset(vars[i].bytes, FILL_BYTE, vars[i].size ? vars[i].size : 1);
        atomic_store(&vars[i].written, 0);
        if (!vars[i].var.write)
            vars[i].var.data = vars[i].bytes;
    }
}

/* After a successful restore from `prefix`: `v` holds what the bundle
 * reader reads for its name, from an entry of its dtype and shape. */
static void check_restored(ckpt_bundle_reader *r, const restore_var *v)
{
    const ckpt_tensor_entry *e = NULL;
    uint8_t *want;
    int rc;
    CKPT_FUZZ_CHECK(ckpt_bundle_reader_find(&e, r, v->name) == 0);
    CKPT_FUZZ_CHECK(e->dtype == v->var.dtype);
    CKPT_FUZZ_CHECK(e->shape.rank == v->var.shape.rank);
    for (int d = 0; d < e->shape.rank; d++)
        CKPT_FUZZ_CHECK(e->shape.dims[d] == v->var.shape.dims[d]);
    want = malloc(v->size ? v->size : 1);
    CKPT_FUZZ_CHECK(want != NULL);
    rc = ckpt_bundle_reader_read(r, v->name, v->size ? want : NULL, v->size);
    if (rc != 0)
        fprintf(stderr, "fuzz restore: '%s' restored, but the reader: %s\n",
                v->name, ckpt_error_last()->message);
    CKPT_FUZZ_CHECK(rc == 0);
    CKPT_FUZZ_CHECK(memcmp(want, v->bytes, v->size) == 0);
    if (v->var.write)
        CKPT_FUZZ_CHECK(atomic_load(&v->written) == v->size);
    free(want);
}

static void check_all_restored(const char *prefix, restore_var *vars, int count,
                               int only)
{
    ckpt_bundle_reader *r = NULL;
    int rc = ckpt_bundle_reader_open(&r, prefix, NULL);
    if (rc != 0)
        fprintf(stderr, "fuzz restore: %s restored, but the reader: %s\n",
                prefix, ckpt_error_last()->message);
    CKPT_FUZZ_CHECK(rc == 0);
    for (int i = 0; i < count; i++)
        if (only < 0 || i == only)
            check_restored(r, &vars[i]);
    ckpt_bundle_reader_free(r);
}

static void restore(const restore_dir *d, restore_var *vars, int count,
                    int subset_var)
{
    ckpt_saver *s = NULL;
    ckpt_buf latest = CKPT_BUF_INIT;
    int rc = ckpt_saver_open(&s, d->dir, NULL);
    if (rc != 0)
        fprintf(stderr, "fuzz restore: ckpt_saver_open: %s\n",
                ckpt_error_last()->message);
    CKPT_FUZZ_CHECK(rc == 0);
    for (int i = 0; i < count; i++)
        CKPT_FUZZ_CHECK(ckpt_saver_add_var(s, &vars[i].var) == 0);

    rc = ckpt_saver_restore_latest(s, &latest);
    if (rc != 0) {
        check_restore_error(rc);
    } else {
        CKPT_FUZZ_CHECK(latest.ptr != NULL);
        check_all_restored(latest.ptr, vars, count, -1);
    }

    fill_vars(vars, count);
    if (subset_var == EMPTY_SUBSET) {
        rc = ckpt_saver_restore_subset(s, d->prefix, NULL, 0);
        if (rc != 0)
            check_restore_error(rc);
    } else {
        const char *name = vars[subset_var % count].name;
        rc = ckpt_saver_restore_subset(s, d->prefix, &name, 1);
        if (rc != 0)
            check_restore_error(rc);
        else
            check_all_restored(d->prefix, vars, count, subset_var % count);
    }
    ckpt_buf_dispose(&latest);
    ckpt_saver_free(s);
}

int ckpt_fuzz_restore(const uint8_t *data, size_t size)
{
    restore_var vars[MAX_VARS];
    ckpt_fuzz_split in;
    restore_dir d;
    int count = 0, flags, pick;

    if (size < HEADER_BYTES)
        return 0;
    ckpt_fuzz_begin();
    flags = data[0];
    pick = data[1];
    ckpt_fuzz_split_index(&in, data, size, HEADER_BYTES, 4,
                          !(flags & KEEP_CRCS));
    make_dir(&d);
    write_files(&d, flags, &in, data);

    vars_from_bundle(vars, &count, d.prefix);
    if (count == 0)
        fixed_vars(vars, &count);
    if (flags & (OTHER_DTYPE | LONGER_SHAPE))
        change_var(&vars[(pick & 15) % count], flags);
    if ((flags & MISSING_VAR) && !has_var(vars, count, MISSING_NAME)) {
        ckpt_shape s;
        memset(&s, 0, sizeof(s));
        s.rank = 1;
        s.dims[0] = 2;
        add_var(vars, &count, MISSING_NAME, CKPT_DT_FLOAT, &s);
    }
    for (int i = 0; i < count; i++)
        if ((flags & WRITE_CALLBACKS) && (i & 1))
            use_callbacks(&vars[i]);
    fill_vars(vars, count);

    restore(&d, vars, count, pick >> 4);

    for (int i = 0; i < count; i++) {
        free(vars[i].name);
        free(vars[i].bytes);
    }
    remove_tree(d.dir);
    free(in.owned);
    ckpt_fuzz_end("restore");
    return 0;
}
