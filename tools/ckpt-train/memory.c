/* tools/ckpt-train/memory.c - see memory.h. The counts follow what
 * mlp_init (model.c), dataset_init (data.c), the trainers' batches and,
 * with --distributed, the packed gradients allocate; every product and
 * sum is checked for overflow. */
#include "memory.h"

#include "ckpt.h"

#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

/* *acc += a * b; -1 on overflow. */
static int mul_add(uint64_t *acc, uint64_t a, uint64_t b)
{
    uint64_t p;
    if (__builtin_mul_overflow(a, b, &p) ||
        __builtin_add_overflow(*acc, p, acc))
        return -1;
    return 0;
}

int train_memory_plan(const train_options *o, int ranks, train_memory *m)
{
    const uint64_t f = sizeof(float), h = (uint64_t)o->hidden,
                   b = (uint64_t)o->batch, n = DATA_N;
    uint64_t weights = 0, units = 0, floats = 0, state = 0, data = 0;
    int err = 0;
    memset(m, 0, sizeof(*m));
    if (o->hidden < 1 || o->layers < 1 || o->batch < 1)
        return -1;
    /* DATA_DIM -> hidden, (layers - 1) x hidden -> hidden, -> classes */
    err |= mul_add(&weights, DATA_DIM, h);
    err |= mul_add(&weights, (uint64_t)o->layers - 1, h * h);
    err |= mul_add(&weights, h, DATA_CLASSES);
    err |= mul_add(&units, (uint64_t)o->layers, h);
    err |= mul_add(&units, 1, DATA_CLASSES);
    /* w, mw, vw, gw per weight; b, mb, vb, gb per unit; act and delta per
     * unit and example of a batch */
    err |= mul_add(&floats, 4, weights);
    err |= mul_add(&floats, 4, units);
    err |= mul_add(&floats, 2 * b, units);
    err |= mul_add(&m->model, floats, f);
    err |= mul_add(&state, 3, weights);
    err |= mul_add(&state, 3, units);
    err |= mul_add(&m->state, state, f);
    /* x, y, centers, two orders, the restored order's check, a batch */
    err |=
        mul_add(&data, n * DATA_DIM + n + DATA_CLASSES * DATA_DIM + 2 * n, f);
    err |= mul_add(&data, n, 1);
    err |= mul_add(&data, b * (DATA_DIM + 1), f);
    if (ranks > 0) { /* the packed gradients and the stop vote */
        err |= mul_add(&m->allreduce, weights, 1);
        err |= mul_add(&m->allreduce, units + 1, 1);
        err |= mul_add(&data, m->allreduce, f);
    }
    m->data = data;
    if (o->mode == CKPT_SAVE_ASYNC) {
        /* the state (this rank's share: replicated tensors are written
         * once, spread over the ranks), the data order and the scalars */
        m->staging = ranks > 1 ? m->state / (uint64_t)ranks : m->state;
        err |= mul_add(&m->staging, n, f);
        err |= mul_add(&m->staging, 64, 1);
    }
    m->total = m->model;
    err |= mul_add(&m->total, m->staging, 1);
    err |= mul_add(&m->total, m->data, 1);
    if (err || m->total > SIZE_MAX)
        return -1;
    return 0;
}

/* *limit = min(*limit, v), naming it. */
static void lower(uint64_t *limit, const char **what, uint64_t v,
                  const char *name)
{
    if (v < *limit) {
        *limit = v;
        *what = name;
    }
}

uint64_t train_memory_limit(const char **what)
{
    uint64_t limit = UINT64_MAX, phys;
    long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
    struct rlimit rl;
    *what = "no limit";
    if (pages > 0 && page > 0 &&
        !__builtin_mul_overflow((uint64_t)pages, (uint64_t)page, &phys))
        lower(&limit, what, phys, "physical memory");
    if (getrlimit(RLIMIT_AS, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY)
        lower(&limit, what, (uint64_t)rl.rlim_cur,
              "the address-space limit (ulimit -v)");
    if (getrlimit(RLIMIT_DATA, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY)
        lower(&limit, what, (uint64_t)rl.rlim_cur,
              "the data-segment limit (ulimit -d)");
    return limit;
}

/* `bytes` with a binary unit, one decimal: "4.0 TiB". */
static void human(char *out, size_t n, uint64_t bytes)
{
    static const char *const units[] = {"bytes", "KiB", "MiB", "GiB",
                                        "TiB",   "PiB", "EiB"};
    double v = (double)bytes;
    int u = 0;
    while (v >= 1024.0 && u < 6) {
        v /= 1024.0;
        u++;
    }
    if (u == 0)
        snprintf(out, n, "%" PRIu64 " bytes", bytes);
    else
        snprintf(out, n, "%.1f %s", v, units[u]);
}

int train_memory_check(const train_options *o, int ranks, const char *prefix)
{
    train_memory m;
    const char *what;
    char opts[160], total[32], model[32], staging[32], limit_h[32], async[96];
    uint64_t limit;
    snprintf(opts, sizeof(opts), "--hidden %d --layers %d --batch %d --mode %s",
             o->hidden, o->layers, o->batch,
             o->mode == CKPT_SAVE_ASYNC  ? "async"
             : o->mode == CKPT_SAVE_SYNC ? "sync"
                                         : "none");
    if (train_memory_plan(o, ranks, &m) != 0) {
        fprintf(stderr,
                "%s%s: the bytes of memory they need overflow a 64-bit "
                "count (or this build's address space); choose a smaller "
                "--hidden, --layers or --batch\n",
                prefix, opts);
        return 2;
    }
    if (m.allreduce > INT_MAX) {
        fprintf(stderr,
                "%s%s --distributed: the gradients' average would reduce "
                "%" PRIu64 " floats in one MPI_Iallreduce, more than an MPI "
                "count holds (%d); choose a smaller --hidden or --layers\n",
                prefix, opts, m.allreduce, INT_MAX);
        return 2;
    }
    limit = train_memory_limit(&what);
    if (m.total <= limit)
        return 0;
    human(total, sizeof(total), m.total);
    human(model, sizeof(model), m.model);
    human(staging, sizeof(staging), m.staging);
    human(limit_h, sizeof(limit_h), limit);
    if (m.staging > 0)
        snprintf(async, sizeof(async), ", an async save's copy of its state %s",
                 staging);
    else
        async[0] = '\0';
    fprintf(stderr,
            "%s%s need %" PRIu64 " bytes of memory (%s: the model with its "
            "Adam moments, gradients and activations %s%s, the data), more "
            "than %s of %" PRIu64 " bytes (%s); choose a smaller --hidden, "
            "--layers or --batch%s\n",
            prefix, opts, m.total, total, model, async, what, limit, limit_h,
            m.staging > 0 && m.total - m.staging <= limit
                ? ", or --mode sync (no staging copy)"
                : "");
    return 2;
}

void *train_alloc(size_t bytes, const char *what, train_alloc_failure *f)
{
    void *p = calloc(1, bytes ? bytes : 1);
    if (!p && f->what[0] == '\0')
        snprintf(f->what, sizeof(f->what), "%s (%zu bytes)", what, bytes);
    return p;
}

void train_alloc_report(const train_alloc_failure *f, const char *prefix)
{
    fprintf(stderr, "%sout of memory allocating %s\n", prefix,
            f->what[0] ? f->what : "the trainer's state");
}
