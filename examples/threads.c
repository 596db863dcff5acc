/* examples/threads.c - which thread calls what. The loop is written inline
 * with the bracket calls (before_run / after_run) on the training thread,
 * where every hook callback and every listener runs; the saver's writer
 * thread writes the checkpoint files and may call the log callback, which
 * therefore locks. ckpt_checkpoint_hook_wait waits on the training thread
 * for the write in flight (its after_save runs there too).
 * docs/guide.md section 6.
 *
 * Usage: threads [DIR]   (default: ckpts-threads) */
#include <ckpt.h>
#include <pthread.h>
#include <stdio.h>

static float weights[1 << 16];
static int64_t global_step;
static pthread_t training_thread;

typedef struct log_state {
    pthread_mutex_t mu;
    int lines, from_other_threads;
} log_state;

static void log_line(int level, const char *message, void *payload)
{
    log_state *ls = payload;
    pthread_mutex_lock(&ls->mu);
    ls->lines++;
    if (!pthread_equal(pthread_self(), training_thread))
        ls->from_other_threads++;
    printf("[%s] %s\n", ckpt_log_level_name(level), message);
    pthread_mutex_unlock(&ls->mu);
}

static int after_save(ckpt_session *s, int64_t step, const char *prefix,
                      int *stop, void *payload)
{
    (void)s, (void)step, (void)prefix, (void)stop, (void)payload;
    /* Listeners run on the training thread, as every hook callback. */
    return pthread_equal(pthread_self(), training_thread) ? 0 : CKPT_ESTATE;
}

int main(int argc, char **argv)
{
    ckpt_var w = {"weights", CKPT_DT_FLOAT, {1, {1 << 16}}, weights, 0, 0, 0};
    ckpt_saver_listener l = {CKPT_LISTENER_VERSION, 0, 0, 0, after_save, 0};
    ckpt_checkpoint_hook_options ho = CKPT_CHECKPOINT_HOOK_OPTIONS_INIT;
    ckpt_session_options so = CKPT_SESSION_OPTIONS_INIT;
    log_state ls = {PTHREAD_MUTEX_INITIALIZER, 0, 0};
    ckpt_graph *g = NULL;
    ckpt_monitored_session *ms = NULL;
    ckpt_step_context *sc;
    ckpt_hook hook;
    int err = ckpt_graph_new(&g);
    training_thread = pthread_self();
    so.log = log_line, so.log_payload = &ls; /* hooks use it too */
    ho.checkpoint_dir = argc > 1 ? argv[1] : "ckpts-threads";
    ho.save_steps = 25, ho.mode = CKPT_SAVE_ASYNC;
    ho.listeners = &l, ho.num_listeners = 1;
    err = err ? err : ckpt_graph_add_var(g, &w);
    err = err ? err : ckpt_graph_create_global_step(g, &global_step);
    err = err ? err : ckpt_checkpoint_hook_new(&hook, &ho);
    err = err ? err : ckpt_monitored_session_new(&ms, g, &hook, 1, &so);
    while (err == 0 && global_step < 100 &&
           !ckpt_monitored_session_should_stop(ms, &err)) {
        err = ckpt_monitored_session_before_run(ms, NULL, &sc);
        if (err != 0)
            break;
        weights[global_step % (1 << 16)] += 1.f; /* the step, inline */
        global_step++;
        err = ckpt_monitored_session_after_run(ms, 0, NULL);
        /* Wait for the write in flight (after_save runs here). */
        err = err ? err
                  : ckpt_checkpoint_hook_wait(
                        ckpt_monitored_session_hook(ms, 0), 60.0);
    }
    err = ms ? ckpt_monitored_session_close(ms, err) : err;
    printf("%d log lines, %d from other threads; %s\n", ls.lines,
           ls.from_other_threads, err ? ckpt_error_last()->message : "ok");
    ckpt_monitored_session_free(ms);
    ckpt_graph_free(g);
    return err != 0;
}
