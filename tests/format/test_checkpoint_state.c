/* Tests for the `checkpoint` state file: exact round trips of the state
 * files TensorFlow wrote, the tolerant text-format parser and its errors,
 * the writer's bytes (Python repr doubles, C escapes), atomic writes and
 * ckpt_latest_checkpoint on temporary directories. */
#include "python_repr_cases.h"
#include "test_util.h"

#include "common/internal.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* ---- helpers ------------------------------------------------------------- */

static int parse_str(ckpt_state *st, const char *text)
{
    return ckpt_state_parse(st, text, strlen(text), "dir/checkpoint");
}

static char *format_state(const ckpt_state *st)
{
    ckpt_buf b = CKPT_BUF_INIT;
    char *s;
    assert_ckpt_ok(ckpt_state_format(&b, st));
    s = strdup(b.ptr ? b.ptr : "");
    assert_non_null(s);
    ckpt_buf_dispose(&b);
    return s;
}

static void touch(const char *dir, const char *name)
{
    char *p = test_path(dir, name);
    test_write_file(p, "", 0);
    free(p);
}

static void write_text(const char *dir, const char *name, const char *text)
{
    char *p = test_path(dir, name);
    test_write_file(p, text, strlen(text));
    free(p);
}

/* ---- TensorFlow's files: parse, format, identical bytes ------------------ */

static void round_trip_vector(const char *vector, ckpt_state *st)
{
    char *dir = test_tf_vector(vector);
    char *path;
    uint8_t *bytes;
    size_t n = 0;
    ckpt_buf out = CKPT_BUF_INIT;
    if (!dir)
        return;
    path = test_path(dir, "checkpoint");
    bytes = test_read_file(path, &n);
    assert_non_null(bytes);
    assert_ckpt_ok(ckpt_state_parse(st, (const char *)bytes, n, path));
    assert_ckpt_ok(ckpt_state_format(&out, st));
    assert_int_equal(out.size, n);
    assert_memory_equal(out.ptr, bytes, n);
    ckpt_buf_dispose(&out);
    free(bytes);
    free(path);
    free(dir);
}

static void test_tf_tf2onnx_round_trip(void **state)
{
    ckpt_state st = CKPT_STATE_INIT;
    (void)state;
    round_trip_vector("tf2onnx_regression_ckpt", &st);
    assert_string_equal(st.model_checkpoint_path, "model");
    assert_int_equal(st.num_paths, 1);
    assert_string_equal(st.all_paths[0], "model");
    assert_int_equal(st.num_timestamps, 0);
    assert_true(st.last_preserved_timestamp == 0.0);
    ckpt_state_dispose(&st);
}

static void test_tf_tictactoe_round_trip(void **state)
{
    ckpt_state st = CKPT_STATE_INIT;
    (void)state;
    round_trip_vector("tictactoe_ckpt_manager", &st);
    assert_string_equal(st.model_checkpoint_path, "ckpt-19");
    assert_int_equal(st.num_paths, 3);
    assert_string_equal(st.all_paths[0], "ckpt-17");
    assert_string_equal(st.all_paths[1], "ckpt-18");
    assert_string_equal(st.all_paths[2], "ckpt-19");
    assert_int_equal(st.num_timestamps, 3);
    assert_true(st.timestamps[0] == 1673735799.685766);
    assert_true(st.timestamps[1] == 1673735913.342593);
    assert_true(st.timestamps[2] == 1673736140.596798);
    assert_true(st.last_preserved_timestamp == 1673735591.495455);
    ckpt_state_dispose(&st);
}

static void test_tf_tfx_round_trip(void **state)
{
    ckpt_state st = CKPT_STATE_INIT;
    (void)state;
    round_trip_vector("tfx_estimator_saver", &st);
    assert_string_equal(st.model_checkpoint_path, "model.ckpt-1000");
    assert_int_equal(st.num_paths, 3);
    assert_string_equal(st.all_paths[0], "model.ckpt-0");
    assert_string_equal(st.all_paths[1], "model.ckpt-999");
    assert_string_equal(st.all_paths[2], "model.ckpt-1000");
    assert_int_equal(st.num_timestamps, 0);
    ckpt_state_dispose(&st);
}

static void test_tf_rl_round_trip(void **state)
{
    ckpt_state st = CKPT_STATE_INIT;
    (void)state;
    round_trip_vector("rl_collection_sharded", &st);
    assert_string_equal(st.model_checkpoint_path, "ckpt-5");
    assert_int_equal(st.num_paths, 1);
    ckpt_state_dispose(&st);
}

