/* The NULL-argument rule of docs/CONTRIBUTING.md, function by function, for
 * the saver, bundle, io, state and tensor public functions: a function that
 * returns int rejects a NULL it needs with CKPT_EINVAL and the message
 * "<function>: <argument> is NULL"; the others treat a NULL object as
 * empty; free and dispose functions ignore NULL. */
#include "test_util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct fixture {
    char *dir;
    char prefix[512];
    float w[2];
    ckpt_saver *saver;
    ckpt_bundle_reader *reader;
} fixture;

static int setup(void **state)
{
    fixture *f = calloc(1, sizeof(*f));
    ckpt_var w = {"w", CKPT_DT_FLOAT, {1, {2}}, NULL, NULL, NULL, NULL};
    w.data = f->w;
    f->dir = test_make_temp_dir();
    assert_ckpt_ok(ckpt_saver_open(&f->saver, f->dir, NULL));
    assert_ckpt_ok(ckpt_saver_add_var(f->saver, &w));
    assert_ckpt_ok(ckpt_saver_save(f->saver, 1, NULL));
    snprintf(f->prefix, sizeof(f->prefix), "%s/model.ckpt-1", f->dir);
    assert_ckpt_ok(ckpt_bundle_reader_open(&f->reader, f->prefix, NULL));
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    fixture *f = *state;
    ckpt_bundle_reader_free(f->reader);
    ckpt_saver_free(f->saver);
    return test_dir_fixture_teardown(state);
}

static void test_saver_null_args(void **state)
{
    fixture *f = *state;
    ckpt_var w = {"x", CKPT_DT_FLOAT, {0, {0}}, NULL, NULL, NULL, NULL};
    ckpt_buf buf = CKPT_BUF_INIT;
    ckpt_saver *out = (ckpt_saver *)&buf;
    ckpt_saver_metrics m;
    uint64_t ticket = 7;
    int busy = 0;
    w.data = f->w;

    EXPECT_NULL_ARG(ckpt_saver_options_init(NULL, CKPT_SAVER_OPTIONS_VERSION),
                    "ckpt_saver_options_init: opts is NULL");
    EXPECT_NULL_ARG(ckpt_saver_open(NULL, f->dir, NULL),
                    "ckpt_saver_open: out is NULL");
    assert_ckpt_error(ckpt_saver_open(&out, NULL, NULL), CKPT_EINVAL,
                      "no checkpoint directory given (dir is NULL)");
    assert_null(out);
    /* "" was reported as not given at all */
    assert_ckpt_error(ckpt_saver_open(&out, "", NULL), CKPT_EINVAL,
                      "no checkpoint directory given (dir is an empty "
                      "string)");
    assert_null(out);
    EXPECT_NULL_ARG(ckpt_saver_add_var(NULL, &w),
                    "ckpt_saver_add_var: s is NULL");
    EXPECT_NULL_ARG(ckpt_saver_save(NULL, 1, &buf),
                    "ckpt_saver_save: s is NULL");
    EXPECT_NULL_ARG(ckpt_saver_save_async(NULL, 1, &ticket),
                    "ckpt_saver_save_async: s is NULL");
    assert_int_equal(ticket, 0);
    EXPECT_NULL_ARG(ckpt_saver_poll(NULL, &busy), "ckpt_saver_poll: s is NULL");
    EXPECT_NULL_ARG(ckpt_saver_wait(NULL, 0, 1.0),
                    "ckpt_saver_wait: s is NULL");
    EXPECT_NULL_ARG(ckpt_saver_close(NULL, 1.0), "ckpt_saver_close: s is NULL");
    EXPECT_NULL_ARG(ckpt_saver_restore(NULL, f->prefix),
                    "ckpt_saver_restore: s is NULL");
    EXPECT_NULL_ARG(ckpt_saver_restore(f->saver, NULL),
                    "ckpt_saver_restore: prefix is NULL");
    EXPECT_NULL_ARG(ckpt_saver_restore_subset(NULL, f->prefix, NULL, 0),
                    "ckpt_saver_restore_subset: s is NULL");
    EXPECT_NULL_ARG(ckpt_saver_restore_subset(f->saver, NULL, NULL, 0),
                    "ckpt_saver_restore_subset: prefix is NULL");
    EXPECT_NULL_ARG(ckpt_saver_restore_subset(f->saver, f->prefix, NULL, 1),
                    "ckpt_saver_restore_subset: names is NULL");
    assert_ckpt_ok(ckpt_saver_restore_subset(f->saver, f->prefix, NULL, 0));
    EXPECT_NULL_ARG(ckpt_saver_restore_latest(NULL, &buf),
                    "ckpt_saver_restore_latest: s is NULL");
    EXPECT_NULL_ARG(ckpt_saver_latest(NULL, &buf),
                    "ckpt_saver_latest: s is NULL");
    EXPECT_NULL_ARG(ckpt_saver_latest(f->saver, NULL),
                    "ckpt_saver_latest: out is NULL");
    EXPECT_NULL_ARG(ckpt_saver_add_var(f->saver, NULL),
                    "ckpt_saver_add_var: var is NULL");
    EXPECT_NULL_ARG(ckpt_saver_saves_var(NULL, "x", NULL),
                    "ckpt_saver_saves_var: s is NULL");
    EXPECT_NULL_ARG(ckpt_saver_saves_var(f->saver, NULL, NULL),
                    "ckpt_saver_saves_var: name is NULL");
    EXPECT_NULL_ARG(ckpt_saver_checkpoint(NULL, 0, &buf),
                    "ckpt_saver_checkpoint: s is NULL");
    EXPECT_NULL_ARG(ckpt_saver_checkpoint(f->saver, 0, NULL),
                    "ckpt_saver_checkpoint: out is NULL");
    EXPECT_NULL_ARG(ckpt_saver_reserve(NULL), "ckpt_saver_reserve: s is NULL");

    /* no error code to return: a NULL saver is empty */
    assert_int_equal(ckpt_saver_num_checkpoints(NULL), 0);
    assert_int_equal(ckpt_checkpoint_step(NULL), CKPT_NO_STEP);
    assert_null(ckpt_saver_get_options(NULL));
    ckpt_saver_set_on_save_done(NULL, NULL, NULL);
    memset(&m, 0xab, sizeof(m));
    ckpt_saver_get_metrics(NULL, &m);
    assert_int_equal(m.saves_started, 0xabababababababab);
    ckpt_saver_get_metrics(f->saver, NULL);
    assert_int_equal(ckpt_saver_staging_bytes(NULL), 0);
    ckpt_saver_free(NULL);

    /* optional pointers stay optional */
    assert_ckpt_ok(ckpt_saver_poll(f->saver, NULL));
    assert_ckpt_ok(ckpt_saver_save(f->saver, 2, NULL));
    assert_ckpt_ok(ckpt_saver_restore_latest(f->saver, NULL));
    ckpt_buf_dispose(&buf);
}

