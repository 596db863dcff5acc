/* examples/listener_resume.c - TensorFlow's
 *
 *   hook = CheckpointSaverHook(dir, save_steps=100,
 *                              checkpoint_basename="mnist",
 *                              listeners=[Printer()])
 *   with MonitoredTrainingSession(hooks=[hook], checkpoint_dir=dir) as s:
 *       while not s.should_stop(): s.run(train_op)
 *
 * in C: a checkpoint hook with a custom name and a listener that prints
 * each checkpoint and asks to stop (returns CKPT_LISTENER_STOP, TF's
 * `return True`) at every 200th step (an "epoch"); run it again and it
 * resumes from the newest checkpoint and trains the next epoch.
 * docs/guide.md section 3.
 *
 * Usage: listener_resume [DIR]   (default: ckpts-mnist) */
#include <ckpt.h>
#include <stdio.h>

static float weights[4096];
static int64_t global_step;

static int train_step(ckpt_step_context *sc, void *payload)
{
    (void)sc, (void)payload;
    for (size_t i = 0; i < sizeof(weights) / sizeof(weights[0]); i++)
        weights[i] += 1e-3f;
    global_step++;
    return 0;
}

static int after_save(ckpt_session *s, int64_t step, const char *prefix,
                      int *stop, void *payload)
{
    (void)s, (void)stop, (void)payload;
    printf("saved %s\n", prefix);
    return step > 0 && step % 200 == 0 ? CKPT_LISTENER_STOP : 0;
}

int main(int argc, char **argv)
{
    ckpt_var w = {"weights", CKPT_DT_FLOAT, {1, {4096}}, weights, 0, 0, 0};
    ckpt_saver_listener l = {CKPT_LISTENER_VERSION, 0, 0, 0, after_save, 0};
    ckpt_checkpoint_hook_options ho = CKPT_CHECKPOINT_HOOK_OPTIONS_INIT;
    ckpt_graph *g = NULL;
    ckpt_monitored_session *ms = NULL;
    ckpt_hook hook;
    int err = ckpt_graph_new(&g);
    ho.checkpoint_dir = argc > 1 ? argv[1] : "ckpts-mnist";
    ho.checkpoint_basename = "mnist", ho.save_steps = 100;
    ho.listeners = &l, ho.num_listeners = 1;
    err = err ? err : ckpt_graph_add_var(g, &w);
    err = err ? err : ckpt_graph_create_global_step(g, &global_step);
    err = err ? err : ckpt_checkpoint_hook_new(&hook, &ho);
    err = err ? err : ckpt_monitored_session_new(&ms, g, &hook, 1, NULL);
    while (err == 0 && !ckpt_monitored_session_should_stop(ms, &err))
        err = ckpt_monitored_session_run(ms, NULL, train_step, NULL, NULL);
    err = ms ? ckpt_monitored_session_close(ms, err) : err;
    printf("stopped at step %lld: %s\n", (long long)global_step,
           err ? ckpt_error_last()->message : "ok");
    ckpt_monitored_session_free(ms);
    ckpt_graph_free(g);
    return err != 0;
}
