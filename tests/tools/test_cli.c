/* Tests for the `ckpt` command-line tool, run as a program (its path comes
 * from CKPT_CLI_PATH): exit codes, stdout (text and --json, parsed with
 * json-c), stderr messages, on every TensorFlow vector and on checkpoints
 * written here; repacked checkpoints are compared tensor by tensor with the
 * library's reader. */
#include "cli_json.h"
#include "cli_run.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#ifndef CKPT_CLI_PATH
#error "CKPT_CLI_PATH must name the built ckpt binary"
#endif

/* ---- running the tool ---------------------------------------------------- */

/* ---- JSON ---------------------------------------------------------------- */

static json_object *find_tensor(json_object *root, const char *name)
{
    json_object *list = jget(root, "tensors");
    size_t n = json_object_array_length(list);
    for (size_t i = 0; i < n; i++) {
        json_object *t = json_object_array_get_idx(list, i);
        if (strcmp(json_object_get_string(jget(t, "name")), name) == 0)
            return t;
    }
    fail_msg("no tensor %s", name);
    return NULL;
}

static void expect_shape(json_object *t, int rank, const int64_t *dims)
{
    json_object *s = jget(t, "shape");
    assert_int_equal(json_object_array_length(s), rank);
    for (int i = 0; i < rank; i++)
        assert_int_equal(
            json_object_get_int64(json_object_array_get_idx(s, (size_t)i)),
            dims[i]);
}

static float jfloat(json_object *values, size_t i)
{
    return (float)json_object_get_double(json_object_array_get_idx(values, i));
}

static int64_t jint(json_object *values, size_t i)
{
    return json_object_get_int64(json_object_array_get_idx(values, i));
}

/* ---- files --------------------------------------------------------------- */

static void copy_file(const char *from_dir, const char *to_dir,
                      const char *name)
{
    char *from = test_path(from_dir, name), *to = test_path(to_dir, name);
    size_t n = 0;
    uint8_t *data = test_read_file(from, &n);
    assert_non_null(data);
    test_write_file(to, data, n);
    free(data);
    free(from);
    free(to);
}

static void write_text(const char *dir, const char *name, const char *text)
{
    char *p = test_path(dir, name);
    test_write_file(p, text, strlen(text));
    free(p);
}

static void flip_byte(const char *dir, const char *name, size_t offset)
{
    char *p = test_path(dir, name);
    size_t n = 0;
    uint8_t *data = test_read_file(p, &n);
    assert_non_null(data);
    assert_true(offset < n);
    data[offset] ^= 0x40;
    test_write_file(p, data, n);
    free(data);
    free(p);
}

/* ---- the TensorFlow vectors ---------------------------------------------- */

typedef struct vector_info {
    const char *dir;
    const char *prefix; /* basename of the latest checkpoint */
    int num_shards;
    int num_tensors;
    int has_state;
} vector_info;

static const vector_info vectors[] = {
    {"serving_half_plus_two_cpu", "variables", 1, 5, 0},
    {"serving_half_plus_two_tf2_cpu", "variables", 1, 4, 0},
    {"tf2onnx_regression_ckpt", "model", 1, 2, 1},
    {"rust_regression_savedmodel", "variables", 1, 7, 0},
    {"tictactoe_ckpt_manager", "ckpt-19", 1, 19, 1},
    {"rl_collection_sharded", "ckpt-5", 2, 31, 1},
    {"tfx_estimator_saver", "model.ckpt-1000", 1, 60, 1},
};

#define NUM_VECTORS (sizeof(vectors) / sizeof(vectors[0]))

/* `ckpt inspect DIR --json --values=N` of a vector, checked generally. */
static json_object *inspect_vector(const vector_info *v, const char *dir,
                                   const char *values_arg)
{
    cli_run r;
    json_object *root;
    char *want = test_path(dir, v->prefix);
    RUN_STATUS(r, 0, "inspect", dir, "--json", values_arg);
    assert_string_equal(r.err, "");
    root = parse_json(r.out);
    assert_string_equal(json_object_get_string(jget(root, "prefix")), want);
    assert_int_equal(json_object_get_int(jget(root, "num_shards")),
                     v->num_shards);
    assert_int_equal(json_object_array_length(jget(root, "tensors")),
                     v->num_tensors);
    free(want);
    run_free(&r);
    return root;
}

/* A JSON string holding the bytes of a string tensor that is not UTF-8:
 * each byte is one code point U+0000..U+00FF. */
static void expect_latin1_string(json_object *value, const char *dir,
                                 const char *tensor, size_t want_len)
{
    char *prefix = test_path(dir, "variables");
    ckpt_bundle_reader *rd = NULL;
    ckpt_string_array a = CKPT_STRING_ARRAY_INIT;
    const unsigned char *got =
        (const unsigned char *)json_object_get_string(value);
    size_t glen = (size_t)json_object_get_string_len(value), k = 0;
    const unsigned char *p;
    assert_ckpt_ok(ckpt_bundle_reader_open(&rd, prefix, NULL));
    assert_ckpt_ok(ckpt_bundle_reader_read_strings(rd, tensor, &a));
    assert_int_equal(a.count, 1);
    assert_int_equal(a.strings[0].len, want_len);
    p = a.strings[0].ptr;
    for (size_t i = 0; i < a.strings[0].len; i++) {
        assert_true(k < glen);
        if (p[i] < 0x80) {
            assert_int_equal(got[k++], p[i]);
        } else {
            assert_true(k + 1 < glen);
            assert_int_equal(got[k], 0xc0 | (p[i] >> 6));
            assert_int_equal(got[k + 1], 0x80 | (p[i] & 0x3f));
            k += 2;
        }
    }
    assert_int_equal(k, glen);
    ckpt_string_array_dispose(&a);
    ckpt_bundle_reader_free(rd);
    free(prefix);
}

static void check_tensor(json_object *root, const char *name, const char *dtype,
                         int rank, const int64_t *dims, int64_t bytes,
                         int shard)
{
    json_object *t = find_tensor(root, name);
    assert_string_equal(json_object_get_string(jget(t, "dtype")), dtype);
    expect_shape(t, rank, dims);
    assert_int_equal(json_object_get_int64(jget(t, "bytes")), bytes);
    assert_int_equal(json_object_get_int(jget(t, "shard")), shard);
}

static void test_inspect_vectors_json(void **state)
{
    static const int64_t d9x9[] = {9, 9}, d1[] = {1}, d3x100[] = {3, 100},
                         d1600x64[] = {1600, 64};
    (void)state;
    for (size_t i = 0; i < NUM_VECTORS; i++) {
        const vector_info *v = &vectors[i];
        char *dir = test_tf_vector(v->dir);
        json_object *root, *t;
        if (!dir)
            return;
        root = inspect_vector(v, dir, "--values=3");
        if (strcmp(v->dir, "serving_half_plus_two_cpu") == 0) {
            check_tensor(root, "b", "float32", 0, NULL, 4, 0);
            t = find_tensor(root, "b");
            assert_true(jfloat(jget(t, "values"), 0) == 2.0f);
            assert_true(jfloat(jget(find_tensor(root, "a2"), "values"), 0) ==
                        0.5f);
        } else if (strcmp(v->dir, "serving_half_plus_two_tf2_cpu") == 0) {
            check_tensor(root, "_CHECKPOINTABLE_OBJECT_GRAPH", "string", 0,
                         NULL, 619, 0);
            /* the 613-byte string is cut at 100 bytes with a limit ... */
            t = json_object_array_get_idx(
                jget(find_tensor(root, "_CHECKPOINTABLE_OBJECT_GRAPH"),
                     "values"),
                0);
            assert_int_equal(json_object_get_int64(jget(t, "bytes")), 613);
            assert_true(json_object_is_type(jget(t, "cut"), json_type_string));
            t = find_tensor(root, "c/.ATTRIBUTES/VARIABLE_VALUE");
            assert_true(jfloat(jget(t, "values"), 0) == 3.0f);
            json_object_put(root);
            /* ... and given whole with --values=all */
            root = inspect_vector(v, dir, "--values=all");
            t = find_tensor(root, "_CHECKPOINTABLE_OBJECT_GRAPH");
            expect_latin1_string(
                json_object_array_get_idx(jget(t, "values"), 0), dir,
                "_CHECKPOINTABLE_OBJECT_GRAPH", 613);
        } else if (strcmp(v->dir, "tf2onnx_regression_ckpt") == 0) {
            check_tensor(root, "W", "float32", 0, NULL, 4, 0);
            assert_true(jfloat(jget(find_tensor(root, "W"), "values"), 0) ==
                        0.21396178f);
            assert_true(jfloat(jget(find_tensor(root, "b"), "values"), 0) ==
                        1.0495254f);
        } else if (strcmp(v->dir, "rust_regression_savedmodel") == 0) {
            check_tensor(root, "optimizer/iter/.ATTRIBUTES/VARIABLE_VALUE",
                         "int64", 0, NULL, 8, 0);
            check_tensor(root, "w/.ATTRIBUTES/VARIABLE_VALUE", "float32", 1, d1,
                         4, 0);
            t = find_tensor(root, "w/.ATTRIBUTES/VARIABLE_VALUE");
            assert_true(jfloat(jget(t, "values"), 0) == 0.20429754f);
        } else if (strcmp(v->dir, "tictactoe_ckpt_manager") == 0) {
            const char *k =
                "net/layer_with_weights-0/kernel/.ATTRIBUTES/VARIABLE_VALUE";
            check_tensor(root, k, "float32", 2, d9x9, 324, 0);
            t = find_tensor(root, k);
            assert_int_equal(json_object_array_length(jget(t, "values")), 3);
            assert_int_equal(json_object_get_int64(jget(t, "num_elements")),
                             81);
            assert_true(jfloat(jget(t, "values"), 0) == 0.38064981f);
            assert_true(jfloat(jget(t, "values"), 1) == -0.50415832f);
            assert_true(jfloat(jget(t, "values"), 2) == 0.42943814f);
            check_tensor(root, "step/.ATTRIBUTES/VARIABLE_VALUE", "int32", 0,
                         NULL, 4, 0);
            assert_int_equal(
                jint(jget(find_tensor(root, "save_counter/.ATTRIBUTES/"
                                            "VARIABLE_VALUE"),
                          "values"),
                     0),
                19);
        } else if (strcmp(v->dir, "rl_collection_sharded") == 0) {
            const char *k = "model/layer-5/kernel/.ATTRIBUTES/VARIABLE_VALUE";
            check_tensor(root, k, "float32", 2, d1600x64, 409600, 1);
            assert_true(jfloat(jget(find_tensor(root, k), "values"), 0) ==
                        0.02976182f);
            check_tensor(root, "save_counter/.ATTRIBUTES/VARIABLE_VALUE",
                         "int64", 0, NULL, 8, 0);
            assert_int_equal(
                jint(jget(find_tensor(root, "optimizer/iter/.ATTRIBUTES/"
                                            "VARIABLE_VALUE"),
                          "values"),
                     0),
                8442);
        } else if (strcmp(v->dir, "tfx_estimator_saver") == 0) {
            check_tensor(root, "dnn/hiddenlayer_0/kernel", "float32", 2, d3x100,
                         1200, 0);
            assert_true(
                jfloat(jget(find_tensor(root, "dnn/hiddenlayer_0/kernel"),
                            "values"),
                       0) == -0.047309123f);
            check_tensor(root, "global_step", "int64", 0, NULL, 8, 0);
            assert_int_equal(
                jint(jget(find_tensor(root, "global_step"), "values"), 0),
                1000);
        }
        json_object_put(root);
        free(dir);
    }
}

static void test_inspect_vectors_text(void **state)
{
    (void)state;
    for (size_t i = 0; i < NUM_VECTORS; i++) {
        char *dir = test_tf_vector(vectors[i].dir);
        char *prefix, *index, head[512];
        cli_run r;
        if (!dir)
            return;
        prefix = test_path(dir, vectors[i].prefix);
        snprintf(head, sizeof(head), "%s: %d tensors, %d shard", prefix,
                 vectors[i].num_tensors, vectors[i].num_shards);
        /* the prefix, its .index file and the directory name the same */
        RUN_STATUS(r, 0, "inspect", prefix);
        expect_contains(r.out, head);
        expect_contains(r.out, "NAME");
        expect_contains(r.out, "float32");
        run_free(&r);
        index = malloc(strlen(prefix) + 7);
        assert_non_null(index);
        snprintf(index, strlen(prefix) + 7, "%s.index", prefix);
        RUN_STATUS(r, 0, "inspect", index, "--values");
        expect_contains(r.out, head);
        run_free(&r);
        free(index);
        free(prefix);
        free(dir);
    }
}

