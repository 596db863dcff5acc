/* tools/ckpt-train/options.c - the command line of ckpt-train (see
 * options.h): the usage text, and one parser for both trainers. */
#include "options.h"

#include "ckpt.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char usage_text[] =
    "usage: ckpt-train [--dir DIR] [--steps N] [--save-steps K | --save-secs "
    "S]\n"
    "                  [--keep K] [--keep-hours H] [--mode async|sync|none]\n"
    "                  [--busy skip|wait|coalesce] [--hidden H] [--layers L]\n"
    "                  [--batch B] [--lr X] [--seed S] [--quiet]\n"
    "                  [--distributed [--collective-timeout SECS]]\n"
    "\n"
    "Trains a multi-layer perceptron with Adam on a synthetic classification\n"
    "data set, checkpointing to DIR in TensorFlow's format. Started again on\n"
    "the same DIR it restores the latest checkpoint and continues exactly.\n"
    "\n"
    "  --dir DIR          checkpoint directory (default runs/demo;\n"
    "                     runs/distributed with --distributed)\n"
    "  --steps N          train until the global step is N (default 2000;\n"
    "                     resumed at or past it: nothing to train, exit 0)\n"
    "  --save-steps K     checkpoint every K steps (default 200)\n"
    "  --save-secs S      checkpoint every S seconds instead\n"
    "  --keep K           checkpoints to keep (default 5; 0 keeps all)\n"
    "  --keep-hours H     also keep for good, off the list, one checkpoint\n"
    "                     of those --keep evicts every H hours (the saver's\n"
    "                     keep_checkpoint_every_n_hours; a fraction is\n"
    "                     fine: 0.001 is 3.6 s; default 0: none)\n"
    "  --mode M           async (default), sync, or none\n"
    "  --busy P           async trigger while a write runs: skip (default),\n"
    "                     wait, or coalesce\n"
    "  --hidden H         hidden units per layer (default 64)\n"
    "  --layers L         hidden layers (default 2)\n"
    "  --batch B          batch size (default 64)\n"
    "  --lr X             Adam learning rate (default 0.003)\n"
    "  --seed S           data and initialisation seed (default 1)\n"
    "  --quiet            print only the restore line, warnings, errors and\n"
    "                     the summary (with --distributed, its \"done:\" line\n"
    "                     too)\n"
    "  --distributed      under mpiexec: data-parallel on every rank, with\n"
    "                     distributed checkpoints (when built with MPI);\n"
    "                     without --save-secs, --busy and --mode none\n"
    "  --collective-timeout SECS\n"
    "                     with --distributed: longest wait for the other\n"
    "                     ranks in any collective (the start's\n"
    "                     MPI_Init_thread, the gradients' average, a save's\n"
    "                     agreement, the exit's MPI_Finalize; default 600);\n"
    "                     past it the job ends with a message naming the\n"
    "                     wait and exit status 70\n"
    "  --help, -h         print this text and exit\n"
    "  --version          print \"ckpt-train <version>\" (the library's) and "
    "exit\n"
    "\n"
    "SIGTERM or SIGINT stops at the next step, writes a final checkpoint and\n"
    "exits 0 (--distributed: every rank, after the first step in which any\n"
    "rank caught it; signal the ranks, not mpiexec, which kills them a few\n"
    "seconds after it is signalled). Without --distributed a signal\n"
    "ckpt-train starts with ignored stays ignored: SIGINT in a background\n"
    "job of a shell script (cmd &), which SIGTERM stops. A SIGTERM that\n"
    "cannot stop it (ignored at start without --distributed, or blocked\n"
    "in the signal mask it starts with) is said once on stderr, a warning.\n"
    "Exit status: 0 done, 1 training or a save failed (an allocation\n"
    "named), 2 usage (also a model, with its Adam moments, gradients and an\n"
    "async save's staging copy, larger than physical memory, ulimit -v or\n"
    "ulimit -d, or with --distributed more gradients than one MPI call\n"
    "counts: refused before anything is made, the bytes named; with\n"
    "--distributed a refusal or a failed allocation on one rank ends every\n"
    "rank with its status, naming that rank), 3 done\n"
    "but stdout or stderr could not be written (closed, a full device, a\n"
    "pipe nobody reads: SIGPIPE does not stop the training), 70\n"
    "(--distributed) a rank died or stalled.\n";

/* The message, the synopsis (the usage text up to its first blank line)
 * and where the rest is: a mistyped option should not scroll the mistake
 * off the screen under the whole help. The argument is shown with control
 * bytes as \xHH (ckpt_text_printable), never raw on the terminal. */
