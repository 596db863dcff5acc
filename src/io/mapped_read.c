/* io/mapped_read.c - pieces of a cached file copied out of a read-only
 * mapping with their CRC32C in the same pass (see mapped_read.h for when
 * and why), and the SIGBUS guard around each copy.
 *
 * The guard: a thread about to copy records its thread id, the mapped
 * bytes it will read and a sigjmp_buf in a free slot of a process-wide
 * table (no thread-local storage: a variable of the initial-exec model
 * makes dlopen of the library fail, its whole TLS block then needing room
 * in the static one, and one of the dynamic model may be allocated by its
 * first access, which a signal handler must not do). The SIGBUS handler,
 * installed once per process in front of the disposition it finds, jumps
 * back to the thread it runs on when the fault (si_code > 0, not a kill())
 * lies in the bytes of that thread's slot; any other
 * SIGBUS goes on to what was there before: the previous handler (called as
 * the kernel would have, SA_RESETHAND included), or the default action (put
 * back; a fault then happens again and ends the process as it would have,
 * a SIGBUS sent by kill() is raised again). The copy runs no code that
 * takes a lock or allocates, so leaving it by a jump is safe. */
#include "mapped_read.h"

#include "common/internal.h"
#include "util/crc32c.h"

#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

/* Pages mincore() is asked about at a time (a piece is 64 of them). */
#define RESIDENT_BATCH 256

typedef struct guard {
    long tid;               /* the copying thread (gettid) */
    const uint8_t *lo, *hi; /* the mapped bytes being read */
    sigjmp_buf jump;
} guard;

/* Guarded copies in progress, one slot each; a copy that finds none free
 * is read with pread. Lock-free pointers: the handler only loads them. */
#define GUARD_SLOTS 64
static _Atomic(guard *) guards[GUARD_SLOTS];

static atomic_int forced_off;
static void (*before_copy)(void *arg); /* tests */
static void *before_copy_arg;
static pthread_mutex_t install_mu = PTHREAD_MUTEX_INITIALIZER;

/* What SIGBUS did before on_sigbus was installed (prev_set: it was). */
static struct sigaction prev;
static int prev_set;

/* A SIGBUS that is not a mapped read's: what the disposition found at
 * install would have done. */
/* The thread passing a SIGBUS on to `prev` (0: none), the signal's
 * context and how deep its stack was: a previous handler that its owner
 * installed again after on_sigbus, keeping on_sigbus as what it passes on
 * to, would call on_sigbus with that same context, which would call it
 * again, until the stack ran out. A pass_on entered on that thread with
 * that context deeper in the stack is such a loop; a new SIGBUS after
 * `prev` left by a jump (a handler that recovers) has its own context or
 * the same depth, and goes to `prev` again. The two plain fields are
 * written and read only by the thread holding passing_tid. */
static _Atomic long passing_tid;
static void *passing_context;
static uintptr_t passing_depth;

static void pass_on(int sig, siginfo_t *info, void *context)
{
    struct sigaction dfl;
    /* SIG_DFL and SIG_IGN are values of either member, whatever the
     * flags say (sigaction keeps SA_SIGINFO with them) */
    int handled = prev.sa_handler != SIG_DFL && prev.sa_handler != SIG_IGN;
    long tid = (long)syscall(SYS_gettid), none = 0;
    long held = atomic_load(&passing_tid);
    char here; /* its address: how deep the stack is (it grows down) */
    uintptr_t depth = (uintptr_t)&here;
    int mine = 0;
    memset(&dfl, 0, sizeof(dfl));
    dfl.sa_handler = SIG_DFL;
    sigemptyset(&dfl.sa_mask);
    if (handled && held == tid && passing_context == context &&
        depth < passing_depth) {
        handled = 0; /* back from `prev`: the default action */
    } else if (handled) {
        mine = held == tid ||
               atomic_compare_exchange_strong(&passing_tid, &none, tid);
        if (mine) {
            passing_context = context;
            passing_depth = depth;
        }
    }
    if (handled) {
        if (prev.sa_flags & SA_RESETHAND)
            sigaction(sig, &dfl, NULL);
        if (prev.sa_flags & SA_SIGINFO)
            prev.sa_sigaction(sig, info, context);
        else
            prev.sa_handler(sig);
        if (mine)
            atomic_store(&passing_tid, 0);
        return;
    }
    /* the default action (which a fault gets even where it is ignored) */
    sigaction(sig, &dfl, NULL);
    if (!info || info->si_code <= 0) /* sent, not a fault: send it again */
        raise(sig);
}

