/* Saver error reporting: every file-system call goes through the wrappers
 * that name the operation and the file when a ckpt_fs method fails without
 * a message of its own, and the saver's public functions follow the
 * NULL-argument rule of docs/CONTRIBUTING.md. */
#include "saver_test_util.h"

#include "common/internal.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* The POSIX file system, except that the method chosen fails with
 * CKPT_EIO and sets no message, from its `after`th call on. */
typedef enum { MUTE_LIST, MUTE_REMOVE, MUTE_WRITE } mute_method;

typedef struct mute_fs {
    ckpt_fs fs;
    mute_method method;
    int after; /* calls that still succeed */
    int vocal; /* 1: a failing write says why, with ckpt_error_set */
    const char *refuse_remove; /* a remove of a path ending so fails */
} mute_fs;

static int should_fail(mute_fs *m, mute_method method)
{
    if (m->method != method)
        return 0;
    if (m->after > 0) {
        m->after--;
        return 0;
    }
    return 1;
}

static int mute_list(const char *path, ckpt_dir_cb cb, void *cb_payload,
                     void *payload)
{
    const ckpt_fs *p = ckpt_fs_posix();
    if (should_fail(payload, MUTE_LIST))
        return CKPT_EIO;
    return p->list(path, cb, cb_payload, p->payload);
}

static int mute_remove(const char *path, void *payload)
{
    const ckpt_fs *p = ckpt_fs_posix();
    const char *end = ((mute_fs *)payload)->refuse_remove;
    if (should_fail(payload, MUTE_REMOVE))
        return CKPT_EIO;
    if (end && strlen(path) >= strlen(end) &&
        strcmp(path + strlen(path) - strlen(end), end) == 0)
        return ckpt_error_set(CKPT_EACCES, "remove %s: refused", path);
    return p->remove(path, p->payload);
}

static int mute_write(ckpt_file *f, const void *buf, size_t n, void *payload)
{
    const ckpt_fs *p = ckpt_fs_posix();
    if (should_fail(payload, MUTE_WRITE))
        return ((mute_fs *)payload)->vocal
                   ? ckpt_error_set(CKPT_EIO,
                                    "volume v7 is read-only (a write of "
                                    "%zu bytes)",
                                    n)
                   : CKPT_EIO;
    return p->write(f, buf, n, p->payload);
}

/* Saver options `o` with the defaults and the mute file system `m`. */
static void mute_options(ckpt_saver_options *o, mute_fs *m, mute_method method,
                         int after)
{
    const ckpt_saver_options defaults = CKPT_SAVER_OPTIONS_INIT;
    m->fs = *ckpt_fs_posix();
    m->fs.payload = m;
    m->fs.list = mute_list;
    m->fs.remove = mute_remove;
    m->fs.write = mute_write;
    m->method = method;
    m->after = after;
    m->vocal = 0;
    m->refuse_remove = NULL;
    *o = defaults;
    o->fs = &m->fs;
}

typedef struct fixture {
    char *dir;
    float w[4];
    char log[4096];
} fixture;

static int setup(void **state)
{
    fixture *f = test_dir_fixture_new(sizeof(*f), offsetof(fixture, dir));
    *state = f;
    return 0;
}

static void keep_log(int level, const char *msg, void *payload)
{
    fixture *f = payload;
    size_t used = strlen(f->log);
    (void)level;
    snprintf(f->log + used, sizeof(f->log) - used, "%s\n", msg);
}

static ckpt_saver *open_with(fixture *f, ckpt_saver_options *o)
{
    ckpt_saver *s = NULL;
    ckpt_var w = {"w", CKPT_DT_FLOAT, {1, {4}}, f->w, NULL, NULL, NULL};
    assert_ckpt_ok(ckpt_saver_open(&s, f->dir, o));
    assert_ckpt_ok(ckpt_saver_add_var(s, &w));
    return s;
}

/* Opening lists the directory; a silent failure there is named. */
static void test_open_names_silent_list_failure(void **state)
{
    fixture *f = *state;
    ckpt_saver_options o;
    ckpt_saver *s = NULL;
    mute_fs m;
    char want[512];
    mute_options(&o, &m, MUTE_LIST, 0);
    ckpt__error(CKPT_ECORRUPT, "a stale message");
    snprintf(want, sizeof(want), "list %s: input/output error", f->dir);
    assert_ckpt_error(ckpt_saver_open(&s, f->dir, &o), CKPT_EIO, want);
    assert_null(s);
}