static int usage_error(const char *fmt, const char *arg)
{
    const char *synopsis_end = strstr(usage_text, "\n\n");
    char shown[1024];
    ckpt_text_printable(shown, sizeof(shown), arg);
    fprintf(stderr, "ckpt-train: ");
    fprintf(stderr, fmt, shown);
    fprintf(stderr, "\n%.*s\nRun 'ckpt-train --help' for every option.\n",
            (int)(synopsis_end - usage_text + 1), usage_text);
    return 2;
}

static int parse_int(const char *s, long long lo, long long hi, long long *out)
{
    char *end;
    long long v;
    errno = 0;
    v = strtoll(s, &end, 10);
    if (errno || end == s || *end || v < lo || v > hi)
        return -1;
    *out = v;
    return 0;
}

static int is_value_option(const char *a)
{
    static const char *const names[] = {"--dir",        "--steps",
                                        "--save-steps", "--save-secs",
                                        "--keep",       "--keep-hours",
                                        "--mode",       "--busy",
                                        "--hidden",     "--layers",
                                        "--batch",      "--lr",
                                        "--seed",       "--collective-timeout"};
    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
        if (strcmp(a, names[i]) == 0)
            return 1;
    return 0;
}

/* The usage error for `a`, which is not an option ckpt-train has: an
 * operand (it takes none), "--dir=DIR" (a value is the next argument), or
 * a name it does not know. */
static int not_an_option(const char *a)
{
    const char *eq = strchr(a, '=');
    char name[32];
    size_t n = eq ? (size_t)(eq - a) : 0;
    if (a[0] != '-')
        return usage_error("unexpected argument '%s' (ckpt-train takes "
                           "options only)",
                           a);
    if (eq && n < sizeof(name)) {
        memcpy(name, a, n);
        name[n] = '\0';
        if (is_value_option(name))
            return usage_error("unknown option %s (an option's value is the "
                               "next argument: --steps 100, not "
                               "--steps=100)",
                               a);
    }
    return usage_error("unknown option %s", a);
}

/* --collective-timeout's value: seconds, 1 to 86400. 0 or -1. */
static int parse_collective_timeout(const char *v, double *out)
{
    char *end;
    double t = strtod(v, &end);
    if (end == v || *end || !(t >= 1) || !(t <= 86400))
        return -1;
    *out = t;
    return 0;
}

double train_options_collective_timeout(int argc, char **argv)
{
    double t = 600.0;
    for (int i = 1; i + 1 < argc; i++) {
        if (!strcmp(argv[i], "--collective-timeout")) {
            if (parse_collective_timeout(argv[i + 1], &t) != 0)
                t = 600.0;
            i++;
        } else if (is_value_option(argv[i])) {
            i++; /* its value, whatever it looks like */
        }
    }
    return t;
}

/* Options the distributed trainer does not have (docs/mpi.md): the
 * distributed saver checkpoints by steps, skips a busy trigger, and always
 * checkpoints. */
static int not_distributed(const char *a, const char *v)
{
    return strcmp(a, "--save-secs") == 0 || strcmp(a, "--busy") == 0 ||
           (strcmp(a, "--mode") == 0 && strcmp(v, "none") == 0);
}