static void on_sigbus(int sig, siginfo_t *info, void *context)
{
    int saved_errno = errno;
    if (info && info->si_code > 0) { /* a fault: si_addr is meaningful */
        const uint8_t *at = (const uint8_t *)info->si_addr;
        long tid = (long)syscall(SYS_gettid);
        for (int i = 0; i < GUARD_SLOTS; i++) {
            guard *g = atomic_load(&guards[i]);
            if (g && g->tid == tid && at >= g->lo && at < g->hi) {
                atomic_store(&guards[i], NULL);
                errno = saved_errno;
                siglongjmp(g->jump, 1);
            }
        }
    }
    pass_on(sig, info, context);
    errno = saved_errno;
}

/* Whether SIGBUS is handled by on_sigbus. It is installed once per
 * process, in front of whatever handled SIGBUS then (the default, or a
 * handler such as Open MPI's, which it passes other SIGBUS on to); one
 * that replaces it later is left alone (installing again in front of a
 * handler that passes its own on to on_sigbus would loop). */
static int handler_in_place(void)
{
    struct sigaction cur;
    int ours = 0;
    pthread_mutex_lock(&install_mu);
    if (sigaction(SIGBUS, NULL, &cur) == 0) {
        if ((cur.sa_flags & SA_SIGINFO) && cur.sa_sigaction == on_sigbus) {
            ours = 1;
        } else if (!prev_set && cur.sa_handler != SIG_IGN) {
            struct sigaction mine;
            memset(&mine, 0, sizeof(mine));
            mine.sa_sigaction = on_sigbus;
            mine.sa_flags = SA_SIGINFO | (cur.sa_flags & SA_ONSTACK);
            mine.sa_mask = cur.sa_mask;
            prev = cur;
            prev_set = 1;
            ours = sigaction(SIGBUS, &mine, NULL) == 0;
        }
    }
    pthread_mutex_unlock(&install_mu);
    return ours;
}

/* When the library is unloaded (dlclose) or the process exits: put the
 * disposition found at install back while the handler is still this one,
 * so that a later SIGBUS does not jump to code that is gone. */
__attribute__((destructor)) static void put_disposition_back(void)
{
    struct sigaction cur;
    pthread_mutex_lock(&install_mu);
    if (prev_set && sigaction(SIGBUS, NULL, &cur) == 0 &&
        (cur.sa_flags & SA_SIGINFO) && cur.sa_sigaction == on_sigbus)
        sigaction(SIGBUS, &prev, NULL);
    pthread_mutex_unlock(&install_mu);
}

/* CKPT_MAPPED_READS=0 in the environment: pread only (for comparisons),
 * read once. */
static int env_off;
static pthread_once_t env_once = PTHREAD_ONCE_INIT;

static void read_env(void)
{
    const char *v = getenv("CKPT_MAPPED_READS");
    env_off = v && strcmp(v, "0") == 0;
}

int ckpt__mapped_reads_available(void)
{
    pthread_once(&env_once, read_env);
    if (env_off || atomic_load(&forced_off))
        return 0;
    return handler_in_place();
}

void ckpt__mapped_reads_force(int on)
{
    if (on == -2) { /* forget the installation (a test's child process) */
        pthread_mutex_lock(&install_mu);
        prev_set = 0;
        pthread_mutex_unlock(&install_mu);
    }
    atomic_store(&forced_off, on == 0);
}

void ckpt__mapped_reads_before_copy(void (*fn)(void *arg), void *arg)
{
    before_copy = fn;
    before_copy_arg = arg;
}

void ckpt__map_window_init(ckpt__map_window *w, const ckpt_fs *fs,
                           ckpt_file *file)
{
    struct stat st;
    memset(w, 0, sizeof(*w));
    w->fd = ckpt__posix_read_fd(fs, file);
    if (w->fd >= 0 && (fstat(w->fd, &st) != 0 || !S_ISREG(st.st_mode) ||
                       st.st_size <= 0 || !ckpt__mapped_reads_available()))
        w->fd = -1;
    if (w->fd >= 0) {
        w->file_size = (uint64_t)st.st_size;
        /* the CRC's one-time set-up, outside any guarded copy */
        (void)ckpt__crc32c_copy_streams();
    }
}