/* Retention deletes through the wrappers: the warning for a deletion that
 * failed silently names the file, not a stale message. */
static void test_retention_names_silent_remove_failure(void **state)
{
    fixture *f = *state;
    ckpt_saver_options o;
    ckpt_saver *s;
    mute_fs m;
    mute_options(&o, &m, MUTE_REMOVE, 1000);
    o.max_to_keep = 1;
    o.log = keep_log;
    o.log_payload = f;
    o.log_level = CKPT_LOG_WARN;
    s = open_with(f, &o);
    assert_ckpt_ok(ckpt_saver_save(s, 1, NULL));
    m.after = 0;
    ckpt__error(CKPT_ECORRUPT, "a stale message");
    assert_ckpt_ok(ckpt_saver_save(s, 2, NULL));
    assert_non_null(strstr(f->log, "deleting old checkpoint"));
    assert_non_null(strstr(f->log, "model.ckpt-1.index: input/output error"));
    assert_null(strstr(f->log, "a stale message"));
    ckpt_saver_free(s);
}

/* Writes go to open files, whose methods are not given the path: a
 * silent write failure is named with the file it was writing: the data
 * file, and the index the table builder writes (the note's failure before
 * them only draws a warning). */
static void test_write_names_silent_failure(void **state)
{
    fixture *f = *state;
    static const char *const files[] = {"/model.ckpt-1.data-00000-of-00001.",
                                        "/model.ckpt-1.index.tempstate"};
    for (int k = 0; k < 2; k++) {
        ckpt_saver_options o;
        ckpt_saver *s;
        mute_fs m;
        char want[4200];
        const char *msg;
        mute_options(&o, &m, MUTE_WRITE, 1000);
        s = open_with(f, &o);
        m.after = k + 1; /* the note is written first */
        ckpt__error(CKPT_ECORRUPT, "a stale message");
        assert_ckpt_error(ckpt_saver_save(s, 1, NULL), CKPT_EIO,
                          ": input/output error");
        msg = ckpt_error_last()->message;
        snprintf(want, sizeof(want), "write %s%s", f->dir, files[k]);
        if (!strstr(msg, want))
            fail_msg("write %d: \"%s\" lacks \"%s\"", k, msg, want);
        assert_null(strstr(msg, "stale"));
        ckpt_saver_free(s);
    }
}

/* A file system (or a variable's read callback) that says why it failed,
 * with ckpt_error_set, has its message passed on with the saver's own
 * context; a callback that records none is named with its return value. */
static int device_read(void *dst, uint64_t offset, size_t n, void *payload)
{
    (void)dst;
    (void)offset;
    (void)n;
    return payload ? ckpt_error_set(CKPT_EIO, "device %d is gone", 3) : 9;
}

static void test_callers_messages_passed_on(void **state)
{
    fixture *f = *state;
    ckpt_saver_options o;
    ckpt_saver *s;
    mute_fs m;
    int flag = 1;
    ckpt_var dev = {"dev",       CKPT_DT_FLOAT, {1, {2}}, NULL,
                    device_read, NULL,          &flag};
    mute_options(&o, &m, MUTE_WRITE, 1000);
    s = open_with(f, &o);
    m.after = 0;
    m.vocal = 1;
    assert_ckpt_error(ckpt_saver_save(s, 1, NULL), CKPT_EIO,
                      "volume v7 is read-only (a write of ");
    /* named with the file, which the write method is not given */
    assert_non_null(
        strstr(ckpt_error_last()->message, ".data-00000-of-00001.tempstate"));
    ckpt_saver_free(s);
    m.after = 1000;
    s = open_with(f, &o);
    assert_ckpt_ok(ckpt_saver_add_var(s, &dev));
    ckpt__error(CKPT_EIO, "a stale message");
    assert_ckpt_error(ckpt_saver_save(s, 2, NULL), CKPT_EUSER,
                      "variable 'dev': read callback failed: device 3 is "
                      "gone");
    /* the asynchronous save's snapshot fails in the call, said the same
     * way, the step and the checkpoint named (it said the variable only) */
    assert_ckpt_error(ckpt_saver_save_async(s, 2, NULL), CKPT_EUSER,
                      "failed: variable 'dev': read callback failed: device "
                      "3 is gone");
    assert_non_null(strstr(ckpt_error_last()->message, "save of step 2 to "));
    assert_non_null(strstr(ckpt_error_last()->message, "model.ckpt-2 failed"));
    dev.payload = NULL; /* returns 9 and says nothing */
    ckpt_saver_free(s);
    s = open_with(f, &o);
    assert_ckpt_ok(ckpt_saver_add_var(s, &dev));
    ckpt__error(CKPT_EIO, "a stale message");
    assert_ckpt_error(ckpt_saver_save(s, 3, NULL), CKPT_EUSER,
                      "variable 'dev': read callback failed (9)");
    assert_null(strstr(ckpt_error_last()->message, "stale"));
    ckpt_saver_free(s);
}