static void test_tf_read_and_latest(void **state)
{
    static const struct {
        const char *vector, *latest;
    } cases[] = {{"tf2onnx_regression_ckpt", "model"},
                 {"tictactoe_ckpt_manager", "ckpt-19"},
                 {"tfx_estimator_saver", "model.ckpt-1000"},
                 {"rl_collection_sharded", "ckpt-5"}};
    (void)state;
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        char *dir = test_tf_vector(cases[i].vector);
        char *want;
        ckpt_state st = CKPT_STATE_INIT;
        ckpt_buf latest = CKPT_BUF_INIT;
        if (!dir)
            return;
        assert_ckpt_ok(ckpt_state_read(&st, NULL, dir));
        assert_string_equal(st.model_checkpoint_path, cases[i].latest);
        assert_ckpt_ok(ckpt_latest_checkpoint(&latest, NULL, dir));
        want = test_path(dir, cases[i].latest);
        assert_string_equal(latest.ptr, want);
        free(want);
        ckpt_buf_dispose(&latest);
        ckpt_state_dispose(&st);
        free(dir);
    }
}

/* ---- the tolerant parser ------------------------------------------------- */

static void test_parse_comments_whitespace_order(void **state)
{
    ckpt_state st = CKPT_STATE_INIT;
    const char *text =
        "# a comment line\n"
        "  all_model_checkpoint_timestamps :1.5 # trailing comment\n"
        "\tall_model_checkpoint_paths:\"a\"\r\n"
        "last_preserved_timestamp\n:\n 7,"
        "all_model_checkpoint_paths\v: 'b';"
        "all_model_checkpoint_timestamps: 2\f"
        "model_checkpoint_path: \"first\"\n"
        "model_checkpoint_path: \"b\"  # a later value wins\n"
        "#no newline at the end";
    (void)state;
    assert_ckpt_ok(parse_str(&st, text));
    assert_string_equal(st.model_checkpoint_path, "b");
    assert_int_equal(st.num_paths, 2);
    assert_string_equal(st.all_paths[0], "a");
    assert_string_equal(st.all_paths[1], "b");
    assert_int_equal(st.num_timestamps, 2);
    assert_true(st.timestamps[0] == 1.5);
    assert_true(st.timestamps[1] == 2.0);
    assert_true(st.last_preserved_timestamp == 7.0);
    ckpt_state_dispose(&st);
}

static void test_parse_empty_list_and_lists(void **state)
{
    ckpt_state st = CKPT_STATE_INIT;
    (void)state;
    assert_ckpt_ok(parse_str(&st, "model_checkpoint_path: 'm'\n"
                                  "all_model_checkpoint_paths: [\"x\", 'y' "
                                  "\"z\" , \"m\"]\n"
                                  "all_model_checkpoint_timestamps: []\n"
                                  "all_model_checkpoint_timestamps: [1, 2.5]\n"
                                  "all_model_checkpoint_timestamps: 3e0\n"));
    assert_int_equal(st.num_paths, 3);
    assert_string_equal(st.all_paths[0], "x");
    assert_string_equal(st.all_paths[1], "yz");
    assert_string_equal(st.all_paths[2], "m");
    assert_int_equal(st.num_timestamps, 3);
    assert_true(st.timestamps[1] == 2.5);
    assert_true(st.timestamps[2] == 3.0);
    ckpt_state_dispose(&st);
}

static void test_parse_escapes_and_concatenation(void **state)
{
    ckpt_state st = CKPT_STATE_INIT;
    const char *text = "model_checkpoint_path: \"a\\\"b\\'c\\\\d\" 'e\\\"f' "
                       "# comment between literals\n"
                       " \"\\a\\b\\f\\n\\r\\t\\v\\?\" \"\\101\\60\\7x\" "
                       "\"\\x41\\x4a\\xfz\\x7e\" \"\\303\\251\" "
                       "\"\\u006d\\u00e9\\u4e2D\\U0001F600\"";
    /* the u and U escapes as UTF-8: m, e-acute, U+4E2D, U+1F600 */
    const char want[] = "a\"b'c\\de\"f\a\b\f\n\r\t\v?A0\007xAJ\017z~\303\251"
                        "m\303\251\344\270\255\360\237\230\200";
    (void)state;
    assert_ckpt_ok(parse_str(&st, text));
    assert_string_equal(st.model_checkpoint_path, want);
    assert_int_equal(st.num_paths, 0);
    ckpt_state_dispose(&st);
}

static void test_parse_doubles(void **state)
{
    static const struct {
        const char *text;
        double want;
    } cases[] = {
        {"1673735799.685766", 1673735799.685766},
        {"1673735591", 1673735591.0},
        {"-12", -12.0},
        {"+0.25", 0.25},
        {".5", 0.5},
        {"1e-05", 1e-05},
        {"1E+16", 1e16},
        {"2.5f", 2.5},
        {"7F", 7.0},
        {"0x10", 16.0},
        {"inf", INFINITY},
        {"-inf", -INFINITY},
        {"INF", INFINITY},
        {"-Infinity", -INFINITY},
        {"inff", INFINITY},
        {"1e999", INFINITY},
    };
    (void)state;
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        char text[128];
        ckpt_state st = CKPT_STATE_INIT;
        snprintf(text, sizeof(text),
                 "model_checkpoint_path: \"m\" last_preserved_timestamp: %s",
                 cases[i].text);
        assert_ckpt_ok(parse_str(&st, text));
        if (st.last_preserved_timestamp != cases[i].want)
            fail_msg("%s parsed as %.17g", cases[i].text,
                     st.last_preserved_timestamp);
        ckpt_state_dispose(&st);
    }
    {
        const char *nans[] = {"nan", "NaN", "-nan", "NANf"};
        for (size_t i = 0; i < sizeof(nans) / sizeof(nans[0]); i++) {
            char text[128];
            ckpt_state st = CKPT_STATE_INIT;
            snprintf(text, sizeof(text),
                     "model_checkpoint_path: \"m\" "
                     "last_preserved_timestamp: %s",
                     nans[i]);
            assert_ckpt_ok(parse_str(&st, text));
            assert_true(isnan(st.last_preserved_timestamp));
            ckpt_state_dispose(&st);
        }
    }
}

