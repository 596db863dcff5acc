/* tools/ckpt-train/watchdog.h - a bound on one call that may never return
 * (MPI_Init_thread, MPI_Finalize): a thread that waits for the call's end
 * and, past the timeout, writes a message on stderr and ends the process
 * with exit status 70. It touches no signal disposition, mask or alarm of
 * the process, so an alarm() the process had pending (and its SIGALRM
 * handler) is its own before, during and after the call. */
#ifndef CKPT_TRAIN_WATCHDOG_H
#define CKPT_TRAIN_WATCHDOG_H

#include <pthread.h>
#include <stddef.h>

/* The exit status past the timeout (docs/mpi.md, "Bounded waits"). */
#define TRAIN_WATCHDOG_STATUS 70

typedef struct train_watchdog {
    pthread_t thread;
    pthread_mutex_t mu;
    pthread_cond_t cv; /* on CLOCK_MONOTONIC */
    int disarmed;
    int running; /* the thread was started (and is joined by disarm) */
    double timeout_s;
    char msg[256];
    size_t msg_len;
} train_watchdog;

/* Start the watchdog: unless train_watchdog_disarm is called within
 * `timeout_s` seconds, `msg` goes to stderr and the process ends with
 * _exit(TRAIN_WATCHDOG_STATUS) (nothing flushed: flush stdio first).
 * 0, or -1 when the thread could not start, after a warning on stderr
 * (the call then runs unbounded); disarm is still to be called. */
int train_watchdog_arm(train_watchdog *w, double timeout_s, const char *msg);

/* Stop the watchdog (the call returned) and join its thread. */
void train_watchdog_disarm(train_watchdog *w);

#endif
