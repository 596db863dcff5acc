/* fuzz/seedgen.c - writes seed inputs for the fuzz targets:
 *
 *   ckpt_fuzz_seedgen own OUTDIR
 *       bundles written by our own writer (several dtypes, strings, an
 *       empty tensor, two shards, aligned records), a many-block table from
 *       the table builder, entry values with slices, headers with
 *       bad_consumers, a hand-assembled big-endian bundle and state files
 *       from the state writer
 *   ckpt_fuzz_seedgen bundle PREFIX OUTDIR NAME
 *       seeds from an existing bundle (make_seeds.sh runs this over the
 *       TensorFlow vectors): its index, index + first data shard in the
 *       bundle and files targets' layouts, index + first two data shards
 *       + a state file naming it in the restore target's, and the values
 *       of its index entries
 *
 * Seeds go to OUTDIR/<target>/<name>. The layouts: bundle flags[1] |
 * index_len[4, LE] | index | data (fuzz_bundle.c); files flags[1] |
 * exts[3] | index_len[4, LE] | index | data (fuzz_files.c); restore
 * flags[1] | pick[1] | state_len[2, LE] | index_len[4, LE] |
 * data0_len[4, LE] | index | state | data0 | data1 (fuzz_restore.c). */
#include "ckpt/bundle.h"
#include "ckpt/state.h"
#include "common/internal.h"
#include "format/bundle_proto.h"
#include "format/table.h"
#include "util/coding.h"
#include "util/crc32c.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* Index values written as pb seeds per bundle at most. */
#define MAX_PB_SEEDS 12

/* fuzz_files.c's flag bit 4: open with skip_data_checksums. */
#define FILES_SKIP_CRC 16
/* fuzz_restore.c's flag bits: the state file from the input, two data
 * files, write callbacks, the picked variable of another dtype. */
#define RESTORE_STATE_FROM_INPUT 1
#define RESTORE_TWO_DATA_FILES 4
#define RESTORE_WRITE_CALLBACKS 8
#define RESTORE_OTHER_DTYPE 16

static void die(const char *what)
{
    const ckpt_error *e = ckpt_error_last();
    fprintf(stderr, "ckpt_fuzz_seedgen: %s: %s\n", what,
            e->code ? e->message : strerror(errno));
    exit(1);
}

static void make_dir(const char *path)
{
    if (mkdir(path, 0777) != 0 && errno != EEXIST)
        die(path);
}

static void write_seed(const char *outdir, const char *target, const char *name,
                       const void *a, size_t na, const void *b, size_t nb)
{
    char path[4096];
    FILE *f;
    snprintf(path, sizeof(path), "%s/%s", outdir, target);
    make_dir(path);
    snprintf(path, sizeof(path), "%s/%s/%s", outdir, target, name);
    f = fopen(path, "wb");
    if (!f)
        die(path);
    if ((na && fwrite(a, 1, na, f) != na) || (nb && fwrite(b, 1, nb, f) != nb))
        die(path);
    if (fclose(f) != 0)
        die(path);
}

static void put_le32(uint8_t *p, size_t v)
{
    p[0] = (uint8_t)v;
    p[1] = (uint8_t)(v >> 8);
    p[2] = (uint8_t)(v >> 16);
    p[3] = (uint8_t)(v >> 24);
}

/* The files target's seeds of a bundle: as it is, and read with
 * skip_data_checksums ("-nocrc"); no FIFOs, no holes. */
static void write_files_seeds(const char *outdir, const char *name,
                              const ckpt_buf *index, const ckpt_buf *data)
{
    char seed_name[512];
    for (int skip = 0; skip < 2; skip++) {
        ckpt_buf all = CKPT_BUF_INIT;
        uint8_t head[8] = {0};
        head[0] = skip ? FILES_SKIP_CRC : 0;
        put_le32(head + 4, index->size);
        snprintf(seed_name, sizeof(seed_name), "%s%s", name,
                 skip ? "-nocrc" : "");
        if (ckpt__buf_put(&all, head, sizeof(head)) < 0 ||
            ckpt__buf_put(&all, index->ptr, index->size) < 0 ||
            ckpt__buf_put(&all, data->ptr, data->size) < 0)
            die("out of memory");
        write_seed(outdir, "files", seed_name, all.ptr, all.size, NULL, 0);
        ckpt_buf_dispose(&all);
    }
}