static void test_parse_absolute_paths(void **state)
{
    ckpt_state st = CKPT_STATE_INIT;
    ckpt_buf b = CKPT_BUF_INIT;
    (void)state;
    assert_ckpt_ok(parse_str(
        &st, "model_checkpoint_path: \"/data/train/model.ckpt-1000\"\n"
             "all_model_checkpoint_paths: "
             "\"/data/train/model.ckpt-1000\"\n"));
    assert_ckpt_ok(ckpt_state_resolve(&b, "/elsewhere", st.all_paths[0]));
    assert_string_equal(b.ptr, "/data/train/model.ckpt-1000");
    assert_ckpt_ok(ckpt_state_resolve(&b, "/elsewhere/", "model.ckpt-1"));
    assert_string_equal(b.ptr, "/elsewhere/model.ckpt-1");
    assert_ckpt_ok(ckpt_state_resolve(&b, "rel", "model.ckpt-1"));
    assert_string_equal(b.ptr, "rel/model.ckpt-1");
    ckpt_buf_dispose(&b);
    ckpt_state_dispose(&st);
}

/* ---- parse errors -------------------------------------------------------- */

static void expect_parse_error(const char *text, const char *needle)
{
    ckpt_state st = CKPT_STATE_INIT;
    int rc = parse_str(&st, text);
    assert_ckpt_error(rc, CKPT_ECORRUPT, needle);
    /* nothing is handed out on failure */
    assert_null(st.model_checkpoint_path);
    assert_null(st.all_paths);
    assert_null(st.timestamps);
}

static void test_parse_unknown_field(void **state)
{
    (void)state;
    expect_parse_error("model_checkpoint_path: \"m\"\n"
                       "  all_model_checkpoint_path: \"m\"\n",
                       "dir/checkpoint:2:3: unknown field "
                       "\"all_model_checkpoint_path\"");
    expect_parse_error("model_checkpoint_path: \"m\"\n[ext]: 1\n",
                       "dir/checkpoint:2:1: expected a field name");
}

static void test_parse_missing_model_path(void **state)
{
    (void)state;
    expect_parse_error("all_model_checkpoint_paths: \"a\"\n",
                       "dir/checkpoint: invalid checkpoint state");
    expect_parse_error("model_checkpoint_path: \"\"\n",
                       "dir/checkpoint: invalid checkpoint state: "
                       "model_checkpoint_path is empty");
    expect_parse_error("model_checkpoint_path: \"\" \"\"\n",
                       "model_checkpoint_path is empty");
    expect_parse_error("", "invalid checkpoint state: no "
                           "model_checkpoint_path");
    expect_parse_error("# only a comment\n", "invalid checkpoint state");
}

/* Timestamps that do not pair with the paths (a path line deleted by hand;
 * TensorFlow reads the file) are dropped, the paths kept. */
static void test_parse_timestamp_mismatch(void **state)
{
    ckpt_state st = CKPT_STATE_INIT;
    (void)state;
    assert_ckpt_ok(parse_str(&st, "model_checkpoint_path: \"b\"\n"
                                  "all_model_checkpoint_paths: \"a\"\n"
                                  "all_model_checkpoint_paths: \"b\"\n"
                                  "all_model_checkpoint_timestamps: 1.0\n"
                                  "last_preserved_timestamp: 2.5\n"));
    assert_string_equal(st.model_checkpoint_path, "b");
    assert_int_equal(st.num_paths, 2);
    assert_string_equal(st.all_paths[1], "b");
    assert_int_equal(st.num_timestamps, 0);
    assert_null(st.timestamps);
    assert_true(st.last_preserved_timestamp == 2.5);
    ckpt_state_dispose(&st);
}

