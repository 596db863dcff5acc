/* tests/mpi/mpi_model.c - the MPI tests' state (see mpi_model.h). */
#include "mpi_model.h"

#include "test_util.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int test_rank(void)
{
    int r;
    MPI_Comm_rank(MPI_COMM_WORLD, &r);
    return r;
}

int test_size(void)
{
    int n;
    MPI_Comm_size(MPI_COMM_WORLD, &n);
    return n;
}

float model_w(int seed, int i)
{
    return (float)seed + 0.5f * (float)i;
}

double model_emb(int seed, int i)
{
    return seed * 1000.0 - i * 0.25;
}

float model_p(int seed, int row, int col)
{
    return (float)(seed * 100 + row * MODEL_P_COLS + col);
}

int32_t model_q(int seed, int row, int col)
{
    return seed * -1000 + row * MODEL_Q_COLS + col;
}

uint64_t model_rng(int seed, int rank, int k)
{
    return (uint64_t)seed * 1000003u + (uint64_t)rank * 7u + (uint64_t)k;
}

void model_fill(model *m, int rank, int ranks, int seed)
{
    memset(m, 0, sizeof(*m));
    m->p_lo = (int64_t)rank * MODEL_P_ROWS / ranks;
    m->p_hi = (int64_t)(rank + 1) * MODEL_P_ROWS / ranks;
    m->q_lo = (int64_t)rank * MODEL_Q_COLS / ranks;
    m->q_hi = (int64_t)(rank + 1) * MODEL_Q_COLS / ranks;
    for (int i = 0; i < 37; i++)
        m->w[i] = model_w(seed, i);
    for (int i = 0; i < 20; i++)
        m->emb[i] = model_emb(seed, i);
    m->step = seed * 11;
    for (int64_t r = m->p_lo; r < m->p_hi; r++)
        for (int c = 0; c < MODEL_P_COLS; c++)
            m->p[(r - m->p_lo) * MODEL_P_COLS + c] = model_p(seed, (int)r, c);
    for (int r = 0; r < MODEL_Q_ROWS; r++)
        for (int64_t c = m->q_lo; c < m->q_hi; c++)
            m->q[r * (m->q_hi - m->q_lo) + (c - m->q_lo)] =
                model_q(seed, r, (int)c);
    m->rng[0] = model_rng(seed, rank, 0);
    m->rng[1] = model_rng(seed, rank, 1);
}

void model_zero(model *m)
{
    memset(m->w, 0, sizeof(m->w));
    memset(m->emb, 0, sizeof(m->emb));
    m->step = 0;
    memset(m->p, 0, sizeof(m->p));
    memset(m->q, 0, sizeof(m->q));
    memset(m->rng, 0, sizeof(m->rng));
}

ckpt_var model_var(const char *name, int dtype, int rank, const int64_t *dims,
                   void *data)
{
    ckpt_var v;
    memset(&v, 0, sizeof(v));
    v.name = name;
    v.dtype = dtype;
    v.shape.rank = rank;
    for (int d = 0; d < rank; d++)
        v.shape.dims[d] = dims[d];
    v.data = data;
    return v;
}

static int rng_read(void *dst, uint64_t offset, size_t n, void *payload)
{
    model *m = payload;
    memcpy(dst, (char *)m->rng + offset, n);
    return 0;
}

static int rng_write(const void *src, uint64_t offset, size_t n, void *payload)
{
    model *m = payload;
    memcpy((char *)m->rng + offset, src, n);
    m->rng_writes++;
    return 0;
}