static void test_inspect_one_tensor_values(void **state)
{
    char *dir = test_tf_vector("tictactoe_ckpt_manager");
    cli_run r;
    (void)state;
    if (!dir)
        return;
    RUN_STATUS(r, 0, "inspect", dir, "--tensor",
               "step/.ATTRIBUTES/VARIABLE_VALUE", "--values=all");
    expect_contains(r.out, "step/.ATTRIBUTES/VARIABLE_VALUE  int32  []");
    expect_contains(r.out, "\n    1\n");
    assert_null(strstr(r.out, "save_counter"));
    run_free(&r);
    RUN_STATUS(
        r, 0, "inspect", dir, "--values=2",
        "--tensor=net/layer_with_weights-0/bias/.ATTRIBUTES/VARIABLE_VALUE");
    expect_contains(r.out, "    [-0.109888397, -0.101168022, ...]\n");
    run_free(&r);
    /* several, in any order, one of them twice: those, in file order */
    RUN_STATUS(r, 0, "inspect", dir, "--tensor",
               "net/layer_with_weights-1/bias/.ATTRIBUTES/VARIABLE_VALUE",
               "--tensor", "step/.ATTRIBUTES/VARIABLE_VALUE", "--tensor",
               "net/layer_with_weights-0/bias/.ATTRIBUTES/VARIABLE_VALUE",
               "--tensor", "step/.ATTRIBUTES/VARIABLE_VALUE");
    expect_contains(r.out, ": 3 tensors, 1 shard\n");
    {
        const char *b0 = strstr(r.out, "net/layer_with_weights-0/bias/");
        const char *b1 = strstr(r.out, "net/layer_with_weights-1/bias/");
        const char *st = strstr(r.out, "step/.ATTRIBUTES/VARIABLE_VALUE");
        assert_true(b0 && b1 && st && b0 < b1 && b1 < st);
    }
    assert_null(strstr(r.out, "kernel"));
    run_free(&r);
    RUN_STATUS(r, 2, "inspect", dir, "--tensor", "no/such/tensor");
    expect_contains(r.err, "ckpt inspect: ");
    expect_contains(r.err, "no tensor named 'no/such/tensor'");
    run_free(&r);
    /* a graph tensor's name, as TensorFlow prints it: the hint says which
     * key was meant, as the library's own message does */
    RUN_STATUS(r, 2, "inspect", dir, "--tensor",
               "step/.ATTRIBUTES/VARIABLE_VALUE:0");
    expect_contains(r.err, "no tensor named "
                           "'step/.ATTRIBUTES/VARIABLE_VALUE:0' (checkpoint "
                           "keys are variable names, without a graph "
                           "tensor's output suffix ':0': use "
                           "'step/.ATTRIBUTES/VARIABLE_VALUE')");
    run_free(&r);
    free(dir);
}

static void test_verify_vectors(void **state)
{
    (void)state;
    for (size_t i = 0; i < NUM_VECTORS; i++) {
        char *dir = test_tf_vector(vectors[i].dir);
        json_object *root;
        cli_run r;
        if (!dir)
            return;
        RUN_STATUS(r, 0, "verify", dir);
        expect_contains(r.out, ": OK,");
        assert_string_equal(r.err, "");
        run_free(&r);
        RUN_STATUS(r, 0, "verify", "--json", dir);
        root = parse_json(r.out);
        assert_true(json_object_get_boolean(jget(root, "ok")));
        assert_int_equal(json_object_get_int(jget(root, "tensors")),
                         vectors[i].num_tensors);
        assert_int_equal(json_object_array_length(jget(root, "damaged")), 0);
        json_object_put(root);
        run_free(&r);
        free(dir);
    }
}

static void test_ls_vectors(void **state)
{
    (void)state;
    for (size_t i = 0; i < NUM_VECTORS; i++) {
        const vector_info *v = &vectors[i];
        char *dir = test_tf_vector(v->dir);
        json_object *root, *list, *last, *stray;
        cli_run r;
        if (!dir)
            return;
        RUN_STATUS(r, 0, "ls", dir, "--json");
        root = parse_json(r.out);
        list = jget(root, "checkpoints");
        stray = jget(root, "stray");
        assert_int_equal(json_object_get_boolean(jget(root, "state_file")),
                         v->has_state);
        if (!v->has_state) {
            /* a SavedModel's variables: an index no state file lists */
            assert_int_equal(json_object_array_length(list), 0);
            assert_int_equal(json_object_array_length(stray), 1);
            assert_string_equal(
                json_object_get_string(
                    jget(json_object_array_get_idx(stray, 0), "file")),
                "variables.index");
            assert_string_equal(
                json_object_get_string(
                    jget(json_object_array_get_idx(stray, 0), "reason")),
                "index not listed in the state file");
        } else {
            last = json_object_array_get_idx(
                list, json_object_array_length(list) - 1);
            assert_string_equal(json_object_get_string(jget(root, "latest")),
                                v->prefix);
            assert_string_equal(json_object_get_string(jget(last, "prefix")),
                                v->prefix);
            assert_true(json_object_get_boolean(jget(last, "latest")));
            assert_true(json_object_get_boolean(jget(last, "complete")));
            assert_int_equal(json_object_array_length(stray), 0);
        }
        if (strcmp(v->dir, "tfx_estimator_saver") == 0) {
            static const int64_t steps[] = {0, 999, 1000};
            assert_int_equal(json_object_array_length(list), 3);
            for (size_t k = 0; k < 3; k++) {
                json_object *c = json_object_array_get_idx(list, k);
                assert_int_equal(json_object_get_int64(jget(c, "step")),
                                 steps[k]);
                assert_int_equal(json_object_get_int64(jget(c, "bytes")),
                                 2710 + 126216);
                assert_string_equal(
                    json_object_get_string(jget(c, "time_source")), "mtime");
                assert_int_equal(json_object_get_boolean(jget(c, "latest")),
                                 k == 2);
            }
        } else if (strcmp(v->dir, "tictactoe_ckpt_manager") == 0) {
            json_object *c = json_object_array_get_idx(list, 0);
            assert_int_equal(json_object_array_length(list), 3);
            assert_string_equal(json_object_get_string(jget(c, "prefix")),
                                "ckpt-17");
            assert_int_equal(json_object_get_int64(jget(c, "step")), 17);
            assert_string_equal(json_object_get_string(jget(c, "time_source")),
                                "state");
            assert_true(json_object_get_double(jget(c, "time")) ==
                        1673735799.685766);
        } else if (strcmp(v->dir, "rl_collection_sharded") == 0) {
            json_object *c = json_object_array_get_idx(list, 0);
            assert_int_equal(json_object_get_int64(jget(c, "bytes")),
                             2134 + 2950 + 1463184);
        } else if (strcmp(v->dir, "tf2onnx_regression_ckpt") == 0) {
            json_object *c = json_object_array_get_idx(list, 0);
            assert_true(json_object_is_type(jget(c, "step"), json_type_null));
        }
        json_object_put(root);
        run_free(&r);
        RUN_STATUS(r, 0, "ls", dir);
        if (v->has_state)
            expect_contains(r.out, "latest");
        else
            expect_contains(r.out, "no checkpoint state file");
        run_free(&r);
        free(dir);
    }
}

/* ---- ls on a directory with leftovers ------------------------------------ */

/* Entry `i` of ls --json's "stray" array names `file` for `reason`. */
static void expect_stray(json_object *stray, size_t i, const char *file,
                         const char *reason)
{
    json_object *s = json_object_array_get_idx(stray, i);
    assert_string_equal(json_object_get_string(jget(s, "file")), file);
    assert_string_equal(json_object_get_string(jget(s, "reason")), reason);
}

/* Data file names past 99999 shards: printf's %05d writes six digits and
 * more (no leading zero), and ls knows them as data files (a stray one
 * here); a six-digit number with a leading zero is no data file's name. */
static void test_ls_data_names_past_five_digits(void **state)
{
    char *dir = test_make_temp_dir();
    json_object *root, *stray;
    cli_run r;
    (void)state;
    write_text(dir, "model.ckpt-7.data-100000-of-100001", "x");
    write_text(dir, "model.ckpt-8.data-000001-of-000002", "x");
    RUN_STATUS(r, 0, "ls", "--json", dir);
    root = parse_json(r.out);
    stray = jget(root, "stray");
    assert_int_equal(json_object_array_length(stray), 1);
    expect_stray(stray, 0, "model.ckpt-7.data-100000-of-100001",
                 "data file without its index");
    json_object_put(root);
    run_free(&r);
    test_remove_tree(dir);
}

/* A data file whose shard number is not below its shard count
 * ("-00007-of-00002") belongs to no checkpoint, even beside a complete
 * 2-shard one of the same prefix: a stray, in neither its bytes nor its
 * shards, in text and --json alike. */
static void test_ls_shard_out_of_range_is_stray(void **state)
{
    static const char reason[] = "data file whose shard number is out of "
                                 "range (not below its shard count)";
    char *dir = test_make_temp_dir();
    char want[160];
    json_object *root, *list, *shards, *c;
    cli_run r;
    (void)state;
    write_text(dir, "checkpoint",
               "model_checkpoint_path: \"model.ckpt-5\"\n"
               "all_model_checkpoint_paths: \"model.ckpt-5\"\n");
    write_text(dir, "model.ckpt-5.index", "123");
    write_text(dir, "model.ckpt-5.data-00000-of-00002", "1234");
    write_text(dir, "model.ckpt-5.data-00001-of-00002", "12345");
    write_text(dir, "model.ckpt-5.data-00007-of-00002",
               "0123456789012345678901234567890123456789");
    write_text(dir, "model.ckpt-6.index", "x"); /* only an out-of-range one */
    write_text(dir, "model.ckpt-6.data-00002-of-00002", "x");
    RUN_STATUS(r, 0, "ls", "--json", dir);
    root = parse_json(r.out);
    list = jget(root, "checkpoints");
    assert_int_equal(json_object_array_length(list), 1);
    c = json_object_array_get_idx(list, 0);
    assert_int_equal(json_object_get_int64(jget(c, "bytes")), 3 + 4 + 5);
    assert_true(json_object_get_boolean(jget(c, "complete")));
    shards = jget(c, "shards");
    assert_int_equal(json_object_array_length(shards), 2);
    for (size_t i = 0; i < 2; i++)
        assert_int_equal(json_object_get_int(jget(
                             json_object_array_get_idx(shards, i), "shard")),
                         (int)i);
    list = jget(root, "stray");
    assert_int_equal(json_object_array_length(list), 3);
    expect_stray(list, 0, "model.ckpt-5.data-00007-of-00002", reason);
    expect_stray(list, 1, "model.ckpt-6.data-00002-of-00002", reason);
    expect_stray(list, 2, "model.ckpt-6.index",
                 "index not listed in the state file, without any of its "
                 "data files (unreadable)");
    json_object_put(root);
    run_free(&r);
    RUN_STATUS(r, 0, "ls", dir);
    expect_contains(r.out, ": 1 checkpoint\n");
    expect_contains(r.out, "model.ckpt-5     5     12  ");
    expect_lacks(r.out, "shard 7 of 2");
    snprintf(want, sizeof(want), "  model.ckpt-5.data-00007-of-00002  %s\n",
             reason);
    expect_contains(r.out, want);
    run_free(&r);
    test_remove_tree(dir);
}

