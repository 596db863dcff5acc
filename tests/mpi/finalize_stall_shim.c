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
 * blocked in its inherited signal mask. Every other rank starts and
 * finalizes as usual. */
#define _GNU_SOURCE /* sigset_t and sigprocmask under -std=c11 */
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

int MPI_Init_thread(int *argc, char ***argv, int required, int *provided)
{
    if (getenv("CKPT_HANG_INIT")) {
        fprintf(stderr, "finalize_stall_shim: MPI_Init_thread hangs\n");
        fflush(stderr);
        for (;;)
            pause();
    }
    return PMPI_Init_thread(argc, argv, required, provided);
}

int MPI_Finalize(void)
{
    const char *want = getenv("CKPT_STALL_FINALIZE_RANK");
    const char *rank = getenv("OMPI_COMM_WORLD_RANK");
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
