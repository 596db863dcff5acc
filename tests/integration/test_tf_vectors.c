/* tests/integration/test_tf_vectors.c - every checkpoint written by
 * TensorFlow in ../shared/testdata/tf (skipped when absent) opens, lists
 * exactly the entries shared/testdata/tf/README.md describes (names,
 * dtypes, shapes, shards, offsets, sizes, CRCs where listed), reads back the
 * listed values and passes ckpt_bundle_reader_verify. */
#include "test_util.h"

#include "util/crc32c.h"

#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NO_CRC 0xffffffffu /* "not listed" (never a real masked CRC here) */

/* One expected entry. Values are the README's decimals, as text: a float
 * must equal (float)value, or lie within half a unit of the last printed
 * decimal (the README prints some values rounded to 8 decimals). */
typedef struct expect {
    const char *name;
    int dtype;
    int rank; /* -1: do not check the shape */
    int64_t dims[4];
    int shard;
    int64_t offset; /* -1: not listed */
    int64_t size;   /* -1: not listed */
    uint32_t crc;
    const char *values[5]; /* leading elements; NULL-terminated */
} expect;

static char *vector_prefix(const char *dir, const char *prefix)
{
    char *d = test_tf_vector(dir);
    char *p;
    size_t n;
    if (!d)
        return NULL;
    n = strlen(d) + strlen(prefix) + 2;
    p = malloc(n);
    assert_non_null(p);
    snprintf(p, n, "%s/%s", d, prefix);
    free(d);
    return p;
}

static void check_float(float got, const char *text, const char *name)
{
    double want = strtod(text, NULL);
    const char *dot = strchr(text, '.');
    int decimals = 0;
    if (got == (float)want)
        return;
    if (dot)
        decimals = (int)strlen(dot + 1);
    if (fabs((double)got - want) <= 0.5 * pow(10.0, -decimals) * 1.000001)
        return;
    fail_msg("tensor '%s': got %.9g, want %s", name, (double)got, text);
}

static void check_values(ckpt_bundle_reader *r, const expect *x,
                         const ckpt_tensor_entry *e)
{
    size_t n = 0;
    void *buf;
    while (n < 5 && x->values[n])
        n++;
    if (n == 0 || x->dtype == CKPT_DT_STRING)
        return;
    buf = malloc((size_t)e->size);
    assert_non_null(buf);
    assert_ckpt_ok(ckpt_bundle_reader_read(r, x->name, buf, (size_t)e->size));
    for (size_t i = 0; i < n; i++) {
        if (x->dtype == CKPT_DT_FLOAT) {
            check_float(((float *)buf)[i], x->values[i], x->name);
        } else if (x->dtype == CKPT_DT_INT64) {
            assert_int_equal(((int64_t *)buf)[i],
                             strtoll(x->values[i], NULL, 10));
        } else if (x->dtype == CKPT_DT_INT32) {
            assert_int_equal(((int32_t *)buf)[i],
                             strtol(x->values[i], NULL, 10));
        } else {
            fail_msg("no value check for dtype %d", x->dtype);
        }
    }
    free(buf);
}

static void check_entry(ckpt_bundle_reader *r, const expect *x)
{
    const ckpt_tensor_entry *e = NULL;
    int rc = ckpt_bundle_reader_find(&e, r, x->name);
    if (rc != 0)
        fail_msg("tensor '%s' missing: %s", x->name,
                 ckpt_error_last()->message);
    assert_int_equal(e->name_len, strlen(x->name));
    assert_int_equal(e->dtype, x->dtype);
    if (x->rank >= 0) {
        assert_int_equal(e->shape.rank, x->rank);
        for (int i = 0; i < x->rank; i++)
            assert_int_equal(e->shape.dims[i], x->dims[i]);
    }
    assert_int_equal(e->shard_id, x->shard);
    if (x->offset >= 0)
        assert_int_equal(e->offset, x->offset);
    if (x->size >= 0)
        assert_int_equal(e->size, x->size);
    if (x->crc != NO_CRC)
        assert_int_equal(e->crc32c, x->crc);
    assert_int_equal(e->num_slices, 0);
    assert_false(e->is_slice_key);
    check_values(r, x, e);
}