static void test_parse_bad_strings(void **state)
{
    (void)state;
    expect_parse_error("model_checkpoint_path: \"abc", "unterminated string");
    expect_parse_error("model_checkpoint_path: \"abc\\", "unterminated string");
    expect_parse_error("model_checkpoint_path: \"ab\ncd\"\n",
                       "dir/checkpoint:1:27: unterminated string");
    expect_parse_error("model_checkpoint_path: 'abc\"\n",
                       "unterminated string");
    expect_parse_error("model_checkpoint_path: \"a\\qb\"",
                       "dir/checkpoint:1:27: invalid escape");
    expect_parse_error("model_checkpoint_path: \"a\\xzz\"",
                       "\\x escape without hex digits");
    expect_parse_error("model_checkpoint_path: \"a\\400\"",
                       "octal escape out of range");
    expect_parse_error("model_checkpoint_path: \"a\\u12\"",
                       "dir/checkpoint:1:30: \\u escape needs 4 hex digits");
    expect_parse_error("model_checkpoint_path: \"a\\U0010fff\"",
                       "\\U escape needs 8 hex digits");
    expect_parse_error("model_checkpoint_path: \"a\\ud800\"",
                       "\\u escape U+D800 is not a character");
    expect_parse_error("model_checkpoint_path: \"a\\U00110000\"",
                       "\\U escape U+110000 is not a character");
    expect_parse_error("model_checkpoint_path: \"a\\000b\"",
                       "string contains a NUL byte");
    expect_parse_error("model_checkpoint_path: 12",
                       "expected a string for field \"model_checkpoint_path\"");
}

static void test_parse_garbage(void **state)
{
    (void)state;
    expect_parse_error("model_checkpoint_path \"m\"",
                       "expected ':' after field \"model_checkpoint_path\"");
    expect_parse_error("model_checkpoint_path { }", "expected ':'");
    expect_parse_error("}",
                       "dir/checkpoint:1:1: expected a field name, got '}'");
    expect_parse_error("model_checkpoint_path: \"m\" : ",
                       "expected a field name, got ':'");
    expect_parse_error("\x01\x02\x03", "expected a field name, got 0x01");
    expect_parse_error("model_checkpoint_path: \"m\"\n"
                       "last_preserved_timestamp: \"1.0\"",
                       "expected a number for field");
    expect_parse_error("model_checkpoint_path: \"m\"\n"
                       "last_preserved_timestamp: 1.2.3",
                       "dir/checkpoint:2: field \"last_preserved_timestamp\": "
                       "bad number \"1.2.3\"");
    expect_parse_error("model_checkpoint_path: \"m\"\n"
                       "last_preserved_timestamp: abc",
                       "bad number \"abc\"");
    expect_parse_error("model_checkpoint_path: \"m\"\n"
                       "last_preserved_timestamp:",
                       "expected a number for field "
                       "\"last_preserved_timestamp\", got end of file");
    expect_parse_error("model_checkpoint_path: [\"m\"]", "expected a string");
    expect_parse_error("model_checkpoint_path: \"m\" "
                       "all_model_checkpoint_paths: [\"a\" \"b\"",
                       "expected ',' or ']'");
    expect_parse_error("model_checkpoint_path: \"m\" "
                       "all_model_checkpoint_paths: [\"a\",]",
                       "expected a string");
    /* a NUL byte in the text is not whitespace */
    {
        ckpt_state st = CKPT_STATE_INIT;
        const char text[] = "model_checkpoint_path: \"m\"\0";
        assert_ckpt_error(ckpt_state_parse(&st, text, sizeof(text) - 1, "f"),
                          CKPT_ECORRUPT,
                          "f:1:27: expected a field name, got 0x00");
    }
}

/* ---- the writer ---------------------------------------------------------- */

static void test_format_doubles_python_repr(void **state)
{
    (void)state;
    for (size_t i = 0;
         i < sizeof(python_repr_cases) / sizeof(python_repr_cases[0]); i++) {
        char *paths[] = {"m"};
        double ts[1];
        ckpt_state st = {"m", paths, 1, ts, 1, 0.0};
        char want[128];
        char *got;
        ts[0] = python_repr_cases[i].v;
        got = format_state(&st);
        snprintf(want, sizeof(want),
                 "model_checkpoint_path: \"m\"\n"
                 "all_model_checkpoint_paths: \"m\"\n"
                 "all_model_checkpoint_timestamps: %s\n",
                 python_repr_cases[i].want);
        assert_string_equal(got, want);
        free(got);
    }
}

static void test_format_doubles_round_trip_random(void **state)
{
    uint64_t x = 0x9e3779b97f4a7c15ull;
    (void)state;
    for (int i = 0; i < 20000; i++) {
        char *paths[] = {"m"};
        double ts[1];
        double v;
        ckpt_state st = {"m", paths, 1, ts, 1, 0.0};
        ckpt_state back = CKPT_STATE_INIT;
        char *text;
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        memcpy(&v, &x, sizeof(v));
        if (!isfinite(v))
            continue;
        if (i % 2)
            v = (double)(x % 4000000000ull) + (double)(x % 1000000) / 1e6;
        ts[0] = v;
        text = format_state(&st);
        assert_ckpt_ok(parse_str(&back, text));
        if (memcmp(&back.timestamps[0], &v, sizeof(v)) != 0)
            fail_msg("%.17g printed as %s", v, text);
        ckpt_state_dispose(&back);
        free(text);
    }
}

