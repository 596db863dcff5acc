/* tests/crash/power_cut_replay.c - black-box power cuts under the real
 * binaries: runs ckpt-train (or `ckpt repack`) once with the recorder
 * power_cut_shim.so preloaded, then rebuilds the checkpoint directory as a
 * power cut at many points of that run could have left it, and checks each
 * such state with the real tools.
 *
 * Model (conservative, what POSIX promises and no more):
 *  - file data written (write/pwrite, O_DIRECT or not) and not yet made
 *    durable by fsync/fdatasync of that file may be lost whole, kept whole,
 *    kept as a prefix (the last write cut short), kept page by page at
 *    random, or leave zeros where the size reached the disk but the bytes
 *    did not;
 *  - a directory entry change (create, mkdir, rename, link, unlink) is
 *    durable once the directory it changes (both, for a rename) has been
 *    fsynced after it; before that it may be lost or kept, in order (a
 *    prefix of them) or out of order across files (any subset closed under
 *    the order of the changes that share a name); a rename is atomic;
 *  - the root directory the run starts in exists and is durable.
 * Cut points: just before and just after every fsync/fdatasync, directory
 * fsync, rename and removal, and random points between; at each, several
 * strategies (keep everything, as a killed process leaves it; drop everything
 * not synced; entries kept but data lost; entries lost but data kept; random
 * prefixes; random subsets; only the newest entry change kept, with the
 * earlier ones of its names). Identical states are checked once: the same
 * files under the same promise at their cut (the newest save reported
 * durable; for repack, whether it had exited).
 *
 * Checks of each state (D is the checkpoint directory):
 *  1. `ckpt verify D` exits 0, or - when no save had been reported durable
 *     and D holds no state file - says cleanly that there is no checkpoint;
 *  2. every checkpoint the state file lists verifies (`ckpt verify PREFIX`);
 *  3. the state file's latest checkpoint is at least the newest one the
 *     trainer had reported durable before the cut ("(step N) is durable",
 *     "saved .../model.ckpt-N", "monitored session closed at global step N
 *     (ok)", "done: step N": the recorder notes each line as it is
 *     printed), and at least the one the directory's state file named
 *     when the recorded run started (resume);
 *  4. ckpt-train relaunched on D with the same arguments resumes from that
 *     latest checkpoint (or starts afresh when there is none), finishes,
 *     and its final checkpoint equals the uninterrupted run's (`ckpt diff`,
 *     the trainer promises bit-identical resumes); D verifies afterwards,
 *     holds no temporary file, note or data file without its index, and
 *     every index left in it verifies.
 * For repack (DST in a directory made just before, its entry in the root
 * not yet durable): an index under the destination name means a checkpoint
 * equal to the source (`ckpt diff`); without one, repack again must succeed
 * (the directory made again when a cut lost it); once repack has exited 0
 * the index must be there.
 *
 * Scenarios: "train" (a run from an empty directory), "resume" (crash
 * states of a first run, each the directory a second recorded run starts
 * on, whose own cuts are checked; --seeds of them), "repack"; --mpi N runs
 * the trainer under mpiexec with --distributed on N ranks. --fail-sync
 * N[,N...] (train, repack) makes the disk fail: one recorded run per N,
 * whose fsyncs fail with EIO from the Nth on (in each process); the run
 * must end with exit 1 (repack: 2) saying which save failed and naming the
 * sync, and its states are checked as above against an uninterrupted
 * reference run (the relaunch's disk works; repack's index need not be
 * there at the end). With --mpi, --fail-rank R gives only rank R the
 * failing disk (the other ranks' syncs work), and --relaunch-mpi M
 * relaunches on M ranks instead of N: the relaunch must resume from the
 * state file's latest checkpoint and leave a directory that verifies, but
 * its final checkpoint is not compared (ranks without a stored data
 * position start theirs afresh); in the resume scenario the recorded
 * second run is on M ranks too. --focus K checks first, out of the
 * budget, the cut just after each of the first K renames with strategy
 * newest (quick forms). --keep-hours H passes it to every run of the
 * trainer (keep_checkpoint_every_n_hours; 1e-9: every checkpoint
 * retention evicts is kept for good) and adds a check: every checkpoint
 * reported durable before the cut is still there and verifies, before
 * the relaunch and after it (nothing deletes a checkpoint kept for good,
 * nor the relaunch's retention). --every-op adds the cuts just before and
 * after every recorded operation (writes, opens, closes too), each with
 * every strategy when the budget covers them: with the resume scenario,
 * every call of the saves that follow a recovery.
 *
 * Usage: power_cut_replay --shim SO --train BIN --ckpt BIN [--mode M]
 *        [--busy P] [--states N] [--seed S] [--scenario train|resume|repack]
 *        [--seeds K] [--mpi N [--mpiexec PATH] [--relaunch-mpi M]]
 *        [--fail-sync N[,N...] [--fail-rank R]] [--focus K]
 *        [--keep-hours H] [--every-op]
 * Exit status 0 when every state passes, 1 otherwise (each failure is
 * printed with the operations before its cut and the state is kept). */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#define STEPS 60
#define SAVE_STEPS "10"
#define KEEP "2"

/* ---- the recorded log ---- */

typedef struct {
    char kind;
    uint64_t id;
    long long num; /* offset (W), size (T, M), flags (O) */
    size_t len;
    const unsigned char *data;
    char *a, *b; /* paths relative to the root */
} op;

static op *ops;
static size_t nops;
static char *log_text;

static void die(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "power_cut_replay: ");
    vfprintf(stderr, fmt, ap);
    fprintf(stderr, "\n");
    va_end(ap);
    exit(2);
}

/* snprintf into `buf` of `cap` bytes, dying when the text does not fit: a
 * path cut short would check the wrong file. */
__attribute__((format(printf, 3, 4))) static void
path_printf(char *buf, size_t cap, const char *fmt, ...)
{
    va_list ap;
    int n;
    va_start(ap, fmt);
    n = vsnprintf(buf, cap, fmt, ap);
    va_end(ap);
    if (n < 0 || (size_t)n >= cap)
        die("a path or argument longer than %zu bytes: %.80s...", cap, buf);
}

static void *xmalloc(size_t n)
{
    void *p = malloc(n ? n : 1);
    if (!p)
        die("out of memory");
    return p;
}

static void *xrealloc(void *p, size_t n)
{
    p = realloc(p, n ? n : 1);
    if (!p)
        die("out of memory");
    return p;
}

static char *read_file(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    char *buf;
    long n;
    if (!f)
        return NULL;
    fseek(f, 0, SEEK_END);
    n = ftell(f);
    fseek(f, 0, SEEK_SET);
    buf = xmalloc((size_t)n + 1);
    if (n > 0 && fread(buf, 1, (size_t)n, f) != (size_t)n)
        die("read %s", path);
    buf[n] = '\0';
    fclose(f);
    if (len)
        *len = (size_t)n;
    return buf;
}

static void parse_log(const char *path)
{
    size_t len, cap = 0;
    char *p, *end;
    free(ops);
    free(log_text);
    ops = NULL;
    nops = 0;
    log_text = read_file(path, &len);
    if (!log_text)
        die("no log %s", path);
    p = log_text;
    end = log_text + len;
    while (p < end) {
        char *nl = memchr(p, '\n', (size_t)(end - p));
        op o;
        if (!nl)
            die("truncated log record");
        *nl = '\0';
        memset(&o, 0, sizeof(o));
        o.kind = p[0];
        switch (o.kind) {
        case 'O': {
            unsigned long long id;
            int flags, at = 0;
            if (sscanf(p + 2, "%llu %d %n", &id, &flags, &at) != 2 || !at)
                die("bad record %s", p);
            o.id = id;
            o.num = flags;
            o.a = p + 2 + at;
            break;
        }
        case 'W': {
            unsigned long long id;
            long long off;
            size_t n;
            if (sscanf(p + 2, "%llu %lld %zu", &id, &off, &n) != 3)
                die("bad record %s", p);
            o.id = id;
            o.num = off;
            o.len = n;
            o.data = (const unsigned char *)nl + 1;
            nl += n + 1;
            if (nl >= end || *nl != '\n')
                die("truncated write record");
            break;
        }
        case 'T': {
            unsigned long long id;
            long long v = 0;
            if (sscanf(p + 2, "%llu %lld", &id, &v) != 2)
                die("bad record %s", p);
            o.id = id;
            o.num = v;
            break;
        }
        case 'X': {
            unsigned long long id;
            if (sscanf(p + 2, "%llu", &id) != 1)
                die("bad record %s", p);
            o.id = id;
            o.num = strstr(p + 2, " on") != NULL;
            break;
        }
        case 'S':
        case 'R':
        case 'C': {
            unsigned long long id;
            if (sscanf(p + 2, "%llu", &id) != 1)
                die("bad record %s", p);
            o.id = id;
            break;
        }
        case 'N':
        case 'L': {
            char *tab = strchr(p + 2, '\t');
            if (!tab)
                die("bad record %s", p);
            *tab = '\0';
            o.a = p + 2;
            o.b = tab + 1;
            break;
        }
        case 'U':
        case 'D':
            o.a = p + 2;
            break;
        case 'M':
            o.num = atoll(p + 2);
            break;
        case 'P': {
            size_t n = (size_t)atoll(p + 2);
            o.len = n;
            o.data = (const unsigned char *)nl + 1;
            nl += n + 1;
            if (nl >= end || *nl != '\n')
                die("truncated text record");
            break;
        }
        case 'Y':
            break;
        default:
            die("unknown record %s", p);
        }
        if (nops == cap) {
            cap = cap ? cap * 2 : 256;
            ops = xrealloc(ops, cap * sizeof(*ops));
        }
        ops[nops++] = o;
        p = nl + 1;
    }
}