/* The restore target's seeds of a bundle whose files it names
 * model.ckpt-1: with the state file it writes itself; with a state file
 * from our writer in the input and odd variables restored through write
 * callbacks ("-state-cb"); with variable 0 of another dtype and variable
 * 1 restored alone ("-mismatch"). `data1` set: two data files. */
static void write_restore_seeds(const char *outdir, const char *name,
                                const ckpt_buf *index, const ckpt_buf *data0,
                                const ckpt_buf *data1)
{
    static const uint8_t variant_flags[3] = {
        0, RESTORE_STATE_FROM_INPUT | RESTORE_WRITE_CALLBACKS,
        RESTORE_OTHER_DTYPE};
    static const uint8_t variant_pick[3] = {0x00, 0x10, 0x10};
    static const char *const variant_suffix[3] = {"", "-state-cb", "-mismatch"};
    char *paths[1] = {"model.ckpt-1"};
    double stamps[1] = {1673735799.685766};
    ckpt_state st = CKPT_STATE_INIT;
    ckpt_buf state = CKPT_BUF_INIT;
    char seed_name[512];

    st.model_checkpoint_path = paths[0];
    st.all_paths = paths;
    st.num_paths = 1;
    st.timestamps = stamps;
    st.num_timestamps = 1;
    st.last_preserved_timestamp = 1673735591.495455;
    if (ckpt_state_format(&state, &st) < 0)
        die("format");
    for (int v = 0; v < 3; v++) {
        ckpt_buf all = CKPT_BUF_INIT;
        const ckpt_buf *in_state =
            variant_flags[v] & RESTORE_STATE_FROM_INPUT ? &state : NULL;
        uint8_t head[12] = {0};
        head[0] =
            (uint8_t)(variant_flags[v] | (data1 ? RESTORE_TWO_DATA_FILES : 0));
        head[1] = variant_pick[v];
        head[2] = (uint8_t)(in_state ? in_state->size : 0);
        head[3] = (uint8_t)((in_state ? in_state->size : 0) >> 8);
        put_le32(head + 4, index->size);
        put_le32(head + 8, data0->size);
        snprintf(seed_name, sizeof(seed_name), "%s%s", name, variant_suffix[v]);
        if (ckpt__buf_put(&all, head, sizeof(head)) < 0 ||
            ckpt__buf_put(&all, index->ptr, index->size) < 0 ||
            (in_state &&
             ckpt__buf_put(&all, in_state->ptr, in_state->size) < 0) ||
            ckpt__buf_put(&all, data0->ptr, data0->size) < 0 ||
            (data1 && ckpt__buf_put(&all, data1->ptr, data1->size) < 0))
            die("out of memory");
        write_seed(outdir, "restore", seed_name, all.ptr, all.size, NULL, 0);
        ckpt_buf_dispose(&all);
    }
    ckpt_buf_dispose(&state);
}

struct pb_state {
    const char *outdir;
    const char *name;
    int count;
};

static int pb_cb(const uint8_t *key, size_t key_len, const uint8_t *value,
                 size_t value_len, void *payload)
{
    struct pb_state *s = payload;
    char name[512];
    (void)key;
    (void)key_len;
    if (s->count >= MAX_PB_SEEDS)
        return 0;
    snprintf(name, sizeof(name), "%s-%02d", s->name, s->count++);
    write_seed(s->outdir, "pb", name, value, value_len, NULL, 0);
    return 0;
}

/* Seeds from the bundle at `prefix` (its first data shard; the first two
 * for the restore target). */