static int zeros_read(void *dst, uint64_t off, size_t n, void *payload)
{
    (void)off;
    (void)payload;
    memset(dst, 0, n);
    return 0;
}

static int device_write(const void *src, uint64_t off, size_t n, void *payload)
{
    (void)src;
    (void)off;
    (void)n;
    return payload ? ckpt_error_set(CKPT_EIO, "device %d is gone", 3) : 9;
}

/* A write callback failing in a restore is reported as a read callback
 * failing in a save, and in the MPI saver's words (one helper,
 * ckpt__var_write): CKPT_EUSER "variable '<name>': write callback
 * failed", with the callback's message or its return value. */
static void test_write_callback_failure_in_restore(void **state)
{
    fixture *f = *state;
    ckpt_saver *s = open_with(f, NULL);
    ckpt_buf prefix = CKPT_BUF_INIT;
    int flag = 1;
    ckpt_var dev = {"dev",      CKPT_DT_FLOAT, {1, {4}}, NULL,
                    zeros_read, device_write,  &flag};
    assert_ckpt_ok(ckpt_saver_add_var(s, &dev));
    assert_ckpt_ok(ckpt_saver_save(s, 1, &prefix));
    ckpt__error(CKPT_EIO, "a stale message");
    assert_ckpt_error(ckpt_saver_restore(s, prefix.ptr), CKPT_EUSER,
                      "variable 'dev': write callback failed: device 3 is "
                      "gone");
    dev.payload = NULL; /* returns 9 and says nothing */
    ckpt_saver_free(s);
    s = open_with(f, NULL);
    assert_ckpt_ok(ckpt_saver_add_var(s, &dev));
    ckpt__error(CKPT_EIO, "a stale message");
    assert_ckpt_error(ckpt_saver_restore(s, prefix.ptr), CKPT_EUSER,
                      "variable 'dev': write callback failed (9)");
    assert_null(strstr(ckpt_error_last()->message, "stale"));
    assert_null(strstr(ckpt_error_last()->message, "restore: variable"));
    ckpt_saver_free(s);
    ckpt_buf_dispose(&prefix);
}

static int count_write(const void *src, uint64_t off, size_t n, void *payload)
{
    (void)src;
    (void)off;
    (void)n;
    ++*(int *)payload;
    return 0;
}

/* A variable behind a write callback whose record runs past the end of a
 * data file cut short, registered after one in memory: the one in memory
 * was read first and the cut found only at the callback's read, with the
 * first variable written. Every record is located before any variable is
 * written now: CKPT_ECORRUPT naming the data file and the tensor, neither
 * variable written. */
