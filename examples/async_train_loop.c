/* examples/async_train_loop.c - train to step 1000, checkpointing every 100
 * steps in the background; a restart resumes from the latest checkpoint.
 * README.md shows this file whole (tests/docs checks they are the same);
 * docs/guide.md section 1. */
#define _POSIX_C_SOURCE 200809L /* nanosleep */
#include <ckpt.h>
#include <stdio.h>
#include <time.h>

static float weights[1 << 16];
static int64_t global_step;

static int train_step(ckpt_step_context *sc, void *payload)
{
    struct timespec rest = {0, 2000000}; /* 2 ms: the rest of the step */
    (void)payload;
    for (size_t i = 0; i < sizeof(weights) / sizeof(weights[0]); i++)
        weights[i] += 1e-3f;
    nanosleep(&rest, NULL);
    return ckpt_step_context_publish_float(sc, "loss", 1.f / ++global_step);
}

int main(int argc, char **argv)
{
    ckpt_var w = {"weights", CKPT_DT_FLOAT, {1, {1 << 16}}, weights, 0, 0, 0};
    ckpt_checkpoint_hook_options ho = CKPT_CHECKPOINT_HOOK_OPTIONS_INIT;
    ckpt_hook hook;
    ckpt_graph *g = NULL;
    ckpt_monitored_session *ms = NULL;
    int err = ckpt_graph_new(&g);
    ho.checkpoint_dir = argc > 1 ? argv[1] : "ckpts"; /* also resumes */
    ho.save_steps = 100, ho.mode = CKPT_SAVE_ASYNC;
    err = err ? err : ckpt_graph_add_var(g, &w);
    err = err ? err : ckpt_graph_create_global_step(g, &global_step);
    err = err ? err : ckpt_checkpoint_hook_new(&hook, &ho);
    err = err ? err : ckpt_monitored_session_new(&ms, g, &hook, 1, NULL);
    while (err == 0 && global_step < 1000 &&
           !ckpt_monitored_session_should_stop(ms, &err))
        err = ckpt_monitored_session_run(ms, NULL, train_step, NULL, NULL);
    err = ms ? ckpt_monitored_session_close(ms, err) : err;
    if (err != 0)
        fprintf(stderr, "training failed: %s\n", ckpt_error_last()->message);
    ckpt_monitored_session_free(ms);
    ckpt_graph_free(g);
    return err != 0;
}