static void unmap(ckpt__map_window *w)
{
    if (w->base)
        munmap(w->base, w->len);
    w->base = NULL;
    w->len = 0;
}

void ckpt__map_window_dispose(ckpt__map_window *w)
{
    unmap(w);
    w->fd = -1;
}

/* Map the window holding [at, at + len) (inside the file); 0 when mmap
 * refuses (e.g. a small RLIMIT_AS). */
static int map_window_for(ckpt__map_window *w, uint64_t at, size_t len)
{
    uint64_t start = at / CKPT__MAP_WINDOW * CKPT__MAP_WINDOW;
    uint64_t end = start + CKPT__MAP_WINDOW;
    void *p;
    if (w->base && at >= w->at && at + len <= w->at + w->len)
        return 1;
    unmap(w);
    if (end < at + len) /* a piece across two windows: map both */
        end = at + len;
    if (end > w->file_size)
        end = w->file_size;
    /* A read-only mapping of the POSIX file system's own file, below the
     * ckpt_fs seam: it holds the file's pages, nothing of the allocator's. */
    p = mmap(NULL, (size_t)(end - start), PROT_READ, MAP_SHARED, w->fd,
             (off_t)start);
    if (p == MAP_FAILED)
        return 0;
    w->base = p;
    w->at = start;
    w->len = (size_t)(end - start);
    return 1;
}

/* Whether every page of the mapped bytes [p, p + len) is in the page
 * cache. */
static int resident(const uint8_t *p, size_t len)
{
    /* read by both reader threads: sysconf is a lookup, no system call */
    long page_size = sysconf(_SC_PAGESIZE);
    unsigned char vec[RESIDENT_BATCH];
    uintptr_t first, last;
    if (page_size <= 0)
        return 0;
    first = (uintptr_t)p / (uintptr_t)page_size * (uintptr_t)page_size;
    last = ((uintptr_t)p + len + (uintptr_t)page_size - 1) /
           (uintptr_t)page_size * (uintptr_t)page_size;
    while (first < last) {
        size_t pages = (last - first) / (uintptr_t)page_size;
        if (pages > RESIDENT_BATCH)
            pages = RESIDENT_BATCH;
        if (mincore((void *)first, pages * (size_t)page_size, vec) != 0)
            return 0;
        for (size_t i = 0; i < pages; i++)
            if (!(vec[i] & 1))
                return 0;
        first += pages * (size_t)page_size;
    }
    return 1;
}

int ckpt__mapped_copy_guarded(const uint8_t *src, size_t len, uint8_t *dst,
                              uint32_t *crc)
{
    guard g;
    int slot = -1;
    g.tid = (long)syscall(SYS_gettid);
    g.lo = src;
    g.hi = src + len;
    if (sigsetjmp(g.jump, 1) != 0)
        return 1; /* the handler freed the slot */
    for (int i = 0; i < GUARD_SLOTS && slot < 0; i++) {
        guard *none = NULL;
        if (atomic_compare_exchange_strong(&guards[i], &none, &g))
            slot = i;
    }
    if (slot < 0)
        return 2;
    *crc = dst ? ckpt__crc32c_copy(0, dst, src, len) : ckpt__crc32c(src, len);
    atomic_store(&guards[slot], NULL);
    return 0;
}

int ckpt__mapped_piece(ckpt__map_window *w, const char *path, uint64_t at,
                       size_t len, uint8_t *dst, uint32_t *crc)
{
    const uint8_t *src;
    if (w->fd < 0 || len == 0 || at > w->file_size || len > w->file_size - at ||
        !map_window_for(w, at, len))
        return 1;
    src = w->base + (at - w->at);
    if (!resident(src, len))
        return 1;
    if (before_copy)
        before_copy(before_copy_arg);
    switch (ckpt__mapped_copy_guarded(src, len, dst, crc)) {
    case 0:
        return 0;
    case 2:
        return 1; /* every guard slot taken: pread */
    default:
        break;
    }
    unmap(w); /* its pages are gone */
    w->fd = -1;
    return ckpt__error(CKPT_EIO,
                       "%s: the %zu bytes at offset %llu could not be read "
                       "(the file was truncated by another process while it "
                       "was read, or the device failed to read them)",
                       path ? path : "(a data file)", len,
                       (unsigned long long)at);
}