static void test_ls_strays_and_incomplete(void **state)
{
    char *dir = test_make_temp_dir();
    json_object *root, *list, *stray, *c;
    cli_run r;
    static const char *const want_strays[][2] = {
        {"checkpoint.tmp0123abcd", "temporary file"},
        {"foo.tmp", "temporary file"},
        {"model.ckpt-3.data-00000-of-00001", "data file without its index"},
        {"model.ckpt-4.index", "index not listed in the state file"},
        {"model.ckpt-5.data-00000-of-00001.tempstate42", "temporary file"},
        {"model.ckpt-6.index", "index not listed in the state file, without "
                               "any of its data files (unreadable)"},
    };
    (void)state;
    write_text(dir, "checkpoint",
               "model_checkpoint_path: \"model.ckpt-2\"\n"
               "all_model_checkpoint_paths: \"model.ckpt-1\"\n"
               "all_model_checkpoint_paths: \"model.ckpt-2\"\n");
    write_text(dir, "model.ckpt-1.index", "12345");
    write_text(dir, "model.ckpt-1.data-00000-of-00001", "1234567");
    write_text(dir, "model.ckpt-2.index", "1");
    write_text(dir, "model.ckpt-2.data-00000-of-00002", "12");
    write_text(dir, "model.ckpt-3.data-00000-of-00001", "x");
    write_text(dir, "model.ckpt-4.index", "x");
    write_text(dir, "model.ckpt-4.data-00000-of-00001", "x");
    write_text(dir, "checkpoint.tmp0123abcd", "x");
    write_text(dir, "model.ckpt-5.data-00000-of-00001.tempstate42", "x");
    write_text(dir, "foo.tmp", "x");
    write_text(dir, "model.ckpt-6.index", "x"); /* its data gone */
    write_text(dir, "events.out", "not a checkpoint file");
    RUN_STATUS(r, 0, "ls", "--json", dir);
    root = parse_json(r.out);
    list = jget(root, "checkpoints");
    assert_int_equal(json_object_array_length(list), 2);
    c = json_object_array_get_idx(list, 0);
    assert_int_equal(json_object_get_int64(jget(c, "bytes")), 12);
    assert_int_equal(json_object_get_int64(jget(c, "step")), 1);
    assert_true(json_object_get_boolean(jget(c, "complete")));
    assert_false(json_object_get_boolean(jget(c, "latest")));
    c = json_object_array_get_idx(list, 1);
    assert_false(json_object_get_boolean(jget(c, "complete")));
    assert_true(json_object_get_boolean(jget(c, "latest")));
    assert_string_equal(json_object_get_string(jget(c, "problem")),
                        "missing data shard 1 of 2");
    stray = jget(root, "stray");
    assert_int_equal(json_object_array_length(stray), 6);
    for (size_t i = 0; i < 6; i++)
        expect_stray(stray, i, want_strays[i][0], want_strays[i][1]);
    json_object_put(root);
    run_free(&r);
    RUN_STATUS(r, 0, "ls", dir);
    expect_contains(r.out, ": 2 checkpoints\n");
    expect_contains(r.out, "latest  (missing data shard 1 of 2)");
    expect_contains(r.out, "stray or incomplete files:\n");
    expect_contains(r.out, "model.ckpt-4.index");
    run_free(&r);
    /* "." names the same checkpoints the library resolves */
    {
        const char *args[] = {"ls", ".", "--json", NULL};
        r = cli_run_prog(CKPT_CLI_PATH, dir, args); /* from inside `dir` */
    }
    expect_status(&r, 0);
    root = parse_json(r.out);
    assert_string_equal(json_object_get_string(jget(root, "latest")),
                        "model.ckpt-2");
    c = json_object_array_get_idx(jget(root, "checkpoints"), 1);
    assert_string_equal(json_object_get_string(jget(c, "path")),
                        "model.ckpt-2");
    assert_true(json_object_get_boolean(jget(c, "latest")));
    assert_int_equal(json_object_array_length(jget(root, "stray")), 6);
    json_object_put(root);
    run_free(&r);
    /* a state file of a saver with keep_checkpoint_every_n_hours (it
     * records last_preserved_timestamp): an unlisted index is most likely
     * a checkpoint it kept, and ls says so */
    write_text(dir, "checkpoint",
               "model_checkpoint_path: \"model.ckpt-2\"\n"
               "all_model_checkpoint_paths: \"model.ckpt-1\"\n"
               "all_model_checkpoint_paths: \"model.ckpt-2\"\n"
               "last_preserved_timestamp: 1700000000.5\n");
    RUN_STATUS(r, 0, "ls", dir);
    {
        const char *line = strstr(r.out, "\n  model.ckpt-4.index ");
        assert_non_null(line);
        assert_non_null(strstr(line, "index not listed in the state file "
                                     "(likely a checkpoint "
                                     "keep_checkpoint_every_n_hours kept)\n"));
    }
    run_free(&r);
    /* a state file that cannot be parsed: damage, exit 1 as from inspect */
    write_text(dir, "checkpoint", "model_checkpoint_path: \"m\"\nbogus: 1\n");
    RUN_STATUS(r, 1, "ls", dir);
    expect_contains(r.err, "ckpt ls: ");
    expect_contains(r.err, "checkpoint:2:1: unknown field \"bogus\"");
    run_free(&r);
    test_remove_tree(dir);
}

/* ---- ls of a sharded (distributed) checkpoint --------------------------- */

/* Bytes of `name` in `dir` (the test's own expectation for ls). */
static uint64_t size_in(const char *dir, const char *name)
{
    char *p = test_path(dir, name);
    struct stat st;
    assert_int_equal(stat(p, &st), 0);
    free(p);
    return (uint64_t)st.st_size;
}

/* A checkpoint of three data files, as three ranks write it (each file
 * holds one rank's tensors), listed under its row with shard and bytes. */
static void test_ls_shards(void **state)
{
    static const char *const files[3] = {
        "model.ckpt-7.data-00000-of-00003",
        "model.ckpt-7.data-00001-of-00003",
        "model.ckpt-7.data-00002-of-00003",
    };
    char *dir = test_make_temp_dir();
    char *prefix = test_path(dir, "model.ckpt-7");
    ckpt_bundle_writer_options wo = CKPT_BUNDLE_WRITER_OPTIONS_INIT;
    ckpt_bundle_writer *w = NULL;
    float a[4] = {1, 2, 3, 4}, b[16] = {0}, c[1] = {5};
    ckpt_shape s4 = {1, {4}}, s16 = {1, {16}}, s1 = {1, {1}};
    json_object *root, *ck, *shards;
    uint64_t total;
    char line[256];
    cli_run r;
    (void)state;
    wo.num_shards = 3;
    assert_ckpt_ok(ckpt_bundle_writer_open(&w, prefix, &wo));
    assert_ckpt_ok(
        ckpt_bundle_writer_add(w, "a", CKPT_DT_FLOAT, &s4, a, sizeof(a)));
    assert_ckpt_ok(ckpt_bundle_writer_select_shard(w, 1));
    assert_ckpt_ok(
        ckpt_bundle_writer_add(w, "b", CKPT_DT_FLOAT, &s16, b, sizeof(b)));
    assert_ckpt_ok(ckpt_bundle_writer_select_shard(w, 2));
    assert_ckpt_ok(
        ckpt_bundle_writer_add(w, "c", CKPT_DT_FLOAT, &s1, c, sizeof(c)));
    assert_ckpt_ok(ckpt_bundle_writer_finish(w));
    ckpt_bundle_writer_free(w);
    /* a single-file checkpoint next to it: no shard lines in text */
    write_text(dir, "model.ckpt-3.index", "12345");
    write_text(dir, "model.ckpt-3.data-00000-of-00001", "1234567");
    write_text(dir, "checkpoint",
               "model_checkpoint_path: \"model.ckpt-7\"\n"
               "all_model_checkpoint_paths: \"model.ckpt-3\"\n"
               "all_model_checkpoint_paths: \"model.ckpt-7\"\n");
    total = size_in(dir, "model.ckpt-7.index");
    for (int i = 0; i < 3; i++)
        total += size_in(dir, files[i]);

    RUN_STATUS(r, 0, "ls", "--json", dir);
    root = parse_json(r.out);
    ck = json_object_array_get_idx(jget(root, "checkpoints"), 0);
    assert_int_equal(json_object_array_length(jget(ck, "shards")), 1);
    ck = json_object_array_get_idx(jget(root, "checkpoints"), 1);
    assert_true(json_object_get_boolean(jget(ck, "complete")));
    assert_int_equal(json_object_get_int64(jget(ck, "bytes")), (int64_t)total);
    shards = jget(ck, "shards");
    assert_int_equal(json_object_array_length(shards), 3);
    for (int i = 0; i < 3; i++) {
        json_object *sh = json_object_array_get_idx(shards, (size_t)i);
        assert_string_equal(json_object_get_string(jget(sh, "file")), files[i]);
        assert_int_equal(json_object_get_int(jget(sh, "shard")), i);
        assert_int_equal(json_object_get_int(jget(sh, "of")), 3);
        assert_int_equal(json_object_get_int64(jget(sh, "bytes")),
                         (int64_t)size_in(dir, files[i]));
    }
    assert_int_equal(json_object_array_length(jget(root, "stray")), 0);
    json_object_put(root);
    run_free(&r);

    RUN_STATUS(r, 0, "ls", dir);
    for (int i = 0; i < 3; i++) {
        int width = 1;
        for (int k = 0; k < 3; k++) {
            int n = snprintf(line, sizeof(line), "%llu",
                             (unsigned long long)size_in(dir, files[k]));
            width = n > width ? n : width;
        }
        snprintf(line, sizeof(line), "\n    shard %d of 3  %s  %*llu\n", i,
                 files[i], width, (unsigned long long)size_in(dir, files[i]));
        expect_contains(r.out, line);
    }
    assert_null(strstr(r.out, "model.ckpt-3.data-00000-of-00001"));
    run_free(&r);

    /* one shard missing: the row says so and lists the two it has */
    {
        char *p = test_path(dir, files[1]);
        assert_int_equal(unlink(p), 0);
        free(p);
    }
    RUN_STATUS(r, 0, "ls", dir);
    expect_contains(r.out, "(missing data shard 1 of 3)\n    shard 0 of 3  ");
    expect_contains(r.out, "\n    shard 2 of 3  ");
    assert_null(strstr(r.out, files[1]));
    run_free(&r);
    free(prefix);
    test_remove_tree(dir);
}

/* ---- usage and unreadable input ------------------------------------------ */