static void test_bundle_null_args(void **state)
{
    fixture *f = *state;
    const ckpt_shape scalar = {0, {0}};
    const ckpt_slice_extent whole = {0, CKPT_SLICE_FULL};
    const ckpt_tensor_entry *e = NULL;
    ckpt_bundle_writer *w = NULL;
    ckpt_bundle_reader *r = NULL;
    ckpt_string_array strings;
    ckpt_read_request req = {"w", NULL, 8};
    ckpt_buf buf = CKPT_BUF_INIT;
    float value = 1.0f;

    EXPECT_NULL_ARG(ckpt_bundle_writer_options_init(
                        NULL, CKPT_BUNDLE_WRITER_OPTIONS_VERSION),
                    "ckpt_bundle_writer_options_init: opts is NULL");
    EXPECT_NULL_ARG(ckpt_bundle_writer_open(NULL, f->prefix, NULL),
                    "ckpt_bundle_writer_open: out is NULL");
    EXPECT_NULL_ARG(ckpt_bundle_writer_select_shard(NULL, 0),
                    "ckpt_bundle_writer_select_shard: w is NULL");
    EXPECT_NULL_ARG(ckpt_bundle_writer_add(NULL, "v", CKPT_DT_FLOAT, &scalar,
                                           &value, sizeof(value)),
                    "ckpt_bundle_writer_add: w is NULL");
    EXPECT_NULL_ARG(ckpt_bundle_writer_add_strings(NULL, "s", &scalar, NULL, 0),
                    "ckpt_bundle_writer_add_strings: w is NULL");
    EXPECT_NULL_ARG(ckpt_bundle_writer_add_record(NULL, "v", CKPT_DT_FLOAT,
                                                  &scalar, &value,
                                                  sizeof(value)),
                    "ckpt_bundle_writer_add_record: w is NULL");
    EXPECT_NULL_ARG(ckpt_bundle_writer_add_slice(NULL, "v", CKPT_DT_FLOAT,
                                                 &scalar, &whole, &value,
                                                 sizeof(value)),
                    "ckpt_bundle_writer_add_slice: w is NULL");
    EXPECT_NULL_ARG(ckpt_bundle_writer_finish(NULL),
                    "ckpt_bundle_writer_finish: w is NULL");
    ckpt_bundle_writer_free(NULL);
    assert_null(w);

    EXPECT_NULL_ARG(ckpt_bundle_reader_options_init(
                        NULL, CKPT_BUNDLE_READER_OPTIONS_VERSION),
                    "ckpt_bundle_reader_options_init: opts is NULL");
    EXPECT_NULL_ARG(ckpt_bundle_reader_open(NULL, f->prefix, NULL),
                    "ckpt_bundle_reader_open: out is NULL");
    EXPECT_NULL_ARG(ckpt_bundle_reader_find(NULL, f->reader, "w"),
                    "ckpt_bundle_reader_find: out is NULL");
    EXPECT_NULL_ARG(ckpt_bundle_reader_find(&e, NULL, "w"),
                    "ckpt_bundle_reader_find: r is NULL");
    EXPECT_NULL_ARG(ckpt_bundle_reader_find(&e, f->reader, NULL),
                    "ckpt_bundle_reader_find: name is NULL");
    EXPECT_NULL_ARG(ckpt_bundle_reader_read(NULL, "w", f->w, sizeof(f->w)),
                    "ckpt_bundle_reader_read: r is NULL");
    EXPECT_NULL_ARG(
        ckpt_bundle_reader_read(f->reader, NULL, f->w, sizeof(f->w)),
        "ckpt_bundle_reader_read: name is NULL");
    /* a NULL destination is named as such (it is checked with the size) */
    assert_ckpt_error(
        ckpt_bundle_reader_read(f->reader, "w", NULL, sizeof(f->w)),
        CKPT_EINVAL, "tensor 'w': dst is NULL");
    req.dst = f->w;
    EXPECT_NULL_ARG(ckpt_bundle_reader_read_many(NULL, &req, 1),
                    "ckpt_bundle_reader_read_many: r is NULL");
    EXPECT_NULL_ARG(ckpt_bundle_reader_read_many(f->reader, NULL, 1),
                    "ckpt_bundle_reader_read_many: reqs is NULL");
    assert_ckpt_ok(ckpt_bundle_reader_read_many(f->reader, NULL, 0));
    EXPECT_NULL_ARG(ckpt_bundle_reader_read_strings(f->reader, "s", NULL),
                    "ckpt_bundle_reader_read_strings: out is NULL");
    EXPECT_NULL_ARG(ckpt_bundle_reader_read_strings(NULL, "s", &strings),
                    "ckpt_bundle_reader_read_strings: r is NULL");
    assert_ckpt_ok(ckpt_bundle_reader_find(&e, f->reader, "w"));
    EXPECT_NULL_ARG(ckpt_bundle_reader_read_record(NULL, e, &buf),
                    "ckpt_bundle_reader_read_record: r is NULL");
    EXPECT_NULL_ARG(ckpt_bundle_reader_read_record(f->reader, NULL, &buf),
                    "ckpt_bundle_reader_read_record: entry is NULL");
    EXPECT_NULL_ARG(ckpt_bundle_reader_read_record(f->reader, e, NULL),
                    "ckpt_bundle_reader_read_record: out is NULL");
    EXPECT_NULL_ARG(ckpt_bundle_reader_verify(NULL),
                    "ckpt_bundle_reader_verify: r is NULL");
    EXPECT_NULL_ARG(ckpt_bundle_reader_read_entry(NULL, e, f->w, sizeof(f->w)),
                    "ckpt_bundle_reader_read_entry: r is NULL");
    EXPECT_NULL_ARG(
        ckpt_bundle_reader_read_entry(f->reader, NULL, f->w, sizeof(f->w)),
        "ckpt_bundle_reader_read_entry: entry is NULL");
    EXPECT_NULL_ARG(ckpt_bundle_reader_read_strings_entry(f->reader, e, NULL),
                    "ckpt_bundle_reader_read_strings_entry: out is NULL");
    EXPECT_NULL_ARG(ckpt_bundle_reader_read_strings_entry(NULL, e, &strings),
                    "ckpt_bundle_reader_read_strings_entry: r is NULL");
    EXPECT_NULL_ARG(
        ckpt_bundle_reader_read_strings_entry(f->reader, NULL, &strings),
        "ckpt_bundle_reader_read_strings_entry: entry is NULL");
    {
        uint64_t bytes = 1;
        ckpt_record_stream *s = NULL;
        const void *data = NULL;
        size_t n = 0;
        EXPECT_NULL_ARG(ckpt_bundle_reader_data_size(f->reader, e, NULL),
                        "ckpt_bundle_reader_data_size: bytes is NULL");
        EXPECT_NULL_ARG(ckpt_bundle_reader_data_size(NULL, e, &bytes),
                        "ckpt_bundle_reader_data_size: r is NULL");
        assert_int_equal(bytes, 0);
        EXPECT_NULL_ARG(ckpt_bundle_reader_data_size(f->reader, NULL, &bytes),
                        "ckpt_bundle_reader_data_size: entry is NULL");
        EXPECT_NULL_ARG(ckpt_bundle_reader_check(NULL, e),
                        "ckpt_bundle_reader_check: r is NULL");
        EXPECT_NULL_ARG(ckpt_bundle_reader_check(f->reader, NULL),
                        "ckpt_bundle_reader_check: entry is NULL");
        EXPECT_NULL_ARG(ckpt_record_stream_open(NULL, f->reader, e, 0),
                        "ckpt_record_stream_open: out is NULL");
        EXPECT_NULL_ARG(ckpt_record_stream_open(&s, NULL, e, 0),
                        "ckpt_record_stream_open: r is NULL");
        EXPECT_NULL_ARG(ckpt_record_stream_open(&s, f->reader, NULL, 0),
                        "ckpt_record_stream_open: entry is NULL");
        EXPECT_NULL_ARG(ckpt_record_stream_next(NULL, &data, &n),
                        "ckpt_record_stream_next: s is NULL");
        assert_ckpt_ok(ckpt_record_stream_open(&s, f->reader, e, 0));
        EXPECT_NULL_ARG(ckpt_record_stream_next(s, NULL, &n),
                        "ckpt_record_stream_next: data is NULL");
        EXPECT_NULL_ARG(ckpt_record_stream_next(s, &data, NULL),
                        "ckpt_record_stream_next: n is NULL");
        ckpt_record_stream_free(s);
        ckpt_record_stream_free(NULL);
    }
    EXPECT_NULL_ARG(ckpt_bundle_index_path(NULL, f->prefix),
                    "ckpt_bundle_index_path: out is NULL");
    EXPECT_NULL_ARG(ckpt_bundle_index_path(&buf, NULL),
                    "ckpt_bundle_index_path: prefix is NULL");
    EXPECT_NULL_ARG(ckpt_bundle_data_path(NULL, f->prefix, 0, 1),
                    "ckpt_bundle_data_path: out is NULL");
    EXPECT_NULL_ARG(ckpt_bundle_data_path(&buf, NULL, 0, 1),
                    "ckpt_bundle_data_path: prefix is NULL");

    assert_null(ckpt_bundle_reader_prefix(NULL));
    assert_int_equal(ckpt_bundle_reader_num_shards(NULL), 0);
    assert_int_equal(ckpt_bundle_reader_big_endian(NULL), 0);
    assert_int_equal(ckpt_bundle_reader_count(NULL), 0);
    assert_null(ckpt_bundle_reader_entry(NULL, 0));
    ckpt_bundle_reader_free(NULL);
    ckpt_string_array_dispose(NULL);
    assert_null(r);
    ckpt_buf_dispose(&buf);
}