static ckpt_bundle_reader *open_vector(const char *prefix, size_t count,
                                       int shards)
{
    ckpt_bundle_reader *r = NULL;
    assert_ckpt_ok(ckpt_bundle_reader_open(&r, prefix, NULL));
    assert_int_equal(ckpt_bundle_reader_count(r), count);
    assert_int_equal(ckpt_bundle_reader_num_shards(r), shards);
    /* entries come in strictly increasing bytewise order */
    for (size_t i = 1; i < count; i++) {
        const ckpt_tensor_entry *a = ckpt_bundle_reader_entry(r, i - 1);
        const ckpt_tensor_entry *b = ckpt_bundle_reader_entry(r, i);
        size_t m = a->name_len < b->name_len ? a->name_len : b->name_len;
        int c = memcmp(a->name, b->name, m);
        assert_true(c < 0 || (c == 0 && a->name_len < b->name_len));
    }
    return r;
}

static void check_all(ckpt_bundle_reader *r, const expect *x, size_t n)
{
    for (size_t i = 0; i < n; i++)
        check_entry(r, &x[i]);
    assert_ckpt_ok(ckpt_bundle_reader_verify(r));
}

/* A scalar string entry: one element of `len` bytes starting with `head`. */
static void check_string(ckpt_bundle_reader *r, const char *name, size_t len,
                         const uint8_t *head, size_t head_len)
{
    ckpt_string_array a;
    assert_ckpt_ok(ckpt_bundle_reader_read_strings(r, name, &a));
    assert_int_equal(a.count, 1);
    assert_int_equal(a.strings[0].len, len);
    if (head_len)
        assert_memory_equal(a.strings[0].ptr, head, head_len);
    ckpt_string_array_dispose(&a);
}

#define COUNT(a) (sizeof(a) / sizeof((a)[0]))
#define S0                                                                     \
    0,                                                                         \
    {                                                                          \
        0                                                                      \
    }
#define S1(a)                                                                  \
    1,                                                                         \
    {                                                                          \
        a                                                                      \
    }
#define S2(a, b)                                                               \
    2,                                                                         \
    {                                                                          \
        a, b                                                                   \
    }

/* ---- serving_half_plus_two_cpu ------------------------------------------- */

static void test_serving_half_plus_two_cpu(void **state)
{
    static const expect x[] = {
        {"a", CKPT_DT_FLOAT, S0, 0, 0, 4, 0x1f273806, {"0.5"}},
        {"a2", CKPT_DT_FLOAT, S0, 0, 4, 4, 0x1f273806, {"0.5"}},
        {"b", CKPT_DT_FLOAT, S0, 0, 8, 4, 0x4f78fd10, {"2.0"}},
        {"c", CKPT_DT_FLOAT, S0, 0, 12, 4, 0xc382d6ef, {"3.0"}},
        {"c2", CKPT_DT_FLOAT, S0, 0, 16, 4, 0xc382d6ef, {"3.0"}},
    };
    char *prefix = vector_prefix("serving_half_plus_two_cpu", "variables");
    ckpt_bundle_reader *r;
    (void)state;
    if (!prefix)
        return;
    r = open_vector(prefix, 5, 1);
    for (size_t i = 0; i < 5; i++)
        assert_string_equal(ckpt_bundle_reader_entry(r, i)->name, x[i].name);
    check_all(r, x, COUNT(x));
    ckpt_bundle_reader_free(r);
    free(prefix);
}

/* ---- serving_half_plus_two_tf2_cpu --------------------------------------- */

static void test_serving_half_plus_two_tf2_cpu(void **state)
{
    static const expect x[] = {
        {"_CHECKPOINTABLE_OBJECT_GRAPH",
         CKPT_DT_STRING,
         S0,
         0,
         12,
         619,
         0x47b7d190,
         {NULL}},
        {"a/.ATTRIBUTES/VARIABLE_VALUE",
         CKPT_DT_FLOAT,
         S0,
         0,
         0,
         4,
         NO_CRC,
         {"0.5"}},
        {"b/.ATTRIBUTES/VARIABLE_VALUE",
         CKPT_DT_FLOAT,
         S0,
         0,
         4,
         4,
         NO_CRC,
         {"2.0"}},
        {"c/.ATTRIBUTES/VARIABLE_VALUE",
         CKPT_DT_FLOAT,
         S0,
         0,
         8,
         4,
         NO_CRC,
         {"3.0"}},
    };
    static const uint8_t head[] = {0x0a, 0x98, 0x01, 0x0a, 0x05,
                                   0x12, 0x01, 0x61, 0x08, 0x01};
    char *prefix = vector_prefix("serving_half_plus_two_tf2_cpu", "variables");
    ckpt_bundle_reader *r;
    const ckpt_tensor_entry *e;
    ckpt_buf rec = CKPT_BUF_INIT;
    (void)state;
    if (!prefix)
        return;
    r = open_vector(prefix, 4, 1);
    check_all(r, x, COUNT(x));
    check_string(r, "_CHECKPOINTABLE_OBJECT_GRAPH", 613, head, sizeof(head));
    assert_ckpt_ok(
        ckpt_bundle_reader_find(&e, r, "_CHECKPOINTABLE_OBJECT_GRAPH"));
    assert_ckpt_ok(ckpt_bundle_reader_read_record(r, e, &rec));
    assert_int_equal(rec.size, 619);
    assert_int_equal((uint8_t)rec.ptr[0], 0xe5);
    assert_int_equal((uint8_t)rec.ptr[1], 0x04);
    assert_memory_equal(rec.ptr + 6, head, sizeof(head));
    ckpt_buf_dispose(&rec);
    ckpt_bundle_reader_free(r);
    free(prefix);
}