static void test_format_string_escapes(void **state)
{
    const char *odd = "a\"b'c\\d\ne\rf\tg\001h\177i\303\251 j?";
    char *paths[] = {(char *)odd};
    ckpt_state st = {(char *)odd, paths, 1, NULL, 0, 0.0};
    ckpt_state back = CKPT_STATE_INIT;
    char *got;
    (void)state;
    got = format_state(&st);
    assert_string_equal(got, "model_checkpoint_path: "
                             "\"a\\\"b\\'c\\\\d\\ne\\rf\\tg\\001h\\177i\\303"
                             "\\251 j?\"\n"
                             "all_model_checkpoint_paths: "
                             "\"a\\\"b\\'c\\\\d\\ne\\rf\\tg\\001h\\177i\\303"
                             "\\251 j?\"\n");
    assert_ckpt_ok(parse_str(&back, got));
    assert_string_equal(back.model_checkpoint_path, odd);
    assert_string_equal(back.all_paths[0], odd);
    ckpt_state_dispose(&back);
    free(got);
}

static void test_format_appends_model_path(void **state)
{
    char *paths[] = {"ckpt-1", "ckpt-2"};
    double ts[] = {1.0, 2.0};
    ckpt_state none = {"ckpt-3", NULL, 0, NULL, 0, 0.0};
    ckpt_state two = {"ckpt-3", paths, 2, NULL, 0, 12.5};
    ckpt_state with_ts = {"ckpt-3", paths, 2, ts, 2, 0.0};
    ckpt_buf b = CKPT_BUF_INIT;
    char *got;
    (void)state;
    got = format_state(&none);
    assert_string_equal(got, "model_checkpoint_path: \"ckpt-3\"\n"
                             "all_model_checkpoint_paths: \"ckpt-3\"\n");
    free(got);
    got = format_state(&two);
    assert_string_equal(got, "model_checkpoint_path: \"ckpt-3\"\n"
                             "all_model_checkpoint_paths: \"ckpt-1\"\n"
                             "all_model_checkpoint_paths: \"ckpt-2\"\n"
                             "all_model_checkpoint_paths: \"ckpt-3\"\n"
                             "last_preserved_timestamp: 12.5\n");
    free(got);
    /* appending would leave 2 timestamps for 3 paths, as TF refuses */
    assert_ckpt_ok(ckpt__buf_puts(&b, "keep"));
    assert_ckpt_error(ckpt_state_format(&b, &with_ts), CKPT_EINVAL,
                      "2 timestamps for 3 paths");
    assert_string_equal(b.ptr, "keep");
    ckpt_buf_dispose(&b);
}

static void test_format_invalid(void **state)
{
    char *paths[] = {"a", "b"};
    double ts[] = {1.0};
    ckpt_state empty = CKPT_STATE_INIT;
    ckpt_state blank = {"", NULL, 0, NULL, 0, 0.0};
    ckpt_state mismatch = {"b", paths, 2, ts, 1, 0.0};
    ckpt_buf b = CKPT_BUF_INIT;
    (void)state;
    assert_ckpt_error(ckpt_state_format(&b, &empty), CKPT_EINVAL,
                      "model_checkpoint_path");
    assert_ckpt_error(ckpt_state_format(&b, &blank), CKPT_EINVAL,
                      "model_checkpoint_path");
    assert_ckpt_error(ckpt_state_format(&b, &mismatch), CKPT_EINVAL,
                      "1 timestamps for 2 paths");
    assert_int_equal(b.size, 0);
    ckpt_buf_dispose(&b);
}

/* ---- files --------------------------------------------------------------- */

static void test_write_then_read(void **state)
{
    char *dir = test_make_temp_dir();
    char *paths[] = {"ckpt-1", "ckpt-2"};
    double ts[] = {1673735799.685766, 1673735913.0};
    ckpt_state st = {"ckpt-2", paths, 2, ts, 2, 1673735591.495455};
    ckpt_state back = CKPT_STATE_INIT;
    char *file = test_path(dir, "checkpoint");
    const char *want = "model_checkpoint_path: \"ckpt-2\"\n"
                       "all_model_checkpoint_paths: \"ckpt-1\"\n"
                       "all_model_checkpoint_paths: \"ckpt-2\"\n"
                       "all_model_checkpoint_timestamps: 1673735799.685766\n"
                       "all_model_checkpoint_timestamps: 1673735913.0\n"
                       "last_preserved_timestamp: 1673735591.495455\n";
    uint8_t *bytes;
    size_t n = 0;
    (void)state;
    assert_ckpt_error(ckpt_state_read(&back, NULL, dir), CKPT_ENOTFOUND,
                      "no checkpoint state file");
    assert_ckpt_ok(ckpt_state_write(NULL, dir, &st));
    test_assert_file_is(file, want, strlen(want));
    assert_ckpt_ok(ckpt_state_read(&back, NULL, dir));
    assert_string_equal(back.model_checkpoint_path, "ckpt-2");
    assert_int_equal(back.num_paths, 2);
    assert_int_equal(back.num_timestamps, 2);
    assert_true(back.timestamps[1] == 1673735913.0);
    ckpt_state_dispose(&back);
    /* replace it */
    st.model_checkpoint_path = "ckpt-1";
    st.num_paths = 1;
    st.num_timestamps = 0;
    st.last_preserved_timestamp = 0.0;
    assert_ckpt_ok(ckpt_state_write(NULL, dir, &st));
    bytes = test_read_file(file, &n);
    assert_non_null(bytes);
    want = "model_checkpoint_path: \"ckpt-1\"\n"
           "all_model_checkpoint_paths: \"ckpt-1\"\n";
    assert_int_equal(n, strlen(want));
    assert_memory_equal(bytes, want, n);
    free(bytes);
    free(file);
    test_remove_tree(dir);
}

