/* tools/ckpt-train/distributed.h - `ckpt-train --distributed`, built when
 * ckpt has its MPI library (CKPT_TRAIN_MPI): data-parallel training under
 * mpiexec with distributed checkpoints. */
#ifndef CKPT_TRAIN_DISTRIBUTED_H
#define CKPT_TRAIN_DISTRIBUTED_H

/* Whether the command line asks for --distributed. */
int ckpt_train_wants_distributed(int argc, char **argv);

/* Run the distributed trainer (initialises and finalises MPI); returns the
 * process exit status. */
int ckpt_train_distributed(int argc, char **argv);

#endif