/* ---- tf2onnx_regression_ckpt --------------------------------------------- */

static void test_tf2onnx_regression_ckpt(void **state)
{
    static const expect x[] = {
        {"W", CKPT_DT_FLOAT, S0, 0, 0, 4, 0x6f71ed74, {"0.21396178"}},
        {"b", CKPT_DT_FLOAT, S0, 0, 4, 4, 0x8350bdf4, {"1.0495254"}},
    };
    char *prefix = vector_prefix("tf2onnx_regression_ckpt", "model");
    ckpt_bundle_reader *r;
    float w = 0;
    (void)state;
    if (!prefix)
        return;
    r = open_vector(prefix, 2, 1);
    check_all(r, x, COUNT(x));
    assert_ckpt_ok(ckpt_bundle_reader_read(r, "W", &w, sizeof(w)));
    assert_true(w == (float)0.21396178);
    ckpt_bundle_reader_free(r);
    free(prefix);
}

/* ---- rust_regression_savedmodel ------------------------------------------ */

static void test_rust_regression_savedmodel(void **state)
{
    static const expect x[] = {
        {"_CHECKPOINTABLE_OBJECT_GRAPH",
         CKPT_DT_STRING,
         S0,
         0,
         28,
         537,
         NO_CRC,
         {NULL}},
        {"b/.ATTRIBUTES/VARIABLE_VALUE",
         CKPT_DT_FLOAT,
         S1(1),
         0,
         4,
         4,
         0x3a117ba6,
         {"0.0"}},
        {"optimizer/decay/.ATTRIBUTES/VARIABLE_VALUE",
         CKPT_DT_FLOAT,
         S0,
         0,
         16,
         4,
         NO_CRC,
         {"0.0"}},
        {"optimizer/iter/.ATTRIBUTES/VARIABLE_VALUE",
         CKPT_DT_INT64,
         S0,
         0,
         8,
         8,
         NO_CRC,
         {"0"}},
        {"optimizer/learning_rate/.ATTRIBUTES/VARIABLE_VALUE",
         CKPT_DT_FLOAT,
         S0,
         0,
         20,
         4,
         NO_CRC,
         {"0.5"}},
        {"optimizer/momentum/.ATTRIBUTES/VARIABLE_VALUE",
         CKPT_DT_FLOAT,
         S0,
         0,
         24,
         4,
         NO_CRC,
         {"0.0"}},
        {"w/.ATTRIBUTES/VARIABLE_VALUE",
         CKPT_DT_FLOAT,
         S1(1),
         0,
         0,
         4,
         NO_CRC,
         {"0.20429754"}},
    };
    char *prefix = vector_prefix("rust_regression_savedmodel", "variables");
    ckpt_bundle_reader *r;
    (void)state;
    if (!prefix)
        return;
    r = open_vector(prefix, 7, 1);
    check_all(r, x, COUNT(x));
    check_string(r, "_CHECKPOINTABLE_OBJECT_GRAPH", 531, NULL, 0);
    ckpt_bundle_reader_free(r);
    free(prefix);
}

/* ---- tictactoe_ckpt_manager ---------------------------------------------- */

#define TTT "/.ATTRIBUTES/VARIABLE_VALUE"