/* A state file larger than CKPT_STATE_MAX_SIZE, which ckpt_state_read
 * refuses: a saver's open rewrote a state file just under the limit with
 * timestamps added, past it, and the next open read no checkpoint at all
 * (a resumed job started afresh). Refused, naming the sizes; the file on
 * disk stays. */
static void test_write_refuses_over_max_size(void **state)
{
    char *dir = test_make_temp_dir();
    char *file = test_path(dir, "checkpoint");
    const size_t n = 180000;
    char **paths = calloc(n, sizeof(*paths));
    char *one[] = {"ckpt-1"};
    ckpt_state small = {"ckpt-1", one, 1, NULL, 0, 0.0};
    ckpt_state big = CKPT_STATE_INIT;
    ckpt_state back = CKPT_STATE_INIT;
    (void)state;
    assert_non_null(paths);
    for (size_t i = 0; i < n; i++) {
        paths[i] = malloc(96);
        assert_non_null(paths[i]);
        snprintf(paths[i], 96, "%080zu", i); /* 80 digits */
    }
    big.model_checkpoint_path = paths[n - 1];
    big.all_paths = paths;
    big.num_paths = n;
    assert_ckpt_ok(ckpt_state_write(NULL, dir, &small));
    assert_ckpt_error(ckpt_state_write(NULL, dir, &big), CKPT_EINVAL,
                      "larger than the 16777216 bytes a reader accepts");
    assert_ckpt_ok(ckpt_state_read(&back, NULL, dir));
    assert_string_equal(back.model_checkpoint_path, "ckpt-1");
    ckpt_state_dispose(&back);
    for (size_t i = 0; i < n; i++)
        free(paths[i]);
    free(paths);
    free(file);
    test_remove_tree(dir);
}

static void test_write_refuses_state_file_as_model(void **state)
{
    char *dir = test_make_temp_dir();
    char *abs = test_path(dir, "checkpoint");
    ckpt_state rel = {"checkpoint", NULL, 0, NULL, 0, 0.0};
    ckpt_state ab = {abs, NULL, 0, NULL, 0, 0.0};
    struct stat sb;
    (void)state;
    assert_ckpt_error(ckpt_state_write(NULL, dir, &rel), CKPT_EINVAL,
                      "conflicts with the checkpoint state file");
    assert_ckpt_error(ckpt_state_write(NULL, dir, &ab), CKPT_EINVAL,
                      "conflicts");
    assert_int_not_equal(stat(abs, &sb), 0);
    free(abs);
    test_remove_tree(dir);
}

static void test_read_corrupt_names_file(void **state)
{
    char *dir = test_make_temp_dir();
    char *file = test_path(dir, "checkpoint");
    char needle[4200];
    ckpt_state st = CKPT_STATE_INIT;
    ckpt_buf b = CKPT_BUF_INIT;
    (void)state;
    write_text(dir, "checkpoint", "model_checkpoint_path: \"m\"\nbogus: 1\n");
    snprintf(needle, sizeof(needle), "%s:2:1: unknown field \"bogus\"", file);
    assert_ckpt_error(ckpt_state_read(&st, NULL, dir), CKPT_ECORRUPT, needle);
    /* no latest checkpoint (B77), the reason kept in the message */
    assert_ckpt_error(ckpt_latest_checkpoint(&b, NULL, dir), CKPT_ENOTFOUND,
                      "the state file is unreadable");
    assert_ckpt_error(ckpt_latest_checkpoint(&b, NULL, dir), CKPT_ENOTFOUND,
                      "unknown field");
    ckpt_buf_dispose(&b);
    free(file);
    test_remove_tree(dir);
}

/* ---- latest checkpoint --------------------------------------------------- */

static void test_latest_relative(void **state)
{
    char *dir = test_make_temp_dir();
    char *want = test_path(dir, "model.ckpt-1000");
    ckpt_buf b = CKPT_BUF_INIT;
    (void)state;
    write_text(dir, "checkpoint",
               "model_checkpoint_path: \"model.ckpt-1000\"\n"
               "all_model_checkpoint_paths: \"model.ckpt-999\"\n"
               "all_model_checkpoint_paths: \"model.ckpt-1000\"\n");
    touch(dir, "model.ckpt-999.index");
    touch(dir, "model.ckpt-1000.index");
    assert_ckpt_ok(ckpt_latest_checkpoint(&b, NULL, dir));
    assert_string_equal(b.ptr, want);
    ckpt_buf_dispose(&b);
    free(want);
    test_remove_tree(dir);
}