static void test_help_and_version(void **state)
{
    static const struct {
        const char *args[6];
        int status;
        const char *out, *err;
    } runs[] = {
        {{"help", "inspect", NULL},
         0,
         "usage: ckpt inspect PATH [--json] [--tensor NAME]... [--values",
         ""},
        {{"repack", "--help", NULL}, 0, "usage: ckpt repack SRC DST", ""},
        /* what a JSON reader meets in the values: strings for NaN and
         * infinities, 64-bit integers beyond a double's 2^53 */
        {{"help", "inspect", NULL},
         0,
         "except a NaN or infinity, which is the string \"nan\", \"inf\"\n"
         "or \"-inf\"",
         ""},
        {{"help", "inspect", NULL}, 0, "rounds those beyond 2^53", ""},
        /* every command's help gives its exit statuses; ls says which
         * member of a row is the latest checkpoint's path */
        {{"help", "ls", NULL},
         0,
         "\nExit status 0 when DIR is listed (missing or stray files "
         "included), 1\nwhen its state file cannot be parsed, 2 ",
         ""},
        {{"help", "ls", NULL},
         0,
         "\"latest\" is the latest row's \"prefix\" as the state\n",
         ""},
        {{"help", "inspect", NULL},
         0,
         "\nExit status 1 when the index, the state file or (with --values) "
         "a\ntensor's record is damaged, or its data file is missing, "
         "unreadable\nor not a regular file (as verify counts it), 2 ",
         ""},
        /* verify's and repack's said only when they exit 1 */
        {{"help", "verify", NULL},
         0,
         "\nExit status 0 when every tensor checks (those \"not checked\" "
         "included),\n1 when anything is damaged or missing",
         ""},
        {{"help", "verify", NULL},
         0,
         "2 on a usage error, a PATH that cannot be read (a prefix with no\n"
         "index), or memory or file descriptors this machine lacks",
         ""},
        {{"help", "repack", NULL},
         0,
         "\nExit status 0 when DST is written, 1 when the source is damaged",
         ""},
        {{"help", "repack", NULL},
         0,
         "2 on a usage error, an SRC that cannot be read, an existing\n"
         "DST.index, a DST that cannot be written, or a kept tensor it "
         "cannot\ncopy",
         ""},
        {{"help", "diff", NULL},
         0,
         "or the string \"nan\" or \"inf\" when",
         ""},
        {{"help", "diff", NULL},
         0,
         "round those\n             beyond 2^53",
         ""},
        {{"help", "bogus", NULL}, 2, "", "unknown command 'bogus'"},
        /* the usage names "ckpt help <command>", and help is one: it was
         * "ckpt help: unknown command 'help'", exit 2 */
        {{"help", "help", NULL}, 0, "usage: ckpt <command> [arguments]\n", ""},
        {{"help", "--help", NULL},
         0,
         "usage: ckpt <command> [arguments]\n",
         ""},
        /* "--" ends the options: it was taken for the command's name */
        {{"help", "--", "ls", NULL}, 0, "usage: ckpt ls DIR [--json]\n", ""},
        {{"help", "--", "--json", NULL}, 2, "", "unknown command '--json'"},
        {{"help", "ls", "--", NULL}, 0, "usage: ckpt ls DIR [--json]\n", ""},
        /* each command's options come from one table: its synopsis and
         * help list them in one order, a value-taking option without its
         * value is a usage error naming the value, the argument after one
         * is its value (main's look for --help steps over it), an option
         * taking no value refuses "=...", and "--values" takes its count
         * only after '=' */
        {{"help", "repack", NULL},
         0,
         "usage: ckpt repack SRC DST [--include REGEX]... [--exclude "
         "REGEX]... [--json]\n\n",
         ""},
        {{"help", "repack", NULL},
         0,
         "header says).\n\n  --include REGEX  keep only",
         ""},
        {{"help", "diff", NULL},
         0,
         "usage: ckpt diff A B [--atol X] [--json]\n\nCompare two",
         ""},
        {{"help", "diff", NULL}, 0, "into pieces (strings", ""},
        {{"help", "ls", NULL}, 0, "usage: ckpt ls DIR [--json]\n\nList", ""},
        {{"help", "verify", NULL},
         0,
         "usage: ckpt verify PATH [--json]\n\nRead",
         ""},
        {{"help", "inspect", NULL},
         0,
         "cannot take them)\n\nBYTES is the size of a tensor's record",
         ""},
        {{"inspect", "x", "--tensor", NULL},
         2,
         "",
         "ckpt inspect: --tensor needs a tensor's name, e.g. --tensor "
         "dense/kernel\n"},
        {{"diff", "a", "b", "--atol", NULL},
         2,
         "",
         "ckpt diff: --atol needs a number >= 0, e.g. --atol=1e-6\n"},
        {{"repack", "s", "d", "--include", NULL},
         2,
         "",
         "ckpt repack: --include needs a POSIX extended regex, e.g. "
         "--include '^model/'\n"},
        {{"repack", "s", "d", "--exclude", NULL},
         2,
         "",
         "ckpt repack: --exclude needs a POSIX extended regex, e.g. "
         "--exclude '\\.OPTIMIZER_SLOT'\n"},
        {{"diff", "a", "b", "--atol", "--help", NULL},
         2,
         "",
         "ckpt diff: bad --atol '--help': needs a number >= 0, e.g. "
         "--atol=1e-6\n"},
        {{"diff", "a", "b", "--atol=--help", NULL},
         2,
         "",
         "ckpt diff: bad --atol '--help': needs a number >= 0, e.g. "
         "--atol=1e-6\n"},
        {{"inspect", "x", "--values=5", "--help", NULL},
         0,
         "usage: ckpt inspect PATH",
         ""},
        {{"inspect", "x", "--json=1", NULL},
         2,
         "",
         "ckpt inspect: --json takes no value (given '--json=1')\n"},
        {{"verify", "x", "--json=1", NULL},
         2,
         "",
         "ckpt verify: --json takes no value (given '--json=1')\n"},
        {{"inspect", "x", "--jsonx", NULL},
         2,
         "",
         "ckpt inspect: unknown option '--jsonx'\n"},
        {{"ls", "x", "--tensor", "t", NULL},
         2,
         "",
         "unknown option '--tensor'"},
    };
    cli_run r;
    char want[64];
    (void)state;
    RUN_STATUS(r, 0, "--version");
    snprintf(want, sizeof(want), "ckpt %s\n", ckpt_version_string());
    assert_string_equal(r.out, want);
    run_free(&r);
    RUN_STATUS(r, 0, "--help");
    expect_contains(r.out, "commands:");
    expect_contains(r.out, "  ls ");
    expect_contains(r.out, "  inspect ");
    expect_contains(r.out, "  verify ");
    expect_contains(r.out, "  repack ");
    run_free(&r);
    for (size_t i = 0; i < sizeof(runs) / sizeof(runs[0]); i++) {
        r = cli_run_prog(CKPT_CLI_PATH, NULL, runs[i].args);
        expect_status(&r, runs[i].status);
        expect_contains(r.out, runs[i].out);
        expect_contains(r.err, runs[i].err);
        if (runs[i].status == 0)
            assert_string_equal(r.err, "");
        else
            expect_lacks(r.out, "usage:");
        run_free(&r);
    }
    {
        const char *none[] = {NULL};
        r = cli_run_prog(CKPT_CLI_PATH, NULL, none);
        expect_status(&r, 2);
        expect_contains(r.err, "usage: ckpt <command>");
        run_free(&r);
    }
    RUN_STATUS(r, 2, "frobnicate");
    expect_contains(r.err, "ckpt: unknown command 'frobnicate'");
    run_free(&r);
}

/* With --json, stdout is one JSON document for the forms without a
 * command too: --version and --help printed text, "ckpt help nope --json"
 * (a usage error) printed nothing on stdout, and extra arguments after
 * --version or "help CMD" were ignored. Each row: the arguments, the exit
 * status, "command" (NULL: JSON null; "-": no such member), the "usage"
 * or "error" expected, and a substring of "help" ("" when none). */
static void test_help_and_version_json(void **state)
{
    static const struct {
        const char *args[5];
        int status;
        const char *command, *usage, *error, *help;
    } runs[] = {
        {{"--help", "--json", NULL},
         0,
         NULL,
         "ckpt <command> [arguments]",
         NULL,
         "\ncommands:\n  ls "},
        {{"help", "--json", NULL},
         0,
         NULL,
         "ckpt <command> [arguments]",
         NULL,
         "\ncommands:\n  ls "},
        {{"help", "verify", "--json", NULL},
         0,
         "verify",
         "ckpt verify PATH [--json]",
         NULL,
         "usage: ckpt verify PATH [--json]\n\n"},
        {{"ls", "--json", "--help", NULL},
         0,
         "ls",
         "ckpt ls DIR [--json]",
         NULL,
         "usage: ckpt ls DIR [--json]\n\n"},
        {{"help", "nope", "--json", NULL},
         2,
         "help",
         "ckpt <command> [arguments]",
         "unknown command 'nope'",
         ""},
        {{"help", "ls", "extra", "--json", NULL},
         2,
         "help",
         "ckpt <command> [arguments]",
         "unexpected argument 'extra'",
         ""},
        {{"--version", "x", "--json", NULL},
         2,
         NULL,
         "ckpt <command> [arguments]",
         "unexpected argument 'x'",
         ""},
    };
    cli_run r;
    json_object *doc;
    (void)state;
    for (size_t i = 0; i < sizeof(runs) / sizeof(runs[0]); i++) {
        r = cli_run_prog(CKPT_CLI_PATH, NULL, runs[i].args);
        expect_status(&r, runs[i].status);
        doc = parse_json(r.out);
        if (runs[i].command)
            assert_string_equal(json_object_get_string(jget(doc, "command")),
                                runs[i].command);
        else
            assert_null(jget(doc, "command"));
        assert_string_equal(json_object_get_string(jget(doc, "usage")),
                            runs[i].usage);
        assert_int_equal(json_object_get_boolean(jget(doc, "ok")),
                         runs[i].status == 0);
        if (runs[i].error) {
            assert_string_equal(json_object_get_string(jget(doc, "error")),
                                runs[i].error);
            expect_contains(r.err, runs[i].error);
        } else {
            expect_contains(json_object_get_string(jget(doc, "help")),
                            runs[i].help);
            assert_string_equal(r.err, "");
        }
        json_object_put(doc);
        run_free(&r);
    }
    /* --version: the text line, or {"version", "ok": true} */
    RUN_STATUS(r, 0, "--version", "--json");
    doc = parse_json(r.out);
    assert_string_equal(json_object_get_string(jget(doc, "version")),
                        ckpt_version_string());
    assert_true(json_object_get_boolean(jget(doc, "ok")));
    assert_string_equal(r.err, "");
    json_object_put(doc);
    run_free(&r);
    /* without --json an extra argument is a usage error on stderr only */
    RUN_STATUS(r, 2, "--version", "x");
    assert_string_equal(r.out, "");
    expect_contains(r.err, "ckpt: unexpected argument 'x'\nusage: ckpt ");
    run_free(&r);
    RUN_STATUS(r, 2, "help", "ls", "extra");
    assert_string_equal(r.out, "");
    expect_contains(r.err, "ckpt help: unexpected argument 'extra'\n");
    run_free(&r);
}

static void test_usage_errors(void **state)
{
    static const struct {
        const char *args[6];
        const char *err;
    } cases[] = {
        {{"inspect", NULL}, "ckpt inspect: missing PATH"},
        {{"inspect", "a", "b", NULL}, "ckpt inspect: unexpected argument 'b'"},
        {{"inspect", "a", "--values=abc", NULL},
         "ckpt inspect: bad --values 'abc': needs a count or 'all', e.g. "
         "--values=20\n"},
        /* strtoull skipped the blank and took the sign: every value */
        {{"inspect", "a", "--values= -3", NULL}, "bad --values ' -3'"},
        {{"inspect", "a", "--values=+3", NULL}, "bad --values '+3'"},
        {{"inspect", "a", "--values=\t3", NULL}, "bad --values '\\x093'"},
        {{"inspect", "a", "--values=", NULL}, "bad --values ''"},
        {{"inspect", "a", "--tensor", NULL}, "--tensor needs a tensor's name"},
        {{"inspect", "a", "--values", "5", NULL},
         "unexpected argument '5' (a count is given as --values=5)"},
        {{"inspect", "--values", "all", "a", NULL},
         "unexpected argument 'all' (a count is given as --values=all)"},
        {{"inspect", "--bogus", "a", NULL}, "unknown option '--bogus'"},
        {{"verify", NULL}, "ckpt verify: missing PATH"},
        {{"verify", "a", "b", NULL}, "ckpt verify: unexpected argument 'b'"},
        {{"ls", NULL}, "ckpt ls: missing DIR"},
        {{"ls", "--frob", "x", NULL}, "ckpt ls: unknown option '--frob'"},
        {{"repack", "a", NULL}, "ckpt repack: missing DST"},
        {{"repack", "a", "b", "c", NULL}, "unexpected argument 'c'"},
        {{"repack", "a", "b", "--exclude", NULL},
         "--exclude needs a POSIX extended regex"},
        {{"repack", "--exclude", "(", "a", "b"},
         "ckpt repack: bad --exclude '(': Unmatched ( or \\(; needs a POSIX "
         "extended regex, e.g. --exclude '\\.OPTIMIZER_SLOT'\n"},
        {{"diff", "a", "b", "--json=yes", NULL},
         "ckpt diff: --json takes no value (given '--json=yes')\n"},
        {{"ls", "d", "--json=", NULL},
         "ckpt ls: --json takes no value (given '--json=')\n"},
    };
    (void)state;
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        cli_run r = cli_run_prog(CKPT_CLI_PATH, NULL, cases[i].args);
        expect_status(&r, 2);
        expect_contains(r.err, cases[i].err);
        expect_contains(r.err, "usage: ckpt ");
        assert_string_equal(r.out, "");
        run_free(&r);
    }
}

/* A usage error under --json printed no JSON at all, so `... --json | jq`
 * read an empty document; now it prints the failure document with the
 * synopsis, exit status 2 as before, the usage still on stderr. */
