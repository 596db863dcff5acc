/* tests/mpi/mpi_model.h - the state the MPI tests save and restore: one
 * value of every kind of distributed variable, filled from (rank, ranks,
 * seed) so any rank count can compute what any other wrote:
 *   replicated  "w" float[37], "emb/table" double[5,4], "step" int64[]
 *   partitioned "p" float[10,3] by rows, "q" int32[4,6] by columns
 *   per-rank    "rng" uint64[2]
 * Also a shared temporary directory, helpers for whole-job asserts, and
 * what every MPI test program shares: making a variable, counting files,
 * running the test group its arguments name, and the job's verdict. */
#ifndef CKPT_TESTS_MPI_MODEL_H
#define CKPT_TESTS_MPI_MODEL_H

#include "ckpt/mpi.h"
#include "test_util.h"

#define MODEL_P_ROWS 10
#define MODEL_P_COLS 3
#define MODEL_Q_ROWS 4
#define MODEL_Q_COLS 6

typedef struct model {
    float w[37];
    double emb[20];
    int64_t step;
    int64_t p_lo, p_hi; /* this rank's rows of p */
    int64_t q_lo, q_hi; /* this rank's columns of q */
    float p[MODEL_P_ROWS * MODEL_P_COLS];
    int32_t q[MODEL_Q_ROWS * MODEL_Q_COLS];
    uint64_t rng[2];
    int rng_writes; /* calls of rng's write callback (MODEL_RNG_CALLBACKS) */
} model;

/* model_register's flags: rng optional; rng read and written through
 * callbacks (counting the writes in rng_writes) instead of its memory. */
#define MODEL_RNG_OPTIONAL 1
#define MODEL_RNG_CALLBACKS 2

/* The piece bounds for `rank` of `ranks`, values from `seed`. */
void model_fill(model *m, int rank, int ranks, int seed);
/* Zero every value (bounds kept). */
void model_zero(model *m);
/* Register every variable of `m` with `s` (flags: MODEL_RNG_*). */
void model_register(ckpt_mpi_saver *s, model *m, int flags);
/* Assert that `m` holds the values model_fill(rank, ranks, seed) gives;
 * `rng_seed_rank` is the rank whose rng value is expected (usually rank). */
void model_assert(const model *m, int seed);
/* Expected elements of the whole tensors. */
float model_w(int seed, int i);
double model_emb(int seed, int i);
float model_p(int seed, int row, int col);
int32_t model_q(int seed, int row, int col);
uint64_t model_rng(int seed, int rank, int k);

/* A directory every rank sees: made by rank 0 under $TMPDIR, broadcast.
 * Free with shared_dir_remove (collective). */
char *shared_dir_make(void);
void shared_dir_remove(char *dir);

/* Options for tests: small collective timeout so a broken test aborts
 * instead of hanging. */
ckpt_mpi_saver_options test_mpi_options(void);

int test_rank(void);
int test_size(void);

/* A variable `name` of `dtype` and shape dims[0..rank) over `data`. */
ckpt_var model_var(const char *name, int dtype, int rank, const int64_t *dims,
                   void *data);

/* Make `dir` (a path every rank sees) a new empty directory: rank 0
 * removes and recreates it; every rank returns once it has. */
void fresh_dir(const char *dir);

/* How many names in `dir` contain `needle`. */
int count_files_in(const char *dir, const char *needle);

/* A ckpt_log_fn collecting the WARN lines, one a line, into `payload`: a
 * string of WARNINGS_SIZE bytes (start it empty). */
#define WARNINGS_SIZE 8192
void keep_warnings(int level, const char *message, void *payload);

/* One group of tests a program runs when its first argument is `name`. */
typedef struct mpi_test_group {
    const char *name;
    const struct CMUnitTest *tests;
    size_t count;
} mpi_test_group;
#define MPI_TEST_GROUP(name, tests)                                            \
    {                                                                          \
        (name), (tests), sizeof(tests) / sizeof((tests)[0])                    \
    }

/* Run the group named `name` (1, a failure, when none is). */
int mpi_run_group(const char *name, const mpi_test_group *groups, size_t n);

/* The job's verdict: the largest `failed` of any rank (all ranks agree on
 * it); finalizes MPI. What main returns. */
int mpi_tests_end(int failed);

#endif
