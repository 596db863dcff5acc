/* tests/saver/saver_test_util.c - see saver_test_util.h. */
#include "saver_test_util.h"

#include "common/internal.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static int g_write(ckpt_file *f, const void *buf, size_t n, void *p)
{
    gate_fs *g = p;
    const ckpt_fs *base = ckpt_fs_forward_base(p);
    pthread_mutex_lock(&g->mu);
    g->blocked++;
    pthread_cond_broadcast(&g->cv);
    while (g->closed)
        pthread_cond_wait(&g->cv, &g->mu);
    g->blocked--;
    if (n > g->largest_write)
        g->largest_write = n;
    if (g->fail_writes) {
        pthread_mutex_unlock(&g->mu);
        return ckpt__error(CKPT_EIO, "write: injected failure");
    }
    pthread_mutex_unlock(&g->mu);
    return base->write(f, buf, n, base->payload);
}

static int g_open_write(ckpt_file **out, const char *path, int flags, void *p)
{
    gate_fs *g = p;
    const ckpt_fs *base = ckpt_fs_forward_base(p);
    if (strstr(path, ".data-")) {
        pthread_mutex_lock(&g->mu);
        if (g->data_opens < 32)
            g->data_direct[g->data_opens] = (flags & CKPT_OPEN_DIRECT) != 0;
        g->data_opens++;
        pthread_mutex_unlock(&g->mu);
    }
    return base->open_write(out, path, flags, base->payload);
}

void gate_fs_init(gate_fs *g)
{
    memset(g, 0, sizeof(*g));
    pthread_mutex_init(&g->mu, NULL);
    pthread_cond_init(&g->cv, NULL);
    ckpt_fs_forward_init(&g->fwd, ckpt_fs_posix());
    g->fwd.fs.write = g_write;
    g->fwd.fs.open_write = g_open_write;
    g->fwd.fs.open_read_direct = NULL; /* reads take the page-cache path */
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

static void hold_until(held_opens *h, atomic_int *release)
{
    time_t until = time(NULL) + 20;
    while (!atomic_load(release)) {
        if (time(NULL) >= until) {
            atomic_store(&h->gave_up, 1);
            return;
        }
        usleep(1000);
    }
}

static int held_open_write(ckpt_file **out, const char *path, int flags,
                           void *p)
{
    held_opens *h = p;
    const ckpt_fs *base = ckpt_fs_forward_base(p);
    if (strstr(path, "model.ckpt-1.data-")) {
        atomic_store(&h->held1, 1);
        hold_until(h, &h->release1);
        *out = NULL;
        return ckpt__error(CKPT_EIO, "open %s: injected failure", path);
    }
    if (strstr(path, "model.ckpt-2.data-")) {
        atomic_store(&h->held2, 1);
        hold_until(h, &h->release2);
    }
    return base->open_write(out, path, flags, base->payload);
}

void held_opens_init(held_opens *h)
{
    memset(h, 0, sizeof(*h));
    ckpt_fs_forward_init(&h->fwd, NULL);
    h->fwd.fs.open_write = held_open_write;
    h->fwd.fs.open_read_direct = NULL;
}

void held_opens_wait(held_opens *h, atomic_int *flag)
{
    while (!atomic_load(flag) && !atomic_load(&h->gave_up))
        usleep(1000);
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

static int compare_lines(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Free lines[0..n) and the array; returns NULL. */
static char *free_lines(char **lines, size_t n)
{
    for (size_t i = 0; i < n; i++)
        free(lines[i]);
    free(lines);
    return NULL;
}

char *dir_signature(const char *dir)
{
    DIR *d = opendir(dir);
    struct dirent *e;
    char **lines = NULL, *out;
    size_t n = 0, cap = 0, total = 1;
    if (!d)
        return NULL;
    while ((e = readdir(d)) != NULL) {
        char path[4096], line[4400];
        struct stat st;
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
            continue;
        snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
        if (lstat(path, &st) != 0)
            continue;
        snprintf(line, sizeof(line), "%s %lld %lld.%09ld\n", e->d_name,
                 (long long)st.st_size, (long long)st.st_mtim.tv_sec,
                 (long)st.st_mtim.tv_nsec);
        if (n == cap) {
            char **grown =
                realloc(lines, (cap ? 2 * cap : 16) * sizeof(*lines));
            if (!grown)
                break;
            lines = grown;
            cap = cap ? 2 * cap : 16;
        }
        lines[n] = strdup(line);
        if (!lines[n])
            break;
        total += strlen(line);
        n++;
    }
    /* a listing cut short (memory ran out) would compare equal wrongly */
    if (e != NULL) {
        closedir(d);
        return free_lines(lines, n);
    }
    closedir(d);
    if (n > 0)
        qsort(lines, n, sizeof(lines[0]), compare_lines);
    out = malloc(total);
    if (!out)
        return free_lines(lines, n);
    out[0] = '\0';
    for (size_t i = 0; i < n; i++)
        strcat(out, lines[i]);
    free_lines(lines, n);
    return out;
}

int file_exists(const char *dir, const char *name)
{
    char path[4096];
    struct stat st;
    snprintf(path, sizeof(path), "%s/%s", dir, name);
    return stat(path, &st) == 0;
}
