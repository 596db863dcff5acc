/* The state file's doubles (timestamps, last_preserved_timestamp) against
 * a reference: the writer finds the shortest round-trip digits in at most
 * three tries for a normal double, where it once tried every precision
 * from 0 to 16. The reference here is that search, every precision in
 * turn, so each double must print to the very bytes it printed before:
 * random bit patterns (every exponent, subnormals, negatives), integers,
 * times of day with microseconds, short decimals, powers of two and ten,
 * and the ends of the range. The text a saver formats once per kept
 * checkpoint and reuses (ckpt__state_double_format) must be those bytes
 * too. */
#include "python_repr_cases.h"
#include "test_util.h"

#include "ckpt/state.h"
#include "format/checkpoint_state_write.h"

#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Python repr of `v` by trying each "%.*e" precision from 0 until one
 * reads back exactly; fixed notation for a decimal exponent in (-4, 16]. */
static void reference_repr(char *out, size_t cap, double v)
{
    char sci[64];
    char digits[32];
    int n = 0, e = 0, point;
    size_t k = 0;
    if (isnan(v)) {
        snprintf(out, cap, "nan");
        return;
    }
    if (isinf(v)) {
        snprintf(out, cap, "%s", v < 0 ? "-inf" : "inf");
        return;
    }
    for (int prec = 0; prec <= 16; prec++) {
        char *exp_at;
        snprintf(sci, sizeof(sci), "%.*e", prec, v);
        if (strtod(sci, NULL) != v)
            continue;
        exp_at = strchr(sci, 'e');
        n = 0;
        for (char *p = sci; p < exp_at; p++)
            if (*p >= '0' && *p <= '9')
                digits[n++] = *p;
        e = atoi(exp_at + 1);
        break;
    }
    while (n > 1 && digits[n - 1] == '0')
        n--;
    if (signbit(v))
        out[k++] = '-';
    point = e + 1; /* v = 0.DIGITS x 10^point */
    if (point > -4 && point <= 16) {
        if (point <= 0) {
            k += (size_t)snprintf(out + k, cap - k, "0.");
            for (int z = 0; z < -point; z++)
                out[k++] = '0';
            k += (size_t)snprintf(out + k, cap - k, "%.*s", n, digits);
        } else if (point >= n) {
            k += (size_t)snprintf(out + k, cap - k, "%.*s", n, digits);
            for (int z = 0; z < point - n; z++)
                out[k++] = '0';
            k += (size_t)snprintf(out + k, cap - k, ".0");
        } else {
            k += (size_t)snprintf(out + k, cap - k, "%.*s.%.*s", point, digits,
                                  n - point, digits + point);
        }
        return;
    }
    if (n > 1)
        snprintf(out + k, cap - k, "%c.%.*se%c%02d", digits[0], n - 1,
                 digits + 1, e < 0 ? '-' : '+', e < 0 ? -e : e);
    else
        snprintf(out + k, cap - k, "%ce%c%02d", digits[0], e < 0 ? '-' : '+',
                 e < 0 ? -e : e);
}

static uint64_t next_random(uint64_t *x)
{
    *x ^= *x << 13;
    *x ^= *x >> 7;
    *x ^= *x << 17;
    return *x;
}

/* A double of the kind `kind` picks, from the random word r. */
static double pick(int kind, uint64_t r)
{
    double v;
    switch (kind) {
    case 0: /* any bit pattern */
        memcpy(&v, &r, sizeof(v));
        return v;
    case 1: /* an integer, up to 2^62 */
        return (double)(int64_t)(r >> 1 >> (r & 63));
    case 2: /* a time of day with microseconds */
        return 1.6e9 + (double)(r % 400000000ull) +
               (double)((r >> 32) % 1000000ull) / 1e6;
    case 3: /* a short decimal: digits x 10^e */
        return (double)(r % 100000ull) *
               pow(10.0, (double)((r >> 20) % 80) - 40.0);
    case 4: /* a power of two or ten, or next to one */
        v = (r & 1) ? ldexp(1.0, (int)((r >> 1) % 2098) - 1074)
                    : pow(10.0, (double)((r >> 1) % 630) - 323.0);
        if (r & 2)
            v = nextafter(v, (r & 4) ? INFINITY : 0.0);
        return v;
    default: /* a subnormal */
        r &= (1ull << 52) - 1;
        memcpy(&v, &r, sizeof(v));
        return v;
    }
}