/* ---- the model: inodes, the full namespace, entry changes ---- */

typedef struct {
    int op;   /* index of the W or T op, or of the O that truncated */
    int kind; /* 'W', 'T' */
} pend;

typedef struct {
    int is_dir;
    unsigned char *dur; /* durable bytes */
    size_t dur_len;
    pend *p; /* not yet durable, in order */
    int np, cap;
} inode;

typedef struct {
    char *path;
    int ino;
} entry;

typedef struct {
    char kind; /* 'c' create, 'd' mkdir, 'n' rename, 'l' link, 'u' unlink */
    const char *a, *b;
    int ino;
    int synced_a, synced_b; /* the parent dir of a (b) was fsynced after */
} dop;

typedef struct {
    inode *in;
    int nin;
    entry *ns;
    int nns;
    dop *d;
    int nd;
    struct {
        uint64_t id;
        int ino;
    } * fds;
    int nfds;
    int direct_writes; /* W ops issued with O_DIRECT on */
} model;

static void parent_of(const char *path, char *out, size_t cap)
{
    const char *slash = strrchr(path, '/');
    if (!slash)
        snprintf(out, cap, ".");
    else
        snprintf(out, cap, "%.*s", (int)(slash - path), path);
}

static int ns_find(entry *ns, int n, const char *path)
{
    for (int i = 0; i < n; i++)
        if (!strcmp(ns[i].path, path))
            return i;
    return -1;
}

static void ns_set(entry **ns, int *n, const char *path, int ino)
{
    int i = ns_find(*ns, *n, path);
    if (i >= 0) {
        (*ns)[i].ino = ino;
        return;
    }
    *ns = xrealloc(*ns, (size_t)(*n + 1) * sizeof(**ns));
    (*ns)[*n].path = (char *)path;
    (*ns)[*n].ino = ino;
    (*n)++;
}

static void ns_del(entry *ns, int *n, const char *path)
{
    int i = ns_find(ns, *n, path);
    if (i < 0)
        return;
    ns[i] = ns[*n - 1];
    (*n)--;
}

static int new_inode(model *m, int is_dir)
{
    m->in = xrealloc(m->in, (size_t)(m->nin + 1) * sizeof(*m->in));
    memset(&m->in[m->nin], 0, sizeof(inode));
    m->in[m->nin].is_dir = is_dir;
    return m->nin++;
}

static void add_pend(inode *in, int opi, int kind)
{
    if (in->np == in->cap) {
        in->cap = in->cap ? in->cap * 2 : 8;
        in->p = xrealloc(in->p, (size_t)in->cap * sizeof(*in->p));
    }
    in->p[in->np].op = opi;
    in->p[in->np].kind = kind;
    in->np++;
}

static void add_dop(model *m, char kind, const char *a, const char *b, int ino)
{
    m->d = xrealloc(m->d, (size_t)(m->nd + 1) * sizeof(*m->d));
    m->d[m->nd].kind = kind;
    m->d[m->nd].a = a;
    m->d[m->nd].b = b;
    m->d[m->nd].ino = ino;
    m->d[m->nd].synced_a = 0;
    m->d[m->nd].synced_b = 0;
    m->nd++;
}

/* Apply W or T (op index `i`) to a byte buffer. */
static void apply_data(unsigned char **buf, size_t *len, const op *o, int kind)
{
    if (kind == 'T') {
        size_t n = o->kind == 'T' ? (size_t)o->num : 0;
        if (n > *len) {
            *buf = xrealloc(*buf, n);
            memset(*buf + *len, 0, n - *len);
        }
        *len = n;
        return;
    }
    if ((size_t)o->num + o->len > *len) {
        size_t n = (size_t)o->num + o->len;
        *buf = xrealloc(*buf, n);
        memset(*buf + *len, 0, n - *len);
        *len = n;
    }
    memcpy(*buf + o->num, o->data, o->len);
}

static int fd_ino(model *m, uint64_t id)
{
    for (int i = m->nfds - 1; i >= 0; i--)
        if (m->fds[i].id == id)
            return m->fds[i].ino;
    return -1;
}

static void model_free(model *m)
{
    for (int i = 0; i < m->nin; i++) {
        free(m->in[i].dur);
        free(m->in[i].p);
    }
    free(m->in);
    free(m->ns);
    free(m->d);
    free(m->fds);
    memset(m, 0, sizeof(*m));
}

/* Run the ops [0, cut) through the model. */
static void simulate(model *m, size_t cut)
{
    int direct_on[4096] = {0}; /* by fd slot index, O_DIRECT state */
    memset(m, 0, sizeof(*m));
    ns_set(&m->ns, &m->nns, ".", new_inode(m, 1));
    for (size_t i = 0; i < cut; i++) {
        const op *o = &ops[i];
        switch (o->kind) {
        case 'O': {
            int e = ns_find(m->ns, m->nns, o->a);
            int ino;
            if (e < 0) {
                if (!(o->num & O_CREAT))
                    die("open of a missing %s", o->a);
                ino = new_inode(m, 0);
                ns_set(&m->ns, &m->nns, o->a, ino);
                add_dop(m, 'c', o->a, NULL, ino);
            } else {
                ino = m->ns[e].ino;
                if ((o->num & O_TRUNC) && !m->in[ino].is_dir &&
                    (o->num & O_ACCMODE) != O_RDONLY)
                    add_pend(&m->in[ino], (int)i, 'T');
            }
            m->fds = xrealloc(m->fds, (size_t)(m->nfds + 1) * sizeof(*m->fds));
            m->fds[m->nfds].id = o->id;
            m->fds[m->nfds].ino = ino;
            if (m->nfds < 4096)
                direct_on[m->nfds] = 0;
            m->nfds++;
            break;
        }
        case 'W':
        case 'T': {
            int ino = fd_ino(m, o->id);
            if (ino < 0)
                die("write on an unknown descriptor");
            add_pend(&m->in[ino], (int)i, o->kind);
            for (int k = m->nfds - 1; k >= 0; k--)
                if (m->fds[k].id == o->id) {
                    if (k < 4096 && direct_on[k] && o->kind == 'W')
                        m->direct_writes++;
                    break;
                }
            break;
        }
        case 'X':
            for (int k = m->nfds - 1; k >= 0; k--)
                if (m->fds[k].id == o->id) {
                    if (k < 4096)
                        direct_on[k] = (int)o->num;
                    break;
                }
            break;
        case 'S': {
            int ino = fd_ino(m, o->id);
            inode *in;
            if (ino < 0)
                die("sync of an unknown descriptor");
            in = &m->in[ino];
            if (in->is_dir) {
                char dpath[4096] = "";
                for (int e = 0; e < m->nns; e++)
                    if (m->ns[e].ino == ino) {
                        path_printf(dpath, sizeof(dpath), "%s", m->ns[e].path);
                        break;
                    }
                for (int k = 0; k < m->nd; k++) {
                    char pa[4096];
                    parent_of(m->d[k].a, pa, sizeof(pa));
                    if (!strcmp(pa, dpath))
                        m->d[k].synced_a = 1;
                    if (m->d[k].b) {
                        parent_of(m->d[k].b, pa, sizeof(pa));
                        if (!strcmp(pa, dpath))
                            m->d[k].synced_b = 1;
                    }
                }
            } else {
                for (int k = 0; k < in->np; k++)
                    apply_data(&in->dur, &in->dur_len, &ops[in->p[k].op],
                               in->p[k].kind);
                in->np = 0;
            }
            break;
        }
        case 'Y':
            for (int k = 0; k < m->nd; k++)
                m->d[k].synced_a = m->d[k].synced_b = 1;
            for (int n = 0; n < m->nin; n++) {
                inode *in = &m->in[n];
                for (int k = 0; k < in->np; k++)
                    apply_data(&in->dur, &in->dur_len, &ops[in->p[k].op],
                               in->p[k].kind);
                in->np = 0;
            }
            break;
        case 'N': {
            int e = ns_find(m->ns, m->nns, o->a);
            int ino;
            if (e < 0 || !strcmp(o->b, "-"))
                die("rename from or to outside the root: %s", o->a);
            ino = m->ns[e].ino;
            ns_del(m->ns, &m->nns, o->a);
            ns_set(&m->ns, &m->nns, o->b, ino);
            add_dop(m, 'n', o->a, o->b, ino);
            break;
        }
        case 'L': {
            int e = ns_find(m->ns, m->nns, o->a);
            if (e < 0)
                die("link from outside the root: %s", o->a);
            ns_set(&m->ns, &m->nns, o->b, m->ns[e].ino);
            add_dop(m, 'l', o->a, o->b, m->ns[e].ino);
            break;
        }
        case 'U':
            ns_del(m->ns, &m->nns, o->a);
            add_dop(m, 'u', o->a, NULL, -1);
            break;
        case 'D': {
            int ino = new_inode(m, 1);
            ns_set(&m->ns, &m->nns, o->a, ino);
            add_dop(m, 'd', o->a, NULL, ino);
            break;
        }
        default: /* C, R, M: nothing changes */
            break;
        }
    }
}

