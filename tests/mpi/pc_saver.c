/* tests/mpi/pc_saver.c - a program that saves through ckpt_mpi_saver
 * directly, every kind of distributed variable (tests/mpi/mpi_model.h:
 * replicated, partitioned by rows and by columns, per-rank), for the
 * black-box power-cut replay (tests/crash/power_cut_replay.c --train).
 *
 * It takes the demo's command line (--dir D --steps N --save-steps K
 * --keep K --mode sync|async; the demo's other options are ignored), and
 * speaks the demo's lines the replay reads: on a relaunch it restores the
 * directory's latest checkpoint, checks that every value is the one of its
 * step (values are a function of the step, so any rank count can check),
 * and rank 0 prints "restored checkpoint P (global step N)"; before each
 * save "saving checkpoint for step N"; the saver's own log (INFO and up,
 * "checkpoint P (step N) is durable on R ranks: ...") on stdout; at the
 * end "done: step N". Exit status 0, or 1 on any failure (named). */
#include "mpi_model.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static int rank;

static void print_log(int level, const char *message, void *payload)
{
    (void)payload;
    printf("ckpt: %s: %s\n", ckpt_log_level_name(level), message);
    fflush(stdout);
}

static int say_failed(const char *what)
{
    fprintf(stderr, "pc_saver: rank %d: %s: %s\n", rank, what,
            ckpt_error_last()->message);
    return 1;
}

/* Whether `got` holds step `step`'s values (the per-rank value only when
 * this rank had one stored: a relaunch on more ranks keeps it zero). */
static int holds_step(const model *got, int ranks, int step)
{
    model want = *got;
    model_fill(&want, rank, ranks, step);
    want.step = step;
    if (got->rng[0] == 0 && got->rng[1] == 0)
        memset(want.rng, 0, sizeof(want.rng));
    return memcmp(&want, got, sizeof(want)) == 0;
}

/* Rank 0 creates `dir` (its parent must exist) durably, as the demo's
 * checkpoint hook does; every rank returns 0 once it has, or 1. */
static int make_dir(const char *dir)
{
    int bad = 0, any = 0;
    if (rank == 0) {
        char parent[4096];
        const char *slash = strrchr(dir, '/');
        int fd;
        snprintf(parent, sizeof(parent), "%.*s", slash ? (int)(slash - dir) : 1,
                 slash ? dir : ".");
        if (mkdir(dir, 0755) != 0 && errno != EEXIST)
            bad = 1;
        fd = bad ? -1 : open(parent[0] ? parent : "/", O_RDONLY | O_DIRECTORY);
        if (!bad && (fd < 0 || fsync(fd) != 0))
            bad = 1;
        if (fd >= 0)
            close(fd);
        if (bad)
            fprintf(stderr, "pc_saver: creating %s: %s\n", dir,
                    strerror(errno));
    }
    MPI_Allreduce(&bad, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    return any;
}

static int run(int argc, char **argv)
{
    const char *dir = NULL, *mode = "sync";
    long steps = 60, every = 10, keep = 5;
    ckpt_mpi_saver_options o = test_mpi_options();
    ckpt_mpi_saver *s = NULL;
    ckpt_buf prefix = CKPT_BUF_INIT;
    model m;
    long start = 0;
    int ranks = 1, rc, code = 1;
    for (int i = 1; i < argc; i++) {
        const char *v = i + 1 < argc ? argv[i + 1] : "";
        if (!strcmp(argv[i], "--dir"))
            dir = v, i++;
        else if (!strcmp(argv[i], "--steps"))
            steps = atol(v), i++;
        else if (!strcmp(argv[i], "--save-steps"))
            every = atol(v), i++;
        else if (!strcmp(argv[i], "--keep"))
            keep = atol(v), i++;
        else if (!strcmp(argv[i], "--mode"))
            mode = v, i++;
        else if (strncmp(v, "--", 2) != 0 && v[0])
            i++; /* another option of the demo, with its value */
    }
    if (!dir || every <= 0) {
        fprintf(stderr, "pc_saver: --dir and --save-steps K > 0 needed\n");
        return 2;
    }
    MPI_Comm_size(MPI_COMM_WORLD, &ranks);
    if (make_dir(dir) != 0)
        return 1;
    o.base.max_to_keep = (int)keep;
    o.base.log = print_log;
    o.base.log_level = rank == 0 ? CKPT_LOG_INFO : CKPT_LOG_WARN;
    if (ckpt_mpi_saver_open(&s, MPI_COMM_WORLD, dir, &o) < 0)
        return say_failed("opening the saver");
    model_fill(&m, rank, ranks, 0);
    model_zero(&m);
    model_register(s, &m, MODEL_RNG_OPTIONAL);
    rc = ckpt_mpi_saver_restore_latest(s, &prefix);
    if (rc == 0) {
        start = (long)m.step + 1;
        if (!holds_step(&m, ranks, (int)m.step)) {
            fprintf(stderr,
                    "pc_saver: rank %d: %s holds values of no one step "
                    "(its step variable says %" PRId64 ")\n",
                    rank, prefix.ptr, m.step);
            goto done;
        }
        if (rank == 0)
            printf("restored checkpoint %s (global step %" PRId64 ")\n",
                   prefix.ptr, m.step);
    } else if (rc != CKPT_ENOTFOUND) {
        say_failed("restoring the latest checkpoint");
        goto done;
    }
    for (long step = start; step <= steps; step++) {
        if (step % every != 0)
            continue;
        model_fill(&m, rank, ranks, (int)step);
        m.step = step;
        if (rank == 0)
            printf("saving checkpoint for step %ld\n", step);
        fflush(stdout);
        if (!strcmp(mode, "async")) {
            /* one save in flight: the next trigger waits for it */
            rc = ckpt_mpi_saver_wait(s, -1);
            if (rc == 0)
                rc = ckpt_mpi_saver_save_async(s, step, NULL);
        } else {
            rc = ckpt_mpi_saver_save(s, step, NULL);
        }
        if (rc < 0) {
            fprintf(stderr, "pc_saver: rank %d: save of step %ld failed: %s\n",
                    rank, step, ckpt_error_last()->message);
            goto done;
        }
    }
    if (ckpt_mpi_saver_close(s) < 0) {
        say_failed("closing the saver");
        goto done;
    }
    if (rank == 0)
        printf("done: step %ld\n", steps);
    code = 0;
done:
    fflush(stdout);
    ckpt_mpi_saver_free(s);
    ckpt_buf_dispose(&prefix);
    return code;
}

int main(int argc, char **argv)
{
    int provided, code, any = 0;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_FUNNELED, &provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    code = run(argc, argv);
    /* a failed rank ends the job with its status (mpiexec aborts it) */
    if (code != 0)
        return code;
    MPI_Allreduce(&code, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    MPI_Finalize();
    return any;
}