/* Format `n` doubles as one state file's timestamps and compare each line
 * with the reference, and each double's own text (as a saver caches it);
 * the state file formatted from those texts must be the same bytes. */
static void check_batch(const double *vals, size_t n)
{
    char **paths = calloc(n, sizeof(*paths));
    ckpt__state_double *texts = calloc(n, sizeof(*texts));
    ckpt_state st = CKPT_STATE_INIT;
    ckpt_buf text = CKPT_BUF_INIT, cached = CKPT_BUF_INIT;
    const char *line;
    static const char key[] = "all_model_checkpoint_timestamps: ";
    assert_non_null(paths);
    assert_non_null(texts);
    for (size_t i = 0; i < n; i++)
        paths[i] = "m";
    st.model_checkpoint_path = "m";
    st.all_paths = paths;
    st.num_paths = n;
    st.timestamps = (double *)vals;
    st.num_timestamps = n;
    assert_ckpt_ok(ckpt_state_format(&text, &st));
    line = text.ptr;
    for (size_t i = 0; i < n; i++) {
        char want[64];
        const char *end;
        line = strstr(line, key);
        assert_non_null(line);
        line += sizeof(key) - 1;
        end = strchr(line, '\n');
        assert_non_null(end);
        reference_repr(want, sizeof(want), vals[i]);
        if (strlen(want) != (size_t)(end - line) ||
            memcmp(want, line, (size_t)(end - line)) != 0)
            fail_msg("%a (%.17g): printed %.*s, the reference %s", vals[i],
                     vals[i], (int)(end - line), line, want);
        assert_ckpt_ok(ckpt__state_double_format(&texts[i], vals[i]));
        if (strcmp(texts[i].text, want) != 0)
            fail_msg("%a (%.17g): its own text %s, the reference %s", vals[i],
                     vals[i], texts[i].text, want);
        line = end;
    }
    assert_ckpt_ok(ckpt__state_format_cached(&cached, &st, texts));
    assert_int_equal(cached.size, text.size);
    assert_memory_equal(cached.ptr, text.ptr, text.size);
    ckpt_buf_dispose(&text);
    ckpt_buf_dispose(&cached);
    free(texts);
    free(paths);
}

/* The reference itself, on every case of the table the writer's test
 * uses (python_repr_cases.h). */
static void test_reference_repr(void **state)
{
    (void)state;
    for (size_t i = 0;
         i < sizeof(python_repr_cases) / sizeof(python_repr_cases[0]); i++) {
        char got[64];
        reference_repr(got, sizeof(got), python_repr_cases[i].v);
        assert_string_equal(got, python_repr_cases[i].want);
    }
}

static void test_edges_match_reference(void **state)
{
    const double vals[] = {0.0,
                           -0.0,
                           1.0,
                           -1.0,
                           DBL_MIN,
                           -DBL_MIN,
                           nextafter(DBL_MIN, 0.0),
                           nextafter(DBL_MIN, 1.0),
                           DBL_TRUE_MIN,
                           DBL_MAX,
                           -DBL_MAX,
                           nextafter(DBL_MAX, 0.0),
                           DBL_EPSILON,
                           1e15,
                           1e16,
                           1e17,
                           9007199254740992.0,
                           9007199254740993.0,
                           0.1 + 0.2,
                           1e23,
                           8.41e21,
                           5e-324,
                           2.2250738585072014e-308,
                           INFINITY,
                           -INFINITY,
                           NAN};
    (void)state;
    check_batch(vals, sizeof(vals) / sizeof(vals[0]));
}

static void test_random_doubles_match_reference(void **state)
{
    enum { PER_KIND = 6000, KINDS = 6 };
    double *vals = malloc(sizeof(double) * PER_KIND);
    uint64_t x = 0x2545f4914f6cdd1dull;
    (void)state;
    assert_non_null(vals);
    for (int kind = 0; kind < KINDS; kind++) {
        for (size_t i = 0; i < PER_KIND; i++) {
            uint64_t r = next_random(&x);
            double v = pick(kind, r);
            vals[i] = (r >> 63) && kind != 0 ? -v : v;
        }
        check_batch(vals, PER_KIND);
    }
    free(vals);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_reference_repr),
        cmocka_unit_test(test_edges_match_reference),
        cmocka_unit_test(test_random_doubles_match_reference),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
