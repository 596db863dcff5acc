/* tests/crash/crash_util.c - see crash_util.h. */
#include "crash_util.h"

#include <dirent.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* ---- the file system ----------------------------------------------------- */

static int nosync_sync(ckpt_file *f, void *payload)
{
    (void)f;
    (void)payload;
    return 0;
}

static int nosync_sync_dir(const char *path, void *payload)
{
    (void)path;
    (void)payload;
    return 0;
}

void crash_nosync_fs(ckpt_fs_forward *out)
{
    ckpt_fs_forward_init(out, ckpt_fs_posix());
    out->fs.sync = nosync_sync;
    out->fs.sync_dir = nosync_sync_dir;
}

/* ---- the model ---------------------------------------------------------- */

static size_t g_emb_kib = 4; /* a test setting, see crash_set_emb_kib */

void crash_set_emb_kib(size_t kib)
{
    g_emb_kib = kib;
}

size_t crash_emb_bytes(void)
{
    return g_emb_kib * 1024u;
}

static float w_value(int64_t step, int i)
{
    return (float)(step * 1000 + i) * 0.5f;
}

static uint8_t emb_value(int64_t step, size_t i)
{
    return (uint8_t)((i * 131u + (size_t)step * 7u + (i >> 12)) & 0xffu);
}

void crash_model_init(crash_model *m)
{
    memset(m, 0, sizeof(*m));
    m->emb_n = crash_emb_bytes();
    m->emb = calloc(m->emb_n, 1);
    assert_non_null(m->emb);
}

void crash_model_dispose(crash_model *m)
{
    free(m->emb);
    m->emb = NULL;
}

void crash_model_fill(crash_model *m, int64_t step)
{
    for (int i = 0; i < CRASH_W_N; i++)
        m->w[i] = w_value(step, i);
    m->step = step;
    for (size_t i = 0; i < m->emb_n; i++)
        m->emb[i] = emb_value(step, i);
}

static int why_set(char *why, size_t n, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(why, n, fmt, ap);
    va_end(ap);
    return -1;
}

int crash_model_check(const crash_model *m, int64_t step, char *why, size_t n)
{
    if (m->step != step)
        return why_set(why, n, "global_step is %lld, expected %lld",
                       (long long)m->step, (long long)step);
    for (int i = 0; i < CRASH_W_N; i++)
        if (m->w[i] != w_value(step, i))
            return why_set(why, n, "w[%d] is %g, expected %g (step %lld)", i,
                           (double)m->w[i], (double)w_value(step, i),
                           (long long)step);
    for (size_t i = 0; i < m->emb_n; i++)
        if (m->emb[i] != emb_value(step, i))
            return why_set(why, n, "emb[%zu] is %u, expected %u (step %lld)", i,
                           m->emb[i], emb_value(step, i), (long long)step);
    return 0;
}

static double keep_hours;
static const ckpt_clock *keep_clock;

void crash_set_keep_hours(double hours, const ckpt_clock *clock)
{
    keep_hours = hours;
    keep_clock = clock;
}

int crash_saver_open(ckpt_saver **out, const char *dir, const ckpt_fs *fs,
                     int max_to_keep, crash_model *m, ckpt_save_done_fn done,
                     void *done_payload)
{
    ckpt_saver_options o = CKPT_SAVER_OPTIONS_INIT;
    ckpt_var w = {"w", CKPT_DT_FLOAT, {1, {CRASH_W_N}}, m->w, NULL, NULL, NULL};
    ckpt_var step = {"global_step", CKPT_DT_INT64, {0, {0}}, &m->step,
                     NULL,          NULL,          NULL};
    ckpt_var emb = {
        "emb",  CKPT_DT_UINT8, {2, {(int64_t)(m->emb_n / 1024), 1024}},
        m->emb, NULL,          NULL,
        NULL};
    ckpt_saver *s = NULL;
    int err;
    *out = NULL;
    o.fs = fs;
    o.max_to_keep = max_to_keep;
    o.keep_checkpoint_every_n_hours = keep_hours;
    o.clock = keep_clock;
    o.on_save_done = done;
    o.on_save_done_payload = done_payload;
    err = ckpt_saver_open(&s, dir, &o);
    if (err < 0)
        return err;
    assert_ckpt_ok(ckpt_saver_add_var(s, &w));
    assert_ckpt_ok(ckpt_saver_add_var(s, &step));
    assert_ckpt_ok(ckpt_saver_add_var(s, &emb));
    *out = s;
    return 0;
}

/* ---- checks -----------------------------------------------------------------
 */