static void seeds_from_bundle(const char *prefix, const char *outdir,
                              const char *name)
{
    ckpt_buf index = CKPT_BUF_INIT, data = CKPT_BUF_INIT, path = CKPT_BUF_INIT;
    ckpt_buf data1 = CKPT_BUF_INIT;
    ckpt_bundle_reader *r = NULL;
    struct pb_state pbs;
    uint8_t head[5];
    char seed_name[512];
    int num_shards = 1;

    if (ckpt_bundle_index_path(&path, prefix) < 0 ||
        ckpt_fs_read_file(&index, NULL, path.ptr) < 0)
        die(prefix);
    if (ckpt_bundle_reader_open(&r, prefix, NULL) == 0) {
        num_shards = ckpt_bundle_reader_num_shards(r);
        ckpt_bundle_reader_free(r);
    }
    if (ckpt_bundle_data_path(&path, prefix, 0, num_shards) < 0)
        die(prefix);
    if (ckpt_fs_read_file(&data, NULL, path.ptr) < 0)
        ckpt__buf_clear(&data); /* a missing shard is a seed too */
    if (num_shards > 1 &&
        (ckpt_bundle_data_path(&path, prefix, 1, num_shards) < 0 ||
         ckpt_fs_read_file(&data1, NULL, path.ptr) < 0))
        ckpt__buf_clear(&data1);
    ckpt_error_clear();

    write_seed(outdir, "table", name, index.ptr, index.size, NULL, 0);
    for (int flags = 0; flags < 2; flags++) {
        head[0] = (uint8_t)flags;
        head[1] = (uint8_t)index.size;
        head[2] = (uint8_t)(index.size >> 8);
        head[3] = (uint8_t)(index.size >> 16);
        head[4] = (uint8_t)(index.size >> 24);
        snprintf(seed_name, sizeof(seed_name), "%s%s", name,
                 flags ? "-nocrc" : "");
        /* the bundle target reads its header, then index, then data */
        {
            ckpt_buf all = CKPT_BUF_INIT;
            if (ckpt__buf_put(&all, head, sizeof(head)) < 0 ||
                ckpt__buf_put(&all, index.ptr, index.size) < 0 ||
                ckpt__buf_put(&all, data.ptr, data.size) < 0)
                die("out of memory");
            write_seed(outdir, "bundle", seed_name, all.ptr, all.size, NULL, 0);
            ckpt_buf_dispose(&all);
        }
    }
    write_files_seeds(outdir, name, &index, &data);
    write_restore_seeds(outdir, name, &index, &data,
                        num_shards > 1 ? &data1 : NULL);
    pbs.outdir = outdir;
    pbs.name = name;
    pbs.count = 0;
    if (ckpt__table_iterate((const uint8_t *)index.ptr, index.size, name, pb_cb,
                            &pbs) < 0)
        die(name);
    ckpt_buf_dispose(&index);
    ckpt_buf_dispose(&data);
    ckpt_buf_dispose(&data1);
    ckpt_buf_dispose(&path);
}

/* ---- our own bundles ---------------------------------------------------- */

static ckpt_shape shape_of(int rank, const int64_t *dims)
{
    ckpt_shape s;
    memset(&s, 0, sizeof(s));
    s.rank = rank;
    for (int i = 0; i < rank; i++)
        s.dims[i] = dims[i];
    return s;
}

static void write_own_bundle(const char *prefix, int num_shards,
                             size_t alignment)
{
    ckpt_bundle_writer_options opts = CKPT_BUNDLE_WRITER_OPTIONS_INIT;
    ckpt_bundle_writer *w = NULL;
    static const float f32[6] = {0.5f, -1.0f, 2.0f, 3.25f, 1e-3f, -0.0f};
    static const int64_t i64 = -1234567890123;
    static const double f64[2] = {3.141592653589793, -2.5e100};
    static const uint16_t bf16[3] = {0x3f80, 0xc000, 0x7fc0};
    static const uint8_t flags[4] = {1, 0, 1, 1};
    static const int64_t d23[2] = {2, 3}, d2[1] = {2}, d3[1] = {3}, d4[1] = {4},
                         d0[2] = {0, 5};
    ckpt_slice strs[2];
    ckpt_shape s;

    opts.num_shards = num_shards;
    opts.data_alignment = alignment;
    if (ckpt_bundle_writer_open(&w, prefix, &opts) < 0)
        die(prefix);
    s = shape_of(2, d23);
    if (ckpt_bundle_writer_add(w, "dense/kernel", CKPT_DT_FLOAT, &s, f32,
                               sizeof(f32)) < 0)
        die("add");
    s = shape_of(0, NULL);
    if (ckpt_bundle_writer_add(w, "global_step", CKPT_DT_INT64, &s, &i64,
                               sizeof(i64)) < 0)
        die("add");
    strs[0].ptr = "hello";
    strs[0].len = 5;
    strs[1].ptr = "";
    strs[1].len = 0;
    s = shape_of(1, d2);
    if (ckpt_bundle_writer_add_strings(w, "_CHECKPOINTABLE_OBJECT_GRAPH", &s,
                                       strs, 2) < 0)
        die("add strings");
    if (num_shards > 1 && ckpt_bundle_writer_select_shard(w, 1) < 0)
        die("select shard");
    s = shape_of(1, d2);
    if (ckpt_bundle_writer_add(w, "dense/bias", CKPT_DT_DOUBLE, &s, f64,
                               sizeof(f64)) < 0)
        die("add");
    s = shape_of(1, d3);
    if (ckpt_bundle_writer_add(w, "emb/bf16", CKPT_DT_BFLOAT16, &s, bf16,
                               sizeof(bf16)) < 0)
        die("add");
    s = shape_of(1, d4);
    if (ckpt_bundle_writer_add(w, "mask", CKPT_DT_BOOL, &s, flags,
                               sizeof(flags)) < 0)
        die("add");
    s = shape_of(2, d0);
    if (ckpt_bundle_writer_add(w, "empty", CKPT_DT_INT32, &s, NULL, 0) < 0)
        die("add");
    if (ckpt_bundle_writer_finish(w) < 0)
        die("finish");
    ckpt_bundle_writer_free(w);
}