static void test_latest_absolute(void **state)
{
    char *dir = test_make_temp_dir();
    char *other = test_make_temp_dir();
    char *prefix = test_path(other, "model.ckpt-7");
    char text[4200];
    ckpt_buf b = CKPT_BUF_INIT;
    (void)state;
    snprintf(text, sizeof(text),
             "model_checkpoint_path: \"%s\"\nall_model_checkpoint_paths: "
             "\"%s\"\n",
             prefix, prefix);
    write_text(dir, "checkpoint", text);
    touch(other, "model.ckpt-7.index");
    touch(dir, "model.ckpt-7.index"); /* a decoy: the absolute path wins */
    assert_ckpt_ok(ckpt_latest_checkpoint(&b, NULL, dir));
    assert_string_equal(b.ptr, prefix);
    ckpt_buf_dispose(&b);
    free(prefix);
    test_remove_tree(other);
    test_remove_tree(dir);
}

static void test_latest_falls_back_to_newest_with_index(void **state)
{
    char *dir = test_make_temp_dir();
    char *want = test_path(dir, "ckpt-2");
    char *gone;
    ckpt_buf b = CKPT_BUF_INIT;
    (void)state;
    write_text(dir, "checkpoint",
               "model_checkpoint_path: \"ckpt-3\"\n"
               "all_model_checkpoint_paths: \"ckpt-1\"\n"
               "all_model_checkpoint_paths: \"ckpt-2\"\n"
               "all_model_checkpoint_paths: \"ckpt-3\"\n");
    touch(dir, "ckpt-1.index");
    touch(dir, "ckpt-2.index");
    touch(dir, "ckpt-3.data-00000-of-00001"); /* data without its index */
    assert_ckpt_ok(ckpt_latest_checkpoint(&b, NULL, dir));
    assert_string_equal(b.ptr, want);
    free(want);
    gone = test_path(dir, "ckpt-2.index");
    assert_int_equal(remove(gone), 0);
    free(gone);
    want = test_path(dir, "ckpt-1");
    assert_ckpt_ok(ckpt_latest_checkpoint(&b, NULL, dir));
    assert_string_equal(b.ptr, want);
    free(want);
    gone = test_path(dir, "ckpt-1.index");
    assert_int_equal(remove(gone), 0);
    free(gone);
    assert_ckpt_error(ckpt_latest_checkpoint(&b, NULL, dir), CKPT_ENOTFOUND,
                      "no checkpoint listed in the state file has its index");
    ckpt_buf_dispose(&b);
    test_remove_tree(dir);
}

/* ckpt_state_latest chooses from the state it is given, not from the
 * state file, which a save may have replaced since it was read (`ckpt ls`
 * used to read it twice), with the same fallback as ckpt_latest_checkpoint
 * and the same message when no listed checkpoint has its index. */
static void test_state_latest_uses_given_state(void **state)
{
    char *dir = test_make_temp_dir();
    char *want = test_path(dir, "ckpt-2");
    char *gone = test_path(dir, "ckpt-2.index");
    static const char text[] = "model_checkpoint_path: \"ckpt-2\"\n"
                               "all_model_checkpoint_paths: \"ckpt-1\"\n"
                               "all_model_checkpoint_paths: \"ckpt-2\"\n";
    ckpt_state st = CKPT_STATE_INIT;
    ckpt_buf b = CKPT_BUF_INIT;
    (void)state;
    write_text(dir, "checkpoint", text);
    touch(dir, "ckpt-1.index");
    touch(dir, "ckpt-2.index");
    touch(dir, "ckpt-3.index");
    assert_ckpt_ok(ckpt_state_read(&st, NULL, dir));
    write_text(dir, "checkpoint",
               "model_checkpoint_path: \"ckpt-3\"\n"
               "all_model_checkpoint_paths: \"ckpt-3\"\n");
    assert_ckpt_ok(ckpt_state_latest(&b, NULL, dir, &st));
    assert_string_equal(b.ptr, want);
    free(want);
    assert_int_equal(remove(gone), 0);
    want = test_path(dir, "ckpt-1");
    assert_ckpt_ok(ckpt_state_latest(&b, NULL, dir, &st));
    assert_string_equal(b.ptr, want);
    free(want);
    free(gone);
    gone = test_path(dir, "ckpt-1.index");
    assert_int_equal(remove(gone), 0);
    free(gone);
    assert_ckpt_error(ckpt_state_latest(&b, NULL, dir, &st), CKPT_ENOTFOUND,
                      "no checkpoint listed in the state file has its index "
                      "(latest: \"ckpt-2\")");
    ckpt_state_dispose(&st);
    ckpt_buf_dispose(&b);
    test_remove_tree(dir);
}

