/* tests/saver/test_saver_direct_restore.c - a saver on the aligned test
 * file system (tests/io/aligned_fs.h) with ~10 MiB of variables: restore
 * streams the data file through the direct path into the variables (and
 * through the write callback for one behind callbacks), bit for bit, and
 * restore_subset touches only the named variables. The restore logs how
 * it read the data (streamed, direct or through the page cache as the
 * stream's probe chose, and the probe's rates; with a device named, the
 * next restore's choice is said remembered from that probe). */
#include "saver_test_util.h"

#include "../io/aligned_fs.h"
#include "io/read_verdicts.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NCB 1000 /* floats behind callbacks */

typedef struct fixture {
    char *dir;
    aligned_fs afs;
    float *a;    /* big/a: 1,400,000 floats */
    int64_t *b;  /* big/b: 400,001 int64 */
    double *emb; /* emb: 250,000 doubles */
    float bias[17];
    int64_t step;
    float cb[NCB];  /* behind read/write callbacks */
    char log[8192]; /* the saver's DEBUG lines about restores */
    /* copies of the saved values */
    float *a0;
    int64_t *b0;
    double *emb0;
    float bias0[17];
    int64_t step0;
    float cb0[NCB];
} fixture;

#define NA 1400000
#define NB 400001
#define NEMB 250000

static int cb_read(void *dst, uint64_t offset, size_t n, void *payload)
{
    fixture *f = payload;
    memcpy(dst, (uint8_t *)f->cb + offset, n);
    return 0;
}

static int cb_write(const void *src, uint64_t offset, size_t n, void *payload)
{
    fixture *f = payload;
    memcpy((uint8_t *)f->cb + offset, src, n);
    return 0;
}

static int setup(void **state)
{
    fixture *f = test_dir_fixture_new(sizeof(*f), offsetof(fixture, dir));
    aligned_fs_init(&f->afs, CKPT_FS_VERSION);
    f->a = malloc(NA * sizeof(float));
    f->b = malloc(NB * sizeof(int64_t));
    f->emb = malloc(NEMB * sizeof(double));
    f->a0 = malloc(NA * sizeof(float));
    f->b0 = malloc(NB * sizeof(int64_t));
    f->emb0 = malloc(NEMB * sizeof(double));
    assert_true(f->a && f->b && f->emb && f->a0 && f->b0 && f->emb0);
    test_fill_random(f->a, NA * sizeof(float), 1);
    test_fill_random(f->b, NB * sizeof(int64_t), 2);
    test_fill_random(f->emb, NEMB * sizeof(double), 3);
    test_fill_random(f->bias, sizeof(f->bias), 4);
    test_fill_random(f->cb, sizeof(f->cb), 5);
    f->step = 123456789;
    memcpy(f->a0, f->a, NA * sizeof(float));
    memcpy(f->b0, f->b, NB * sizeof(int64_t));
    memcpy(f->emb0, f->emb, NEMB * sizeof(double));
    memcpy(f->bias0, f->bias, sizeof(f->bias));
    memcpy(f->cb0, f->cb, sizeof(f->cb));
    f->step0 = f->step;
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    fixture *f = *state;
    test_remove_tree(f->dir);
    free(f->a);
    free(f->b);
    free(f->emb);
    free(f->a0);
    free(f->b0);
    free(f->emb0);
    free(f);
    return 0;
}

static void log_restores(int level, const char *message, void *payload)
{
    fixture *f = payload;
    (void)level;
    if (strncmp(message, "restore ", 8) == 0 &&
        strlen(f->log) + strlen(message) + 2 < sizeof(f->log)) {
        strcat(f->log, message);
        strcat(f->log, "\n");
    }
}

static ckpt_saver *open_saver(fixture *f)
{
    ckpt_saver_options o = CKPT_SAVER_OPTIONS_INIT;
    ckpt_saver *s = NULL;
    ckpt_var vars[6] = {
        {"big/a", CKPT_DT_FLOAT, {1, {NA}}, f->a, NULL, NULL, NULL},
        {"big/b", CKPT_DT_INT64, {1, {NB}}, f->b, NULL, NULL, NULL},
        {"emb", CKPT_DT_DOUBLE, {2, {500, 500}}, f->emb, NULL, NULL, NULL},
        {"bias", CKPT_DT_FLOAT, {1, {17}}, f->bias, NULL, NULL, NULL},
        {"global_step", CKPT_DT_INT64, {0, {0}}, &f->step, NULL, NULL, NULL},
        {"cb", CKPT_DT_FLOAT, {1, {NCB}}, NULL, cb_read, cb_write, f},
    };
    o.fs = &f->afs.fwd.fs;
    o.log = log_restores;
    o.log_payload = f;
    o.log_level = CKPT_LOG_DEBUG;
    assert_ckpt_ok(ckpt_saver_open(&s, f->dir, &o));
    for (int i = 0; i < 6; i++)
        assert_ckpt_ok(ckpt_saver_add_var(s, &vars[i]));
    return s;
}