/* ---- crash states ---- */

static uint64_t rng_state;

static uint64_t rnd(void)
{
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return rng_state;
}

static int coin(void)
{
    return (int)(rnd() & 1);
}

enum {
    S_KEEP_ALL,
    S_DROP_ALL,
    S_ENTRIES_NO_DATA,
    S_DATA_NO_ENTRIES,
    S_PREFIX,
    S_SUBSET,
    S_NEWEST,
    S_COUNT
};

static const char *const strategy_name[S_COUNT] = {
    "keep-all", "drop-all", "entries-no-data", "data-no-entries",
    "prefix",   "subset",   "newest"};

/* The content an inode has after the cut under strategy `s`. */
static unsigned char *crash_data(const inode *in, int s, size_t *len)
{
    unsigned char *buf = xmalloc(in->dur_len);
    size_t n = in->dur_len, keep;
    memcpy(buf, in->dur, n);
    switch (s) {
    case S_KEEP_ALL:
    case S_DATA_NO_ENTRIES:
    case S_NEWEST:
        for (int k = 0; k < in->np; k++)
            apply_data(&buf, &n, &ops[in->p[k].op], in->p[k].kind);
        break;
    case S_DROP_ALL:
        break;
    case S_ENTRIES_NO_DATA:
        /* the sizes reached the disk, the bytes did not: zeros */
        for (int k = 0; k < in->np; k++) {
            const op *o = &ops[in->p[k].op];
            if (in->p[k].kind == 'W' && (size_t)o->num + o->len > n) {
                size_t to = (size_t)o->num + o->len;
                buf = xrealloc(buf, to);
                memset(buf + n, 0, to - n);
                n = to;
            }
        }
        break;
    case S_PREFIX:
        keep = in->np ? (size_t)(rnd() % (uint64_t)(in->np + 1)) : 0;
        for (size_t k = 0; k < keep; k++) {
            const op *o = &ops[in->p[k].op];
            if (k + 1 == keep && in->p[k].kind == 'W' && o->len > 1) {
                op cut = *o;
                cut.len = 1 + (size_t)(rnd() % (uint64_t)o->len);
                apply_data(&buf, &n, &cut, 'W');
            } else {
                apply_data(&buf, &n, o, in->p[k].kind);
            }
        }
        break;
    case S_SUBSET:
        for (int k = 0; k < in->np; k++) {
            const op *o = &ops[in->p[k].op];
            int how = (int)(rnd() % 4);
            if (in->p[k].kind != 'W') {
                if (how < 2)
                    apply_data(&buf, &n, o, in->p[k].kind);
                continue;
            }
            if (how == 0) { /* kept */
                apply_data(&buf, &n, o, 'W');
            } else if (how == 2 || how == 3) {
                /* the size reached the disk; some pages (how 3) or none */
                size_t to = (size_t)o->num + o->len;
                if (to > n) {
                    buf = xrealloc(buf, to);
                    memset(buf + n, 0, to - n);
                    n = to;
                }
                if (how == 3)
                    for (size_t pg = (size_t)o->num / 4096 * 4096; pg < to;
                         pg += 4096) {
                        size_t from = pg > (size_t)o->num ? pg : (size_t)o->num;
                        size_t till = pg + 4096 < to ? pg + 4096 : to;
                        if (coin())
                            memcpy(buf + from,
                                   o->data + (from - (size_t)o->num),
                                   till - from);
                    }
            } /* how == 1: lost */
        }
        break;
    }
    *len = n;
    return buf;
}

/* Which entry changes survive under strategy `s` (1 = applied). */
static void crash_entries(const model *m, int s, int *kept)
{
    int first = -1, prefix;
    char **blocked = NULL;
    int nblocked = 0;
    for (int k = 0; k < m->nd; k++) {
        const dop *d = &m->d[k];
        int durable = d->synced_a && (!d->b || d->synced_b);
        kept[k] = durable;
        if (!durable && first < 0)
            first = k;
    }
    if (first < 0)
        return;
    switch (s) {
    case S_KEEP_ALL:
    case S_ENTRIES_NO_DATA:
        for (int k = 0; k < m->nd; k++)
            kept[k] = 1;
        break;
    case S_DROP_ALL:
    case S_DATA_NO_ENTRIES:
        break;
    case S_PREFIX:
        prefix = first + (int)(rnd() % (uint64_t)(m->nd - first + 1));
        for (int k = 0; k < prefix; k++)
            kept[k] = 1;
        break;
    case S_NEWEST:
        /* only the newest entry change not durable, with the earlier
         * changes of its names (a rename is ordered after what made its
         * source), every other one lost: what a missing directory fsync
         * between two steps of a protocol lets a cut keep */
        for (int k = m->nd - 1; k >= first; k--) {
            if (kept[k])
                continue;
            /* `blocked` holds the names of the changes kept so far */
            for (int j = k; j >= first; j--) {
                const dop *e = &m->d[j];
                int shares = j == k;
                for (int i = 0; i < nblocked && !shares; i++)
                    shares = !strcmp(blocked[i], e->a) ||
                             (e->b && !strcmp(blocked[i], e->b));
                if (!shares || kept[j])
                    continue;
                kept[j] = 1;
                blocked =
                    xrealloc(blocked, (size_t)(nblocked + 2) * sizeof(char *));
                blocked[nblocked++] = (char *)e->a;
                if (e->b)
                    blocked[nblocked++] = (char *)e->b;
            }
            break;
        }
        break;
    case S_SUBSET:
        for (int k = 0; k < m->nd; k++) {
            const dop *d = &m->d[k];
            int blocked_here = 0;
            if (kept[k])
                continue;
            for (int j = 0; j < nblocked; j++)
                if (!strcmp(blocked[j], d->a) ||
                    (d->b && !strcmp(blocked[j], d->b)))
                    blocked_here = 1;
            if (!blocked_here && coin()) {
                kept[k] = 1;
                continue;
            }
            blocked =
                xrealloc(blocked, (size_t)(nblocked + 2) * sizeof(char *));
            blocked[nblocked++] = (char *)d->a;
            if (d->b)
                blocked[nblocked++] = (char *)d->b;
        }
        break;
    }
    free(blocked);
}

/* ---- running the tools ---- */

static char work[1024], root_dir[1100], log_path[1100], out_path[1100];
static const char *shim, *train, *ckpt;
static const char *mode = "async", *busy = "skip";
static int scenario_repack, scenario_resume;
/* --fail-sync: the recorded runs' syncs fail from the Nth on (EIO, the
 * shim's CKPT_PC_FAIL_SYNC), one recorded run per N of the list */
static const char *fail_syncs;
static int failing;

/* Run argv with stdout and stderr into `out` (appended to `err` when
 * not NULL too); returns the wait status. */