/* State-file paths whose look-up fails because no file can have them (a
 * name longer than NAME_MAX, a symbolic link that loops) are missing
 * checkpoints, like an index that is not there: the newest listed one
 * with its index is the latest. Such a path used to fail the whole call
 * ("File name too long", CKPT_EIO), so a saver or `ckpt ls` could not use
 * the directory at all. */
static void test_latest_skips_paths_no_file_can_have(void **state)
{
    char *dir = test_make_temp_dir();
    char *want = test_path(dir, "ckpt-1");
    char *loop = test_path(dir, "loop");
    char text[1024], name[301];
    ckpt_buf b = CKPT_BUF_INIT;
    (void)state;
    memset(name, 'n', 300);
    name[300] = '\0';
    assert_int_equal(symlink("loop", loop), 0);
    snprintf(text, sizeof(text),
             "model_checkpoint_path: \"%s\"\n"
             "all_model_checkpoint_paths: \"ckpt-1\"\n"
             "all_model_checkpoint_paths: \"loop/ckpt-2\"\n"
             "all_model_checkpoint_paths: \"%s\"\n",
             name, name);
    write_text(dir, "checkpoint", text);
    touch(dir, "ckpt-1.index");
    assert_ckpt_ok(ckpt_latest_checkpoint(&b, NULL, dir));
    assert_string_equal(b.ptr, want);
    {
        char *index = test_path(dir, "ckpt-1.index");
        assert_int_equal(remove(index), 0);
        free(index);
    }
    assert_ckpt_error(ckpt_latest_checkpoint(&b, NULL, dir), CKPT_ENOTFOUND,
                      "no checkpoint listed in the state file has its index");
    ckpt_buf_dispose(&b);
    free(want);
    free(loop);
    test_remove_tree(dir);
}

static void test_latest_without_state_file(void **state)
{
    char *dir = test_make_temp_dir();
    char *missing = test_path(dir, "nope");
    char *prefix = test_path(dir, "ckpt-1");
    ckpt_buf b = CKPT_BUF_INIT;
    (void)state;
    touch(dir, "ckpt-1.index");
    assert_ckpt_error(ckpt_latest_checkpoint(&b, NULL, dir), CKPT_ENOTFOUND,
                      "no checkpoint state file");
    assert_ckpt_error(ckpt_latest_checkpoint(&b, NULL, missing), CKPT_ENOTFOUND,
                      NULL);
    /* why, when it can tell: no such directory, or a checkpoint's prefix
     * given for its directory */
    assert_ckpt_error(ckpt_latest_checkpoint(&b, NULL, missing), CKPT_ENOTFOUND,
                      "no checkpoint state file: directory ");
    assert_ckpt_error(ckpt_latest_checkpoint(&b, NULL, missing), CKPT_ENOTFOUND,
                      "nope does not exist");
    assert_ckpt_error(ckpt_latest_checkpoint(&b, NULL, prefix), CKPT_ENOTFOUND,
                      "ckpt-1 is a checkpoint's prefix, not its directory");
    assert_null(b.ptr);
    free(missing);
    free(prefix);
    test_remove_tree(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_tf_tf2onnx_round_trip),
        cmocka_unit_test(test_tf_tictactoe_round_trip),
        cmocka_unit_test(test_tf_tfx_round_trip),
        cmocka_unit_test(test_tf_rl_round_trip),
        cmocka_unit_test(test_tf_read_and_latest),
        cmocka_unit_test(test_parse_comments_whitespace_order),
        cmocka_unit_test(test_parse_empty_list_and_lists),
        cmocka_unit_test(test_parse_escapes_and_concatenation),
        cmocka_unit_test(test_parse_doubles),
        cmocka_unit_test(test_parse_absolute_paths),
        cmocka_unit_test(test_parse_unknown_field),
        cmocka_unit_test(test_parse_missing_model_path),
        cmocka_unit_test(test_parse_timestamp_mismatch),
        cmocka_unit_test(test_parse_bad_strings),
        cmocka_unit_test(test_parse_garbage),
        cmocka_unit_test(test_format_doubles_python_repr),
        cmocka_unit_test(test_format_doubles_round_trip_random),
        cmocka_unit_test(test_format_string_escapes),
        cmocka_unit_test(test_format_appends_model_path),
        cmocka_unit_test(test_format_invalid),
        cmocka_unit_test(test_write_then_read),
        cmocka_unit_test(test_write_refuses_over_max_size),
        cmocka_unit_test(test_write_refuses_state_file_as_model),
        cmocka_unit_test(test_read_corrupt_names_file),
        cmocka_unit_test(test_latest_relative),
        cmocka_unit_test(test_latest_absolute),
        cmocka_unit_test(test_latest_falls_back_to_newest_with_index),
        cmocka_unit_test(test_state_latest_uses_given_state),
        cmocka_unit_test(test_latest_skips_paths_no_file_can_have),
        cmocka_unit_test(test_latest_without_state_file),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