int crash_verify_checkpoint(const char *prefix, char *why, size_t n)
{
    ckpt_bundle_reader *r = NULL;
    crash_model m;
    int64_t step = ckpt_checkpoint_step(prefix);
    int rc = -1;
    int err;
    crash_model_init(&m);
    if (step == CKPT_NO_STEP) {
        why_set(why, n, "%s: no step in the name", prefix);
        goto done;
    }
    err = ckpt_bundle_reader_open(&r, prefix, NULL);
    if (err < 0) {
        why_set(why, n, "%s: open: %s", prefix, ckpt_error_last()->message);
        goto done;
    }
    err = ckpt_bundle_reader_verify(r);
    if (err < 0) {
        why_set(why, n, "%s: verify: %s", prefix, ckpt_error_last()->message);
        goto done;
    }
    if (ckpt_bundle_reader_count(r) != 3) {
        why_set(why, n, "%s: %zu entries, expected 3", prefix,
                ckpt_bundle_reader_count(r));
        goto done;
    }
    err = ckpt_bundle_reader_read(r, "w", m.w, sizeof(m.w));
    if (err == 0)
        err =
            ckpt_bundle_reader_read(r, "global_step", &m.step, sizeof(m.step));
    if (err == 0)
        err = ckpt_bundle_reader_read(r, "emb", m.emb, m.emb_n);
    if (err < 0) {
        why_set(why, n, "%s: read: %s", prefix, ckpt_error_last()->message);
        goto done;
    }
    if (crash_model_check(&m, step, why, n) < 0) {
        char inner[512];
        snprintf(inner, sizeof(inner), "%s", why);
        why_set(why, n, "%s: %s", prefix, inner);
        goto done;
    }
    rc = 0;
done:
    ckpt_bundle_reader_free(r);
    crash_model_dispose(&m);
    return rc;
}

/* Entries of `dir` for which match(dir, name, arg) holds, or -1 when the
 * directory cannot be opened. */
static int count_entries(const char *dir,
                         int (*match)(const char *dir, const char *name,
                                      const void *arg),
                         const void *arg)
{
    DIR *d = opendir(dir);
    struct dirent *e;
    int count = 0;
    if (!d)
        return -1;
    while ((e = readdir(d)) != NULL)
        count += match(dir, e->d_name, arg) != 0;
    closedir(d);
    return count;
}

static int has_prefix(const char *dir, const char *name, const void *prefix)
{
    (void)dir;
    return strncmp(name, prefix, strlen(prefix)) == 0;
}

int crash_count_names(const char *dir, const char *prefix)
{
    return count_entries(dir, has_prefix, prefix);
}

/* An index file whose (first) data file is missing. */
static int index_without_data(const char *dir, const char *name,
                              const void *arg)
{
    size_t n = strlen(name);
    char data[1024];
    struct stat st;
    (void)arg;
    if (n <= 6 || strcmp(name + n - 6, ".index") != 0 ||
        (size_t)snprintf(data, sizeof(data), "%s/%.*s.data-00000-of-00001", dir,
                         (int)(n - 6), name) >= sizeof(data))
        return 0;
    return stat(data, &st) != 0;
}

int crash_count_incomplete(const char *dir)
{
    return count_entries(dir, index_without_data, NULL);
}

/* A save's temporary file: a bundle's or the state file's. */
static int is_temp(const char *dir, const char *name, const void *arg)
{
    (void)dir;
    (void)arg;
    return strstr(name, ".tempstate") || !strncmp(name, "checkpoint.tmp", 14);
}

int crash_count_temps(const char *dir)
{
    return count_entries(dir, is_temp, NULL);
}