static void test_io_and_state_null_args(void **state)
{
    fixture *f = *state;
    ckpt_state st = CKPT_STATE_INIT;
    ckpt_buf buf = CKPT_BUF_INIT;

    EXPECT_NULL_ARG(ckpt_fs_read_file(NULL, NULL, f->prefix),
                    "ckpt_fs_read_file: out is NULL");
    EXPECT_NULL_ARG(ckpt_fs_read_file(&buf, NULL, NULL),
                    "ckpt_fs_read_file: path is NULL");
    EXPECT_NULL_ARG(ckpt_fs_write_file_atomic(NULL, NULL, "x", 1),
                    "ckpt_fs_write_file_atomic: path is NULL");
    EXPECT_NULL_ARG(ckpt_fs_write_file_atomic(NULL, f->prefix, NULL, 1),
                    "ckpt_fs_write_file_atomic: data is NULL");
    assert_ptr_equal(ckpt_fs_or_default(NULL), ckpt_fs_posix());

    EXPECT_NULL_ARG(ckpt_state_parse(NULL, "", 0, "checkpoint"),
                    "ckpt_state_parse: out is NULL");
    EXPECT_NULL_ARG(ckpt_state_parse(&st, NULL, 3, "checkpoint"),
                    "ckpt_state_parse: text is NULL");
    EXPECT_NULL_ARG(ckpt_state_format(NULL, &st),
                    "ckpt_state_format: out is NULL");
    EXPECT_NULL_ARG(ckpt_state_format(&buf, NULL),
                    "ckpt_state_format: st is NULL");
    EXPECT_NULL_ARG(ckpt_state_read(NULL, NULL, f->dir),
                    "ckpt_state_read: out is NULL");
    EXPECT_NULL_ARG(ckpt_state_read(&st, NULL, NULL),
                    "ckpt_state_read: dir is NULL");
    EXPECT_NULL_ARG(ckpt_state_write(NULL, NULL, &st),
                    "ckpt_state_write: dir is NULL");
    EXPECT_NULL_ARG(ckpt_state_write(NULL, f->dir, NULL),
                    "ckpt_state_write: st is NULL");
    EXPECT_NULL_ARG(ckpt_state_resolve(NULL, f->dir, "x"),
                    "ckpt_state_resolve: out is NULL");
    EXPECT_NULL_ARG(ckpt_state_resolve(&buf, NULL, "x"),
                    "ckpt_state_resolve: dir is NULL");
    EXPECT_NULL_ARG(ckpt_state_resolve(&buf, f->dir, NULL),
                    "ckpt_state_resolve: path is NULL");
    EXPECT_NULL_ARG(ckpt_latest_checkpoint(NULL, NULL, f->dir),
                    "ckpt_latest_checkpoint: out is NULL");
    EXPECT_NULL_ARG(ckpt_latest_checkpoint(&buf, NULL, NULL),
                    "ckpt_latest_checkpoint: dir is NULL");
    EXPECT_NULL_ARG(ckpt_state_latest(NULL, NULL, f->dir, &st),
                    "ckpt_state_latest: out is NULL");
    EXPECT_NULL_ARG(ckpt_state_latest(&buf, NULL, NULL, &st),
                    "ckpt_state_latest: dir is NULL");
    EXPECT_NULL_ARG(ckpt_state_latest(&buf, NULL, f->dir, NULL),
                    "ckpt_state_latest: st is NULL");
    ckpt_state_dispose(NULL);
    ckpt_buf_dispose(NULL);
    ckpt_buf_dispose(&buf);
}