static void check_tictactoe(const char *ckpt, const char *save_counter,
                            const char *iterations, bool values)
{
    static const char *const head[] = {"-0.10988840", "-0.10116802",
                                       "0.06663860", "0.0", "0.0"};
    expect x[] = {
        {"_CHECKPOINTABLE_OBJECT_GRAPH",
         CKPT_DT_STRING,
         S0,
         0,
         2196,
         2311,
         NO_CRC,
         {NULL}},
        {"net/layer_with_weights-0/bias" TTT,
         CKPT_DT_FLOAT,
         S1(9),
         0,
         348,
         36,
         NO_CRC,
         {NULL}},
        {"net/layer_with_weights-0/kernel" TTT,
         CKPT_DT_FLOAT,
         S2(9, 9),
         0,
         24,
         324,
         NO_CRC,
         {NULL}},
        {"net/layer_with_weights-1/bias" TTT,
         CKPT_DT_FLOAT,
         S1(9),
         0,
         708,
         36,
         NO_CRC,
         {NULL}},
        {"net/layer_with_weights-1/kernel" TTT,
         CKPT_DT_FLOAT,
         S2(9, 9),
         0,
         384,
         324,
         NO_CRC,
         {NULL}},
        {"net/optimizer/_iterations" TTT,
         CKPT_DT_INT64,
         S0,
         0,
         744,
         8,
         NO_CRC,
         {iterations}},
        {"net/optimizer/_learning_rate" TTT,
         CKPT_DT_FLOAT,
         S0,
         0,
         752,
         4,
         NO_CRC,
         {"0.001"}},
        {"net/optimizer/_variables/1" TTT,
         CKPT_DT_FLOAT,
         S2(9, 9),
         0,
         756,
         324,
         NO_CRC,
         {NULL}},
        {"net/optimizer/_variables/2" TTT,
         CKPT_DT_FLOAT,
         S2(9, 9),
         0,
         1080,
         324,
         NO_CRC,
         {NULL}},
        {"net/optimizer/_variables/3" TTT,
         CKPT_DT_FLOAT,
         S1(9),
         0,
         1404,
         36,
         NO_CRC,
         {NULL}},
        {"net/optimizer/_variables/4" TTT,
         CKPT_DT_FLOAT,
         S1(9),
         0,
         1440,
         36,
         NO_CRC,
         {NULL}},
        {"net/optimizer/_variables/5" TTT,
         CKPT_DT_FLOAT,
         S2(9, 9),
         0,
         1476,
         324,
         NO_CRC,
         {NULL}},
        {"net/optimizer/_variables/6" TTT,
         CKPT_DT_FLOAT,
         S2(9, 9),
         0,
         1800,
         324,
         NO_CRC,
         {NULL}},
        {"net/optimizer/_variables/7" TTT,
         CKPT_DT_FLOAT,
         S1(9),
         0,
         2124,
         36,
         NO_CRC,
         {NULL}},
        {"net/optimizer/_variables/8" TTT,
         CKPT_DT_FLOAT,
         S1(9),
         0,
         2160,
         36,
         NO_CRC,
         {NULL}},
        {"optimizer/_iterations" TTT,
         CKPT_DT_INT64,
         S0,
         0,
         12,
         8,
         NO_CRC,
         {"0"}},
        {"optimizer/_learning_rate" TTT,
         CKPT_DT_FLOAT,
         S0,
         0,
         20,
         4,
         NO_CRC,
         {"0.001"}},
        {"save_counter" TTT,
         CKPT_DT_INT64,
         S0,
         0,
         4,
         8,
         NO_CRC,
         {save_counter}},
        {"step" TTT, CKPT_DT_INT32, S0, 0, 0, 4, NO_CRC, {"1"}},
    };
    char *prefix = vector_prefix("tictactoe_ckpt_manager", ckpt);
    ckpt_bundle_reader *r;
    if (!prefix)
        return;
    if (values) {
        for (int i = 0; i < 5; i++)
            x[1].values[i] = head[i];
        x[2].values[0] = "0.38064981";
        x[2].values[1] = "-0.50415832";
        x[2].values[2] = "0.42943814";
        x[3].values[0] = "-0.16004235";
        x[3].values[1] = "-0.03662485";
        x[3].values[2] = "-0.13251591";
        x[4].values[0] = "0.30496299";
        x[4].values[1] = "0.38666987";
    }
    r = open_vector(prefix, COUNT(x), 1);
    for (size_t i = 0; i < COUNT(x); i++)
        assert_string_equal(ckpt_bundle_reader_entry(r, i)->name, x[i].name);
    check_all(r, x, COUNT(x));
    check_string(r, "_CHECKPOINTABLE_OBJECT_GRAPH", 2311 - 6, NULL, 0);
    ckpt_bundle_reader_free(r);
    free(prefix);
}