static void test_callback_record_past_data_end_writes_nothing(void **state)
{
    fixture *f = *state;
    ckpt_saver *s = open_with(f, NULL);
    ckpt_buf prefix = CKPT_BUF_INIT, data = CKPT_BUF_INIT;
    float a[4] = {1, 2, 3, 4};
    int writes = 0;
    ckpt_var mem = {"a", CKPT_DT_FLOAT, {1, {4}}, a, NULL, NULL, NULL};
    ckpt_var dev = {"z",        CKPT_DT_FLOAT, {1, {4}}, NULL,
                    zeros_read, count_write,   &writes};
    assert_ckpt_ok(ckpt_saver_add_var(s, &mem));
    assert_ckpt_ok(ckpt_saver_add_var(s, &dev));
    assert_ckpt_ok(ckpt_saver_save(s, 1, &prefix));
    /* "a" at offset 0, "z" at 32 (the saver aligns records): keep 2 of
     * z's bytes */
    assert_ckpt_ok(ckpt_bundle_data_path(&data, prefix.ptr, 0, 1));
    assert_int_equal(truncate(data.ptr, 34), 0);
    a[0] = -7;
    assert_ckpt_error(ckpt_saver_restore(s, prefix.ptr), CKPT_ECORRUPT,
                      "tensor 'z': record at offset 32, 16 bytes, runs past "
                      "the end of the data file (34 bytes)");
    assert_true(a[0] == -7);
    assert_int_equal(writes, 0);
    ckpt_saver_free(s);
    ckpt_buf_dispose(&data);
    ckpt_buf_dispose(&prefix);
}

/* The note of a save in progress that cannot be removed once the save is
 * done: the save succeeds, and the warning says so. */
static void test_note_left_behind_is_said(void **state)
{
    fixture *f = *state;
    ckpt_saver_options o;
    ckpt_saver *s;
    mute_fs m;
    mute_options(&o, &m, MUTE_REMOVE, 1000);
    m.refuse_remove = "/checkpoint.pending";
    o.log = keep_log;
    o.log_payload = f;
    o.log_level = CKPT_LOG_WARN;
    s = open_with(f, &o);
    assert_ckpt_ok(ckpt_saver_save(s, 1, NULL));
    assert_non_null(strstr(f->log, "cannot remove the note of the finished "
                                   "save (the next open reads it again): "
                                   "remove "));
    assert_non_null(strstr(f->log, "checkpoint.pending: refused"));
    ckpt_saver_free(s);
}

/* A NaN where seconds are expected compares false both ways, so it once
 * passed "< 0" checks into a deadline that was never set: wait spun
 * forever holding the saver's mutex. Now every such entry refuses it. */
static void test_nan_seconds_refused(void **state)
{
    fixture *f = *state;
    ckpt_saver_options o = CKPT_SAVER_OPTIONS_INIT;
    ckpt_saver *s = NULL;
    ckpt_coordinator *c = NULL;
    o.keep_checkpoint_every_n_hours = NAN;
    assert_ckpt_error(ckpt_saver_open(&s, f->dir, &o), CKPT_EINVAL,
                      "keep_checkpoint_every_n_hours is NaN");
    assert_null(s);
    o.keep_checkpoint_every_n_hours = 0;
    s = open_with(f, &o);
    assert_ckpt_ok(ckpt_saver_save_async(s, 1, NULL));
    {
        /* naming the saver by its directory */
        char want[4200];
        snprintf(want, sizeof(want), "saver %s: wait: timeout_s is NaN",
                 f->dir);
        assert_ckpt_error(ckpt_saver_wait(s, 0, NAN), CKPT_EINVAL, want);
        snprintf(want, sizeof(want), "saver %s: close: timeout_s is NaN",
                 f->dir);
        assert_ckpt_error(ckpt_saver_close(s, NAN), CKPT_EINVAL, want);
    }
    /* still open; a timeout too long for a deadline means no limit */
    assert_ckpt_ok(ckpt_saver_wait(s, 0, 1e300));
    assert_ckpt_ok(ckpt_saver_save_async(s, 2, NULL));
    assert_ckpt_ok(ckpt_saver_close(s, 1e300));
    ckpt_saver_free(s);
    assert_int_equal(count_files(f->dir, ".index"), 2);
    assert_ckpt_ok(ckpt_coordinator_new(&c, NULL));
    assert_int_equal(ckpt_coordinator_wait_for_stop(c, NAN), 0);
    assert_ckpt_ok(ckpt_coordinator_request_stop(c, 0, NULL));
    assert_int_equal(ckpt_coordinator_wait_for_stop(c, 1e300), 1);
    ckpt_coordinator_free(c);
}

/* A basename that cannot name files in the directory is refused at open,
 * naming it: empty, with a '/', "." or ".." (a step-less save's prefix
 * would be the directory itself or its parent); nothing is created. */