static void test_tensor_null_args(void **state)
{
    const ckpt_shape shape = {2, {2, 3}};
    char text[16];
    int64_t n = 0;
    (void)state;
    EXPECT_NULL_ARG(ckpt_shape_num_elements(NULL, &shape),
                    "ckpt_shape_num_elements: out is NULL");
    EXPECT_NULL_ARG(ckpt_shape_num_elements(&n, NULL),
                    "ckpt_shape_num_elements: shape is NULL");
    EXPECT_NULL_ARG(ckpt_tensor_byte_size(NULL, CKPT_DT_FLOAT, &shape),
                    "ckpt_tensor_byte_size: out is NULL");
    EXPECT_NULL_ARG(ckpt_tensor_byte_size(&n, CKPT_DT_FLOAT, NULL),
                    "ckpt_tensor_byte_size: shape is NULL");
    assert_true(ckpt_shape_equal(NULL, NULL));
    assert_false(ckpt_shape_equal(NULL, &shape));
    assert_false(ckpt_shape_equal(&shape, NULL));
    assert_int_equal(ckpt_shape_format(text, sizeof(text), NULL), 6);
    assert_string_equal(text, "(null)");
    assert_int_equal(ckpt_dtype_from_name(NULL), CKPT_DT_INVALID);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_saver_null_args, setup, teardown),
        cmocka_unit_test_setup_teardown(test_bundle_null_args, setup, teardown),
        cmocka_unit_test_setup_teardown(test_io_and_state_null_args, setup,
                                        teardown),
        cmocka_unit_test(test_tensor_null_args),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