static void test_json_usage_errors(void **state)
{
    static const struct {
        const char *args[6];
        const char *command, *error, *usage;
    } cases[] = {
        {{"ls", "--json", NULL}, "ls", "missing DIR", "ckpt ls DIR [--json]"},
        {{"verify", "a", "--json", "--bogus", NULL},
         "verify",
         "unknown option '--bogus'",
         "ckpt verify PATH [--json]"},
        {{"inspect", "a", "--json", "--values=abc", NULL},
         "inspect",
         "bad --values",
         "ckpt inspect PATH"},
        {{"diff", "a", "--json", NULL},
         "diff",
         "need two checkpoints, A and B",
         "ckpt diff A B [--atol X] [--json]"},
        {{"repack", "a", "--json", NULL},
         "repack",
         "missing DST",
         "ckpt repack SRC DST"},
        {{"lss", "d", "--json", NULL},
         "lss",
         "unknown command 'lss'",
         "ckpt <command> [arguments]"},
        {{"--json", "ls", "d", NULL},
         NULL, /* no command named: "command": null */
         "unknown command '--json' (options go after the command",
         "ckpt <command> [arguments]"},
        {{"--bogus", "ls", "--json", NULL},
         NULL,
         "unknown command '--bogus' (options go after the command",
         "ckpt <command> [arguments]"},
    };
    (void)state;
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        cli_run r = cli_run_prog(CKPT_CLI_PATH, NULL, cases[i].args);
        json_object *root;
        expect_status(&r, 2);
        expect_contains(r.err, "usage: ckpt ");
        expect_contains(r.err, cases[i].error);
        root = parse_json(r.out);
        if (cases[i].command)
            assert_string_equal(json_object_get_string(jget(root, "command")),
                                cases[i].command);
        else
            assert_true(
                json_object_is_type(jget(root, "command"), json_type_null));
        assert_false(json_object_get_boolean(jget(root, "ok")));
        expect_contains(json_object_get_string(jget(root, "error")),
                        cases[i].error);
        expect_contains(json_object_get_string(jget(root, "usage")),
                        cases[i].usage);
        json_object_put(root);
        run_free(&r);
    }
    /* "--json" past "--" is a path, and an option's value is a value, not
     * the option: no JSON on stdout (a text run whose --tensor or
     * --exclude was "--json" printed the failure document) */
    {
        static const char *const texts[][7] = {
            {"ls", "--", "--json", "extra", NULL},
            {"inspect", "no-such-ckpt", "--tensor", "--json", NULL},
            {"repack", "no-such-ckpt", "out", "--exclude", "--json", NULL},
            /* a usage error while parsing, too (main had turned the
             * document on before the command parsed) */
            {"inspect", "no-such-ckpt", "--tensor", "--json", "--bogus"},
            {"repack", "no-such-ckpt", "out", "--exclude", "--json", "--bogus"},
        };
        for (size_t i = 0; i < sizeof(texts) / sizeof(texts[0]); i++) {
            cli_run r = cli_run_prog(CKPT_CLI_PATH, NULL, texts[i]);
            expect_status(&r, 2);
            expect_contains(r.err, "ckpt ");
            assert_string_equal(r.out, "");
            run_free(&r);
        }
    }
}

static void test_missing_paths(void **state)
{
    char *dir = test_make_temp_dir();
    char *missing = test_path(dir, "no-such-ckpt");
    char *dst = test_path(dir, "out");
    cli_run r;
    (void)state;
    RUN_STATUS(r, 2, "inspect", missing);
    expect_contains(r.err, "ckpt inspect: ");
    expect_contains(r.err, missing);
    run_free(&r);
    RUN_STATUS(r, 2, "verify", missing);
    expect_contains(r.err, "ckpt verify: ");
    expect_contains(r.err, missing);
    run_free(&r);
    RUN_STATUS(r, 2, "repack", missing, dst);
    expect_contains(r.err, "ckpt repack: ");
    expect_contains(r.err, missing);
    run_free(&r);
    RUN_STATUS(r, 2, "ls", missing);
    expect_contains(r.err, "ckpt ls: ");
    expect_contains(r.err, missing);
    run_free(&r);
    /* a directory with no state file and no index */
    RUN_STATUS(r, 2, "inspect", dir);
    expect_contains(r.err, "no checkpoint state file and no .index file");
    run_free(&r);
    /* a state file whose checkpoints are gone: nothing to inspect, and
     * verify reports the named checkpoint missing (damage) */
    write_text(dir, "checkpoint", "model_checkpoint_path: \"gone-1\"\n");
    RUN_STATUS(r, 2, "inspect", dir);
    expect_contains(r.err, "ckpt inspect: ");
    expect_contains(r.err, "gone-1");
    run_free(&r);
    RUN_STATUS(r, 1, "verify", dir);
    expect_contains(r.err, "ckpt verify: ");
    expect_contains(r.err, "gone-1) is missing");
    run_free(&r);
    /* an empty DIR said "ckpt ls: : No such file or directory" */
    RUN_STATUS(r, 2, "ls", "", "--json");
    expect_contains(r.err, "ckpt ls: empty DIR (give a directory: . for the "
                           "current one)\n");
    expect_contains(r.out, "\"error\": \"empty DIR");
    run_free(&r);
    free(missing);
    free(dst);
    test_remove_tree(dir);
}

/* ---- damage -------------------------------------------------------------- */

static char *copy_vector(const char *vector, const char *const *names)
{
    char *src = test_tf_vector(vector);
    char *dst;
    if (!src)
        return NULL;
    dst = test_make_temp_dir();
    for (size_t i = 0; names[i]; i++)
        copy_file(src, dst, names[i]);
    free(src);
    return dst;
}

static void test_verify_flipped_data_byte(void **state)
{
    static const char *const files[] = {"checkpoint", "model.index",
                                        "model.data-00000-of-00001", NULL};
    char *dir = copy_vector("tf2onnx_regression_ckpt", files);
    json_object *root, *damaged;
    cli_run r;
    (void)state;
    if (!dir)
        return;
    RUN_STATUS(r, 0, "verify", dir);
    run_free(&r);
    /* tensor "b" is bytes 4..8 of the data file */
    flip_byte(dir, "model.data-00000-of-00001", 5);
    RUN_STATUS(r, 1, "verify", dir);
    expect_contains(r.err, "ckpt verify: ");
    expect_contains(r.err, "'b'");
    assert_null(strstr(r.err, "'W'"));
    expect_contains(r.out, "DAMAGED, 1 of 2 tensors");
    run_free(&r);
    RUN_STATUS(r, 1, "verify", dir, "--json");
    root = parse_json(r.out);
    assert_false(json_object_get_boolean(jget(root, "ok")));
    damaged = jget(root, "damaged");
    assert_int_equal(json_object_array_length(damaged), 1);
    assert_string_equal(json_object_get_string(jget(
                            json_object_array_get_idx(damaged, 0), "name")),
                        "b");
    json_object_put(root);
    run_free(&r);
    /* inspect --values notices too; repack refuses to copy damage */
    RUN_STATUS(r, 1, "inspect", dir, "--values");
    expect_contains(r.err, "ckpt inspect: ");
    expect_contains(r.err, "'b'");
    run_free(&r);
    /* ... and says so in its JSON too: the damaged tensor has an "error"
     * where its values would be (it had neither: the document read as a
     * tensor whose values were not asked for) */
    RUN_STATUS(r, 1, "inspect", dir, "--values", "--json");
    root = parse_json(r.out);
    expect_contains(
        json_object_get_string(jget(find_tensor(root, "b"), "error")),
        "checksum mismatch");
    assert_null(json_object_object_get(find_tensor(root, "b"), "values"));
    assert_null(json_object_object_get(find_tensor(root, "W"), "error"));
    assert_non_null(json_object_object_get(find_tensor(root, "W"), "values"));
    json_object_put(root);
    run_free(&r);
    {
        char *dst = test_path(dir, "copy");
        char *dst_index = test_path(dir, "copy.index");
        struct stat sb;
        RUN_STATUS(r, 1, "repack", dir, dst);
        expect_contains(r.err, "ckpt repack: ");
        expect_contains(r.err, "'b'");
        assert_int_not_equal(stat(dst_index, &sb), 0);
        run_free(&r);
        free(dst_index);
        free(dst);
    }
    /* a missing data file is damage too */
    {
        char *data = test_path(dir, "model.data-00000-of-00001");
        assert_int_equal(unlink(data), 0);
        free(data);
    }
    RUN_STATUS(r, 1, "verify", dir);
    expect_contains(r.err, "model.data-00000-of-00001");
    run_free(&r);
    test_remove_tree(dir);
}

static void test_verify_damaged_index(void **state)
{
    static const char *const files[] = {"checkpoint", "model.index",
                                        "model.data-00000-of-00001", NULL};
    char *dir = copy_vector("tf2onnx_regression_ckpt", files);
    cli_run r;
    (void)state;
    if (!dir)
        return;
    flip_byte(dir, "model.index", 10); /* inside the data block */
    RUN_STATUS(r, 1, "verify", dir);
    expect_contains(r.err, "ckpt verify: ");
    expect_contains(r.err, "model.index");
    run_free(&r);
    test_remove_tree(dir);
}

/* ---- repack -------------------------------------------------------------- */

/* Every tensor of `dst` equals the same tensor of `src`, record and value;
 * returns how many tensors dst has. */
static size_t compare_bundles(const char *src, const char *dst)
{
    ckpt_bundle_reader *a = NULL, *b = NULL;
    size_t n;
    assert_ckpt_ok(ckpt_bundle_reader_open(&a, src, NULL));
    assert_ckpt_ok(ckpt_bundle_reader_open(&b, dst, NULL));
    assert_int_equal(ckpt_bundle_reader_num_shards(b), 1);
    n = ckpt_bundle_reader_count(b);
    for (size_t i = 0; i < n; i++) {
        const ckpt_tensor_entry *eb = ckpt_bundle_reader_entry(b, i);
        const ckpt_tensor_entry *ea = NULL;
        ckpt_buf ra = CKPT_BUF_INIT, rb = CKPT_BUF_INIT;
        assert_ckpt_ok(ckpt_bundle_reader_find(&ea, a, eb->name));
        assert_int_equal(ea->dtype, eb->dtype);
        assert_int_equal(ea->shape.rank, eb->shape.rank);
        for (int d = 0; d < ea->shape.rank; d++)
            assert_int_equal(ea->shape.dims[d], eb->shape.dims[d]);
        assert_int_equal(eb->shard_id, 0);
        assert_ckpt_ok(ckpt_bundle_reader_read_record(a, ea, &ra));
        assert_ckpt_ok(ckpt_bundle_reader_read_record(b, eb, &rb));
        assert_int_equal(ra.size, rb.size);
        assert_memory_equal(ra.ptr, rb.ptr, ra.size);
        if (ea->dtype == CKPT_DT_STRING) {
            ckpt_string_array sa = CKPT_STRING_ARRAY_INIT,
                              sb = CKPT_STRING_ARRAY_INIT;
            assert_ckpt_ok(ckpt_bundle_reader_read_strings(a, ea->name, &sa));
            assert_ckpt_ok(ckpt_bundle_reader_read_strings(b, eb->name, &sb));
            assert_int_equal(sa.count, sb.count);
            for (size_t k = 0; k < sa.count; k++) {
                assert_int_equal(sa.strings[k].len, sb.strings[k].len);
                assert_memory_equal(sa.strings[k].ptr, sb.strings[k].ptr,
                                    sa.strings[k].len);
            }
            ckpt_string_array_dispose(&sa);
            ckpt_string_array_dispose(&sb);
        } else {
            int64_t size = 0;
            void *va, *vb;
            assert_ckpt_ok(ckpt_tensor_byte_size(&size, ea->dtype, &ea->shape));
            va = malloc((size_t)size + 1);
            vb = malloc((size_t)size + 1);
            assert_ckpt_ok(
                ckpt_bundle_reader_read(a, ea->name, va, (size_t)size));
            assert_ckpt_ok(
                ckpt_bundle_reader_read(b, eb->name, vb, (size_t)size));
            assert_memory_equal(va, vb, (size_t)size);
            free(va);
            free(vb);
        }
        ckpt_buf_dispose(&ra);
        ckpt_buf_dispose(&rb);
    }
    ckpt_bundle_reader_free(a);
    ckpt_bundle_reader_free(b);
    return n;
}

static void test_repack_vectors(void **state)
{
    (void)state;
    for (size_t i = 0; i < NUM_VECTORS; i++) {
        char *src_dir = test_tf_vector(vectors[i].dir);
        char *out_dir, *src, *dst;
        cli_run r;
        if (!src_dir)
            return;
        out_dir = test_make_temp_dir();
        src = test_path(src_dir, vectors[i].prefix);
        dst = test_path(out_dir, "repacked");
        RUN_STATUS(r, 0, "repack", src_dir, dst);
        expect_contains(r.out, "1 shard");
        run_free(&r);
        assert_int_equal(compare_bundles(src, dst),
                         (size_t)vectors[i].num_tensors);
        RUN_STATUS(r, 0, "verify", dst);
        run_free(&r);
        /* never over an existing checkpoint */
        RUN_STATUS(r, 2, "repack", src, dst);
        expect_contains(r.err, "repacked.index exists");
        run_free(&r);
        free(src);
        free(dst);
        free(src_dir);
        test_remove_tree(out_dir);
    }
}