int train_options_parse(train_options *o, int argc, char **argv,
                        int distributed)
{
    int save_secs_given = 0, save_steps_given = 0;
    o->dir = distributed ? "runs/distributed" : "runs/demo";
    o->steps = 2000;
    o->save_steps = 200;
    o->save_secs = 0;
    o->keep = 5;
    o->keep_hours = 0;
    o->mode = CKPT_SAVE_ASYNC;
    o->busy = CKPT_BUSY_SKIP;
    o->hidden = 64;
    o->layers = 2;
    o->batch = 64;
    o->lr = 0.003f;
    o->seed = 1;
    o->quiet = 0;
    o->collective_timeout = 600.0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        long long n;
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            fputs(usage_text, stdout);
            return TRAIN_OPTIONS_HELP;
        } else if (!strcmp(a, "--version")) {
            printf("ckpt-train %s\n", ckpt_version_string());
            return TRAIN_OPTIONS_HELP;
        } else if (!strcmp(a, "--quiet")) {
            o->quiet = 1;
            continue;
        } else if (distributed && !strcmp(a, "--distributed")) {
            continue;
        }
        if (!is_value_option(a))
            return not_an_option(a);
        if (!v)
            return usage_error("option %s needs a value", a);
        if (distributed && not_distributed(a, v))
            return usage_error("%s is not available with --distributed",
                               !strcmp(a, "--mode") ? "--mode none" : a);
        if (!distributed && !strcmp(a, "--collective-timeout"))
            return usage_error("%s needs --distributed", a);
        i++;
        if (!strcmp(a, "--dir")) {
            if (!*v)
                return usage_error("%s", "bad --dir '' (the checkpoint "
                                         "directory: a path)");
            o->dir = v;
        } else if (!strcmp(a, "--steps")) {
            if (parse_int(v, 1, INT64_MAX, &n))
                return usage_error("bad --steps '%s' (the last global step to "
                                   "train to: 1 or more)",
                                   v);
            o->steps = n;
        } else if (!strcmp(a, "--save-steps")) {
            if (parse_int(v, 1, INT64_MAX, &n))
                return usage_error("bad --save-steps '%s' (steps between "
                                   "checkpoints: 1 or more)",
                                   v);
            o->save_steps = n;
            save_steps_given = 1;
        } else if (!strcmp(a, "--save-secs")) {
            char *end;
            o->save_secs = strtod(v, &end);
            if (end == v || *end || !(o->save_secs > 0) ||
                !isfinite(o->save_secs))
                return usage_error("bad --save-secs '%s' (seconds between "
                                   "checkpoints: a finite number > 0)",
                                   v);
            save_secs_given = 1;
        } else if (!strcmp(a, "--collective-timeout")) {
            if (parse_collective_timeout(v, &o->collective_timeout) != 0)
                return usage_error("bad --collective-timeout '%s' (seconds, "
                                   "1 to 86400)",
                                   v);
        } else if (!strcmp(a, "--keep")) {
            if (parse_int(v, 0, 1000000, &n))
                return usage_error("bad --keep '%s' (checkpoints to keep: 1 to "
                                   "1000000, or 0 to keep all)",
                                   v);
            o->keep = (int)n;
        } else if (!strcmp(a, "--keep-hours")) {
            char *end;
            o->keep_hours = strtod(v, &end);
            if (end == v || *end || !(o->keep_hours >= 0) ||
                !(o->keep_hours <= 1e6))
                return usage_error("bad --keep-hours '%s' (hours between "
                                   "checkpoints kept for good: 0 to 1000000, "
                                   "0 for none)",
                                   v);
        } else if (!strcmp(a, "--mode")) {
            if (!strcmp(v, "async"))
                o->mode = CKPT_SAVE_ASYNC;
            else if (!strcmp(v, "sync"))
                o->mode = CKPT_SAVE_SYNC;
            else if (!strcmp(v, "none"))
                o->mode = -1;
            else
                return usage_error("bad --mode '%s' (async, sync or none)", v);
        } else if (!strcmp(a, "--busy")) {
            if (!strcmp(v, "skip"))
                o->busy = CKPT_BUSY_SKIP;
            else if (!strcmp(v, "wait"))
                o->busy = CKPT_BUSY_WAIT;
            else if (!strcmp(v, "coalesce"))
                o->busy = CKPT_BUSY_COALESCE;
            else
                return usage_error("bad --busy '%s' (skip, wait or coalesce)",
                                   v);
        } else if (!strcmp(a, "--hidden")) {
            if (parse_int(v, 1, 1 << 16, &n))
                return usage_error("bad --hidden '%s' (units per layer: 1 to "
                                   "65536)",
                                   v);
            o->hidden = (int)n;
        } else if (!strcmp(a, "--layers")) {
            if (parse_int(v, 1, 64, &n))
                return usage_error("bad --layers '%s' (hidden layers: 1 to 64)",
                                   v);
            o->layers = (int)n;
        } else if (!strcmp(a, "--batch")) {
            if (parse_int(v, 1, 1 << 16, &n))
                return usage_error("bad --batch '%s' (examples per step: 1 to "
                                   "65536)",
                                   v);
            o->batch = (int)n;
        } else if (!strcmp(a, "--lr")) {
            char *end;
            o->lr = strtof(v, &end);
            if (end == v || *end || !(o->lr > 0) || !isfinite(o->lr))
                return usage_error("bad --lr '%s' (the learning rate: a finite "
                                   "number > 0)",
                                   v);
        } else if (!strcmp(a, "--seed")) {
            if (parse_int(v, 0, INT64_MAX, &n))
                return usage_error("bad --seed '%s' (an integer, 0 or more)",
                                   v);
            o->seed = (uint64_t)n;
        } else {
            return usage_error("unknown option %s", a);
        }
    }
    if (save_secs_given && save_steps_given)
        return usage_error("%s", "--save-steps and --save-secs exclude each "
                                 "other");
    if (save_secs_given)
        o->save_steps = 0;
    return 0;
}
