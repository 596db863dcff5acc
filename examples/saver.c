/* examples/saver.c - a saver without sessions (docs/guide.md section 8):
 * register variables, save synchronously and asynchronously (retention
 * keeps the newest three), restore the latest checkpoint into zeroed
 * memory and check it, then a variable read through a callback that says
 * why it failed with ckpt_error_set.
 *
 * Usage: saver [DIR]   (default: ckpts-saver; DIR-device for the last
 * part) */
#define _POSIX_C_SOURCE 200809L /* mkdir */
#include <ckpt.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#define N 1024

static float weights[N];
static int64_t global_step;

static int fail(const char *what)
{
    fprintf(stderr, "saver: %s: %s\n", what, ckpt_error_last()->message);
    return 1;
}

/* Memory the library cannot read itself (a device, say) that is gone. */
static int device_read(void *dst, uint64_t offset, size_t n, void *payload)
{
    (void)dst, (void)offset, (void)n;
    return ckpt_error_set(CKPT_EIO, "device %d is gone", *(int *)payload);
}

static void fill(int64_t step)
{
    for (int i = 0; i < N; i++)
        weights[i] = (float)step * (float)i;
}

int main(int argc, char **argv)
{
    const char *dir = argc > 1 ? argv[1] : "ckpts-saver";
    ckpt_saver_options o = CKPT_SAVER_OPTIONS_INIT;
    ckpt_var w = {"weights", CKPT_DT_FLOAT, {1, {N}}, weights, 0, 0, 0};
    ckpt_var gs = {
        "global_step", CKPT_DT_INT64, {0, {0}}, &global_step, 0, 0, 0};
    ckpt_buf latest = CKPT_BUF_INIT;
    ckpt_saver *s = NULL;
    char device_dir[4096];
    int device = 3, err;
    uint64_t ticket = 0;
    o.max_to_keep = 3;
    mkdir(dir, 0755); /* a saver opens an existing directory */
    if (ckpt_saver_open(&s, dir, &o) < 0 || ckpt_saver_add_var(s, &w) < 0 ||
        ckpt_saver_add_var(s, &gs) < 0)
        return fail("opening the saver");
    for (global_step = 1; global_step <= 4; global_step++) {
        fill(global_step);
        if (ckpt_saver_save(s, global_step, NULL) < 0)
            return fail("save");
    }
    /* The copy is taken before save_async returns: the variables may
     * change at once; wait for the write (and retention) to finish. */
    fill(global_step);
    if (ckpt_saver_save_async(s, global_step, &ticket) < 0)
        return fail("save_async");
    fill(-1);
    if (ckpt_saver_wait(s, ticket, -1.0) < 0)
        return fail("wait");
    printf("%zu checkpoints kept\n", ckpt_saver_num_checkpoints(s));

    memset(weights, 0, sizeof(weights));
    global_step = 0;
    if (ckpt_saver_restore_latest(s, &latest) < 0)
        return fail("restore_latest");
    for (int i = 0; i < N; i++)
        if (weights[i] != 5.0f * (float)i)
            return fail("a restored weight differs");
    printf("restored %s: step %lld, weights ok\n", latest.ptr,
           (long long)global_step);
    ckpt_buf_dispose(&latest);
    ckpt_saver_free(s);

    /* A read callback that fails: its message reaches the caller. */
    snprintf(device_dir, sizeof(device_dir), "%s-device", dir);
    w.data = NULL;
    w.read = device_read;
    w.payload = &device;
    mkdir(device_dir, 0755);
    if (ckpt_saver_open(&s, device_dir, &o) < 0 ||
        ckpt_saver_add_var(s, &w) < 0)
        return fail("opening the second saver");
    err = ckpt_saver_save(s, 1, NULL);
    printf("device variable: %s: %s\n", ckpt_error_name(err),
           ckpt_error_last()->message);
    ckpt_saver_free(s);
    return err == CKPT_EUSER ? 0 : 1;
}