static void test_tictactoe_ckpt_17(void **state)
{
    (void)state;
    check_tictactoe("ckpt-17", "17", "116", false);
}

static void test_tictactoe_ckpt_18(void **state)
{
    (void)state;
    check_tictactoe("ckpt-18", "18", "216", false);
}

static void test_tictactoe_ckpt_19(void **state)
{
    (void)state;
    check_tictactoe("ckpt-19", "19", "316", true);
}

/* ---- rl_collection_sharded ------------------------------------------------
 */

#define RL "/.ATTRIBUTES/VARIABLE_VALUE"

static void test_rl_collection_sharded(void **state)
{
    static const expect x[] = {
        {"_CHECKPOINTABLE_OBJECT_GRAPH",
         CKPT_DT_STRING,
         S0,
         0,
         8,
         2942,
         NO_CRC,
         {NULL}},
        {"save_counter" RL, CKPT_DT_INT64, S0, 0, 0, 8, NO_CRC, {"5"}},
        {"optimizer/iter" RL, CKPT_DT_INT64, S0, 1, 0, 8, NO_CRC, {"8442"}},
        {"optimizer/beta_1" RL, CKPT_DT_FLOAT, S0, 1, 8, 4, NO_CRC, {"0.9"}},
        {"optimizer/beta_2" RL, CKPT_DT_FLOAT, S0, 1, 12, 4, NO_CRC, {"0.999"}},
        {"optimizer/decay" RL, CKPT_DT_FLOAT, S0, 1, 16, 4, NO_CRC, {"0.0"}},
        {"optimizer/learning_rate" RL,
         CKPT_DT_FLOAT,
         S0,
         1,
         20,
         4,
         NO_CRC,
         {"0.001"}},
        {"model/layer-0/kernel" RL,
         CKPT_DT_FLOAT,
         4,
         {3, 3, 1, 32},
         1,
         24,
         1152,
         NO_CRC,
         {"-0.63762301", "-0.04879574", "-0.17946097"}},
        {"model/layer-0/bias" RL,
         CKPT_DT_FLOAT,
         S1(32),
         1,
         1176,
         128,
         NO_CRC,
         {"0.12003184", "-0.00486086"}},
        {"model/layer-2/kernel" RL,
         CKPT_DT_FLOAT,
         4,
         {3, 3, 32, 64},
         1,
         1304,
         73728,
         NO_CRC,
         {"0.11261854", "0.05105945"}},
        {"model/layer-2/bias" RL,
         CKPT_DT_FLOAT,
         S1(64),
         1,
         75032,
         256,
         NO_CRC,
         {"0.04256710", "-0.07847585"}},
        {"model/layer-5/kernel" RL,
         CKPT_DT_FLOAT,
         S2(1600, 64),
         1,
         75288,
         409600,
         NO_CRC,
         {"0.02976182", "0.03778385"}},
        {"model/layer-5/bias" RL,
         CKPT_DT_FLOAT,
         S1(64),
         1,
         484888,
         256,
         NO_CRC,
         {"-0.03269294", "-0.00886670"}},
        {"model/layer-6/kernel" RL,
         CKPT_DT_FLOAT,
         S2(64, 10),
         1,
         485144,
         2560,
         NO_CRC,
         {"0.01795398", "-0.27429202"}},
        {"model/layer-6/bias" RL,
         CKPT_DT_FLOAT,
         S1(10),
         1,
         487704,
         40,
         NO_CRC,
         {"0.01184279", "-0.01176491"}},
    };
    static const char *const layers[] = {"0", "2", "5", "6"};
    static const char *const parts[] = {"kernel", "bias"};
    char *prefix = vector_prefix("rl_collection_sharded", "ckpt-5");
    ckpt_bundle_reader *r;
    int64_t min_m = INT64_MAX, max_m = 0, min_v = INT64_MAX, max_v = 0;
    (void)state;
    if (!prefix)
        return;
    r = open_vector(prefix, 31, 2);
    check_all(r, x, COUNT(x));
    check_string(r, "_CHECKPOINTABLE_OBJECT_GRAPH", 2942 - 6, NULL, 0);
    /* the 16 Adam slots: shard 1, the shape of their variable */
    for (int l = 0; l < 4; l++) {
        for (int p = 0; p < 2; p++) {
            char var[128], slot[160];
            const ckpt_tensor_entry *ev, *es;
            snprintf(var, sizeof(var), "model/layer-%s/%s" RL, layers[l],
                     parts[p]);
            assert_ckpt_ok(ckpt_bundle_reader_find(&ev, r, var));
            for (int mv = 0; mv < 2; mv++) {
                snprintf(slot, sizeof(slot),
                         "model/layer-%s/%s/.OPTIMIZER_SLOT/optimizer/%s" RL,
                         layers[l], parts[p], mv ? "v" : "m");
                assert_ckpt_ok(ckpt_bundle_reader_find(&es, r, slot));
                assert_int_equal(es->dtype, CKPT_DT_FLOAT);
                assert_int_equal(es->shard_id, 1);
                assert_int_equal(es->size, ev->size);
                assert_int_equal(es->shape.rank, ev->shape.rank);
                assert_memory_equal(es->shape.dims, ev->shape.dims,
                                    sizeof(int64_t) * (size_t)ev->shape.rank);
                if (mv) {
                    min_v = es->offset < min_v ? es->offset : min_v;
                    max_v = es->offset > max_v ? es->offset : max_v;
                } else {
                    min_m = es->offset < min_m ? es->offset : min_m;
                    max_m = es->offset > max_m ? es->offset : max_m;
                }
            }
        }
    }
    assert_int_equal(min_m, 487744);
    assert_int_equal(max_m, 975424);
    assert_int_equal(min_v, 975464);
    assert_int_equal(max_v, 1463144);
    ckpt_bundle_reader_free(r);
    free(prefix);
}