/* A table with many small blocks (the writer always makes one). */
static void write_multiblock_table(const char *outdir)
{
    const ckpt_fs *fs = ckpt_fs_posix();
    ckpt__table_builder *tb = NULL;
    ckpt_file *f = NULL;
    char path[4096], key[64], value[64];
    snprintf(path, sizeof(path), "%s/table", outdir);
    make_dir(path);
    snprintf(path, sizeof(path), "%s/table/own-multiblock", outdir);
    if (fs->open_write(&f, path, CKPT_OPEN_TRUNC, fs->payload) < 0 ||
        ckpt__table_builder_new(&tb, fs, f, path, 128) < 0)
        die(path);
    for (int i = 0; i < 40; i++) {
        int kn = snprintf(key, sizeof(key), "layer_%02d/weights%s", i,
                          i % 3 ? "" : "/.ATTRIBUTES/VARIABLE_VALUE");
        int vn = snprintf(value, sizeof(value), "value %d", i * 7);
        if (ckpt__table_builder_add(tb, key, (size_t)kn, value, (size_t)vn) < 0)
            die(path);
    }
    if (ckpt__table_builder_finish(tb) < 0)
        die(path);
    ckpt__table_builder_free(tb);
    if (fs->close(f, fs->payload) < 0)
        die(path);
}

/* A big-endian bundle (the writer only writes the host's order), in the
 * bundle target's layout: header with endianness BIG, a float32 [2] and an
 * int16 [3] with byte-swapped elements, and a string [2] whose length
 * words and length checksum are big-endian. */
