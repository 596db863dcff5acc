/* saver/outcomes.c - what becomes of each save once it has run: the saver's
 * metrics, the queue of outcomes handed to on_save_done on the caller's
 * thread, and the background error that the next save, save_async, poll,
 * wait or close returns exactly once. The synchronous save (saver.c) and
 * the writer thread (writer.c) both report here (counted by the rules of
 * metrics.c, which the MPI saver shares); the queue, the metrics and
 * the background error are guarded by the saver's mu, and outcomes are
 * only ever delivered on the caller's thread. Also how log lines name a
 * save's step (ckpt__step_say), and the warning for saves that never
 * advance the step (ckpt__step_repeats_note), shared with the MPI saver. */
#include "saver_internal.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

const char *ckpt__step_say(ckpt__step_words *w, int64_t step)
{
    if (step == CKPT_NO_STEP)
        snprintf(w->text, sizeof(w->text), "without a step");
    else
        snprintf(w->text, sizeof(w->text), "of step %" PRId64, step);
    return w->text;
}

#define REPEATED_STEP_SAVES 3

void ckpt__step_repeats_note(ckpt__step_repeats *r, int64_t step,
                             const char *prefix, const ckpt_saver_options *o)
{
    if (step == CKPT_NO_STEP || step != r->step) {
        r->step = step;
        r->count = 1;
        return;
    }
    if (++r->count < REPEATED_STEP_SAVES || r->warned)
        return;
    r->warned = 1;
    ckpt__log(o->log, o->log_payload, o->log_level, CKPT_LOG_WARN,
              "%d saves in a row of step %" PRId64
              ", each one overwriting %s: does the training loop advance "
              "the step it passes to the saver? (said once)",
              r->count, step, prefix);
}

void ckpt__saver_push_result(ckpt_saver *s, const ckpt__job *job, int status,
                             const char *error, double write_s, uint64_t bytes)
{
    ckpt__result *r;
    if (s->ndone == s->cap_done) {
        size_t cap = s->cap_done ? s->cap_done * 2 : 8;
        ckpt__result *p = ckpt__realloc(s->done, cap * sizeof(*p));
        if (!p)
            return; /* the outcome is still counted in the metrics */
        s->done = p;
        s->cap_done = cap;
    }
    r = &s->done[s->ndone++];
    memset(r, 0, sizeof(*r));
    r->prefix = ckpt__strdup(job->prefix);
    r->error = error ? ckpt__strdup(error) : NULL;
    r->r.ticket = job->ticket;
    r->r.step = job->step;
    r->r.status = status;
    r->r.blocking_s = job->blocking_s;
    r->r.write_s = write_s;
    r->r.bytes = bytes;
}

void ckpt__saver_count_started(ckpt_saver *s, double blocking_s)
{
    ckpt__metrics_started(&s->metrics, blocking_s);
}

void ckpt__saver_record_outcome(ckpt_saver *s, const ckpt__job *job, int err,
                                const char *error, double write_s,
                                uint64_t bytes)
{
    ckpt__metrics_finished(&s->metrics, err == 0, job->step, bytes, write_s);
    ckpt__saver_push_result(s, job, err, error, write_s, bytes);
}

void ckpt__saver_keep_bg_error(ckpt_saver *s, int err, const char *message)
{
    size_t used;
    if (s->bg_error == 0) {
        s->bg_error = err;
        snprintf(s->bg_message, sizeof(s->bg_message), "%s", message);
        return;
    }
    /* One failure is still to be returned (a COALESCE pending save failed
     * after the one in flight): this one is returned with it, its code the
     * first's, not lost. */
    used = strlen(s->bg_message);
    snprintf(s->bg_message + used, sizeof(s->bg_message) - used,
             "; then another save failed too: %s", message);
}

void ckpt__saver_deliver(ckpt_saver *s)
{
    ckpt__result *done;
    size_t n;
    pthread_mutex_lock(&s->mu);
    done = s->done;
    n = s->ndone;
    s->done = NULL;
    s->ndone = 0;
    s->cap_done = 0;
    pthread_mutex_unlock(&s->mu);
    s->delivering++; /* ckpt_saver_free refuses to run meanwhile */
    for (size_t i = 0; i < n; i++) {
        done[i].r.prefix = done[i].prefix ? done[i].prefix : "";
        done[i].r.error = done[i].error;
        if (s->opts.on_save_done)
            s->opts.on_save_done(&done[i].r, s->opts.on_save_done_payload);
        ckpt__free(done[i].prefix);
        ckpt__free(done[i].error);
    }
    s->delivering--;
    ckpt__free(done);
}

/* Return the undelivered background failure once (mu held). */
static int take_bg_error(ckpt_saver *s)
{
    int err = s->bg_error;
    if (err != 0) {
        ckpt__error(err, "%s", s->bg_message);
        s->bg_error = 0;
        s->bg_message[0] = '\0';
    }
    return err;
}

int ckpt__saver_enter(ckpt_saver *s)
{
    int err;
    ckpt__saver_deliver(s);
    pthread_mutex_lock(&s->mu);
    err = take_bg_error(s);
    pthread_mutex_unlock(&s->mu);
    return err;
}
