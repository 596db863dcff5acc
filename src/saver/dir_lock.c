/* saver/dir_lock.c - one process at a time owns a checkpoint directory: the
 * first saver of a process to recover a directory (a single-process saver,
 * or rank 0 of a distributed one) takes an exclusive flock() on it, the
 * process's later savers of the same directory share it (a checkpoint hook
 * and the session's scaffold saver, say), and a saver of another process
 * is refused with CKPT_EBUSY: its recovery would delete the first one's
 * temporary files under it (so is a saver of a child made by fork(), which
 * inherits the parent's lock and list). While savers of this process share it,
 * none of them sweeps leftovers (dir_sweep.c): one's temporaries may be
 * another's save in flight. Only on the POSIX file system; where flock() is
 * not available (ENOLCK, some network file systems) the saver goes on
 * without it. The kernel drops the lock when the process ends, however it
 * ends, and a child made by fork() holds none of it: its copies of the
 * locks' descriptors are closed as it starts (an atfork handler), so a
 * child that outlives its parent (a forked data loader, the parent killed)
 * never keeps the directory locked against the relaunch. A save checks the path
 * still leads to the locked directory before it writes, names or deletes
 * anything (ckpt__dir_lock_check). Of the savers sharing it, only one saves:
 * the first to save claims the directory until it is freed, and another's save
 * is refused with CKPT_EBUSY (ckpt__dir_lock_claim), since each saver writes
 * the state file from its own list and would drop the other's checkpoints from
 * it; so is, afterwards, the save of a saver opened before that claim, whose
 * list is out of date. */
#include "io/fs_internal.h"
#include "saver_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

struct ckpt__dir_lock {
    dev_t dev;
    ino_t ino;
    int fd; /* holds the flock; -1 when flock() was not available */
    int refs;
    long pid; /* the process that took it (a fork()ed child inherits it) */
    const void *saver;    /* the one holder that saves here; NULL: none now */
    unsigned long claims; /* how many holders have saved here so far */
    struct ckpt__dir_lock *next;
};

static pthread_mutex_t locks_mu = PTHREAD_MUTEX_INITIALIZER;
static struct ckpt__dir_lock *locks; /* this process's, guarded by locks_mu */
static pthread_once_t fork_handlers_once = PTHREAD_ONCE_INIT;

/* fork() gives the child a copy of every lock's descriptor, and with it a
 * share of the flock (which belongs to the open file description, not to
 * the process): a child outliving a killed parent kept the directory
 * locked, and the relaunch was refused with CKPT_EBUSY until the child
 * ended. The child never saves there (ckpt__dir_lock_acquire refuses it a
 * lock its parent holds, and the parent's savers refuse every call), so
 * its copies are closed as it starts; the entries stay, to refuse it.
 * locks_mu is held across the fork so that the child's list is whole. */
static void fork_prepare(void)
{
    pthread_mutex_lock(&locks_mu);
}

static void fork_parent(void)
{
    pthread_mutex_unlock(&locks_mu);
}

static void fork_child(void)
{
    for (struct ckpt__dir_lock *l = locks; l; l = l->next)
        if (l->fd >= 0) {
            close(l->fd); /* the parent's descriptor keeps the flock */
            l->fd = -1;
        }
    pthread_mutex_unlock(&locks_mu);
}

static void install_fork_handlers(void)
{
    (void)pthread_atfork(fork_prepare, fork_parent, fork_child);
}

/* The process holding a flock on the file `fd` is open on, as the kernel
 * lists it in /proc/locks ("1: FLOCK ADVISORY WRITE <pid> <major>:<minor>:
 * <inode> 0 EOF", the numbers of the device in hex), for the message; 0
 * when it cannot be told (no /proc, a lock taken before a fork). */
static long flock_holder(int fd)
{
    struct stat st;
    char line[256];
    long found = 0;
    FILE *f;
    if (fstat(fd, &st) != 0 || !(f = fopen("/proc/locks", "re")))
        return 0;
    while (!found && fgets(line, sizeof(line), f)) {
        long pid;
        unsigned int maj, min;
        unsigned long ino;
        if (sscanf(line, "%*d: FLOCK %*s %*s %ld %x:%x:%lu", &pid, &maj, &min,
                   &ino) == 4 &&
            maj == major(st.st_dev) && min == minor(st.st_dev) &&
            ino == (unsigned long)st.st_ino && pid > 0)
            found = pid;
    }
    fclose(f);
    return found;
}

/* Take the lock for a new entry; 0 (fd -1 when flock is unavailable),
 * CKPT_EBUSY, or an error opening the directory. */