static void write_big_endian_bundle(const char *outdir)
{
    static const uint8_t f32[8] = {0x3f, 0x80, 0, 0, 0xc0, 0x20, 0, 0};
    static const uint8_t i16[6] = {0, 1, 0xff, 0xfe, 0x7f, 0xff};
    static const char strs[] = "abcde";
    ckpt_buf data = CKPT_BUF_INIT, rec = CKPT_BUF_INIT, v = CKPT_BUF_INIT;
    ckpt_buf all = CKPT_BUF_INIT;
    ckpt__table_builder *tb = NULL;
    ckpt__bundle_header h;
    ckpt__bundle_entry e;
    uint8_t words[8], head[5];
    uint32_t crc;
    char path[4096];
    const ckpt_fs *fs = ckpt_fs_posix();
    ckpt_file *f = NULL;

    /* string record: varint 2, varint 3 | masked crc of the BE length
     * words, stored BE | "ab" "cde"; record crc over words, stored, bytes */
    ckpt__encode_fixed32(words, __builtin_bswap32(2));
    ckpt__encode_fixed32(words + 4, __builtin_bswap32(3));
    crc = ckpt__crc32c(words, 8);
    if (ckpt__buf_put(&rec, "\x02\x03", 2) < 0)
        die("oom");
    {
        uint8_t stored[4];
        ckpt__encode_fixed32(stored, __builtin_bswap32(ckpt__crc32c_mask(crc)));
        if (ckpt__buf_put(&rec, stored, 4) < 0)
            die("oom");
        crc = ckpt__crc32c_extend(crc, stored, 4);
    }
    if (ckpt__buf_put(&rec, strs, 5) < 0)
        die("oom");
    crc = ckpt__crc32c_extend(crc, strs, 5);

    snprintf(path, sizeof(path), "%s/big-endian.index.tmp", outdir);
    if (fs->open_write(&f, path, CKPT_OPEN_TRUNC, fs->payload) < 0 ||
        ckpt__table_builder_new(&tb, fs, f, path, 0) < 0)
        die(path);
    ckpt__bundle_header_init(&h, 1);
    h.endianness = CKPT__BUNDLE_BIG_ENDIAN;
    if (ckpt__bundle_header_encode(&v, &h) < 0 ||
        ckpt__table_builder_add(tb, "", 0, v.ptr, v.size) < 0)
        die("header");
    /* "f": float32 [2] at 0 */
    memset(&e, 0, sizeof(e));
    e.dtype = CKPT_DT_FLOAT;
    e.shape.rank = 1;
    e.shape.dims[0] = 2;
    e.offset = 0;
    e.size = 8;
    e.crc32c = ckpt__crc32c_mask(ckpt__crc32c(f32, 8));
    ckpt__buf_clear(&v);
    if (ckpt__bundle_entry_encode(&v, &e) < 0 ||
        ckpt__table_builder_add(tb, "f", 1, v.ptr, v.size) < 0)
        die("entry f");
    /* "i": int16 [3] at 8 */
    e.dtype = CKPT_DT_INT16;
    e.shape.dims[0] = 3;
    e.offset = 8;
    e.size = 6;
    e.crc32c = ckpt__crc32c_mask(ckpt__crc32c(i16, 6));
    ckpt__buf_clear(&v);
    if (ckpt__bundle_entry_encode(&v, &e) < 0 ||
        ckpt__table_builder_add(tb, "i", 1, v.ptr, v.size) < 0)
        die("entry i");
    /* "s": string [2] at 14 */
    e.dtype = CKPT_DT_STRING;
    e.shape.dims[0] = 2;
    e.offset = 14;
    e.size = (int64_t)rec.size;
    e.crc32c = ckpt__crc32c_mask(crc);
    ckpt__buf_clear(&v);
    if (ckpt__bundle_entry_encode(&v, &e) < 0 ||
        ckpt__table_builder_add(tb, "s", 1, v.ptr, v.size) < 0)
        die("entry s");
    if (ckpt__table_builder_finish(tb) < 0)
        die(path);
    ckpt__table_builder_free(tb);
    if (fs->close(f, fs->payload) < 0)
        die(path);

    if (ckpt__buf_put(&data, f32, 8) < 0 || ckpt__buf_put(&data, i16, 6) < 0 ||
        ckpt__buf_put(&data, rec.ptr, rec.size) < 0)
        die("oom");
    ckpt__buf_clear(&v);
    if (ckpt_fs_read_file(&v, NULL, path) < 0)
        die(path);
    unlink(path);
    write_seed(outdir, "table", "own-big-endian", v.ptr, v.size, NULL, 0);
    head[0] = 0;
    head[1] = (uint8_t)v.size;
    head[2] = (uint8_t)(v.size >> 8);
    head[3] = (uint8_t)(v.size >> 16);
    head[4] = (uint8_t)(v.size >> 24);
    if (ckpt__buf_put(&all, head, 5) < 0 ||
        ckpt__buf_put(&all, v.ptr, v.size) < 0 ||
        ckpt__buf_put(&all, data.ptr, data.size) < 0)
        die("oom");
    write_seed(outdir, "bundle", "own-big-endian", all.ptr, all.size, NULL, 0);
    write_files_seeds(outdir, "own-big-endian", &v, &data);
    write_restore_seeds(outdir, "own-big-endian", &v, &data, NULL);
    ckpt_buf_dispose(&data);
    ckpt_buf_dispose(&rec);
    ckpt_buf_dispose(&v);
    ckpt_buf_dispose(&all);
}

