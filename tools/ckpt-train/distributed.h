/* tools/ckpt-train/distributed.h - `ckpt-train --distributed`, built when
 * ckpt has its MPI library (CKPT_TRAIN_MPI): data-parallel training under
 * mpiexec with distributed checkpoints. */
#ifndef CKPT_TRAIN_DISTRIBUTED_H
#define CKPT_TRAIN_DISTRIBUTED_H

/* Whether the command line asks for --distributed. */
int ckpt_train_wants_distributed(int argc, char **argv);

/* Run the distributed trainer (initialises and finalises MPI); returns the
 * process exit status, report_exit_status's included (stdout and stderr
 * flushed before MPI_Finalize, whose time-out exits 70 at once). */
int ckpt_train_distributed(int argc, char **argv);

#endif
