/* tests/mpi/finalize_stall_shim.c - an LD_PRELOAD library for
 * run_train_stall.sh: MPI_Finalize (through MPI's profiling interface)
 * stops the process whose OMPI_COMM_WORLD_RANK (Open MPI sets it in each
 * rank's environment) equals CKPT_STALL_FINALIZE_RANK with SIGSTOP before
 * it finalizes: a rank that stalls after the last collective, which the
 * other ranks' MPI_Finalize may wait for. With CKPT_HANG_FINALIZE set,
 * MPI_Finalize instead never returns in this very process (it pauses, so
 * its own alarm still runs): a finalize held by a peer, seen from a rank
 * run alone. With CKPT_HANG_INIT set, MPI_Init_thread never returns the
 * same way: a start held by a rank that never joins. Said on stderr first,
 * so a test can see that the stall was reached. With CKPT_BLOCK_SIGALRM
 * set, SIGALRM is blocked before main, as in a process started with it
 * blocked in its inherited signal mask. With CKPT_REPORT_SIGNALS set,
 * the process starts with SIGINT ignored and handlers of the shim's own
 * for SIGTERM and SIGALRM (as a launcher or a library may leave them)
 * and an alarm() an hour ahead, and says on stderr what SIGINT, SIGTERM
 * and SIGALRM mean, whether SIGALRM is blocked and whether that alarm is
 * still pending, in MPI_Finalize (after the training's teardown) and at
 * exit, naming the program (processes the MPI runtime starts get the shim
 * too): "finalize_stall_shim: ckpt-train: at exit: SIGINT ignored,
 * SIGTERM the shim's, SIGALRM the shim's, blocked, its alarm pending".
 * With CKPT_HANG_START set, MPI_Wait never returns in ckpt-train (the
 * same way): its first wait, the start's agreement, held by a peer that
 * never posts it.
 * With CKPT_INIT_OPENS set to a path, MPI_Init_thread of ckpt-train
 * first opens (creates, empties) that file and keeps it open, on the
 * lowest free descriptor, as an MPI library's start opens its own pipes
 * and sockets.
 * Every other rank
 * starts and finalizes as usual. */
#define _GNU_SOURCE /* sigset_t and sigprocmask under -std=c11 */
#include <errno.h>  /* program_invocation_short_name */
#include <fcntl.h>
#include <mpi.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

__attribute__((constructor)) static void block_sigalrm(void)
{
    sigset_t set;
    if (!getenv("CKPT_BLOCK_SIGALRM"))
        return;
    sigemptyset(&set);
    sigaddset(&set, SIGALRM);
    sigprocmask(SIG_BLOCK, &set, NULL);
}

static void shim_handler(int sig)
{
    (void)sig;
}

__attribute__((constructor)) static void take_signals(void)
{
    struct sigaction sa;
    if (!getenv("CKPT_REPORT_SIGNALS"))
        return;
    memset(&sa, 0, sizeof(sa));
    sigemptyset(&sa.sa_mask);
    sa.sa_handler = SIG_IGN;
    sigaction(SIGINT, &sa, NULL);
    sa.sa_handler = shim_handler;
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGALRM, &sa, NULL);
    alarm(3600); /* the process's own alarm, pending throughout */
}

/* What `sig` means now, in words. */
static const char *meaning(int sig)
{
    struct sigaction sa;
    if (sigaction(sig, NULL, &sa) != 0)
        return "unknown";
    if (sa.sa_flags & SA_SIGINFO)
        return "another handler";
    if (sa.sa_handler == SIG_IGN)
        return "ignored";
    if (sa.sa_handler == SIG_DFL)
        return "default";
    return sa.sa_handler == shim_handler ? "the shim's" : "another handler";
}

static void report_signals(const char *when)
{
    sigset_t mask;
    unsigned left;
    int blocked = sigprocmask(SIG_BLOCK, NULL, &mask) == 0 &&
                  sigismember(&mask, SIGALRM) == 1;
    if (!getenv("CKPT_REPORT_SIGNALS"))
        return;
    left = alarm(0); /* looked at, then put back */
    if (left > 0)
        alarm(left);
    fprintf(stderr,
            "finalize_stall_shim: %s: %s: SIGINT %s, SIGTERM %s, SIGALRM "
            "%s, %s, %s\n",
            program_invocation_short_name, when, meaning(SIGINT),
            meaning(SIGTERM), meaning(SIGALRM),
            blocked ? "blocked" : "unblocked",
            left > 3000 ? "its alarm pending"
            : left > 0  ? "another alarm pending"
                        : "no alarm pending");
    fflush(stderr);
}

__attribute__((destructor)) static void report_at_exit(void)
{
    report_signals("at exit");
}

int MPI_Init_thread(int *argc, char ***argv, int required, int *provided)
{
    const char *opens = getenv("CKPT_INIT_OPENS");
    if (opens && strstr(program_invocation_short_name, "ckpt-train"))
        /* kept open for the process's life, as MPI's own files are */
        (void)open(opens, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (getenv("CKPT_HANG_INIT")) {
        fprintf(stderr, "finalize_stall_shim: MPI_Init_thread hangs\n");
        fflush(stderr);
        for (;;)
            pause();
    }
    return PMPI_Init_thread(argc, argv, required, provided);
}

int MPI_Wait(MPI_Request *request, MPI_Status *status)
{
    if (getenv("CKPT_HANG_START") &&
        strstr(program_invocation_short_name, "ckpt-train")) {
        fprintf(stderr, "finalize_stall_shim: MPI_Wait hangs\n");
        fflush(stderr);
        for (;;)
            pause();
    }
    return PMPI_Wait(request, status);
}

int MPI_Finalize(void)
{
    const char *want = getenv("CKPT_STALL_FINALIZE_RANK");
    const char *rank = getenv("OMPI_COMM_WORLD_RANK");
    report_signals("in MPI_Finalize");
    if (getenv("CKPT_HANG_FINALIZE")) {
        fprintf(stderr, "finalize_stall_shim: MPI_Finalize hangs\n");
        fflush(stderr);
        for (;;)
            pause();
    }
    if (want && rank && strcmp(want, rank) == 0) {
        fprintf(stderr,
                "finalize_stall_shim: rank %s stops before "
                "MPI_Finalize\n",
                rank);
        fflush(stderr);
        raise(SIGSTOP);
    }
    return PMPI_Finalize();
}