static void test_repack_filters(void **state)
{
    char *src_dir = test_tf_vector("rl_collection_sharded");
    char *out_dir, *src, *dst, *dst2;
    ckpt_bundle_reader *b = NULL;
    cli_run r;
    (void)state;
    if (!src_dir)
        return;
    out_dir = test_make_temp_dir();
    src = test_path(src_dir, "ckpt-5");
    dst = test_path(out_dir, "no-slots");
    dst2 = test_path(out_dir, "model-only");
    RUN_STATUS(r, 0, "repack", src, dst, "--exclude", "\\.OPTIMIZER_SLOT");
    expect_contains(r.out, "15 of 31 tensors");
    run_free(&r);
    assert_int_equal(compare_bundles(src, dst), 15);
    assert_ckpt_ok(ckpt_bundle_reader_open(&b, dst, NULL));
    for (size_t i = 0; i < ckpt_bundle_reader_count(b); i++)
        assert_null(
            strstr(ckpt_bundle_reader_entry(b, i)->name, "OPTIMIZER_SLOT"));
    ckpt_bundle_reader_free(b);
    RUN_STATUS(r, 0, "repack", src, dst2, "--include=^model/", "--include",
               "^save_counter", "--exclude=OPTIMIZER_SLOT|/bias/");
    run_free(&r);
    assert_ckpt_ok(ckpt_bundle_reader_open(&b, dst2, NULL));
    assert_int_equal(ckpt_bundle_reader_count(b), 5);
    assert_string_equal(ckpt_bundle_reader_entry(b, 0)->name,
                        "model/layer-0/kernel/.ATTRIBUTES/VARIABLE_VALUE");
    assert_string_equal(ckpt_bundle_reader_entry(b, 4)->name,
                        "save_counter/.ATTRIBUTES/VARIABLE_VALUE");
    ckpt_bundle_reader_free(b);
    assert_int_equal(compare_bundles(src, dst2), 5);
    /* patterns that keep nothing: written, with a warning saying so */
    free(dst);
    dst = test_path(out_dir, "none");
    RUN_STATUS(r, 0, "repack", src, dst, "--include", "^no such tensor$");
    expect_contains(r.out, "0 of 31 tensors");
    expect_contains(r.err, "ckpt repack: warning: no tensor of ");
    expect_contains(r.err, "none of its 31); ");
    expect_contains(r.err, "none holds no tensors");
    run_free(&r);
    assert_ckpt_ok(ckpt_bundle_reader_open(&b, dst, NULL));
    assert_int_equal(ckpt_bundle_reader_count(b), 0);
    ckpt_bundle_reader_free(b);
    free(dst2);
    dst2 = test_path(out_dir, "all");
    RUN_STATUS(r, 0, "repack", src, dst2, "--exclude", "^no such tensor$");
    assert_null(strstr(r.err, "warning"));
    run_free(&r);
    free(src);
    free(dst);
    free(dst2);
    free(src_dir);
    test_remove_tree(out_dir);
}

/* --json: one document saying what was copied; a failure after the
 * arguments were parsed still prints one, with the error. */
static void test_repack_json(void **state)
{
    char *src_dir = test_tf_vector("rl_collection_sharded");
    char *out_dir, *src, *dst, *want;
    json_object *root;
    cli_run r;
    (void)state;
    if (!src_dir)
        return;
    out_dir = test_make_temp_dir();
    src = test_path(src_dir, "ckpt-5");
    dst = test_path(out_dir, "no-slots");
    RUN_STATUS(r, 0, "repack", "--json", src, dst, "--exclude",
               "\\.OPTIMIZER_SLOT");
    root = parse_json(r.out);
    assert_string_equal(json_object_get_string(jget(root, "source")), src);
    assert_string_equal(json_object_get_string(jget(root, "destination")), dst);
    assert_true(json_object_get_boolean(jget(root, "ok")));
    assert_int_equal(json_object_get_int64(jget(root, "tensors")), 15);
    assert_int_equal(json_object_get_int64(jget(root, "tensors_total")), 31);
    assert_true(json_object_get_int64(jget(root, "bytes")) > 0);
    assert_int_equal(json_object_get_int(jget(root, "num_shards")), 1);
    json_object_put(root);
    run_free(&r);
    assert_int_equal(compare_bundles(src, dst), 15);
    RUN_STATUS(r, 2, "repack", src, dst, "--json");
    root = parse_json(r.out);
    assert_string_equal(json_object_get_string(jget(root, "command")),
                        "repack");
    assert_false(json_object_get_boolean(jget(root, "ok")));
    want = test_path(out_dir, "no-slots.index exists");
    assert_non_null(strstr(json_object_get_string(jget(root, "error")), want));
    json_object_put(root);
    run_free(&r);
    free(want);
    free(src);
    free(dst);
    free(src_dir);
    test_remove_tree(out_dir);
}

/* ---- values of every kind, from a checkpoint written here ---------------- */

static void write_typed_checkpoint(const char *prefix)
{
    ckpt_bundle_writer *w = NULL;
    ckpt_shape s3 = {1, {3}}, s2 = {1, {2}}, scalar = {0, {0}};
    float f[3] = {0.1f, -2.5f, 1e-8f};
    double d[2] = {0.1, -1e300};
    int8_t i8[3] = {-128, 0, 127};
    uint16_t u16[2] = {0, 65535};
    int64_t i64[2] = {INT64_MIN, INT64_MAX};
    uint64_t u64[2] = {0, UINT64_MAX};
    uint8_t b[2] = {1, 0};
    uint16_t half[3] = {0x3e00 /* 1.5 */, 0xc000 /* -2 */, 0x7c00 /* inf */};
    uint16_t bf16[2] = {0x3f80 /* 1 */, 0x4049 /* 3.140625 */};
    float c64[4] = {1.0f, -2.0f, 0.5f, 0.25f};
    ckpt_slice strs[3] = {{"a\"b\n", 4}, {"\xff\x01", 2}, {"", 0}};
    float nan_inf[2] = {NAN, -INFINITY};
    assert_ckpt_ok(ckpt_bundle_writer_open(&w, prefix, NULL));
    assert_ckpt_ok(
        ckpt_bundle_writer_add(w, "f32", CKPT_DT_FLOAT, &s3, f, sizeof(f)));
    assert_ckpt_ok(
        ckpt_bundle_writer_add(w, "f64", CKPT_DT_DOUBLE, &s2, d, sizeof(d)));
    assert_ckpt_ok(
        ckpt_bundle_writer_add(w, "i8", CKPT_DT_INT8, &s3, i8, sizeof(i8)));
    assert_ckpt_ok(ckpt_bundle_writer_add(w, "u16", CKPT_DT_UINT16, &s2, u16,
                                          sizeof(u16)));
    assert_ckpt_ok(
        ckpt_bundle_writer_add(w, "i64", CKPT_DT_INT64, &s2, i64, sizeof(i64)));
    assert_ckpt_ok(ckpt_bundle_writer_add(w, "u64", CKPT_DT_UINT64, &s2, u64,
                                          sizeof(u64)));
    assert_ckpt_ok(
        ckpt_bundle_writer_add(w, "bool", CKPT_DT_BOOL, &s2, b, sizeof(b)));
    assert_ckpt_ok(ckpt_bundle_writer_add(w, "half", CKPT_DT_HALF, &s3, half,
                                          sizeof(half)));
    assert_ckpt_ok(ckpt_bundle_writer_add(w, "bf16", CKPT_DT_BFLOAT16, &s2,
                                          bf16, sizeof(bf16)));
    assert_ckpt_ok(ckpt_bundle_writer_add(w, "c64", CKPT_DT_COMPLEX64, &s2, c64,
                                          sizeof(c64)));
    assert_ckpt_ok(ckpt_bundle_writer_add(w, "naninf", CKPT_DT_FLOAT, &s2,
                                          nan_inf, sizeof(nan_inf)));
    assert_ckpt_ok(ckpt_bundle_writer_add(w, "scalar", CKPT_DT_INT32, &scalar,
                                          "\x07\0\0\0", 4));
    assert_ckpt_ok(ckpt_bundle_writer_add_strings(w, "str", &s3, strs, 3));
    assert_ckpt_ok(ckpt_bundle_writer_finish(w));
    ckpt_bundle_writer_free(w);
}

/* Past a file-size limit (ulimit -f) the write fails with EFBIG, named in
 * the error, and nothing of DST is left: SIGXFSZ does not kill the tool. */
static void limit_file_size(const void *arg)
{
    struct rlimit rl;
    rl.rlim_cur = rl.rlim_max = *(const rlim_t *)arg;
    if (setrlimit(RLIMIT_FSIZE, &rl) != 0)
        _exit(99);
}

static void test_repack_past_file_size_limit(void **state)
{
    /* above what stderr (a captured file, under the same limit) takes */
    static const rlim_t limit = 8192;
    static float big[16384];
    ckpt_bundle_writer *w = NULL;
    ckpt_shape shape = {1, {16384}};
    char *dir = test_make_temp_dir();
    char *src = test_path(dir, "src");
    char *dst = test_path(dir, "packed");
    const char *args[] = {"repack", src, dst, NULL};
    cli_run r;
    (void)state;
    assert_ckpt_ok(ckpt_bundle_writer_open(&w, src, NULL));
    assert_ckpt_ok(ckpt_bundle_writer_add(w, "big", CKPT_DT_FLOAT, &shape, big,
                                          sizeof(big)));
    assert_ckpt_ok(ckpt_bundle_writer_finish(w));
    ckpt_bundle_writer_free(w);
    r = cli_run_with(CKPT_CLI_PATH, NULL, args, limit_file_size, &limit);
    expect_status(&r, 2);
    assert_int_equal(r.signal, 0);
    expect_contains(r.err, "ckpt repack: write ");
    expect_contains(r.err, "packed.data-00000-of-00001");
    expect_contains(r.err, "File too large");
    run_free(&r);
    {
        DIR *d = opendir(dir);
        struct dirent *e;
        assert_non_null(d);
        while ((e = readdir(d)) != NULL)
            assert_int_not_equal(strncmp(e->d_name, "packed", 6), 0);
        closedir(d);
    }
    free(src);
    free(dst);
    test_remove_tree(dir);
}

/* A state file naming a path of a megabyte, which no file can have (longer
 * than the system allows): a missing checkpoint, which `ls` lists as such,
 * `inspect` cannot open (2) and `verify` reports missing (1), every
 * message cut in its middle to a bounded excerpt saying how much was left
 * out, its end kept (verify says two: the open's error and which
 * checkpoint is missing). */
static void test_messages_bounded(void **state)
{
    static const char *const cmds[] = {"ls", "inspect", "verify"};
    static const int status[] = {0, 2, 1};
    static const size_t err_max[] = {1, 20000, 40000};
    size_t n = (size_t)1 << 20;
    char *text = malloc(n + 64);
    char *dir = test_make_temp_dir();
    cli_run r;
    size_t at;
    (void)state;
    assert_non_null(text);
    at = (size_t)sprintf(text, "model_checkpoint_path: \"");
    memset(text + at, 'a', n);
    at += n;
    at += (size_t)sprintf(text + at, "\"\n");
    {
        char *path = test_path(dir, "checkpoint");
        test_write_file(path, text, at);
        free(path);
    }
    for (size_t i = 0; i < 3; i++) {
        RUN_STATUS(r, status[i], cmds[i], dir);
        assert_true(strlen(r.err) < err_max[i]);
        expect_contains(i == 0 ? r.out : r.err, "aaaa");
        if (i == 0)
            expect_contains(r.out, "(missing index)");
        if (i == 2) { /* the library cuts its own messages: ls, inspect */
            expect_contains(r.err, " more bytes)");
            /* the end of a message cut in its middle, which says what
             * happened (it used to be cut off) */
            expect_contains(r.err, ") is missing\n");
        }
        run_free(&r);
    }
    free(text);
    test_remove_tree(dir);
}

/* repack's summary ("N bytes", --json "bytes") counts what it wrote. It
 * added up the source's record sizes, so an empty string record (no
 * bytes: TensorFlow reads it as no strings), which the copy wrote again
 * with its 4-byte length checksum, was reported as 0 bytes where DST held
 * 4. The count now equals DST's data file and what verify counts in it.
 * (A little-endian source's string records are now copied as stored, the
 * empty one too: 19 bytes, as in the source.) */