/* ---- tfx_estimator_saver --------------------------------------------------
 */

#define LM "linear/linear_model/"

static const expect tfx_1000[] = {
    {"dnn/hiddenlayer_0/bias",
     CKPT_DT_FLOAT,
     S1(100),
     0,
     0,
     400,
     NO_CRC,
     {"-0.019179916", "-0.011307701", "0.0048053591"}},
    {"dnn/hiddenlayer_0/kernel",
     CKPT_DT_FLOAT,
     S2(3, 100),
     0,
     400,
     1200,
     0xe5e459d3,
     {"-0.047309123", "0.032589152", "0.1061868"}},
    {"dnn/hiddenlayer_1/bias",
     CKPT_DT_FLOAT,
     S1(70),
     0,
     1600,
     280,
     NO_CRC,
     {"-0.030970149", "-0.013754315", "-0.027918518"}},
    {"dnn/hiddenlayer_1/kernel",
     CKPT_DT_FLOAT,
     S2(100, 70),
     0,
     1880,
     28000,
     NO_CRC,
     {"-0.0008729049", "0.11724749", "-0.15438519"}},
    {"dnn/hiddenlayer_2/bias",
     CKPT_DT_FLOAT,
     S1(48),
     0,
     29880,
     192,
     NO_CRC,
     {"-0.017198998", "-0.037168439", "0.045811359"}},
    {"dnn/hiddenlayer_2/kernel",
     CKPT_DT_FLOAT,
     S2(70, 48),
     0,
     30072,
     13440,
     NO_CRC,
     {"-0.16602574", "0.098173574", "0.096008025"}},
    {"dnn/hiddenlayer_3/bias",
     CKPT_DT_FLOAT,
     S1(34),
     0,
     43512,
     136,
     NO_CRC,
     {"0.034635201", "-0.0049409168", "-0.0088409465"}},
    {"dnn/hiddenlayer_3/kernel",
     CKPT_DT_FLOAT,
     S2(48, 34),
     0,
     43648,
     6528,
     NO_CRC,
     {"-0.16944954", "-0.12613231", "-0.2124396"}},
    {"dnn/logits/bias",
     CKPT_DT_FLOAT,
     S1(1),
     0,
     50176,
     4,
     NO_CRC,
     {"-0.06889794"}},
    {"dnn/logits/kernel",
     CKPT_DT_FLOAT,
     S2(34, 1),
     0,
     50180,
     136,
     NO_CRC,
     {"-0.098953769", "-0.29134205", "0.058138061"}},
    {"global_step", CKPT_DT_INT64, S0, 0, 50316, 8, 0x9a119507, {"1000"}},
    {LM "bias_weights",
     CKPT_DT_FLOAT,
     S1(1),
     0,
     50324,
     4,
     NO_CRC,
     {"-0.14862005"}},
    {LM "company_xf/weights",
     CKPT_DT_FLOAT,
     S2(1010, 1),
     0,
     50328,
     4040,
     NO_CRC,
     {"-0.090951107", "-0.068427049", "-0.050299004"}},
    {LM "dropoff_latitude_xf/weights",
     CKPT_DT_FLOAT,
     S2(10, 1),
     0,
     54368,
     40,
     NO_CRC,
     {"-0.056749471", "-0.055497989", "-0.038702853"}},
    {LM "dropoff_longitude_xf/weights",
     CKPT_DT_FLOAT,
     S2(10, 1),
     0,
     54408,
     40,
     NO_CRC,
     {"-0.069441289", "-0.076437756", "-0.061871015"}},
    {LM "payment_type_xf/weights",
     CKPT_DT_FLOAT,
     S2(1010, 1),
     0,
     54448,
     4040,
     NO_CRC,
     {"-0.27339005", "0.35809308", "-0.023770623"}},
    {LM "pickup_latitude_xf/weights",
     CKPT_DT_FLOAT,
     S2(10, 1),
     0,
     58488,
     40,
     NO_CRC,
     {"-0.039480317", "-0.049993943", "-0.028236378"}},
    {LM "pickup_longitude_xf/weights",
     CKPT_DT_FLOAT,
     S2(10, 1),
     0,
     58528,
     40,
     NO_CRC,
     {"0.00034506776", "-0.11175992", "-0.067431904"}},
    {LM "trip_start_day_xf/weights",
     CKPT_DT_FLOAT,
     S2(31, 1),
     0,
     58568,
     124,
     NO_CRC,
     {"0.0", "-0.069390953", "-0.075118631"}},
    {LM "trip_start_hour_xf/weights",
     CKPT_DT_FLOAT,
     S2(24, 1),
     0,
     58692,
     96,
     NO_CRC,
     {"-0.025506189", "-0.016665282", "-0.011794795"}},
    {LM "trip_start_month_xf/weights",
     CKPT_DT_FLOAT,
     S2(12, 1),
     0,
     58788,
     48,
     NO_CRC,
     {"-0.037093632", "-0.053641539", "-0.047302365"}},
    {"training/Adagrad/decay", CKPT_DT_FLOAT, S0, 0, 58836, 4, NO_CRC, {"0.0"}},
    {"training/Adagrad/learning_rate",
     CKPT_DT_FLOAT,
     S0,
     0,
     109156,
     4,
     NO_CRC,
     {"0.001"}},
    {"training/Ftrl/beta", CKPT_DT_FLOAT, S0, 0, 109160, 4, NO_CRC, {"0.0"}},
    {"training/Ftrl/decay", CKPT_DT_FLOAT, S0, 0, 109164, 4, NO_CRC, {"0.0"}},
    {"training/Ftrl/iter", CKPT_DT_INT64, S0, 0, 109168, 8, NO_CRC, {"1000"}},
    {"training/Ftrl/l1_regularization_strength",
     CKPT_DT_FLOAT,
     S0,
     0,
     109176,
     4,
     NO_CRC,
     {"0.0"}},
    {"training/Ftrl/l2_regularization_strength",
     CKPT_DT_FLOAT,
     S0,
     0,
     109180,
     4,
     NO_CRC,
     {"0.0"}},
    {"training/Ftrl/learning_rate",
     CKPT_DT_FLOAT,
     S0,
     0,
     109184,
     4,
     NO_CRC,
     {"0.005"}},
    {"training/Ftrl/learning_rate_power",
     CKPT_DT_FLOAT,
     S0,
     0,
     109188,
     4,
     NO_CRC,
     {"-0.5"}},
    {"training/Adagrad/dnn/logits/bias/accumulator",
     CKPT_DT_FLOAT,
     S1(1),
     0,
     109016,
     4,
     NO_CRC,
     {"7.8989682"}},
    {"training/Ftrl/" LM "bias_weights/linear",
     CKPT_DT_FLOAT,
     S1(1),
     0,
     109196,
     4,
     NO_CRC,
     {"83.539642"}},
    {"training/Ftrl/" LM "trip_start_month_xf/weights/linear",
     CKPT_DT_FLOAT,
     S2(12, 1),
     0,
     126168,
     48,
     NO_CRC,
     {NULL}},
};

