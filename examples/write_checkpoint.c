/* examples/write_checkpoint.c - write a small checkpoint directory with the
 * public API only: three TensorFlow-format checkpoints model.ckpt-100, -200
 * and -300 (a few tensors of several dtypes, a string tensor among them)
 * written with the bundle writer, and the `checkpoint` state file listing
 * them, replaced atomically after each one as TensorFlow's
 * CheckpointManager does.
 *
 *   usage: write_checkpoint [DIR]      (default: runs/demo-ckpt)
 *
 * Then look at it with `ckpt ls DIR`, `ckpt inspect DIR --values=4` and
 * `ckpt verify DIR`, or load it in TensorFlow with
 * tf.train.load_checkpoint(DIR). */
#define _POSIX_C_SOURCE 200809L

#include "ckpt.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#define NUM_SAVES 3

static int fail(const char *what)
{
    fprintf(stderr, "write_checkpoint: %s: %s\n", what,
            ckpt_error_last()->message);
    return 1;
}

/* mkdir -p */
static int make_dirs(const char *dir)
{
    char path[4096];
    size_t n = strlen(dir);
    if (n == 0 || n >= sizeof(path)) {
        fprintf(stderr, "write_checkpoint: bad directory '%s'\n", dir);
        return 1;
    }
    memcpy(path, dir, n + 1);
    for (size_t i = 1; i <= n; i++) {
        if (path[i] != '/' && path[i] != '\0')
            continue;
        path[i] = '\0';
        if (mkdir(path, 0777) != 0 && errno != EEXIST) {
            fprintf(stderr, "write_checkpoint: mkdir %s: %s\n", path,
                    strerror(errno));
            return 1;
        }
        path[i] = dir[i];
    }
    return 0;
}

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* The tensors of a tiny two-layer model at `step`, written to `prefix`. */
static int write_bundle(const char *prefix, int64_t step)
{
    static const ckpt_slice vocab[4] = {
        {"<pad>", 5}, {"hello", 5}, {"w\xc3\xb6rld", 6}, {"tab\there", 8}};
    ckpt_bundle_writer *w = NULL;
    ckpt_shape kernel_shape = {2, {4, 3}}, bias_shape = {1, {3}};
    ckpt_shape sizes_shape = {1, {2}}, flags_shape = {1, {2}};
    ckpt_shape vocab_shape = {1, {4}}, scalar = {0, {0}};
    float kernel[12], bias[3];
    int32_t sizes[2] = {4, 3};
    uint8_t flags[2] = {1, step >= 200};
    double learning_rate = 0.01 / (1.0 + (double)step / 100.0);
    int err;
    for (int i = 0; i < 12; i++)
        kernel[i] = sinf((float)i + (float)step * 0.01f);
    for (int i = 0; i < 3; i++)
        bias[i] = 0.001f * (float)(step * (i + 1));
    err = ckpt_bundle_writer_open(&w, prefix, NULL);
    if (err == 0)
        err = ckpt_bundle_writer_add(w, "dense/kernel", CKPT_DT_FLOAT,
                                     &kernel_shape, kernel, sizeof(kernel));
    if (err == 0)
        err = ckpt_bundle_writer_add(w, "dense/bias", CKPT_DT_FLOAT,
                                     &bias_shape, bias, sizeof(bias));
    if (err == 0)
        err = ckpt_bundle_writer_add(w, "global_step", CKPT_DT_INT64, &scalar,
                                     &step, sizeof(step));
    if (err == 0)
        err = ckpt_bundle_writer_add(w, "optimizer/learning_rate",
                                     CKPT_DT_DOUBLE, &scalar, &learning_rate,
                                     sizeof(learning_rate));
    if (err == 0)
        err = ckpt_bundle_writer_add(w, "layer_sizes", CKPT_DT_INT32,
                                     &sizes_shape, sizes, sizeof(sizes));
    if (err == 0)
        err = ckpt_bundle_writer_add(w, "flags", CKPT_DT_BOOL, &flags_shape,
                                     flags, sizeof(flags));
    if (err == 0)
        err =
            ckpt_bundle_writer_add_strings(w, "vocab", &vocab_shape, vocab, 4);
    if (err == 0)
        err = ckpt_bundle_writer_finish(w);
    if (err < 0)
        fail(prefix);
    ckpt_bundle_writer_free(w);
    return err < 0 ? 1 : 0;
}

int main(int argc, char **argv)
{
    const char *dir = argc > 1 ? argv[1] : "runs/demo-ckpt";
    char names[NUM_SAVES][32];
    char *paths[NUM_SAVES];
    double stamps[NUM_SAVES];
    double started = now();
    if (argc > 2 || (argc == 2 && argv[1][0] == '-')) {
        fprintf(stderr, "usage: write_checkpoint [DIR]\n");
        return 2;
    }
    if (make_dirs(dir) != 0)
        return 1;
    for (int i = 0; i < NUM_SAVES; i++) {
        int64_t step = 100 * (i + 1);
        char prefix[4200];
        ckpt_state st = CKPT_STATE_INIT;
        snprintf(names[i], sizeof(names[i]), "model.ckpt-%lld",
                 (long long)step);
        snprintf(prefix, sizeof(prefix), "%s/%s", dir, names[i]);
        if (write_bundle(prefix, step) != 0)
            return 1;
        /* the state file lists paths relative to DIR, oldest first */
        paths[i] = names[i];
        stamps[i] = now();
        st.model_checkpoint_path = names[i];
        st.all_paths = paths;
        st.num_paths = (size_t)i + 1;
        st.timestamps = stamps;
        st.num_timestamps = (size_t)i + 1;
        st.last_preserved_timestamp = started;
        if (ckpt_state_write(NULL, dir, &st) != 0)
            return fail(dir);
        printf("wrote %s\n", prefix);
    }
    return 0;
}