static void test_basename_not_a_file_name(void **state)
{
    static const char *const refused[] = {"", "a/b", ".", "..", "/"};
    fixture *f = *state;
    ckpt_saver_options o = CKPT_SAVER_OPTIONS_INIT;
    ckpt_saver *s = NULL;
    char want[96];
    for (size_t i = 0; i < sizeof(refused) / sizeof(refused[0]); i++) {
        o.basename = refused[i];
        snprintf(want, sizeof(want),
                 "basename '%s' must be a non-empty file name without '/', "
                 "not '.' or '..'",
                 refused[i]);
        assert_ckpt_error(ckpt_saver_open(&s, f->dir, &o), CKPT_EINVAL, want);
        assert_null(s);
    }
    assert_int_equal(count_files(f->dir, ""), 0);
    o.basename = "..a"; /* a file name that starts with dots is fine */
    s = open_with(f, &o);
    assert_ckpt_ok(ckpt_saver_save(s, CKPT_NO_STEP, NULL));
    ckpt_saver_free(s);
    assert_true(file_exists(f->dir, "..a.index"));
}

/* A basename too long for its checkpoints' file names is refused at open,
 * naming the argument (every save failed with CKPT_EIO before); the
 * longest accepted one saves. */
static void test_basename_length(void **state)
{
    fixture *f = *state;
    ckpt_saver_options o = CKPT_SAVER_OPTIONS_INIT;
    ckpt_saver *s = NULL;
    char name[CKPT_BASENAME_MAX + 2];
    memset(name, 'b', sizeof(name) - 1);
    name[sizeof(name) - 1] = '\0';
    o.basename = name;
    assert_ckpt_error(ckpt_saver_open(&s, f->dir, &o), CKPT_EINVAL,
                      "basename of 189 bytes is longer than 188");
    assert_null(s);
    name[CKPT_BASENAME_MAX] = '\0';
    s = open_with(f, &o);
    assert_ckpt_ok(ckpt_saver_save(s, INT64_MAX, NULL));
    assert_ckpt_ok(ckpt_saver_save_async(s, INT64_MAX - 1, NULL));
    assert_ckpt_ok(ckpt_saver_close(s, -1));
    ckpt_saver_free(s);
    assert_int_equal(count_files(f->dir, ".index"), 2);
}

/* A tensor name longer than CKPT_MAX_NAME_BYTES is refused by add_var
 * and by the bundle writer, naming the limit (before, a 33 MiB name
 * saved "successfully" into a checkpoint no reader could open); the
 * longest accepted one round-trips. */
static void test_name_length(void **state)
{
    fixture *f = *state;
    size_t max = CKPT_MAX_NAME_BYTES;
    char *name = malloc(max + 2);
    char *prefix = NULL;
    float x = 1.5f, back = 0.0f;
    ckpt_var v = {0};
    ckpt_saver *s = open_with(f, NULL);
    ckpt_bundle_writer *w = NULL;
    ckpt_bundle_reader *r = NULL;
    ckpt_shape scalar = {0};
    assert_non_null(name);
    memset(name, 'n', max + 1);
    name[max + 1] = '\0';
    v.name = name;
    v.dtype = CKPT_DT_FLOAT;
    v.data = &x;
    assert_ckpt_error(ckpt_saver_add_var(s, &v), CKPT_EINVAL,
                      "at most CKPT_MAX_NAME_BYTES");
    ckpt_saver_free(s);
    assert_true(asprintf(&prefix, "%s/b", f->dir) > 0);
    assert_ckpt_ok(ckpt_bundle_writer_open(&w, prefix, NULL));
    assert_ckpt_error(
        ckpt_bundle_writer_add(w, name, CKPT_DT_FLOAT, &scalar, &x, sizeof(x)),
        CKPT_EINVAL, "at most CKPT_MAX_NAME_BYTES");
    ckpt_bundle_writer_free(w); /* a failed add ends the writer */
    name[max] = '\0';
    assert_ckpt_ok(ckpt_bundle_writer_open(&w, prefix, NULL));
    assert_ckpt_ok(
        ckpt_bundle_writer_add(w, name, CKPT_DT_FLOAT, &scalar, &x, sizeof(x)));
    assert_ckpt_ok(ckpt_bundle_writer_finish(w));
    ckpt_bundle_writer_free(w);
    assert_ckpt_ok(ckpt_bundle_reader_open(&r, prefix, NULL));
    assert_ckpt_ok(ckpt_bundle_reader_read(r, name, &back, sizeof(back)));
    assert_true(back == x);
    ckpt_bundle_reader_free(r);
    free(prefix);
    free(name);
}