static void zero_all(fixture *f)
{
    memset(f->a, 0, NA * sizeof(float));
    memset(f->b, 0, NB * sizeof(int64_t));
    memset(f->emb, 0, NEMB * sizeof(double));
    memset(f->bias, 0, sizeof(f->bias));
    memset(f->cb, 0, sizeof(f->cb));
    f->step = 0;
}

/* Bit-for-bit equality of the variables named in `which` (a|b|e|B|s|c);
 * the others must still be zero. */
static void check_vars(const fixture *f, const char *which)
{
    struct {
        char key;
        const void *got, *want;
        size_t n;
    } v[6] = {
        {'a', f->a, f->a0, NA * sizeof(float)},
        {'b', f->b, f->b0, NB * sizeof(int64_t)},
        {'e', f->emb, f->emb0, NEMB * sizeof(double)},
        {'B', f->bias, f->bias0, sizeof(f->bias)},
        {'s', &f->step, &f->step0, sizeof(f->step)},
        {'c', f->cb, f->cb0, sizeof(f->cb)},
    };
    for (int i = 0; i < 6; i++) {
        if (strchr(which, v[i].key)) {
            if (memcmp(v[i].got, v[i].want, v[i].n) != 0)
                fail_msg("variable %c: wrong value", v[i].key);
            continue;
        }
        for (size_t k = 0; k < v[i].n; k++)
            if (((const uint8_t *)v[i].got)[k] != 0)
                fail_msg("variable %c: byte %zu restored", v[i].key, k);
    }
}

static void test_restore_streams_direct(void **state)
{
    fixture *f = *state;
    ckpt_saver *s = open_saver(f);
    ckpt_buf prefix = CKPT_BUF_INIT;
    assert_ckpt_ok(ckpt_saver_save(s, 1, &prefix));
    zero_all(f);
    aligned_fs_reset(&f->afs);
    assert_ckpt_ok(ckpt_saver_restore(s, prefix.ptr));
    check_vars(f, "abeBsc");
    /* the probe's stream, then the rest's when O_DIRECT won */
    assert_true(atomic_load(&f->afs.direct_opens) >= 1);
    assert_true(atomic_load(&f->afs.direct_opens) <= 2);
    assert_true(atomic_load(&f->afs.direct_preads) > 0);
    assert_int_equal(atomic_load(&f->afs.violations), 0);
    assert_int_equal(atomic_load(&f->afs.open_files), 0);
    /* the choice is logged: 10 MiB is enough to probe both ways */
    if (!strstr(f->log, "bytes read around the page cache (O_DIRECT), the "
                        "checksum fused into the copy (chosen by a probe") &&
        !strstr(f->log, "bytes read through the page cache into the "
                        "variables, each piece checksummed after its read "
                        "(chosen by a probe"))
        fail_msg("no line on the read mode in:\n%s", f->log);
    if (!strstr(f->log, "probe rates: O_DIRECT "))
        fail_msg("no probe rates in:\n%s", f->log);

    /* restore_latest goes the same way */
    zero_all(f);
    aligned_fs_reset(&f->afs);
    assert_ckpt_ok(ckpt_saver_restore_latest(s, NULL));
    check_vars(f, "abeBsc");
    assert_true(atomic_load(&f->afs.direct_preads) > 0);
    ckpt_saver_free(s);
    assert_int_equal(atomic_load(&f->afs.open_files), 0);
    ckpt_buf_dispose(&prefix);
}

/* The device the aligned fs names for every file (it has no device_id of
 * its own). */
static int one_device(const char *path, uint64_t *id, void *payload)
{
    (void)path;
    (void)payload;
    *id = 42;
    return 0;
}

/* With a device named, the next restore reads as the first one's probe
 * chose (O_DIRECT: once a second restore's probe confirmed it), without a
 * probe, and the log says the choice was remembered. */
