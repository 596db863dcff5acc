/* examples/training_session.c - TensorFlow's MonitoredTrainingSession:
 * one options struct gives the checkpoint directory (saving and resuming),
 * the frequency, the checkpoint name and the listeners; the builder adds
 * the step counter and the checkpoint hook in TensorFlow's order. A
 * frequency left at CKPT_FREQ_DEFAULT takes TensorFlow's default (600 s,
 * said in the log); CKPT_FREQ_OFF turns a hook off (TF's 0).
 * docs/guide.md section 7.
 *
 * Usage: training_session [DIR]   (default: ckpts-mts) */
#include <ckpt.h>
#include <stdio.h>

static float weights[1024];
static int64_t global_step;

static int train_step(ckpt_step_context *sc, void *payload)
{
    (void)payload;
    weights[global_step % 1024] -= 0.01f;
    return ckpt_step_context_publish_float(sc, "loss", 1.f / ++global_step);
}

static int after_save(ckpt_session *s, int64_t step, const char *prefix,
                      int *stop, void *payload)
{
    (void)s, (void)step, (void)stop, (void)payload;
    printf("saved %s\n", prefix);
    return 0;
}

int main(int argc, char **argv)
{
    ckpt_var w = {"weights", CKPT_DT_FLOAT, {1, {1024}}, weights, 0, 0, 0};
    ckpt_saver_listener l = {CKPT_LISTENER_VERSION, 0, 0, 0, after_save, 0};
    ckpt_training_session_options o = CKPT_TRAINING_SESSION_OPTIONS_INIT;
    ckpt_graph *g = NULL;
    ckpt_monitored_session *ms = NULL;
    int err = ckpt_graph_new(&g);
    o.checkpoint_dir = argc > 1 ? argv[1] : "ckpts-mts";
    o.save_checkpoint_steps = 50, o.checkpoint_basename = "mts";
    o.listeners = &l, o.num_listeners = 1;
    o.log_step_count_steps = CKPT_FREQ_OFF;
    err = err ? err : ckpt_graph_add_var(g, &w);
    err = err ? err : ckpt_graph_create_global_step(g, &global_step);
    err = err ? err : ckpt_training_session_new(&ms, g, &o);
    while (err == 0 && global_step < 120 &&
           !ckpt_monitored_session_should_stop(ms, &err))
        err = ckpt_monitored_session_run(ms, NULL, train_step, NULL, NULL);
    err = ms ? ckpt_monitored_session_close(ms, err) : err;
    printf("stopped at step %lld: %s\n", (long long)global_step,
           err ? ckpt_error_last()->message : "ok");
    ckpt_monitored_session_free(ms);
    ckpt_graph_free(g);
    return err != 0;
}