/* The per-checkpoint values of the README. */
static void check_tfx(const char *ckpt, const char *step, const char *bias,
                      const char *accum, const char *kernel0)
{
    expect per[] = {
        {"global_step", CKPT_DT_INT64, S0, 0, 50316, 8, NO_CRC, {step}},
        {"training/Ftrl/iter", CKPT_DT_INT64, S0, 0, 109168, 8, NO_CRC, {step}},
        {"dnn/logits/bias", CKPT_DT_FLOAT, S1(1), 0, 50176, 4, NO_CRC, {bias}},
        {"training/Adagrad/dnn/logits/bias/accumulator",
         CKPT_DT_FLOAT,
         S1(1),
         0,
         109016,
         4,
         NO_CRC,
         {accum}},
        {"dnn/hiddenlayer_0/kernel",
         CKPT_DT_FLOAT,
         S2(3, 100),
         0,
         400,
         1200,
         NO_CRC,
         {kernel0}},
    };
    char *prefix = vector_prefix("tfx_estimator_saver", ckpt);
    ckpt_bundle_reader *r;
    size_t slots_adagrad = 0, slots_ftrl = 0;
    int64_t end = 0;
    if (!prefix)
        return;
    r = open_vector(prefix, 60, 1);
    check_all(r, per, COUNT(per));
    /* every entry: float32 except the two step counters; records contiguous
     * in key order from 0 to 126216 */
    for (size_t i = 0; i < 60; i++) {
        const ckpt_tensor_entry *e = ckpt_bundle_reader_entry(r, i);
        bool is_step = !strcmp(e->name, "global_step") ||
                       !strcmp(e->name, "training/Ftrl/iter");
        assert_int_equal(e->dtype, is_step ? CKPT_DT_INT64 : CKPT_DT_FLOAT);
        assert_int_equal(e->offset, end);
        end += e->size;
        if (!strncmp(e->name, "training/Adagrad/dnn/", 21))
            slots_adagrad++;
        if (!strncmp(e->name, "training/Ftrl/linear/", 21))
            slots_ftrl++;
    }
    assert_int_equal(end, 126216);
    assert_int_equal(slots_adagrad, 10);
    assert_int_equal(slots_ftrl, 20);
    if (!strcmp(ckpt, "model.ckpt-1000"))
        check_all(r, tfx_1000, COUNT(tfx_1000));
    ckpt_bundle_reader_free(r);
    free(prefix);
}