static int run(char *const argv[], const char *out, int preload)
{
    pid_t pid = fork();
    int st;
    if (pid < 0)
        die("fork: %s", strerror(errno));
    if (pid == 0) {
        int fd = open(out, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        if (fd < 0)
            _exit(126);
        dup2(fd, 1);
        dup2(fd, 2);
        if (!preload) {
            unsetenv("LD_PRELOAD");
            unsetenv("CKPT_PC_ROOT");
            unsetenv("CKPT_PC_LOG");
        }
        execv(argv[0], argv);
        _exit(127);
    }
    while (waitpid(pid, &st, 0) < 0)
        if (errno != EINTR)
            die("waitpid: %s", strerror(errno));
    return st;
}

static int exit_code(int st)
{
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

/* mpiexec (found on PATH) and the rank count for --mpi; 0: one process. */
static int mpi_ranks;
static char mpiexec[4096];
static char mpi_n[16];
/* --relaunch-mpi (the checks' relaunch), --fail-rank; "": as --mpi, all */
static char relaunch_n[16];
static const char *fail_rank = "";
static const char *keep_hours; /* --keep-hours for the trainer, or NULL */
/* --focus: renames whose cut with strategy newest is checked first */
static size_t focus;
static int every_op; /* --every-op: a cut at every operation, not only syncs */
/* the rank count train_argv gives mpiexec: mpi_n, or relaunch_n */
static const char *train_n = mpi_n;

/* The trainer's command line on `dir`; `recording`: under mpiexec, hand
 * the recorder's variables to the ranks. */
static void train_argv(char **argv, const char *dir, int recording)
{
    int i = 0;
    if (mpi_ranks > 0) {
        argv[i++] = mpiexec;
        argv[i++] = "--allow-run-as-root";
        argv[i++] = "--oversubscribe";
        argv[i++] = "--bind-to";
        argv[i++] = "none";
        argv[i++] = "-n";
        argv[i++] = (char *)train_n;
        if (recording && failing) {
            argv[i++] = "-x";
            argv[i++] = "CKPT_PC_FAIL_SYNC";
            argv[i++] = "-x";
            argv[i++] = "CKPT_PC_FAIL_RANK";
        }
        if (recording) {
            argv[i++] = "-x";
            argv[i++] = "LD_PRELOAD";
            argv[i++] = "-x";
            argv[i++] = "CKPT_PC_ROOT";
            argv[i++] = "-x";
            argv[i++] = "CKPT_PC_LOG";
        }
    }
    argv[i++] = (char *)train;
    if (mpi_ranks > 0)
        argv[i++] = "--distributed";
    argv[i++] = "--dir";
    argv[i++] = (char *)dir;
    argv[i++] = "--steps";
    argv[i++] = "60";
    argv[i++] = "--save-steps";
    argv[i++] = SAVE_STEPS;
    argv[i++] = "--keep";
    argv[i++] = KEEP;
    if (keep_hours) {
        argv[i++] = "--keep-hours";
        argv[i++] = (char *)keep_hours;
    }
    argv[i++] = "--mode";
    argv[i++] = (char *)mode;
    if (mpi_ranks == 0) {
        argv[i++] = "--busy";
        argv[i++] = (char *)busy;
    }
    argv[i++] = "--hidden";
    argv[i++] = "16";
    argv[i++] = "--layers";
    argv[i++] = "1";
    argv[i++] = "--batch";
    argv[i++] = "8";
    argv[i++] = "--seed";
    argv[i++] = "5";
    argv[i] = NULL;
}

static void rm_rf(const char *path)
{
    char *argv[] = {"/bin/rm", "-rf", (char *)path, NULL};
    char devnull[] = "/dev/null";
    run(argv, devnull, 0);
}

/* ---- reported durability: the stdout offsets of "is durable" lines ---- */

typedef struct {
    size_t end; /* stdout offset just after the line */
    long step;
} report;

static report *reports;
static int nreports;
static long *durable_by; /* durable_by[c]: newest step reported before op c */
static long *steps_said; /* every step reported, from either source, once */
static int nsteps_said;

static void note_step_said(long step)
{
    for (int i = 0; i < nsteps_said; i++)
        if (steps_said[i] == step)
            return;
    steps_said =
        xrealloc(steps_said, (size_t)(nsteps_said + 1) * sizeof(*steps_said));
    steps_said[nsteps_said++] = step;
}

/* The step a line of the trainer's output reports durable, or -1. */
static long report_step(const char *line)
{
    const char *q = strstr(line, ") is durable"), *s;
    if (q) {
        s = strstr(line, "(step ");
        return s && s < q ? atol(s + 6) : -1;
    }
    if ((s = strstr(line, "checkpoint: saved ")) != NULL &&
        (q = strstr(s, "model.ckpt-")) != NULL)
        return atol(q + 11);
    /* the session closed cleanly: its final step is durable and named
     * (the checkpoint hook's end saves it synchronously) */
    if ((s = strstr(line, "monitored session closed at global step ")) !=
            NULL &&
        strstr(s, "(ok)"))
        return atol(s + 41);
    if (!strncmp(line, "done: step ", 11))
        return atol(line + 11);
    return -1;
}

/* durable_by[c] from the P records (the text as printed) and, where the
 * output was a regular file, from the M records (its size at each
 * fflush) against the lines of the output. */
static void parse_reports(void)
{
    size_t len;
    char *text = read_file(out_path, &len), *p = text;
    int printed = 0;
    free(reports);
    free(durable_by);
    free(steps_said);
    reports = NULL;
    nreports = 0;
    steps_said = NULL;
    nsteps_said = 0;
    while (p && *p) {
        char *nl = strchr(p, '\n');
        long step;
        if (!nl)
            break;
        *nl = '\0';
        step = report_step(p);
        if (step >= 0) {
            reports =
                xrealloc(reports, (size_t)(nreports + 1) * sizeof(*reports));
            reports[nreports].end = (size_t)(nl - text) + 1;
            reports[nreports].step = step;
            nreports++;
            note_step_said(step);
        }
        p = nl + 1;
    }
    durable_by = xmalloc((nops + 1) * sizeof(long));
    durable_by[0] = -1;
    for (size_t c = 1; c <= nops; c++) {
        const op *o = &ops[c - 1];
        long best = durable_by[c - 1];
        if (o->kind == 'M')
            for (int r = 0; r < nreports; r++)
                if (reports[r].end <= (size_t)o->num && reports[r].step > best)
                    best = reports[r].step;
        if (o->kind == 'P') {
            char line[4200];
            long step;
            path_printf(line, sizeof(line), "%.*s", (int)o->len,
                        (const char *)o->data);
            step = report_step(line);
            if (step >= 0) {
                printed++;
                note_step_said(step);
            }
            if (step > best)
                best = step;
        }
        durable_by[c] = best;
    }
    if (printed > nreports)
        nreports = printed;
    free(text);
}

static int file_has(const char *path, const char *needle)
{
    char *t = read_file(path, NULL);
    int r = t && strstr(t, needle);
    free(t);
    return r;
}

/* A run that ended well said every save it started durable ("saving
 * checkpoint for step N", "snapshot of step N taken": a skipped trigger
 * starts none), so check 3 holds the cuts to each of them; a trainer that
 * never said so would leave check 3 only its final line. Under --busy
 * coalesce a snapshot still waiting may be "replaced by a newer one
 * before it was written": that one is never written, nor said durable. */
static void check_every_save_reported(void)
{
    char *text = read_file(out_path, NULL), *p = text;
    const char *starts[] = {"saving checkpoint for step ", "snapshot of step "};
    int started = 0;
    while (p && *p) {
        char *nl = strchr(p, '\n');
        long step = -1;
        int found = 0;
        if (nl)
            *nl = '\0';
        for (int k = 0; k < 2 && step < 0; k++) {
            const char *at = strstr(p, starts[k]);
            if (at)
                step = atol(at + strlen(starts[k]));
        }
        for (int r = 0; step >= 0 && r < nreports && !found; r++)
            found = reports[r].step == step;
        if (step >= 0 && !found) {
            char replaced[64];
            path_printf(replaced, sizeof(replaced),
                        "snapshot of step %ld replaced by a newer one", step);
            found = file_has(out_path, replaced);
        }
        if (step >= 0 && !found)
            die("the recorded run never said the checkpoint of step %ld is "
                "durable (output in %s)",
                step, out_path);
        started += step >= 0;
        p = nl ? nl + 1 : NULL;
    }
    if (started < 2)
        die("the recorded run started %d saves (output in %s)", started,
            out_path);
    free(text);
}

/* ---- one state ---- */

/* The first cut of this generation (ops before it describe the directory
 * the run started with) and the step the directory's state file named
 * then (a later state may never name an older one); -1 for none. */
static size_t first_cut;
static long floor_step = -1;

static uint64_t *seen;
static size_t nseen, capseen;

static uint64_t fnv(uint64_t h, const void *p, size_t n)
{
    const unsigned char *b = p;
    for (size_t i = 0; i < n; i++)
        h = (h ^ b[i]) * 1099511628211ull;
    return h;
}

static int cmp_entry(const void *x, const void *y)
{
    return strcmp(((const entry *)x)->path, ((const entry *)y)->path);
}

static int failures;
static long states_total, states_distinct;

static void describe_cut(size_t cut, int s)
{
    size_t from = cut > 12 ? cut - 12 : 0;
    fprintf(stderr, "  cut after op %zu of %zu, strategy %s; ops before:\n",
            cut, nops, strategy_name[s]);
    for (size_t i = from; i < cut; i++) {
        const op *o = &ops[i];
        fprintf(stderr, "    %zu: %c", i, o->kind);
        if (o->a)
            fprintf(stderr, " %s", o->a);
        if (o->b)
            fprintf(stderr, " -> %s", o->b);
        if (o->kind == 'W')
            fprintf(stderr, " id %" PRIu64 " @%lld +%zu", o->id, o->num,
                    o->len);
        if (o->kind == 'S' || o->kind == 'C' || o->kind == 'O')
            fprintf(stderr, " id %" PRIu64, o->id);
        fprintf(stderr, "\n");
    }
}

static void fail(const char *state, size_t cut, int s, const char *fmt, ...)
{
    va_list ap;
    char keep[4200];
    failures++;
    fprintf(stderr, "FAIL: ");
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fprintf(stderr, "\n");
    describe_cut(cut, s);
    path_printf(keep, sizeof(keep), "%s/fail-%d", work, failures);
    if (rename(state, keep) == 0)
        fprintf(stderr,
                "  state kept in %s (before the relaunch, if it "
                "failed before it)\n",
                keep);
}

static void write_file(const char *path, const unsigned char *p, size_t n)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd < 0)
        die("create %s: %s", path, strerror(errno));
    if (n && write(fd, p, n) != (ssize_t)n)
        die("write %s", path);
    close(fd);
}

