/* examples/busy_policy.c - what happens when checkpoints are asked for
 * faster than the disk writes them: the same fast loop (a save every 5
 * steps, 16 MiB of state) with each busy policy, printing what was written,
 * skipped and coalesced. SKIP (the default) takes no snapshot while a write
 * runs and saves at the first step after it ends; COALESCE keeps the newest
 * snapshot waiting (twice the staging memory); WAIT blocks the loop.
 * docs/guide.md section 4.
 *
 * Usage: busy_policy [DIR]   (default: ckpts-busy) */
#include <ckpt.h>
#include <stdio.h>
#include <string.h>

static float state[4 << 20]; /* 16 MiB */
static int64_t global_step;

static int train_step(ckpt_step_context *sc, void *payload)
{
    (void)sc, (void)payload;
    state[global_step % (4 << 20)] += 1.f;
    global_step++;
    return 0;
}

static int run(const char *dir, int policy)
{
    ckpt_var v = {"state", CKPT_DT_FLOAT, {1, {4 << 20}}, state, 0, 0, 0};
    ckpt_saver_options so = CKPT_SAVER_OPTIONS_INIT;
    ckpt_checkpoint_hook_options ho = CKPT_CHECKPOINT_HOOK_OPTIONS_INIT;
    ckpt_session_options sess = CKPT_SESSION_OPTIONS_INIT;
    ckpt_saver_metrics m;
    ckpt_graph *g = NULL;
    ckpt_monitored_session *ms = NULL;
    ckpt_hook hook;
    int err = ckpt_graph_new(&g);
    global_step = 0;
    so.busy_policy = policy;
    ho.checkpoint_dir = dir;
    ho.save_steps = 5, ho.mode = CKPT_SAVE_ASYNC, ho.saver_options = &so;
    sess.not_chief = 1; /* start from step 0 each time: no restore */
    sess.log_level = CKPT_LOG_WARN;
    so.log_level = CKPT_LOG_WARN; /* the hook's own log: skip warnings */
    err = err ? err : ckpt_graph_add_var(g, &v);
    err = err ? err : ckpt_graph_create_global_step(g, &global_step);
    err = err ? err : ckpt_checkpoint_hook_new(&hook, &ho);
    err = err ? err : ckpt_monitored_session_new(&ms, g, &hook, 1, &sess);
    while (err == 0 && global_step < 100)
        err = ckpt_monitored_session_run(ms, NULL, train_step, NULL, NULL);
    if (ms) {
        err = ckpt_monitored_session_close(ms, err);
        ckpt_checkpoint_hook_metrics(ckpt_monitored_session_hook(ms, 0), &m);
        printf("%-8s written=%llu skipped=%llu coalesced=%llu "
               "staging=%llu MiB\n",
               policy == CKPT_BUSY_SKIP       ? "SKIP"
               : policy == CKPT_BUSY_COALESCE ? "COALESCE"
                                              : "WAIT",
               (unsigned long long)m.saves_completed,
               (unsigned long long)m.saves_skipped,
               (unsigned long long)m.saves_coalesced,
               (unsigned long long)(policy == CKPT_BUSY_COALESCE ? 32 : 16));
    }
    if (err != 0)
        fprintf(stderr, "busy_policy: %s\n", ckpt_error_last()->message);
    ckpt_monitored_session_free(ms);
    ckpt_graph_free(g);
    return err;
}

int main(int argc, char **argv)
{
    const char *dir = argc > 1 ? argv[1] : "ckpts-busy";
    int err = run(dir, CKPT_BUSY_SKIP);
    err = err ? err : run(dir, CKPT_BUSY_COALESCE);
    err = err ? err : run(dir, CKPT_BUSY_WAIT);
    return err != 0;
}