static void test_tfx_ckpt_0(void **state)
{
    (void)state;
    check_tfx("model.ckpt-0", "0", "-0.040295251", "0.1", "-0.049375266");
}

static void test_tfx_ckpt_999(void **state)
{
    (void)state;
    check_tfx("model.ckpt-999", "999", "-0.068909496", "7.8979135",
              "-0.047315057");
}

static void test_tfx_ckpt_1000(void **state)
{
    (void)state;
    check_tfx("model.ckpt-1000", "1000", "-0.06889794", "7.8989682",
              "-0.047309123");
}

/* skip_data_checksums still reads the values; verify checks regardless. */
static void test_vectors_skip_checksums_option(void **state)
{
    char *prefix = vector_prefix("tf2onnx_regression_ckpt", "model");
    ckpt_bundle_reader_options o = CKPT_BUNDLE_READER_OPTIONS_INIT;
    ckpt_bundle_reader *r = NULL;
    float b = 0;
    (void)state;
    if (!prefix)
        return;
    o.skip_data_checksums = 1;
    assert_ckpt_ok(ckpt_bundle_reader_open(&r, prefix, &o));
    assert_ckpt_ok(ckpt_bundle_reader_read(r, "b", &b, sizeof(b)));
    assert_true(b == (float)1.0495254);
    assert_ckpt_ok(ckpt_bundle_reader_verify(r));
    ckpt_bundle_reader_free(r);
    free(prefix);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_serving_half_plus_two_cpu),
        cmocka_unit_test(test_serving_half_plus_two_tf2_cpu),
        cmocka_unit_test(test_tf2onnx_regression_ckpt),
        cmocka_unit_test(test_rust_regression_savedmodel),
        cmocka_unit_test(test_tictactoe_ckpt_17),
        cmocka_unit_test(test_tictactoe_ckpt_18),
        cmocka_unit_test(test_tictactoe_ckpt_19),
        cmocka_unit_test(test_rl_collection_sharded),
        cmocka_unit_test(test_tfx_ckpt_0),
        cmocka_unit_test(test_tfx_ckpt_999),
        cmocka_unit_test(test_tfx_ckpt_1000),
        cmocka_unit_test(test_vectors_skip_checksums_option),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