static void test_repack_counts_written_bytes(void **state)
{
    static const ckpt_slice empty[3] = {{"", 0}, {"", 0}, {"", 0}};
    static const float f[2] = {1.0f, 2.0f};
    ckpt_shape none = {1, {0}}, three = {1, {3}}, two = {1, {2}};
    char *dir = test_make_temp_dir();
    char *src = test_path(dir, "src"), *dst = test_path(dir, "dst");
    char *data = test_path(dir, "dst.data-00000-of-00001");
    ckpt_bundle_writer *w = NULL;
    json_object *root;
    struct stat st;
    cli_run r;
    (void)state;
    assert_ckpt_ok(ckpt_bundle_writer_open(&w, src, NULL));
    /* an empty record: 0 bytes */
    assert_ckpt_ok(
        ckpt_bundle_writer_add_record(w, "e0", CKPT_DT_STRING, &none, NULL, 0));
    /* no strings, as the writer lays them out: the checksum, 4 bytes */
    assert_ckpt_ok(ckpt_bundle_writer_add_strings(w, "e4", &none, NULL, 0));
    /* three empty strings: 3 length bytes and the checksum */
    assert_ckpt_ok(ckpt_bundle_writer_add_strings(w, "e7", &three, empty, 3));
    assert_ckpt_ok(
        ckpt_bundle_writer_add(w, "f", CKPT_DT_FLOAT, &two, f, sizeof(f)));
    assert_ckpt_ok(ckpt_bundle_writer_finish(w));
    ckpt_bundle_writer_free(w);
    RUN_STATUS(r, 0, "repack", src, dst, "--json");
    root = parse_json(r.out);
    assert_int_equal(stat(data, &st), 0);
    assert_int_equal(json_object_get_int64(jget(root, "bytes")), 19);
    assert_int_equal(st.st_size, 19);
    json_object_put(root);
    run_free(&r);
    RUN_STATUS(r, 0, "verify", dst, "--json");
    root = parse_json(r.out);
    assert_int_equal(json_object_get_int64(jget(root, "bytes")), 19);
    json_object_put(root);
    run_free(&r);
    free(dst);
    dst = test_path(dir, "dst2");
    RUN_STATUS(r, 0, "repack", src, dst);
    expect_contains(r.out, ": 4 of 4 tensors, 19 bytes, 1 shard\n");
    run_free(&r);
    free(src);
    free(dst);
    free(data);
    test_remove_tree(dir);
}

/* A repack cut short (a power cut, a kill) leaves DST's temporary files;
 * the next repack to that DST removes them, and only them. */
static void test_repack_removes_stale_temps(void **state)
{
    static const char *const stale[] = {
        "packed.data-00000-of-00001.tempstate1a2b", "packed.index.tempstateff"};
    static const char *const kept[] = {
        "packed.index.tempstate", "packedx.data-00000-of-00001.tempstate12",
        "other.index.tempstate12", "packed.index.tempstate12.txt"};
    char *dir = test_make_temp_dir();
    char *src = test_path(dir, "src");
    char *dst = test_path(dir, "packed");
    char *path;
    cli_run r;
    (void)state;
    write_typed_checkpoint(src);
    for (size_t i = 0; i < 2; i++)
        write_text(dir, stale[i], "partial");
    for (size_t i = 0; i < 4; i++)
        write_text(dir, kept[i], "a user's file");
    RUN_STATUS(r, 0, "repack", src, dst);
    expect_contains(r.err, "ckpt repack: removed ");
    expect_contains(r.err, "packed.index.tempstateff (left by an interrupted "
                           "write)");
    run_free(&r);
    for (size_t i = 0; i < 2; i++) {
        path = test_path(dir, stale[i]);
        assert_int_not_equal(access(path, F_OK), 0);
        free(path);
    }
    for (size_t i = 0; i < 4; i++) {
        path = test_path(dir, kept[i]);
        assert_int_equal(access(path, F_OK), 0);
        free(path);
    }
    assert_int_equal(compare_bundles(src, dst), 13);
    /* a '.' in a directory of DST is no checkpoint file's name: DST
     * "<dir>/run.data-1/packed" was refused as naming a data file */
    path = test_path(dir, "run.data-1");
    assert_int_equal(mkdir(path, 0755), 0);
    free(path);
    path = test_path(dir, "run.data-1/packed");
    RUN_STATUS(r, 0, "repack", src, path);
    expect_lacks(r.err, "names a checkpoint's file");
    run_free(&r);
    assert_int_equal(compare_bundles(src, path), 13);
    free(path);
    /* a directory as DST: refused, not written beside it */
    RUN_STATUS(r, 2, "repack", src, dir);
    expect_contains(r.err, "is a directory; DST is the new checkpoint's "
                           "prefix, e.g. ");
    run_free(&r);
    free(src);
    free(dst);
    test_remove_tree(dir);
}

/* DST in a directory that does not exist, nor its parent: said so, as
 * when only the directory is missing, not as a failed directory fsync
 * ("cannot make its directory's entry durable: sync_dir ..."). */
static void test_repack_missing_destination_directory(void **state)
{
    char *dir = test_make_temp_dir();
    char *src = test_path(dir, "src");
    char *dst = test_path(dir, "no/such/packed");
    char want[4400];
    cli_run r;
    (void)state;
    write_typed_checkpoint(src);
    RUN_STATUS(r, 2, "repack", src, dst, "--json");
    snprintf(want, sizeof(want),
             "ckpt repack: %s: its directory %s/no/such does not exist "
             "(DST's directory must exist; nothing written)",
             dst, dir);
    expect_contains(r.err, want);
    expect_lacks(r.err, "durable");
    expect_contains(r.out, "\"ok\": false");
    run_free(&r);
    free(src);
    free(dst);
    test_remove_tree(dir);
}

/* A newcomer's mix-ups of directory, prefix and file: ls of a prefix, of
 * an index or of the state file said only "No such file or directory" or
 * "not a directory", now the command meant; repack to "x.index" wrote
 * x.index.index and x.index.data-*, now a usage error naming the prefix;
 * an option before the command says where options go. */
static void test_prefix_directory_mixups(void **state)
{
    char *dir = test_make_temp_dir();
    char *prefix = test_path(dir, "typed");
    char *index = test_path(dir, "typed.index");
    char *state_file = test_path(dir, "checkpoint");
    char *dst = test_path(dir, "copy.index");
    char *dst_index = test_path(dir, "copy.index.index");
    char want[4400];
    cli_run r;
    (void)state;
    write_typed_checkpoint(prefix);
    write_text(dir, "checkpoint", "model_checkpoint_path: \"typed\"\n");
    snprintf(want, sizeof(want),
             "ckpt ls: %s: No such file or directory: ls takes a checkpoint "
             "directory (ckpt ls %s); this checkpoint's tensors: ckpt "
             "inspect %s",
             prefix, dir, prefix);
    RUN_STATUS(r, 2, "ls", prefix, "--json");
    expect_contains(r.err, want);
    expect_contains(r.out, "\"ok\": false");
    run_free(&r);
    RUN_STATUS(r, 2, "ls", index);
    expect_contains(r.err, "not a directory: ls takes a checkpoint directory");
    expect_contains(r.err, "this checkpoint's tensors: ckpt inspect ");
    run_free(&r);
    RUN_STATUS(r, 2, "ls", state_file);
    expect_contains(r.err, "not a directory: ls takes a checkpoint directory");
    expect_lacks(r.err, "tensors");
    run_free(&r);
    RUN_STATUS(r, 2, "repack", prefix, dst, "--json");
    snprintf(want, sizeof(want),
             "ckpt repack: DST %s names a checkpoint's file; DST is the new "
             "checkpoint's prefix (its files are DST.index and DST.data-*), "
             "e.g. %s/copy",
             dst, dir);
    expect_contains(r.err, want);
    expect_contains(r.out, "\"ok\": false");
    assert_int_not_equal(access(dst_index, F_OK), 0);
    run_free(&r);
    RUN_STATUS(r, 2, "--json", "ls", dir);
    expect_contains(r.err, "unknown command '--json' (options go after the "
                           "command, e.g. ckpt ls DIR --json)");
    run_free(&r);
    /* the state file given for the checkpoint it names: the tool's own
     * advice (the library's names ckpt_latest_checkpoint, a C function) */
    snprintf(want, sizeof(want),
             "%s is a directory's state file, not a checkpoint: give its "
             "directory (%s) for the checkpoint it names, or a checkpoint "
             "prefix",
             state_file, dir);
    {
        static const char *const cmds[] = {"inspect", "verify", "diff",
                                           "repack"};
        for (size_t i = 0; i < 4; i++) {
            const char *second = i < 2 ? NULL : i == 2 ? prefix : dst;
            const char *args[] = {cmds[i], state_file, second, NULL};
            r = cli_run_prog(CKPT_CLI_PATH, NULL, args);
            expect_status(&r, 2);
            expect_contains(r.err, want);
            expect_lacks(r.err, "ckpt_latest_checkpoint");
            run_free(&r);
        }
    }
    RUN(r, "inspect", dir, "--tensor", "x"); /* a directory still works */
    expect_lacks(r.err, "state file");
    run_free(&r);
    write_text(dir, "notes.txt", "not a checkpoint\n");
    {
        char *notes = test_path(dir, "notes.txt");
        RUN_STATUS(r, 2, "inspect", notes);
        expect_contains(r.err, "notes.txt is a file, not a checkpoint: give a "
                               "checkpoint prefix (its files' name before "
                               ".index) or a checkpoint directory");
        run_free(&r);
        free(notes);
    }
    free(prefix);
    free(index);
    free(state_file);
    free(dst);
    free(dst_index);
    test_remove_tree(dir);
}

/* "ok" is in every command's --json document, true exactly when the exit
 * status is 0: ls, inspect and diff once had none, so `jq -e .ok` failed
 * on their successes (verify's, repack's and the failure document had it). */
static void expect_ok(const cli_run *r, int status)
{
    json_object *root;
    expect_status(r, status);
    root = parse_json(r->out);
    if (json_object_get_boolean(jget(root, "ok")) != (status == 0))
        fail_msg("\"ok\" is not %s with exit status %d: %s",
                 status == 0 ? "true" : "false", status, r->out);
    json_object_put(root);
}

static void test_json_ok_mirrors_exit_status(void **state)
{
    char *dir = test_make_temp_dir();
    char *prefix = test_path(dir, "typed");
    char *other = test_path(dir, "other");
    cli_run r;
    (void)state;
    write_typed_checkpoint(prefix);
    write_text(dir, "checkpoint", "model_checkpoint_path: \"typed\"\n");
    RUN(r, "ls", dir, "--json");
    expect_ok(&r, 0);
    run_free(&r);
    RUN(r, "inspect", dir, "--json", "--values");
    expect_ok(&r, 0);
    run_free(&r);
    RUN(r, "inspect", dir, "--json", "--tensor", "f32");
    expect_ok(&r, 0);
    run_free(&r);
    RUN(r, "verify", dir, "--json");
    expect_ok(&r, 0);
    run_free(&r);
    RUN(r, "diff", prefix, dir, "--json");
    expect_ok(&r, 0);
    run_free(&r);
    RUN(r, "repack", prefix, other, "--exclude", "^f32$", "--json");
    expect_ok(&r, 0);
    run_free(&r);
    RUN(r, "diff", prefix, other, "--json");
    expect_ok(&r, 1);
    run_free(&r);
    RUN(r, "ls", prefix, "--json");
    expect_ok(&r, 2);
    run_free(&r);
    free(prefix);
    free(other);
    test_remove_tree(dir);
}

/* "--" ends the options in every command, as in POSIX utilities: a path
 * starting with '-' follows it, and an option after it is an operand.
 * repack refused it ("unknown option '--'"), and ls, verify and inspect
 * took only the next argument as the path and read options past it, so
 * `ckpt ls -- d --json` printed JSON that main, which stops at "--",
 * would not have asked for on a usage error. */
static void test_double_dash_ends_options(void **state)
{
    static const struct {
        const char *args[6];
        int status;
        const char *out, *err;
    } cases[] = {
        {{"ls", "--", "-d", NULL}, 0, "latest", ""},
        {{"verify", "--", "-d", NULL}, 0, "-d/typed: OK", ""},
        {{"inspect", "--values=1", "--", "-d", NULL}, 0, "f32", ""},
        {{"diff", "--", "-d", "-d/typed", NULL}, 0, "equal", ""},
        {{"repack", "--", "-d/typed", "-copy", NULL}, 0, "-> -copy", ""},
        {{"ls", "--", "-d", "--json", NULL},
         2,
         "",
         "ckpt ls: unexpected argument '--json'"},
        {{"verify", "--", "-d", "--json", NULL},
         2,
         "",
         "ckpt verify: unexpected argument '--json'"},
        {{"inspect", "--", "-d", "--values", NULL},
         2,
         "",
         "ckpt inspect: unexpected argument '--values'"},
        {{"repack", "--", "-d/typed", "x", "--json", NULL},
         2,
         "",
         "ckpt repack: unexpected argument '--json'"},
        {{"diff", "--", "-d", "-d", "--json", NULL},
         2,
         "",
         "ckpt diff: unexpected argument '--json'"},
    };
    char *dir = test_make_temp_dir();
    char *sub = test_path(dir, "-d");
    char *prefix = test_path(sub, "typed");
    char *copy = test_path(dir, "-copy.index");
    (void)state;
    assert_int_equal(mkdir(sub, 0755), 0);
    write_typed_checkpoint(prefix);
    write_text(sub, "checkpoint", "model_checkpoint_path: \"typed\"\n");
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        cli_run r = cli_run_prog(CKPT_CLI_PATH, dir, cases[i].args);
        expect_status(&r, cases[i].status);
        if (cases[i].out[0])
            expect_contains(r.out, cases[i].out);
        else
            assert_string_equal(r.out, "");
        expect_contains(r.err, cases[i].err);
        run_free(&r);
    }
    assert_int_equal(access(copy, F_OK), 0);
    free(copy);
    free(prefix);
    free(sub);
    test_remove_tree(dir);
}