/* A write method that returns the byte count, as POSIX write() does, is
 * a failure naming the method and the file (the save reported success
 * before, leaving the data under its temporary name and a state file that
 * named a checkpoint without an index, so restore_latest found none). */
static int counting_write(ckpt_file *file, const void *buf, size_t n,
                          void *payload)
{
    const ckpt_fs *p = ckpt_fs_posix();
    int err = p->write(file, buf, n, p->payload);
    (void)payload;
    return err < 0 ? err : (int)n;
}

static void test_positive_return_is_a_failure(void **state)
{
    fixture *f = *state;
    ckpt_saver_options o = CKPT_SAVER_OPTIONS_INIT;
    ckpt_fs fs = *ckpt_fs_posix();
    ckpt_buf latest = {0};
    ckpt_saver *s = NULL;
    fs.write = counting_write;
    o.fs = &fs;
    s = open_with(f, &o);
    assert_ckpt_error(ckpt_saver_save(s, 1, NULL), CKPT_EIO,
                      "the file system's method returned");
    assert_ckpt_error(ckpt_saver_save(s, 2, NULL), CKPT_EIO,
                      "returns 0 on success or a negative ckpt_error_code");
    ckpt_saver_free(s);
    assert_int_equal(count_files(f->dir, ".index"), 0);
    assert_int_equal(ckpt_latest_checkpoint(&latest, NULL, f->dir),
                     CKPT_ENOTFOUND);
    ckpt_buf_dispose(&latest);
}

/* `rc` is `code` with a message naming saver `dir` before `what`. */
static void assert_saver_error(int rc, int code, const char *dir,
                               const char *what)
{
    char want[4200];
    snprintf(want, sizeof(want), "saver %s: %s", dir, what);
    assert_ckpt_error(rc, code, want);
}

/* With several savers, a refused call says which one: the message names
 * the saver's directory (it said only "save: no variables to save"). */
static void test_refusals_name_the_directory(void **state)
{
    fixture *f = *state;
    char *a = test_path(f->dir, "a"), *b = test_path(f->dir, "b");
    ckpt_saver *sa = NULL, *sb = NULL;
    ckpt_var w = {"w", CKPT_DT_FLOAT, {1, {4}}, f->w, NULL, NULL, NULL};
    assert_int_equal(mkdir(a, 0755), 0);
    assert_int_equal(mkdir(b, 0755), 0);
    assert_ckpt_ok(ckpt_saver_open(&sa, a, NULL));
    assert_ckpt_ok(ckpt_saver_open(&sb, b, NULL));
    assert_ckpt_ok(ckpt_saver_add_var(sa, &w));
    assert_saver_error(ckpt_saver_save(sb, 1, NULL), CKPT_EINVAL, b,
                       "save: no variables to save");
    assert_saver_error(ckpt_saver_reserve(sb), CKPT_EINVAL, b,
                       "reserve: no variables registered");
    assert_saver_error(ckpt_saver_wait(sb, 7, -1), CKPT_EINVAL, b,
                       "wait: ticket 7 was never issued");
    assert_ckpt_ok(ckpt_saver_close(sa, -1));
    assert_saver_error(ckpt_saver_save(sa, 1, NULL), CKPT_ESTATE, a,
                       "save: the saver is closed");
    /* each call named as the program made it (save_async said "save") */
    assert_saver_error(ckpt_saver_save_async(sa, 1, NULL), CKPT_ESTATE, a,
                       "save_async: the saver is closed");
    assert_saver_error(ckpt_saver_close(sa, -1), CKPT_ESTATE, a,
                       "close: the saver is already closed");
    ckpt_saver_free(sa);
    ckpt_saver_free(sb);
    free(a);
    free(b);
}

/* Restoring before any variable is registered restores nothing: it used
 * to succeed, so a program that called it before ckpt_saver_add_var
 * trained from its initial values and its first saves evicted the
 * checkpoints it meant to resume from. Now CKPT_EINVAL, whether or not
 * there is a checkpoint, and nothing in the directory is touched. */
