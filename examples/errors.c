/* examples/errors.c - how a loop ends and how failures come back: the step
 * function reports the end of its input with CKPT_EOUT_OF_RANGE (a clean
 * end: close returns 0 and the hook writes the final checkpoint), and a
 * checkpoint directory that cannot be created fails the session's creation
 * with a message naming it. Every error is a negative code plus
 * ckpt_error_last()->message. docs/guide.md section 5.
 *
 * Usage: errors [DIR]   (default: ckpts-errors) */
#include <ckpt.h>
#include <stdio.h>
#include <string.h>

static float weights[256];
static int64_t global_step;

static int read_batch_and_train(ckpt_step_context *sc, void *payload)
{
    (void)sc, (void)payload;
    if (global_step == 42)
        return CKPT_EOUT_OF_RANGE; /* the input is exhausted */
    weights[0] += 1.f;
    global_step++;
    return 0;
}

static int train(ckpt_graph *g, const char *dir)
{
    ckpt_checkpoint_hook_options ho = CKPT_CHECKPOINT_HOOK_OPTIONS_INIT;
    ckpt_monitored_session *ms = NULL;
    ckpt_hook hook;
    int err;
    ho.checkpoint_dir = dir, ho.save_steps = 10;
    err = ckpt_checkpoint_hook_new(&hook, &ho);
    err = err ? err : ckpt_monitored_session_new(&ms, g, &hook, 1, NULL);
    while (err == 0 && !ckpt_monitored_session_should_stop(ms, &err))
        err = ckpt_monitored_session_run(ms, NULL, read_batch_and_train, NULL,
                                         NULL);
    /* OUT_OF_RANGE is a clean end: close runs every hook's end. */
    err = ms ? ckpt_monitored_session_close(ms, err) : err;
    ckpt_monitored_session_free(ms);
    return err;
}

int main(int argc, char **argv)
{
    ckpt_var w = {"weights", CKPT_DT_FLOAT, {1, {256}}, weights, 0, 0, 0};
    const char *dir = argc > 1 ? argv[1] : "ckpts-errors";
    char bad[4096];
    ckpt_graph *g = NULL;
    int err = ckpt_graph_new(&g);
    err = err ? err : ckpt_graph_add_var(g, &w);
    err = err ? err : ckpt_graph_create_global_step(g, &global_step);
    err = err ? err : train(g, dir);
    printf("clean end at step %lld: %s\n", (long long)global_step,
           err ? ckpt_error_last()->message : "ok");
    if (err == 0) {
        /* A directory below a regular file cannot be created. */
        snprintf(bad, sizeof(bad), "%s/checkpoint/sub", dir);
        err = train(g, bad);
        printf("failing directory: %s (%s)\n", ckpt_error_name(err),
               ckpt_error_last()->message);
        err = err < 0 ? 0 : 1;
    }
    ckpt_graph_free(g);
    return err != 0;
}