void model_register(ckpt_mpi_saver *s, model *m, int flags)
{
    static const int64_t w_dims[] = {37}, emb_dims[] = {5, 4};
    static const int64_t p_dims[] = {MODEL_P_ROWS, MODEL_P_COLS};
    static const int64_t q_dims[] = {MODEL_Q_ROWS, MODEL_Q_COLS};
    static const int64_t rng_dims[] = {2};
    ckpt_var v;
    ckpt_slice_extent pe[2] = {{m->p_lo, m->p_hi - m->p_lo},
                               {0, CKPT_SLICE_FULL}};
    ckpt_slice_extent qe[2] = {{0, MODEL_Q_ROWS}, {m->q_lo, m->q_hi - m->q_lo}};
    v = model_var("w", CKPT_DT_FLOAT, 1, w_dims, m->w);
    assert_ckpt_ok(ckpt_mpi_saver_add_replicated(s, &v));
    v = model_var("emb/table", CKPT_DT_DOUBLE, 2, emb_dims, m->emb);
    assert_ckpt_ok(ckpt_mpi_saver_add_replicated(s, &v));
    v = model_var("step", CKPT_DT_INT64, 0, NULL, &m->step);
    assert_ckpt_ok(ckpt_mpi_saver_add_replicated(s, &v));
    v = model_var("p", CKPT_DT_FLOAT, 2, p_dims, m->p);
    assert_ckpt_ok(ckpt_mpi_saver_add_partitioned(s, &v, pe));
    v = model_var("q", CKPT_DT_INT32, 2, q_dims, m->q);
    assert_ckpt_ok(ckpt_mpi_saver_add_partitioned(s, &v, qe));
    v = model_var("rng", CKPT_DT_UINT64, 1, rng_dims, m->rng);
    if (flags & MODEL_RNG_CALLBACKS) {
        v.data = NULL;
        v.read = rng_read;
        v.write = rng_write;
        v.payload = m;
    }
    assert_ckpt_ok(ckpt_mpi_saver_add_per_rank(
        s, &v, flags & MODEL_RNG_OPTIONAL ? CKPT_MPI_OPTIONAL : 0));
}

void model_assert(const model *m, int seed)
{
    int rank = test_rank();
    for (int i = 0; i < 37; i++)
        assert_true(m->w[i] == model_w(seed, i));
    for (int i = 0; i < 20; i++)
        assert_true(m->emb[i] == model_emb(seed, i));
    assert_int_equal(m->step, seed * 11);
    for (int64_t r = m->p_lo; r < m->p_hi; r++)
        for (int c = 0; c < MODEL_P_COLS; c++)
            assert_true(m->p[(r - m->p_lo) * MODEL_P_COLS + c] ==
                        model_p(seed, (int)r, c));
    for (int r = 0; r < MODEL_Q_ROWS; r++)
        for (int64_t c = m->q_lo; c < m->q_hi; c++)
            assert_int_equal(m->q[r * (m->q_hi - m->q_lo) + (c - m->q_lo)],
                             model_q(seed, r, (int)c));
    assert_true(m->rng[0] == model_rng(seed, rank, 0));
    assert_true(m->rng[1] == model_rng(seed, rank, 1));
}

char *shared_dir_make(void)
{
    char buf[4096] = {0};
    if (test_rank() == 0) {
        char *d = test_make_temp_dir();
        snprintf(buf, sizeof(buf), "%s", d);
        free(d);
    }
    MPI_Bcast(buf, (int)sizeof(buf), MPI_CHAR, 0, MPI_COMM_WORLD);
    return strdup(buf);
}

void shared_dir_remove(char *dir)
{
    MPI_Barrier(MPI_COMM_WORLD);
    if (test_rank() == 0)
        test_remove_tree(dir);
    else
        free(dir);
    MPI_Barrier(MPI_COMM_WORLD);
}

ckpt_mpi_saver_options test_mpi_options(void)
{
    ckpt_mpi_saver_options o = CKPT_MPI_SAVER_OPTIONS_INIT;
    o.collective_timeout_s = 60;
    return o;
}

void fresh_dir(const char *dir)
{
    if (test_rank() == 0) {
        char cmd[4200];
        snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
        assert_int_equal(system(cmd), 0);
        assert_int_equal(mkdir(dir, 0755), 0);
    }
    MPI_Barrier(MPI_COMM_WORLD);
}

int count_files_in(const char *dir, const char *needle)
{
    DIR *d = opendir(dir);
    struct dirent *e;
    int n = 0;
    assert_non_null(d);
    while ((e = readdir(d)) != NULL)
        n += strstr(e->d_name, needle) != NULL;
    closedir(d);
    return n;
}

int mpi_run_group(const char *name, const mpi_test_group *groups, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (strcmp(name, groups[i].name) == 0)
            return _cmocka_run_group_tests(groups[i].name, groups[i].tests,
                                           groups[i].count, NULL, NULL);
    return 1;
}

int mpi_tests_end(int failed)
{
    int any = 0;
    MPI_Allreduce(&failed, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    MPI_Finalize();
    return any;
}

void keep_warnings(int level, const char *message, void *payload)
{
    char *b = payload;
    size_t used = strlen(b);
    if (level == CKPT_LOG_WARN)
        snprintf(b + used, WARNINGS_SIZE - used, "%s\n", message);
}