/* Build the state in `dir` (a fresh copy of the root); returns its hash. */
static uint64_t materialise(const model *m, int s, const char *dir)
{
    int *kept = xmalloc((size_t)m->nd * sizeof(int) + 1);
    entry *ns = NULL;
    int nns = 0;
    uint64_t h = 1469598103934665603ull;
    unsigned char **data = xmalloc((size_t)m->nin * sizeof(*data));
    size_t *dlen = xmalloc((size_t)m->nin * sizeof(*dlen));
    crash_entries(m, s, kept);
    ns_set(&ns, &nns, ".", 0);
    for (int k = 0; k < m->nd; k++) {
        const dop *d = &m->d[k];
        int e;
        if (!kept[k])
            continue;
        switch (d->kind) {
        case 'c':
        case 'd':
            ns_set(&ns, &nns, d->a, d->ino);
            break;
        case 'n':
            e = ns_find(ns, nns, d->a);
            if (e >= 0) {
                int ino = ns[e].ino;
                ns_del(ns, &nns, d->a);
                ns_set(&ns, &nns, d->b, ino);
            }
            break;
        case 'l':
            e = ns_find(ns, nns, d->a);
            if (e >= 0)
                ns_set(&ns, &nns, d->b, ns[e].ino);
            break;
        case 'u':
            ns_del(ns, &nns, d->a);
            break;
        }
    }
    for (int i = 0; i < m->nin; i++)
        data[i] = m->in[i].is_dir ? NULL : crash_data(&m->in[i], s, &dlen[i]);
    qsort(ns, (size_t)nns, sizeof(*ns), cmp_entry); /* parents first */
    if (mkdir(dir, 0755) != 0)
        die("mkdir %s: %s", dir, strerror(errno));
    for (int e = 0; e < nns; e++) {
        char path[8192], par[4096];
        int pe;
        if (!strcmp(ns[e].path, "."))
            continue;
        parent_of(ns[e].path, par, sizeof(par));
        pe = ns_find(ns, nns, par);
        if (pe < 0 || !m->in[ns[pe].ino].is_dir)
            continue; /* its directory did not survive */
        path_printf(path, sizeof(path), "%s/%s", dir, ns[e].path);
        h = fnv(h, ns[e].path, strlen(ns[e].path) + 1);
        if (m->in[ns[e].ino].is_dir) {
            if (mkdir(path, 0755) != 0)
                die("mkdir %s: %s", path, strerror(errno));
            h = fnv(h, "/", 1);
        } else {
            write_file(path, data[ns[e].ino], dlen[ns[e].ino]);
            h = fnv(h, data[ns[e].ino], dlen[ns[e].ino]);
            h = fnv(h, &dlen[ns[e].ino], sizeof(size_t));
        }
    }
    for (int i = 0; i < m->nin; i++)
        free(data[i]);
    free(data);
    free(dlen);
    free(kept);
    free(ns);
    return h;
}

static long step_of(const char *prefix)
{
    const char *d = strrchr(prefix, '-');
    return d ? atol(d + 1) : -1;
}

/* The state file's paths: latest into *latest, all into list. */
static int read_state(const char *path, char *latest, size_t cap,
                      char list[][256], int *nlist)
{
    char *text = read_file(path, NULL), *p;
    *nlist = 0;
    latest[0] = '\0';
    if (!text)
        return -1;
    for (p = text; p && *p;) {
        char *nl = strchr(p, '\n'), *q, *e;
        if (nl)
            *nl = '\0';
        q = strchr(p, '"');
        e = q ? strrchr(q + 1, '"') : NULL;
        if (q && e) {
            *e = '\0';
            if (!strncmp(p, "model_checkpoint_path:", 22))
                snprintf(latest, cap, "%s", q + 1);
            else if (!strncmp(p, "all_model_checkpoint_paths:", 27) &&
                     *nlist < 64)
                snprintf(list[(*nlist)++], 256, "%s", q + 1);
        }
        p = nl ? nl + 1 : NULL;
    }
    free(text);
    return 0;
}

static char ref_prefix[4400];

/* `ckpt verify PATH`, its output in `out`: its exit status. */
static int ckpt_verify(const char *path, const char *out)
{
    char *argv[] = {(char *)ckpt, "verify", (char *)path, NULL};
    return exit_code(run(argv, out, 0));
}

/* After a relaunch that finished: no temporary file, note or data file
 * without its index is left (they are removed when the directory is
 * opened), and every index left, listed or not, verifies. */
static void check_leftovers(const char *state, size_t cut, int s,
                            const char *dir)
{
    DIR *d = opendir(dir);
    struct dirent *e;
    char path[8800], out[4400];
    if (!d) {
        fail(state, cut, s, "no directory after the relaunch");
        return;
    }
    path_printf(out, sizeof(out), "%s.out", state);
    while ((e = readdir(d)) != NULL) {
        const char *n = e->d_name, *data = strstr(n, ".data-");
        struct stat sb;
        if (!strcmp(n, ".") || !strcmp(n, "..") || !strcmp(n, "checkpoint"))
            continue;
        if (strstr(n, ".tempstate") || !strncmp(n, "checkpoint.", 11)) {
            closedir(d);
            fail(state, cut, s, "%s left after the relaunch", n);
            return;
        }
        if (data) {
            path_printf(path, sizeof(path), "%s/%.*s.index", dir,
                        (int)(data - n), n);
            if (stat(path, &sb) != 0) {
                closedir(d);
                fail(state, cut, s, "data file %s without its index left", n);
                return;
            }
        } else if (strlen(n) > 6 && !strcmp(n + strlen(n) - 6, ".index")) {
            path_printf(path, sizeof(path), "%s/%.*s", dir,
                        (int)(strlen(n) - 6), n);
            if (ckpt_verify(path, out) != 0) {
                closedir(d);
                fail(state, cut, s, "checkpoint %s left does not verify", n);
                return;
            }
        }
    }
    closedir(d);
}

/* --keep-hours: every checkpoint reported durable before `cut` (steps up
 * to durable_by[cut]: saves commit in order) is in `dir` and verifies;
 * `when` says which check this is. 0, or 1 after a failure. */
static int check_kept(const char *state, size_t cut, int s, const char *dir,
                      const char *when)
{
    char prefix[4400], out[4400];
    path_printf(out, sizeof(out), "%s.out", state);
    for (int r = 0; keep_hours && r < nsteps_said; r++) {
        if (steps_said[r] > durable_by[cut])
            continue;
        path_printf(prefix, sizeof(prefix), "%s/model.ckpt-%ld", dir,
                    steps_said[r]);
        if (ckpt_verify(prefix, out) != 0) {
            char *t = read_file(out, NULL);
            fail(state, cut, s,
                 "%s: model.ckpt-%ld, reported durable (--keep-hours keeps "
                 "it), does not verify: %s",
                 when, steps_said[r], t ? t : "");
            free(t);
            return 1;
        }
    }
    return 0;
}