static int lock_new(const char *dir, struct ckpt__dir_lock *l)
{
    l->fd =
        ckpt__posix_fd_off_stdio(open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    if (l->fd < 0)
        return ckpt__error_errno(errno, "open %s", dir);
    if (flock(l->fd, LOCK_EX | LOCK_NB) == 0)
        return 0;
    if (errno == EWOULDBLOCK) {
        long holder = flock_holder(l->fd);
        char who[48] = "";
        if (holder > 0)
            snprintf(who, sizeof(who), " (pid %ld)", holder);
        close(l->fd);
        l->fd = -1;
        return ckpt__error(
            CKPT_EBUSY,
            "checkpoint directory %s is in use by a saver of another "
            "process%s: two savers would delete each other's temporary files. "
            "If that is an earlier run still exiting (an MPI job's ranks can "
            "outlive a killed mpiexec by seconds), try again once it has "
            "ended; else read its checkpoints with ckpt_latest_checkpoint and "
            "the bundle reader, or save to another directory",
            dir, who);
    }
    close(l->fd); /* no flock here: go on unprotected */
    l->fd = -1;
    return 0;
}

int ckpt__dir_lock_acquire(const ckpt_fs *fs, const char *dir,
                           ckpt__dir_lock **out)
{
    struct ckpt__dir_lock *l;
    struct stat st;
    int err = 0;
    *out = NULL;
    if (fs != ckpt_fs_posix() || stat(dir, &st) != 0)
        return 0; /* another file system; a missing dir fails elsewhere */
    pthread_once(&fork_handlers_once, install_fork_handlers);
    pthread_mutex_lock(&locks_mu);
    for (l = locks; l; l = l->next)
        if (l->dev == st.st_dev && l->ino == st.st_ino)
            break;
    if (l && l->pid != (long)getpid()) {
        /* The parent's lock, copied by fork(): the parent may be saving
         * there right now. */
        err = ckpt__error(CKPT_EBUSY,
                          "checkpoint directory %s is in use by the savers "
                          "of process %ld, whose lock this process (%ld, a "
                          "child made by fork()) inherited: two savers would "
                          "delete each other's temporary files and write "
                          "over each other's state file; save to another "
                          "directory",
                          dir, l->pid, (long)getpid());
        l = NULL;
    } else if (l) {
        l->refs++;
    } else {
        l = ckpt__calloc(1, sizeof(*l));
        if (!l)
            err = ckpt__error_oom();
        else
            err = lock_new(dir, l);
        if (err == 0) {
            l->dev = st.st_dev;
            l->ino = st.st_ino;
            l->refs = 1;
            l->pid = (long)getpid();
            l->next = locks;
            locks = l;
        } else {
            ckpt__free(l);
            l = NULL;
        }
    }
    pthread_mutex_unlock(&locks_mu);
    *out = l;
    return err;
}

int ckpt__dir_lock_shared(ckpt__dir_lock *lock)
{
    int shared;
    if (!lock)
        return 0;
    pthread_mutex_lock(&locks_mu);
    shared = lock->refs > 1;
    pthread_mutex_unlock(&locks_mu);
    return shared;
}

void ckpt__dir_lock_release(ckpt__dir_lock *lock)
{
    struct ckpt__dir_lock **p;
    if (!lock)
        return;
    pthread_mutex_lock(&locks_mu);
    if (--lock->refs == 0) {
        for (p = &locks; *p && *p != lock; p = &(*p)->next)
            ;
        if (*p)
            *p = lock->next;
        if (lock->fd >= 0)
            close(lock->fd); /* drops the flock */
        ckpt__free(lock);
    }
    pthread_mutex_unlock(&locks_mu);
}

unsigned long ckpt__dir_lock_claims(ckpt__dir_lock *lock)
{
    unsigned long claims;
    if (!lock)
        return 0;
    pthread_mutex_lock(&locks_mu);
    claims = lock->claims;
    pthread_mutex_unlock(&locks_mu);
    return claims;
}

int ckpt__dir_lock_claim(ckpt__dir_lock *lock, const void *saver,
                         unsigned long claims_seen, const char *dir)
{
    const void *holder;
    int stale = 0;
    if (!lock) /* another file system, or none taken */
        return 0;
    pthread_mutex_lock(&locks_mu);
    if (!lock->saver && lock->claims == claims_seen) {
        lock->saver = saver;
        lock->claims++;
    } else if (!lock->saver) {
        stale = 1;
    }
    holder = lock->saver;
    pthread_mutex_unlock(&locks_mu);
    if (holder == saver)
        return 0;
    if (stale)
        return ckpt__error(
            CKPT_EBUSY,
            "checkpoint directory %s: another saver of this process saved "
            "there since this one was opened, so this one's list of "
            "checkpoints is out of date (saving from it would drop the "
            "other's checkpoints from the state file); open a new saver to "
            "save there",
            dir);
    return ckpt__error(
        CKPT_EBUSY,
        "checkpoint directory %s: another saver of this process saves "
        "there (the first to save holds it until it is freed): each would "
        "write the state file from its own list and drop the other's "
        "checkpoints from it; save through that one, or free it and open "
        "a new saver (a second saver that only restores is fine)",
        dir);
}

void ckpt__dir_lock_unclaim(ckpt__dir_lock *lock, const void *saver)
{
    if (!lock)
        return;
    pthread_mutex_lock(&locks_mu);
    if (lock->saver == saver)
        lock->saver = NULL;
    pthread_mutex_unlock(&locks_mu);
}

int ckpt__dir_lock_check(const ckpt__dir_lock *lock, const char *dir)
{
    struct stat st;
    if (!lock) /* another file system, or none taken */
        return 0;
    if (stat(dir, &st) == 0 && st.st_dev == lock->dev && st.st_ino == lock->ino)
        return 0;
    return ckpt__error(
        CKPT_ENOTFOUND,
        "checkpoint directory %s is no longer the directory this saver "
        "opened (moved, replaced, or swapped for a link%s): nothing written "
        "or deleted there; open a saver on the directory wanted",
        dir,
        dir[0] == '/' ? ""
                      : "; a relative path also changes with the process's "
                        "working directory");
}