static void test_restore_without_variables(void **state)
{
    fixture *f = *state;
    ckpt_saver *s = open_with(f, NULL);
    ckpt_buf latest = CKPT_BUF_INIT;
    ckpt_var w = {"w", CKPT_DT_FLOAT, {1, {4}}, f->w, NULL, NULL, NULL};
    const float want[4] = {1, 2, 3, 4};
    char *before, *after;
    memcpy(f->w, want, sizeof(want));
    assert_ckpt_ok(ckpt_saver_save(s, 3, NULL));
    ckpt_saver_free(s);
    memset(f->w, 0, sizeof(f->w));
    assert_ckpt_ok(ckpt_saver_open(&s, f->dir, NULL));
    before = dir_signature(f->dir);
    assert_non_null(before);
    assert_saver_error(ckpt_saver_restore_latest(s, &latest), CKPT_EINVAL,
                       f->dir,
                       "restore_latest: no variables registered, so nothing "
                       "would be restored (register them with "
                       "ckpt_saver_add_var first)");
    assert_int_equal(latest.size, 0);
    assert_saver_error(ckpt_saver_restore(s, latest.ptr ? latest.ptr : "x"),
                       CKPT_EINVAL, f->dir, "restore: no variables registered");
    assert_int_equal(ckpt_saver_num_checkpoints(s), 1);
    after = dir_signature(f->dir);
    assert_string_equal(after, before);
    free(before);
    free(after);
    /* registered, the same saver restores */
    assert_ckpt_ok(ckpt_saver_add_var(s, &w));
    assert_ckpt_ok(ckpt_saver_restore_latest(s, &latest));
    assert_memory_equal(f->w, want, sizeof(want));
    assert_non_null(strstr(latest.ptr, "model.ckpt-3"));
    ckpt_saver_free(s);
    ckpt_buf_dispose(&latest);
    /* an empty directory: the same mistake, not "no checkpoint" */
    {
        char *empty = test_path(f->dir, "empty");
        assert_int_equal(mkdir(empty, 0755), 0);
        assert_ckpt_ok(ckpt_saver_open(&s, empty, NULL));
        assert_saver_error(ckpt_saver_restore_latest(s, NULL), CKPT_EINVAL,
                           empty, "restore_latest: no variables registered");
        ckpt_saver_free(s);
        free(empty);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_open_names_silent_list_failure,
                                        setup, test_dir_fixture_teardown),
        cmocka_unit_test_setup_teardown(
            test_retention_names_silent_remove_failure, setup,
            test_dir_fixture_teardown),
        cmocka_unit_test_setup_teardown(test_write_names_silent_failure, setup,
                                        test_dir_fixture_teardown),
        cmocka_unit_test_setup_teardown(test_callers_messages_passed_on, setup,
                                        test_dir_fixture_teardown),
        cmocka_unit_test_setup_teardown(test_write_callback_failure_in_restore,
                                        setup, test_dir_fixture_teardown),
        cmocka_unit_test_setup_teardown(
            test_callback_record_past_data_end_writes_nothing, setup,
            test_dir_fixture_teardown),
        cmocka_unit_test_setup_teardown(test_note_left_behind_is_said, setup,
                                        test_dir_fixture_teardown),
        cmocka_unit_test_setup_teardown(test_nan_seconds_refused, setup,
                                        test_dir_fixture_teardown),
        cmocka_unit_test_setup_teardown(test_basename_not_a_file_name, setup,
                                        test_dir_fixture_teardown),
        cmocka_unit_test_setup_teardown(test_basename_length, setup,
                                        test_dir_fixture_teardown),
        cmocka_unit_test_setup_teardown(test_name_length, setup,
                                        test_dir_fixture_teardown),
        cmocka_unit_test_setup_teardown(test_positive_return_is_a_failure,
                                        setup, test_dir_fixture_teardown),
        cmocka_unit_test_setup_teardown(test_refusals_name_the_directory, setup,
                                        test_dir_fixture_teardown),
        cmocka_unit_test_setup_teardown(test_restore_without_variables, setup,
                                        test_dir_fixture_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