static void check_train_state(const char *state, size_t cut, int s)
{
    char dir[4300], sf[4400], latest[256], list[64][256], buf[8800];
    char out[4400];
    char *argv[48];
    int nlist, st, has_state;
    long need = durable_by[cut] > floor_step ? durable_by[cut] : floor_step;
    long latest_step = -1;
    struct stat sb;
    path_printf(dir, sizeof(dir), "%s/ckpts", state);
    path_printf(sf, sizeof(sf), "%s/checkpoint", dir);
    path_printf(out, sizeof(out), "%s.out", state);
    has_state = stat(sf, &sb) == 0;
    /* 1. verify the directory */
    argv[0] = (char *)ckpt;
    argv[1] = "verify";
    argv[2] = dir;
    argv[3] = NULL;
    st = run(argv, out, 0);
    if (exit_code(st) != 0) {
        int clean = exit_code(st) == 2 && !has_state &&
                    (file_has(out, "no checkpoint state file and no .index") ||
                     file_has(out, "no such checkpoint"));
        if (!clean || need >= 0) {
            char *t = read_file(out, NULL);
            fail(state, cut, s,
                 "ckpt verify %s exited %d (reported durable: step %ld): %s",
                 dir, exit_code(st), need, t ? t : "");
            free(t);
            return;
        }
    }
    /* 2. every listed checkpoint verifies; 3. none reported durable lost */
    if (has_state) {
        if (read_state(sf, latest, sizeof(latest), list, &nlist) != 0 ||
            !latest[0]) {
            fail(state, cut, s, "state file unreadable or names nothing");
            return;
        }
        latest_step = step_of(latest);
        for (int i = 0; i < nlist; i++) {
            path_printf(buf, sizeof(buf), "%s/%s", dir, list[i]);
            argv[2] = buf;
            st = run(argv, out, 0);
            if (exit_code(st) != 0) {
                char *t = read_file(out, NULL);
                fail(state, cut, s, "listed checkpoint %s does not verify: %s",
                     list[i], t ? t : "");
                free(t);
                return;
            }
        }
    }
    if (latest_step < need) {
        fail(state, cut, s,
             "step %ld was reported durable, the state file's latest is %ld",
             need, latest_step);
        return;
    }
    if (check_kept(state, cut, s, dir, "after the cut"))
        return;
    /* 4. relaunch, finish, compare */
    train_n = relaunch_n;
    train_argv(argv, dir, 0);
    train_n = mpi_n;
    st = run(argv, out, 0);
    if (exit_code(st) != 0) {
        char *t = read_file(out, NULL);
        fail(state, cut, s, "ckpt-train relaunch exited %d: %s", exit_code(st),
             t ? t : "");
        free(t);
        return;
    }
    if (latest_step >= 0) {
        if (mpi_ranks > 0)
            path_printf(buf, sizeof(buf),
                        "restored checkpoint %s/%s (global step %ld)", dir,
                        latest, latest_step);
        else
            path_printf(buf, sizeof(buf), "restored %s/%s at step %ld\n", dir,
                        latest, latest_step);
        if (!file_has(out, buf)) {
            char *t = read_file(out, NULL);
            fail(state, cut, s, "relaunch did not resume from step %ld: %s",
                 latest_step, t ? t : "");
            free(t);
            return;
        }
    } else if (file_has(out, "restored ") && need >= 0) {
        fail(state, cut, s, "relaunch restored although nothing was listed");
        return;
    }
    path_printf(buf, sizeof(buf), "%s/model.ckpt-%d", dir, STEPS);
    argv[0] = (char *)ckpt;
    argv[1] = "diff";
    argv[2] = buf;
    argv[3] = ref_prefix;
    argv[4] = NULL;
    st = strcmp(relaunch_n, mpi_n) ? 0 : run(argv, out, 0);
    if (exit_code(st) != 0) {
        char *t = read_file(out, NULL);
        fail(state, cut, s, "final checkpoint differs from the reference: %s",
             t ? t : "");
        free(t);
        return;
    }
    argv[1] = "verify";
    argv[2] = dir;
    argv[3] = NULL;
    st = run(argv, out, 0);
    if (exit_code(st) != 0) {
        fail(state, cut, s, "ckpt verify after the relaunch exited %d",
             exit_code(st));
        return;
    }
    if (check_kept(state, cut, s, dir, "after the relaunch"))
        return;
    check_leftovers(state, cut, s, dir);
}

static const char *repack_src;

static void check_repack_state(const char *state, size_t cut, int s)
{
    char dst[4300], idx[4400], out[4400];
    char *argv[8];
    struct stat sb;
    int st;
    path_printf(dst, sizeof(dst), "%s/out/model.ckpt-r", state);
    path_printf(idx, sizeof(idx), "%s.index", dst);
    path_printf(out, sizeof(out), "%s.out", state);
    argv[0] = (char *)ckpt;
    if (stat(idx, &sb) != 0) {
        /* no checkpoint under that name: repack again must work (it
         * removes what the interrupted one left) and give the source */
        if (cut == nops && !failing) {
            fail(state, cut, s, "repack exited 0 but its index is not durable");
            return;
        }
        /* the destination directory may be gone with a cut before
         * repack synced its entry: made again, as its user would */
        path_printf(idx, sizeof(idx), "%s/out", state);
        if (stat(idx, &sb) != 0 && mkdir(idx, 0755) != 0)
            die("mkdir %s: %s", idx, strerror(errno));
        argv[1] = "repack";
        argv[2] = (char *)repack_src;
        argv[3] = dst;
        argv[4] = NULL;
        st = run(argv, out, 0);
        if (exit_code(st) != 0) {
            char *t = read_file(out, NULL);
            fail(state, cut, s, "repack again exited %d: %s", exit_code(st),
                 t ? t : "");
            free(t);
            return;
        }
    }
    argv[1] = "diff";
    argv[2] = dst;
    argv[3] = (char *)repack_src;
    argv[4] = NULL;
    st = run(argv, out, 0);
    /* Only once repack has exited (the log is complete) is the result
     * promised; before, an index under the final name must still be whole */
    if (exit_code(st) != 0) {
        char *t = read_file(out, NULL);
        fail(state, cut, s, "repacked checkpoint present but differs: %s",
             t ? t : "");
        free(t);
    }
}

static void check_state(size_t cut, int s)
{
    model m;
    char state[4300];
    uint64_t h;
    simulate(&m, cut);
    path_printf(state, sizeof(state), "%s/state", work);
    rm_rf(state);
    h = materialise(&m, s, state);
    model_free(&m);
    /* A state is checked against what was promised by its cut: the same
     * files after a later report (or once repack exited) are checked
     * again, since they must now hold more. */
    {
        long promised = scenario_repack ? (long)(cut == nops) : durable_by[cut];
        h = fnv(h, &promised, sizeof(promised));
    }
    states_total++;
    for (size_t i = 0; i < nseen; i++)
        if (seen[i] == h)
            return;
    if (nseen == capseen) {
        capseen = capseen ? capseen * 2 : 256;
        seen = xrealloc(seen, capseen * sizeof(*seen));
    }
    seen[nseen++] = h;
    states_distinct++;
    if (scenario_repack)
        check_repack_state(state, cut, s);
    else
        check_train_state(state, cut, s);
}

/* ---- the recorded runs ---- */

/* Run `argv` under the recorder, logging the calls under `rec_root` to
 * `rec_log` and its output to `out`; returns its wait status. */
static int run_recorded(char **argv, const char *rec_root, const char *rec_log,
                        const char *out)
{
    int st;
    setenv("LD_PRELOAD", shim, 1);
    setenv("CKPT_PC_ROOT", rec_root, 1);
    setenv("CKPT_PC_LOG", rec_log, 1);
    st = run(argv, out, 1);
    unsetenv("LD_PRELOAD");
    return st;
}

/* Whether the output `out` says a save failed at an fsync, naming it. */
static int says_sync_failed(const char *out)
{
    return file_has(out, "failed: ") &&
           (file_has(out, ": sync ") || file_has(out, "failed: sync ") ||
            file_has(out, ": sync_dir ") || file_has(out, "failed: sync_dir "));
}

static void record_train(void)
{
    char dir[4300];
    char *argv[48];
    int st;
    path_printf(dir, sizeof(dir), "%s/ckpts", root_dir);
    train_argv(argv, dir, 1);
    st = run_recorded(argv, root_dir, log_path, out_path);
    /* On a failing disk the run ends with the save that failed (exit 1),
     * saying so, naming the operation: "save of step N ... failed: sync
     * <file>" (or "failed: <file>: sync_dir <dir>"). */
    if (failing && exit_code(st) == 1 && says_sync_failed(out_path))
        return;
    /* or, failing before any save, in the session's set-up (the
     * checkpoint hook syncs the directory it creates): "creating the
     * session: ...: sync_dir <dir>: Input/output error" */
    if (failing && exit_code(st) == 1 &&
        file_has(out_path, "creating the session: ") &&
        file_has(out_path, ": sync_dir ") &&
        file_has(out_path, "Input/output error"))
        return;
    if (exit_code(st) != 0)
        die("the recorded run exited %d (output in %s)", exit_code(st),
            out_path);
    if (!failing)
        path_printf(ref_prefix, sizeof(ref_prefix), "%s/model.ckpt-%d", dir,
                    STEPS);
}

