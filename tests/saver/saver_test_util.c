/* tests/saver/saver_test_util.c - see saver_test_util.h. */
#include "saver_test_util.h"

#include <dirent.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

static double fake_now(void *payload)
{
    return ((fake_clock *)payload)->now;
}

void fake_clock_init(fake_clock *c, double start)
{
    memset(c, 0, sizeof(*c));
    c->clock.version = CKPT_CLOCK_VERSION;
    c->clock.payload = c;
    c->clock.monotonic = fake_now;
    c->clock.wall = fake_now;
    c->now = start;
}

#define INNER ckpt_fs_posix()

static int g_open_write(ckpt_file **out, const char *path, int flags, void *p)
{
    (void)p;
    return INNER->open_write(out, path, flags, INNER->payload);
}
static int g_open_read(ckpt_file **out, const char *path, void *p)
{
    (void)p;
    return INNER->open_read(out, path, INNER->payload);
}
static int g_write(ckpt_file *f, const void *buf, size_t n, void *p)
{
    gate_fs *g = p;
    pthread_mutex_lock(&g->mu);
    g->blocked++;
    pthread_cond_broadcast(&g->cv);
    while (g->closed)
        pthread_cond_wait(&g->cv, &g->mu);
    g->blocked--;
    pthread_mutex_unlock(&g->mu);
    return INNER->write(f, buf, n, INNER->payload);
}
static int g_pread(ckpt_file *f, void *buf, size_t n, uint64_t off,
                   size_t *nread, void *p)
{
    (void)p;
    return INNER->pread(f, buf, n, off, nread, INNER->payload);
}
static int g_size(ckpt_file *f, uint64_t *out, void *p)
{
    (void)p;
    return INNER->size(f, out, INNER->payload);
}
static int g_sync(ckpt_file *f, void *p)
{
    (void)p;
    return INNER->sync(f, INNER->payload);
}
static int g_close(ckpt_file *f, void *p)
{
    (void)p;
    return INNER->close(f, INNER->payload);
}
static int g_rename(const char *a, const char *b, void *p)
{
    (void)p;
    return INNER->rename(a, b, INNER->payload);
}
static int g_remove(const char *a, void *p)
{
    (void)p;
    return INNER->remove(a, INNER->payload);
}
static int g_mkdir(const char *a, void *p)
{
    (void)p;
    return INNER->mkdir(a, INNER->payload);
}
static int g_sync_dir(const char *a, void *p)
{
    (void)p;
    return INNER->sync_dir(a, INNER->payload);
}
static int g_list(const char *a, ckpt_dir_cb cb, void *cbp, void *p)
{
    (void)p;
    return INNER->list(a, cb, cbp, INNER->payload);
}
static int g_stat(const char *a, uint64_t *out, double *mtime, void *p)
{
    (void)p;
    return INNER->stat(a, out, mtime, INNER->payload);
}

void gate_fs_init(gate_fs *g)
{
    memset(g, 0, sizeof(*g));
    pthread_mutex_init(&g->mu, NULL);
    pthread_cond_init(&g->cv, NULL);
    g->fs.version = CKPT_FS_VERSION;
    g->fs.payload = g;
    g->fs.open_write = g_open_write;
    g->fs.open_read = g_open_read;
    g->fs.write = g_write;
    g->fs.pread = g_pread;
    g->fs.size = g_size;
    g->fs.sync = g_sync;
    g->fs.close = g_close;
    g->fs.rename = g_rename;
    g->fs.remove = g_remove;
    g->fs.mkdir = g_mkdir;
    g->fs.sync_dir = g_sync_dir;
    g->fs.list = g_list;
    g->fs.stat = g_stat;
}

void gate_fs_dispose(gate_fs *g)
{
    pthread_cond_destroy(&g->cv);
    pthread_mutex_destroy(&g->mu);
}

void gate_close(gate_fs *g)
{
    pthread_mutex_lock(&g->mu);
    g->closed = 1;
    pthread_mutex_unlock(&g->mu);
}

void gate_open(gate_fs *g)
{
    pthread_mutex_lock(&g->mu);
    g->closed = 0;
    pthread_cond_broadcast(&g->cv);
    pthread_mutex_unlock(&g->mu);
}

void gate_wait_blocked(gate_fs *g)
{
    pthread_mutex_lock(&g->mu);
    while (g->blocked == 0)
        pthread_cond_wait(&g->cv, &g->mu);
    pthread_mutex_unlock(&g->mu);
}

int count_files(const char *dir, const char *needle)
{
    DIR *d = opendir(dir);
    struct dirent *e;
    int n = 0;
    if (!d)
        return -1;
    while ((e = readdir(d)) != NULL)
        if (e->d_name[0] != '.' && strstr(e->d_name, needle))
            n++;
    closedir(d);
    return n;
}

int file_exists(const char *dir, const char *name)
{
    char path[4096];
    struct stat st;
    snprintf(path, sizeof(path), "%s/%s", dir, name);
    return stat(path, &st) == 0;
}