static void test_restore_logs_remembered_choice(void **state)
{
    fixture *f = *state;
    ckpt_saver *s;
    ckpt_buf prefix = CKPT_BUF_INIT;
    ckpt__read_verdicts_reset(NULL);
    f->afs.fwd.fs.device_id = one_device;
    s = open_saver(f);
    assert_ckpt_ok(ckpt_saver_save(s, 1, &prefix));
    zero_all(f);
    f->log[0] = '\0';
    assert_ckpt_ok(ckpt_saver_restore(s, prefix.ptr));
    check_vars(f, "abeBsc");
    if (!strstr(f->log, "(chosen by a probe") ||
        !strstr(f->log, "probe rates: O_DIRECT "))
        fail_msg("the first restore did not probe:\n%s", f->log);
    if (!strstr(f->log, "bytes read through the page cache")) {
        /* an O_DIRECT verdict is reused once a second probe confirms it */
        zero_all(f);
        assert_ckpt_ok(ckpt_saver_restore(s, prefix.ptr));
        check_vars(f, "abeBsc");
    }
    zero_all(f);
    f->log[0] = '\0';
    aligned_fs_reset(&f->afs);
    assert_ckpt_ok(ckpt_saver_restore(s, prefix.ptr));
    check_vars(f, "abeBsc");
    if (!strstr(f->log, "(remembered from an earlier probe on this device; ") ||
        !strstr(f->log, "probe rates (an earlier probe on this device): "
                        "O_DIRECT "))
        fail_msg("the second restore's choice is not said remembered:\n%s",
                 f->log);
    /* no probe: one direct open, for the whole file or, through the page
     * cache, to learn that the file is not cached (a probe opens it once
     * more) */
    assert_int_equal(atomic_load(&f->afs.direct_opens), 1);
    ckpt_saver_free(s);
    ckpt_buf_dispose(&prefix);
    ckpt__read_verdicts_reset(NULL);
}

static void test_restore_subset(void **state)
{
    fixture *f = *state;
    ckpt_saver *s = open_saver(f);
    ckpt_buf prefix = CKPT_BUF_INIT;
    const char *big[2] = {"big/b", "big/a"}; /* 8.8 MB: direct */
    const char *small[2] = {"bias", "emb"};  /* 2 MB: page cache */
    assert_ckpt_ok(ckpt_saver_save(s, 2, &prefix));

    zero_all(f);
    aligned_fs_reset(&f->afs);
    assert_ckpt_ok(ckpt_saver_restore_subset(s, prefix.ptr, big, 2));
    check_vars(f, "ab");
    assert_true(atomic_load(&f->afs.direct_preads) > 0);

    zero_all(f);
    aligned_fs_reset(&f->afs);
    assert_ckpt_ok(ckpt_saver_restore_subset(s, prefix.ptr, small, 2));
    check_vars(f, "eB");
    assert_int_equal(atomic_load(&f->afs.direct_preads), 0);
    assert_int_equal(atomic_load(&f->afs.violations), 0);
    ckpt_saver_free(s);
    assert_int_equal(atomic_load(&f->afs.open_files), 0);
    ckpt_buf_dispose(&prefix);
}

/* A damaged record fails the restore with the variable's name. */
static void test_restore_corrupt(void **state)
{
    fixture *f = *state;
    ckpt_saver *s = open_saver(f);
    ckpt_buf prefix = CKPT_BUF_INIT;
    char path[4200];
    uint8_t *data;
    size_t n = 0;
    assert_ckpt_ok(ckpt_saver_save(s, 3, &prefix));
    snprintf(path, sizeof(path), "%s.data-00000-of-00001", prefix.ptr);
    data = test_read_file(path, &n);
    assert_non_null(data);
    /* every record but the scalar and bias is large: flip a byte in the
     * middle of the file, which lies in big/a, big/b or emb */
    data[n / 2] ^= 1;
    test_write_file(path, data, n);
    free(data);
    aligned_fs_reset(&f->afs);
    assert_ckpt_error(ckpt_saver_restore(s, prefix.ptr), CKPT_ECORRUPT,
                      "checksum mismatch");
    assert_true(atomic_load(&f->afs.direct_preads) > 0);
    ckpt_saver_free(s);
    ckpt_buf_dispose(&prefix);
}

#define T(fn) cmocka_unit_test_setup_teardown(fn, setup, teardown)

int main(void)
{
    const struct CMUnitTest tests[] = {
        T(test_restore_streams_direct),
        T(test_restore_logs_remembered_choice),
        T(test_restore_subset),
        T(test_restore_corrupt),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