/* The uninterrupted run the failing ones are compared with, unrecorded. */
static void reference_train(void)
{
    char dir[4300], out[4400];
    char *argv[48];
    int st;
    path_printf(dir, sizeof(dir), "%s/reference", work);
    path_printf(out, sizeof(out), "%s/reference.out", work);
    train_argv(argv, dir, 0);
    st = run(argv, out, 0);
    if (exit_code(st) != 0)
        die("the reference run exited %d (output in %s)", exit_code(st), out);
    path_printf(ref_prefix, sizeof(ref_prefix), "%s/model.ckpt-%d", dir, STEPS);
}

static void explore(long budget);
static void record_repack(void);

/* One recorded run per N of --fail-sync, each explored with its share of
 * the states. */
static void failing_generations(long budget)
{
    char list[256], *save = NULL;
    long n = 1;
    path_printf(list, sizeof(list), "%s", fail_syncs);
    for (const char *c = list; *c; c++)
        n += *c == ',';
    if (!scenario_repack)
        reference_train();
    for (char *k = strtok_r(list, ",", &save); k;
         k = strtok_r(NULL, ",", &save)) {
        path_printf(root_dir, sizeof(root_dir), "%s/root-fail-%s", work, k);
        path_printf(log_path, sizeof(log_path), "%s/ops-fail-%s.log", work, k);
        path_printf(out_path, sizeof(out_path), "%s/recorded-fail-%s.out", work,
                    k);
        if (mkdir(root_dir, 0755) != 0)
            die("mkdir %s", root_dir);
        setenv("CKPT_PC_FAIL_SYNC", k, 1);
        setenv("CKPT_PC_FAIL_RANK", fail_rank, 1);
        if (scenario_repack)
            record_repack();
        else
            record_train();
        unsetenv("CKPT_PC_FAIL_SYNC");
        unsetenv("CKPT_PC_FAIL_RANK");
        printf("power_cut_replay: syncs failing (EIO) from sync %s on: %s\n", k,
               file_has(out_path, ": Input/output error")
                   ? "the run failed, saying so"
                   : "the run ended before that sync");
        parse_log(log_path);
        parse_reports();
        explore(budget / n);
    }
}

static void record_repack(void)
{
    char src_dir[4300], dst_dir[4300], dst[4400], out[4400];
    static char src[4400];
    char *argv[48];
    int st;
    /* a source checkpoint, written without the recorder */
    path_printf(src_dir, sizeof(src_dir), "%s/src", work);
    path_printf(out, sizeof(out), "%s/src.out", work);
    train_argv(argv, src_dir, 0);
    st = run(argv, out, 0);
    if (exit_code(st) != 0)
        die("the source run exited %d", exit_code(st));
    path_printf(src, sizeof(src), "%s/model.ckpt-%d", src_dir, STEPS);
    repack_src = src;
    path_printf(dst_dir, sizeof(dst_dir), "%s/out", root_dir);
    if (mkdir(dst_dir, 0755) != 0)
        die("mkdir %s", dst_dir);
    {
        /* the destination directory exists before the run, its entry not
         * yet durable (a `mkdir` just before): repack makes it durable
         * before it writes, or its output would go with it */
        FILE *f = fopen(log_path, "wb");
        if (!f)
            die("create %s", log_path);
        fprintf(f, "D out\n");
        fclose(f);
        first_cut = 1;
    }
    path_printf(dst, sizeof(dst), "%s/model.ckpt-r", dst_dir);
    argv[0] = (char *)ckpt;
    argv[1] = "repack";
    argv[2] = src;
    argv[3] = dst;
    argv[4] = NULL;
    st = run_recorded(argv, root_dir, log_path, out_path);
    /* on a failing disk: "ckpt repack: sync <file>: ..." (or "<DST>:
     * sync_dir <dir>: ..."), exit 2 */
    if (failing && exit_code(st) == 2 &&
        (file_has(out_path, "ckpt repack: sync ") ||
         file_has(out_path, ": sync_dir ")))
        return;
    if (exit_code(st) != 0)
        die("the recorded repack exited %d (output in %s)", exit_code(st),
            out_path);
}

/* Check `budget` states of the recorded log: every sync boundary under
 * every strategy (strategy j / ncuts at cut j % ncuts) while the budget
 * lasts, spread evenly; then random cuts under random strategies. */
static void explore(long budget)
{
    size_t *cuts = NULL, ncuts = 0, syncs = 0, fixed, step;
    long before_total = states_total, before_distinct = states_distinct;
    int before_failures = failures;
    model m;
    nseen = 0;
    cuts = xmalloc(2 * (nops + 1) * sizeof(*cuts));
    cuts[ncuts++] = first_cut;
    /* around every sync, rename and removal: the index's and the data
     * files' renames into place, the state file's, retention's deletions */
    for (size_t i = first_cut; i < nops; i++)
        if (strchr("SYNU", ops[i].kind) || (every_op && ops[i].kind != 'P')) {
            syncs += ops[i].kind == 'S' || ops[i].kind == 'Y';
            cuts[ncuts++] = i;
            cuts[ncuts++] = i + 1;
        }
    /* --focus K: first, the cut just after each of the first K renames
     * with only that rename kept of what was not durable (strategy
     * newest): a rename reaching the disk before what it depends on (a
     * missing directory fsync) shows there, where a spread of a few
     * states would rarely land */
    for (size_t i = first_cut, n = 0; i < nops && n < focus && budget > 0; i++)
        if (ops[i].kind == 'N') {
            check_state(i + 1, S_NEWEST);
            budget--;
            n++;
        }
    fixed = ncuts * S_COUNT;
    step = fixed > (size_t)budget
               ? (fixed + (size_t)budget - 1) / (size_t)budget
               : 1;
    /* the k-th of these states: cut k * step / S_COUNT, strategy k mod
     * S_COUNT, so that a budget below `fixed` still spreads its cuts over
     * the whole run and its strategies over all of them (each cut with
     * every strategy when the budget covers them all) */
    for (size_t j = 0, k = 0; j < fixed && budget > 0; j += step, k++) {
        check_state(cuts[j / S_COUNT], (int)(k % S_COUNT));
        budget--;
    }
    while (budget > 0) {
        size_t c =
            first_cut + (size_t)(rnd() % (uint64_t)(nops - first_cut + 1));
        check_state(c, (int)(rnd() % S_COUNT));
        budget--;
    }
    simulate(&m, nops);
    printf("power_cut_replay: %s%s%s%s%s: %zu operations recorded (%zu "
           "syncs, %d O_DIRECT writes), %d durable reports; %ld states, %ld "
           "distinct checked, %d failures\n",
           scenario_repack ? "repack" : "ckpt-train --mode ",
           scenario_repack ? "" : mode, scenario_repack ? "" : " --busy ",
           scenario_repack ? "" : busy,
           scenario_resume ? " (resumed on a crash state)" : "",
           nops - first_cut, syncs, m.direct_writes, nreports,
           states_total - before_total, states_distinct - before_distinct,
           failures - before_failures);
    fflush(stdout);
    model_free(&m);
    free(cuts);
}

/* Append records to `log` that create, as durable, every file and
 * directory under `dir` (relative name `rel`). Returns how many. */
static size_t describe_tree(FILE *log, const char *dir, const char *rel,
                            uint64_t *id)
{
    DIR *d = opendir(dir);
    struct dirent *e;
    size_t n = 0;
    if (!d)
        return 0;
    while ((e = readdir(d)) != NULL) {
        char path[4600], name[4600];
        struct stat sb;
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
            continue;
        path_printf(path, sizeof(path), "%s/%s", dir, e->d_name);
        if (rel[0])
            path_printf(name, sizeof(name), "%s/%s", rel, e->d_name);
        else
            path_printf(name, sizeof(name), "%s", e->d_name);
        if (stat(path, &sb) != 0)
            continue;
        if (S_ISDIR(sb.st_mode)) {
            fprintf(log, "D %s\n", name);
            n += 1 + describe_tree(log, path, name, id);
        } else {
            size_t len;
            char *data = read_file(path, &len);
            ++*id;
            fprintf(log, "O %" PRIu64 " %d %s\n", *id, O_CREAT | O_WRONLY,
                    name);
            fprintf(log, "W %" PRIu64 " 0 %zu\n", *id, len);
            if (len && fwrite(data, 1, len, log) != len)
                die("write the log");
            fprintf(log, "\nS %" PRIu64 "\nC %" PRIu64 "\n", *id, *id);
            n += 4;
            free(data);
        }
    }
    closedir(d);
    return n;
}