int crash_check_dir(const char *dir, int64_t durable, int64_t max_step,
                    int64_t *latest_out, size_t *listed_out, char *why,
                    size_t n)
{
    ckpt_state st = CKPT_STATE_INIT;
    ckpt_buf prefix = CKPT_BUF_INIT;
    ckpt_buf latest = CKPT_BUF_INIT;
    int64_t step;
    int rc = -1;
    int err;
    *latest_out = -1;
    *listed_out = 0;
    err = ckpt_state_read(&st, NULL, dir);
    if (err == CKPT_ENOTFOUND) {
        if (durable >= 0)
            return why_set(why, n,
                           "no state file, but the save of step %lld was "
                           "reported durable",
                           (long long)durable);
        return 0;
    }
    if (err < 0)
        return why_set(why, n, "state file: %s", ckpt_error_last()->message);
    if (st.num_paths == 0 ||
        strcmp(st.all_paths[st.num_paths - 1], st.model_checkpoint_path)) {
        why_set(why, n,
                "state file: model_checkpoint_path '%s' is not the newest of "
                "its %zu entries",
                st.model_checkpoint_path, st.num_paths);
        goto done;
    }
    for (size_t i = 0; i < st.num_paths; i++) {
        if (ckpt_state_resolve(&prefix, dir, st.all_paths[i]) < 0 ||
            crash_verify_checkpoint(prefix.ptr, why, n) < 0) {
            char inner[512];
            snprintf(inner, sizeof(inner), "%s", why);
            why_set(why, n, "state file entry %zu ('%s'): %s", i,
                    st.all_paths[i], inner);
            goto done;
        }
    }
    /* prefix holds the newest entry now */
    err = ckpt_latest_checkpoint(&latest, NULL, dir);
    if (err < 0 || strcmp(latest.ptr, prefix.ptr)) {
        why_set(why, n, "latest_checkpoint gives %s, the state file names %s",
                err < 0 ? ckpt_error_last()->message : latest.ptr, prefix.ptr);
        goto done;
    }
    step = ckpt_checkpoint_step(prefix.ptr);
    if (step < durable) {
        why_set(why, n,
                "the latest checkpoint is step %lld, but the save of step "
                "%lld was reported durable",
                (long long)step, (long long)durable);
        goto done;
    }
    if (step > max_step) {
        why_set(why, n, "the latest checkpoint is step %lld, never saved",
                (long long)step);
        goto done;
    }
    *latest_out = step;
    *listed_out = st.num_paths;
    rc = 0;
done:
    ckpt_state_dispose(&st);
    ckpt_buf_dispose(&prefix);
    ckpt_buf_dispose(&latest);
    return rc;
}

int crash_check_recovery(const char *dir, const ckpt_fs *fs, int64_t latest,
                         size_t listed, int64_t step, char *why, size_t n)
{
    ckpt_saver *s = NULL;
    ckpt_buf prefix = CKPT_BUF_INIT;
    crash_model m;
    int64_t now_latest;
    size_t now_listed;
    int temps;
    int rc = -1;
    int err;
    crash_model_init(&m);
    err = crash_saver_open(&s, dir, fs, 2, &m, NULL, NULL);
    if (err < 0) {
        why_set(why, n, "recovery: saver_open: %s", ckpt_error_last()->message);
        goto done;
    }
    temps = crash_count_temps(dir);
    if (temps != 0) {
        why_set(why, n, "recovery: %d temporary files left after open", temps);
        goto done;
    }
    if (ckpt_saver_num_checkpoints(s) != listed) {
        why_set(why, n,
                "recovery: %zu checkpoints kept, the state file "
                "lists %zu",
                ckpt_saver_num_checkpoints(s), listed);
        goto done;
    }
    if (latest >= 0) {
        err = ckpt_saver_restore_latest(s, &prefix);
        if (err < 0) {
            why_set(why, n, "recovery: restore_latest: %s",
                    ckpt_error_last()->message);
            goto done;
        }
        if (crash_model_check(&m, latest, why, n) < 0)
            goto done;
    }
    crash_model_fill(&m, step);
    err = ckpt_saver_save(s, step, NULL);
    if (err < 0) {
        why_set(why, n, "recovery: save of step %lld: %s", (long long)step,
                ckpt_error_last()->message);
        goto done;
    }
    ckpt_saver_free(s);
    s = NULL;
    temps = crash_count_temps(dir);
    if (temps != 0) {
        why_set(why, n, "recovery: %d temporary files left after a save",
                temps);
        goto done;
    }
    if (crash_check_dir(dir, step, step, &now_latest, &now_listed, why, n) < 0)
        goto done;
    if (now_latest != step || now_listed > 2) {
        why_set(why, n,
                "recovery: after saving step %lld the latest is %lld with "
                "%zu listed",
                (long long)step, (long long)now_latest, now_listed);
        goto done;
    }
    rc = 0;
done:
    if (rc < 0 && why[0] == '\0')
        why_set(why, n, "recovery failed");
    ckpt_saver_free(s);
    ckpt_buf_dispose(&prefix);
    crash_model_dispose(&m);
    return rc;
}

void crash_describe_cut(const ckpt_fs_fault *ff, char *out, size_t n)
{
    size_t size = ckpt_fs_fault_trace_size(ff);
    for (size_t i = 0; i < size; i++) {
        const ckpt_fs_fault_event *e = ckpt_fs_fault_trace_event(ff, i);
        if (!e->injected)
            continue;
        if (e->to)
            snprintf(out, n, "%s %s -> %s", ckpt_fs_op_name(e->op), e->path,
                     e->to);
        else
            snprintf(out, n, "%s %s (%llu bytes)", ckpt_fs_op_name(e->op),
                     e->path, (unsigned long long)e->bytes);
        return;
    }
    snprintf(out, n, "no operation failed");
}