static void test_inspect_value_formats(void **state)
{
    char *dir = test_make_temp_dir();
    char *prefix = test_path(dir, "typed");
    json_object *root, *v;
    cli_run r;
    (void)state;
    write_typed_checkpoint(prefix);
    RUN_STATUS(r, 0, "inspect", prefix, "--json", "--values=all");
    root = parse_json(r.out);
    v = jget(find_tensor(root, "f32"), "values");
    assert_true(jfloat(v, 0) == 0.1f);
    assert_true(jfloat(v, 2) == 1e-8f);
    v = jget(find_tensor(root, "f64"), "values");
    assert_true(json_object_get_double(json_object_array_get_idx(v, 0)) == 0.1);
    assert_true(json_object_get_double(json_object_array_get_idx(v, 1)) ==
                -1e300);
    v = jget(find_tensor(root, "i8"), "values");
    assert_int_equal(jint(v, 0), -128);
    assert_int_equal(jint(v, 2), 127);
    v = jget(find_tensor(root, "u16"), "values");
    assert_int_equal(jint(v, 1), 65535);
    v = jget(find_tensor(root, "i64"), "values");
    assert_true(jint(v, 0) == INT64_MIN);
    assert_true(jint(v, 1) == INT64_MAX);
    v = jget(find_tensor(root, "u64"), "values");
    assert_true(json_object_get_uint64(json_object_array_get_idx(v, 1)) ==
                UINT64_MAX);
    v = jget(find_tensor(root, "bool"), "values");
    assert_true(json_object_is_type(json_object_array_get_idx(v, 0),
                                    json_type_boolean));
    assert_true(json_object_get_boolean(json_object_array_get_idx(v, 0)));
    assert_false(json_object_get_boolean(json_object_array_get_idx(v, 1)));
    v = jget(find_tensor(root, "half"), "values");
    assert_string_equal(
        json_object_get_string(jget(find_tensor(root, "half"), "dtype")),
        "float16");
    assert_true(jfloat(v, 0) == 1.5f);
    assert_true(jfloat(v, 1) == -2.0f);
    assert_string_equal(json_object_get_string(json_object_array_get_idx(v, 2)),
                        "inf");
    v = jget(find_tensor(root, "bf16"), "values");
    assert_true(jfloat(v, 0) == 1.0f);
    assert_true(jfloat(v, 1) == 3.140625f);
    v = jget(find_tensor(root, "c64"), "values");
    assert_true(jfloat(json_object_array_get_idx(v, 0), 1) == -2.0f);
    assert_true(jfloat(json_object_array_get_idx(v, 1), 0) == 0.5f);
    v = jget(find_tensor(root, "naninf"), "values");
    assert_string_equal(json_object_get_string(json_object_array_get_idx(v, 0)),
                        "nan");
    assert_string_equal(json_object_get_string(json_object_array_get_idx(v, 1)),
                        "-inf");
    v = jget(find_tensor(root, "scalar"), "values");
    assert_int_equal(json_object_array_length(v), 1);
    assert_int_equal(jint(v, 0), 7);
    v = jget(find_tensor(root, "str"), "values");
    assert_string_equal(json_object_get_string(json_object_array_get_idx(v, 0)),
                        "a\"b\n");
    /* not UTF-8: byte by byte as U+0000..U+00FF */
    assert_string_equal(json_object_get_string(json_object_array_get_idx(v, 1)),
                        "\xc3\xbf\x01");
    assert_string_equal(json_object_get_string(json_object_array_get_idx(v, 2)),
                        "");
    json_object_put(root);
    run_free(&r);

    RUN_STATUS(r, 0, "inspect", prefix, "--values=all");
    expect_contains(r.out, "    [0.100000001, -2.5, 9.99999994e-09]\n");
    expect_contains(r.out,
                    "    [0.10000000000000001, -1.0000000000000001e+300]\n");
    expect_contains(r.out, "    [-128, 0, 127]\n");
    expect_contains(r.out, "    [-9223372036854775808, 9223372036854775807]\n");
    expect_contains(r.out, "    [0, 18446744073709551615]\n");
    expect_contains(r.out, "    [true, false]\n");
    expect_contains(r.out, "    [1.5, -2, inf]\n");
    expect_contains(r.out, "    [1, 3.140625]\n");
    expect_contains(r.out, "    [(1,-2), (0.5,0.25)]\n");
    expect_contains(r.out, "    [nan, -inf]\n");
    expect_contains(r.out, "    7\n");
    expect_contains(r.out, "    [\"a\\\"b\\n\", \"\\xff\\x01\", \"\"]\n");
    expect_contains(r.out, "\nscalar  int32 ");
    run_free(&r);

    RUN_STATUS(r, 0, "inspect", prefix, "--values=1", "--tensor", "f32");
    expect_contains(r.out, "    [0.100000001, ...]\n");
    run_free(&r);
    RUN_STATUS(r, 0, "inspect", prefix, "--values=0", "--tensor", "f32",
               "--json");
    root = parse_json(r.out);
    assert_int_equal(
        json_object_array_length(jget(find_tensor(root, "f32"), "values")), 0);
    json_object_put(root);
    run_free(&r);
    free(prefix);
    test_remove_tree(dir);
}

/* ---- the quick-start example --------------------------------------------- */

/* ---- output that cannot be written --------------------------------------- */

/* In the child: stdout on /dev/full (arg NULL) or closed (arg non-NULL). */
static void spoil_stdout(const void *closed)
{
    int fd;
    if (closed) {
        close(1);
        return;
    }
    fd = open("/dev/full", O_WRONLY);
    if (fd >= 0)
        dup2(fd, 1);
}

/* A listing, an inspection or a verification whose stdout cannot be
 * written says so and exits 2, text and --json alike: a script writing
 * `ckpt ls --json dir > f` onto a full disk must not see success. */
static void test_unwritable_stdout(void **state)
{
    static const int closed = 1;
    char *dir = test_make_temp_dir();
    char *prefix = test_path(dir, "typed");
    const char *const cases[][4] = {{"ls", dir, NULL, NULL},
                                    {"ls", dir, "--json", NULL},
                                    {"inspect", prefix, "--values=2", NULL},
                                    {"verify", prefix, "--json", NULL}};
    (void)state;
    write_typed_checkpoint(prefix);
    if (access("/dev/full", W_OK) != 0) {
        test_remove_tree(dir);
        free(prefix);
        skip();
    }
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        for (int c = 0; c < 2; c++) {
            cli_run r = cli_run_with(CKPT_CLI_PATH, NULL, cases[i],
                                     spoil_stdout, c ? &closed : NULL);
            expect_status(&r, 2);
            expect_contains(r.err, "ckpt: write error on standard output: ");
            expect_contains(r.err, c ? "Bad file descriptor"
                                     : "No space left on device");
            run_free(&r);
        }
    }
    test_remove_tree(dir);
    free(prefix);
}

static void test_example_write_checkpoint(void **state)
{
#ifdef CKPT_EXAMPLE_WRITE_CHECKPOINT
    char *dir = test_make_temp_dir();
    char *ckdir = test_path(dir, "runs/demo-ckpt");
    const char *args[] = {ckdir, NULL};
    ckpt_state st = CKPT_STATE_INIT;
    json_object *root, *list, *v;
    cli_run r;
    (void)state;
    r = cli_run_prog(CKPT_EXAMPLE_WRITE_CHECKPOINT, NULL, args);
    expect_status(&r, 0);
    expect_contains(r.out, "model.ckpt-300\n");
    run_free(&r);
    assert_ckpt_ok(ckpt_state_read(&st, NULL, ckdir));
    assert_string_equal(st.model_checkpoint_path, "model.ckpt-300");
    assert_int_equal(st.num_paths, 3);
    assert_int_equal(st.num_timestamps, 3);
    assert_true(st.timestamps[0] <= st.timestamps[1] &&
                st.timestamps[1] <= st.timestamps[2]);
    assert_true(st.last_preserved_timestamp > 0 &&
                st.last_preserved_timestamp <= st.timestamps[0]);
    ckpt_state_dispose(&st);
    RUN_STATUS(r, 0, "ls", ckdir, "--json");
    root = parse_json(r.out);
    list = jget(root, "checkpoints");
    assert_int_equal(json_object_array_length(list), 3);
    for (size_t i = 0; i < 3; i++) {
        json_object *c = json_object_array_get_idx(list, i);
        assert_int_equal(json_object_get_int64(jget(c, "step")),
                         100 * (int64_t)(i + 1));
        assert_true(json_object_get_boolean(jget(c, "complete")));
        assert_string_equal(json_object_get_string(jget(c, "time_source")),
                            "state");
    }
    assert_string_equal(json_object_get_string(jget(root, "latest")),
                        "model.ckpt-300");
    assert_int_equal(json_object_array_length(jget(root, "stray")), 0);
    json_object_put(root);
    run_free(&r);
    RUN_STATUS(r, 0, "inspect", ckdir, "--json", "--values=all");
    root = parse_json(r.out);
    assert_int_equal(json_object_array_length(jget(root, "tensors")), 7);
    v = jget(find_tensor(root, "global_step"), "values");
    assert_int_equal(jint(v, 0), 300);
    v = jget(find_tensor(root, "vocab"), "values");
    assert_int_equal(json_object_array_length(v), 4);
    assert_string_equal(json_object_get_string(json_object_array_get_idx(v, 2)),
                        "w\xc3\xb6rld");
    assert_string_equal(json_object_get_string(json_object_array_get_idx(v, 3)),
                        "tab\there");
    json_object_put(root);
    run_free(&r);
    RUN_STATUS(r, 0, "verify", ckdir);
    run_free(&r);
    free(ckdir);
    test_remove_tree(dir);
#else
    (void)state;
    skip();
#endif
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_help_and_version),
        cmocka_unit_test(test_help_and_version_json),
        cmocka_unit_test(test_usage_errors),
        cmocka_unit_test(test_json_usage_errors),
        cmocka_unit_test(test_double_dash_ends_options),
        cmocka_unit_test(test_missing_paths),
        cmocka_unit_test(test_inspect_vectors_json),
        cmocka_unit_test(test_inspect_vectors_text),
        cmocka_unit_test(test_inspect_one_tensor_values),
        cmocka_unit_test(test_verify_vectors),
        cmocka_unit_test(test_ls_vectors),
        cmocka_unit_test(test_ls_strays_and_incomplete),
        cmocka_unit_test(test_ls_shard_out_of_range_is_stray),
        cmocka_unit_test(test_ls_data_names_past_five_digits),
        cmocka_unit_test(test_ls_shards),
        cmocka_unit_test(test_verify_flipped_data_byte),
        cmocka_unit_test(test_verify_damaged_index),
        cmocka_unit_test(test_repack_vectors),
        cmocka_unit_test(test_repack_filters),
        cmocka_unit_test(test_repack_json),
        cmocka_unit_test(test_repack_counts_written_bytes),
        cmocka_unit_test(test_repack_removes_stale_temps),
        cmocka_unit_test(test_repack_missing_destination_directory),
        cmocka_unit_test(test_messages_bounded),
        cmocka_unit_test(test_repack_past_file_size_limit),
        cmocka_unit_test(test_inspect_value_formats),
        cmocka_unit_test(test_example_write_checkpoint),
        cmocka_unit_test(test_prefix_directory_mixups),
        cmocka_unit_test(test_json_ok_mirrors_exit_status),
        cmocka_unit_test(test_unwritable_stdout),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