/* The resume scenario: crash states of a first run become the directory a
 * second recorded run starts on; that run's own power cuts are checked. */
static void resume_generations(long budget, long nseeds)
{
    char log1[1100], seed_root[1100], seed_log[1100], seed_out[1100];
    char dir[1300], sf[1400], latest[256], list[64][256];
    char *argv[48];
    size_t nops1;
    op *ops1;
    char *text1;
    int nlist;
    /* keep the first run's log aside: ops/log_text are reused */
    path_printf(log1, sizeof(log1), "%s", log_path);
    parse_log(log1);
    nops1 = nops;
    ops1 = ops;
    text1 = log_text;
    ops = NULL;
    log_text = NULL;
    for (long k = 0; k < nseeds; k++) {
        model m;
        size_t c1;
        int s1, st;
        uint64_t id = 0;
        FILE *f;
        /* a crash state of the first run */
        free(ops);
        ops = ops1;
        nops = nops1;
        /* in the first three quarters, so the second run has saves to
         * make */
        c1 = (size_t)(rnd() % (uint64_t)(nops1 * 3 / 4 + 1));
        s1 = (int)(rnd() % S_COUNT);
        path_printf(seed_root, sizeof(seed_root), "%s/root-%ld", work, k);
        path_printf(seed_log, sizeof(seed_log), "%s/ops-%ld.log", work, k);
        path_printf(seed_out, sizeof(seed_out), "%s/recorded-%ld.out", work, k);
        simulate(&m, c1);
        materialise(&m, s1, seed_root);
        model_free(&m);
        ops = NULL;
        nops = 0;
        path_printf(dir, sizeof(dir), "%s/ckpts", seed_root);
        path_printf(sf, sizeof(sf), "%s/checkpoint", dir);
        floor_step = -1;
        if (read_state(sf, latest, sizeof(latest), list, &nlist) == 0 &&
            latest[0])
            floor_step = step_of(latest);
        f = fopen(seed_log, "wb");
        if (!f)
            die("create %s", seed_log);
        first_cut = describe_tree(f, seed_root, "", &id) + 1;
        fprintf(f, "Y\n");
        fclose(f);
        printf("power_cut_replay: resume %ld: the first run cut after op %zu "
               "(%s), state file latest step %ld\n",
               k, c1, strategy_name[s1], floor_step);
        /* with --relaunch-mpi the resumed run itself is on M ranks: its
         * saves replace, under the same names, what N ranks left */
        train_n = relaunch_n;
        train_argv(argv, dir, 1);
        train_n = mpi_n;
        st = run_recorded(argv, seed_root, seed_log, seed_out);
        path_printf(out_path, sizeof(out_path), "%s", seed_out);
        if (exit_code(st) != 0) {
            char *t = read_file(seed_out, NULL);
            failures++;
            fprintf(stderr, "FAIL: the resumed recorded run exited %d: %s\n",
                    exit_code(st), t ? t : "");
            free(t);
            continue;
        }
        parse_log(seed_log);
        parse_reports();
        explore(budget / nseeds);
    }
    free(ops1);
    free(text1);
}

int main(int argc, char **argv)
{
    long states = 300, seeds = 4;
    uint64_t seed = 1;
    for (int i = 1; i < argc; i++) {
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(argv[i], "--shim") && v)
            shim = v, i++;
        else if (!strcmp(argv[i], "--train") && v)
            train = v, i++;
        else if (!strcmp(argv[i], "--ckpt") && v)
            ckpt = v, i++;
        else if (!strcmp(argv[i], "--mode") && v)
            mode = v, i++;
        else if (!strcmp(argv[i], "--busy") && v)
            busy = v, i++;
        else if (!strcmp(argv[i], "--states") && v)
            states = atol(v), i++;
        else if (!strcmp(argv[i], "--seed") && v)
            seed = strtoull(v, NULL, 10), i++;
        else if (!strcmp(argv[i], "--mpi") && v)
            mpi_ranks = atoi(v), i++;
        else if (!strcmp(argv[i], "--relaunch-mpi") && v)
            path_printf(relaunch_n, sizeof(relaunch_n), "%d", atoi(v)), i++;
        else if (!strcmp(argv[i], "--focus") && v)
            focus = (size_t)atol(v), i++;
        else if (!strcmp(argv[i], "--fail-rank") && v)
            fail_rank = v, i++;
        else if (!strcmp(argv[i], "--mpiexec") && v)
            path_printf(mpiexec, sizeof(mpiexec), "%s", v), i++;
        else if (!strcmp(argv[i], "--seeds") && v)
            seeds = atol(v), i++;
        else if (!strcmp(argv[i], "--every-op"))
            every_op = 1;
        else if (!strcmp(argv[i], "--keep-hours") && v)
            keep_hours = v, i++;
        else if (!strcmp(argv[i], "--fail-sync") && v)
            fail_syncs = v, failing = 1, i++;
        else if (!strcmp(argv[i], "--scenario") && v) {
            scenario_repack = !strcmp(v, "repack");
            scenario_resume = !strcmp(v, "resume");
            if (!scenario_repack && !scenario_resume && strcmp(v, "train"))
                die("unknown scenario %s", v);
            i++;
        } else
            die("usage: power_cut_replay --shim SO --train BIN --ckpt BIN "
                "[--mode M] [--busy P] [--states N] [--seed S] "
                "[--scenario train|resume|repack] [--seeds K] [--mpi N] "
                "[--relaunch-mpi M] [--fail-sync N[,N...]] [--fail-rank R] "
                "[--focus K] [--keep-hours H] [--every-op]");
    }
    if (!shim || !train || !ckpt)
        die("--shim, --train and --ckpt are needed");
    /* absolute: the runs happen with another working directory in mind */
    {
        static char abs[3][4096];
        const char **which[3] = {&shim, &train, &ckpt};
        for (int i = 0; i < 3; i++) {
            if (!realpath(*which[i], abs[i]))
                die("%s: %s", *which[i], strerror(errno));
            *which[i] = abs[i];
        }
    }
    rng_state = seed * 0x9E3779B97F4A7C15ull + 1;
    if (mpi_ranks > 0 && !mpiexec[0]) {
        /* mpiexec from PATH; no MPI: nothing to check here (skipped) */
        const char *path = getenv("PATH");
        char *copy = xmalloc(strlen(path ? path : "") + 1), *dirp, *save;
        strcpy(copy, path ? path : "");
        for (dirp = strtok_r(copy, ":", &save); dirp;
             dirp = strtok_r(NULL, ":", &save)) {
            path_printf(mpiexec, sizeof(mpiexec), "%s/mpiexec", dirp);
            if (access(mpiexec, X_OK) == 0)
                break;
            mpiexec[0] = '\0';
        }
        free(copy);
        if (!mpiexec[0]) {
            printf("power_cut_replay: no mpiexec on PATH: skipped\n");
            return 77;
        }
    }
    path_printf(mpi_n, sizeof(mpi_n), "%d", mpi_ranks);
    if (!relaunch_n[0])
        path_printf(relaunch_n, sizeof(relaunch_n), "%s", mpi_n);
    if ((strcmp(relaunch_n, mpi_n) || fail_rank[0]) && mpi_ranks == 0)
        die("--relaunch-mpi and --fail-rank go with --mpi");
    {
        const char *tmp = getenv("TMPDIR");
        path_printf(work, sizeof(work), "%s/power_cut_XXXXXX",
                    tmp && *tmp ? tmp : "/tmp");
        if (!mkdtemp(work))
            die("mkdtemp: %s", strerror(errno));
    }
    path_printf(root_dir, sizeof(root_dir), "%s/root", work);
    path_printf(log_path, sizeof(log_path), "%s/ops.log", work);
    path_printf(out_path, sizeof(out_path), "%s/recorded.out", work);
    if (failing && scenario_resume)
        die("--fail-sync goes with the train and repack scenarios");
    if (failing) {
        failing_generations(states);
    } else {
        if (mkdir(root_dir, 0755) != 0)
            die("mkdir %s", root_dir);
        if (scenario_repack)
            record_repack();
        else
            record_train();
        if (!scenario_resume) {
            parse_log(log_path);
            parse_reports();
        }
        if (!scenario_resume && !scenario_repack)
            check_every_save_reported();
        if (scenario_resume)
            resume_generations(states, seeds);
        else
            explore(states);
    }
    if (failures == 0)
        rm_rf(work);
    else
        fprintf(stderr, "power_cut_replay: work kept in %s\n", work);
    free(ops);
    free(log_text);
    free(reports);
    free(durable_by);
    free(steps_said);
    free(seen);
    return failures != 0;
}