/* Entry and header values the writer never produces. */
static void write_pb_extras(const char *outdir)
{
    ckpt__bundle_entry e;
    ckpt__bundle_header h;
    ckpt__tensor_slice sl[2];
    ckpt_buf b = CKPT_BUF_INIT;

    memset(&e, 0, sizeof(e));
    memset(sl, 0, sizeof(sl));
    e.dtype = CKPT_DT_FLOAT;
    e.shape.rank = 2;
    e.shape.dims[0] = 4;
    e.shape.dims[1] = 6;
    sl[0].rank = 2;
    sl[0].start[0] = 0;
    sl[0].length[0] = 2;
    sl[0].start[1] = 0;
    sl[0].length[1] = -1;
    sl[1].rank = 2;
    sl[1].start[0] = 2;
    sl[1].length[0] = 2;
    sl[1].start[1] = 0;
    sl[1].length[1] = -1;
    e.num_slices = 2;
    e.slices = sl;
    if (ckpt__bundle_entry_encode(&b, &e) < 0)
        die("encode");
    write_seed(outdir, "pb", "own-sliced-entry", b.ptr, b.size, NULL, 0);

    ckpt__buf_clear(&b);
    memset(&e, 0, sizeof(e));
    e.dtype = CKPT_DT_INT32;
    e.shape.rank = 1;
    e.shape.dims[0] = 3;
    e.shard_id = 1;
    e.offset = 4096;
    e.size = 12;
    e.crc32c = 0x12345678;
    if (ckpt__bundle_entry_encode(&b, &e) < 0)
        die("encode");
    write_seed(outdir, "pb", "own-entry-shard1", b.ptr, b.size, NULL, 0);

    ckpt__buf_clear(&b);
    ckpt__bundle_header_init(&h, 3);
    h.min_consumer = 1;
    h.bad_consumers[0] = 7;
    h.bad_consumers[1] = -2;
    h.num_bad_consumers = 2;
    if (ckpt__bundle_header_encode(&b, &h) < 0)
        die("encode");
    write_seed(outdir, "pb", "own-header-bad-consumers", b.ptr, b.size, NULL,
               0);
    ckpt_buf_dispose(&b);
}

static void write_states(const char *outdir)
{
    char *paths[3] = {"ckpt-17", "sub dir/ckpt-18", "ckpt-19"};
    double stamps[3] = {1673735799.685766, 1673736140.596798, 1e-05};
    ckpt_state st = CKPT_STATE_INIT;
    ckpt_buf b = CKPT_BUF_INIT;

    st.model_checkpoint_path = "ckpt-19";
    st.all_paths = paths;
    st.num_paths = 3;
    st.timestamps = stamps;
    st.num_timestamps = 3;
    st.last_preserved_timestamp = 1673735591.495455;
    if (ckpt_state_format(&b, &st) < 0)
        die("format");
    write_seed(outdir, "state", "own-timestamps", b.ptr, b.size, NULL, 0);

    ckpt__buf_clear(&b);
    paths[0] = "/abs/path/model.ckpt-1000";
    paths[1] = "quote\"back\\slash\ttab\x01\xff";
    st.model_checkpoint_path = paths[1];
    st.num_paths = 2;
    st.timestamps = NULL;
    st.num_timestamps = 0;
    st.last_preserved_timestamp = 0.0;
    if (ckpt_state_format(&b, &st) < 0)
        die("format");
    write_seed(outdir, "state", "own-escapes", b.ptr, b.size, NULL, 0);
    ckpt_buf_dispose(&b);
}

static void own_seeds(const char *outdir)
{
    char tmpl[] = "/tmp/ckpt-seedgen-XXXXXX";
    char prefix[4096];
    char *dir = mkdtemp(tmpl);
    if (!dir)
        die("mkdtemp");
    make_dir(outdir);

    snprintf(prefix, sizeof(prefix), "%s/one", dir);
    write_own_bundle(prefix, 1, 0);
    seeds_from_bundle(prefix, outdir, "own-one-shard");

    snprintf(prefix, sizeof(prefix), "%s/two", dir);
    write_own_bundle(prefix, 2, 64);
    seeds_from_bundle(prefix, outdir, "own-two-shards-aligned");

    write_multiblock_table(outdir);
    write_big_endian_bundle(outdir);
    write_pb_extras(outdir);
    write_states(outdir);

    /* the temporary bundles: two bundles, at most 2 + 3 files each */
    {
        static const char *const names[] = {
            "one.index", "one.data-00000-of-00001", "two.index",
            "two.data-00000-of-00002", "two.data-00001-of-00002"};
        for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
            snprintf(prefix, sizeof(prefix), "%s/%s", dir, names[i]);
            unlink(prefix);
        }
        rmdir(dir);
    }
}

int main(int argc, char **argv)
{
    if (argc == 3 && strcmp(argv[1], "own") == 0) {
        own_seeds(argv[2]);
        return 0;
    }
    if (argc == 5 && strcmp(argv[1], "bundle") == 0) {
        make_dir(argv[3]);
        seeds_from_bundle(argv[2], argv[3], argv[4]);
        return 0;
    }
    fprintf(stderr, "usage: ckpt_fuzz_seedgen own OUTDIR\n"
                    "       ckpt_fuzz_seedgen bundle PREFIX OUTDIR NAME\n");
    return 2;
}
