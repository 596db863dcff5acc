/* fuzz/standalone_driver.c - replays fuzz inputs without libFuzzer (any
 * compiler), as CTest's fuzz_regressions_replay does in every build:
 *
 *   ckpt_fuzz_replay TARGET PATH...        run TARGET over each file, and
 *                                          each file of each directory
 *   ckpt_fuzz_replay --tree FUZZDIR [DIR]  every target over
 *                                          FUZZDIR/regressions/<target>/,
 *                                          FUZZDIR/corpora/<target>/ and,
 *                                          with DIR, DIR/<target>/
 *   ckpt_fuzz_replay --list                the target names
 *
 * Files whose names start with '.' or "README" are skipped; directories are
 * read in name order and not descended into. A bug aborts (the targets
 * check their own invariants), so exit status 0 means every input passed.
 * --tree fails when it finds no input at all (a wrong path must not pass). */
#include "fuzz.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* clang-format off: one target a line */
const ckpt_fuzz_target ckpt_fuzz_targets[] = {
    {"table", ckpt_fuzz_table},
    {"bundle", ckpt_fuzz_bundle},
    {"pb", ckpt_fuzz_pb},
    {"state", ckpt_fuzz_state},
    {"files", ckpt_fuzz_files},
    {"restore", ckpt_fuzz_restore},
    {NULL, NULL},
};
/* clang-format on */

static const ckpt_fuzz_target *find_target(const char *name)
{
    for (const ckpt_fuzz_target *t = ckpt_fuzz_targets; t->name; t++)
        if (strcmp(t->name, name) == 0)
            return t;
    return NULL;
}

/* Read a whole file into a fresh buffer; -1 on error (reported). */
static int read_whole(const char *path, uint8_t **out, size_t *out_len)
{
    FILE *f = fopen(path, "rb");
    uint8_t *buf = NULL;
    size_t len = 0, cap = 0;
    int rc = -1;
    if (!f) {
        fprintf(stderr, "%s: %s\n", path, strerror(errno));
        return -1;
    }
    for (;;) {
        size_t got;
        if (len == cap) {
            size_t ncap = cap ? 2 * cap : 65536;
            uint8_t *p = realloc(buf, ncap);
            if (!p) {
                fprintf(stderr, "%s: out of memory\n", path);
                goto done;
            }
            buf = p;
            cap = ncap;
        }
        got = fread(buf + len, 1, cap - len, f);
        len += got;
        if (got == 0)
            break;
    }
    if (ferror(f)) {
        fprintf(stderr, "%s: read error\n", path);
        goto done;
    }
    *out = buf;
    *out_len = len;
    buf = NULL;
    rc = 0;
done:
    free(buf);
    fclose(f);
    return rc;
}

static int run_file(const ckpt_fuzz_target *t, const char *path)
{
    uint8_t *data = NULL;
    size_t len = 0;
    if (read_whole(path, &data, &len) < 0)
        return -1;
    printf("%s: %s (%zu bytes)\n", t->name, path, len);
    fflush(stdout);
    t->fn(data, len);
    free(data);
    return 0;
}

static int skipped_name(const char *name)
{
    return name[0] == '.' || strncmp(name, "README", 6) == 0;
}

static int compare_names(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Run `t` over every file of directory `dir`; adds to *count. */
static int run_dir(const ckpt_fuzz_target *t, const char *dir, size_t *count)
{
    DIR *d = opendir(dir);
    struct dirent *de;
    char **names = NULL;
    size_t n = 0, cap = 0;
    int rc = 0;
    if (!d) {
        fprintf(stderr, "%s: %s\n", dir, strerror(errno));
        return -1;
    }
    while ((de = readdir(d)) != NULL) {
        if (skipped_name(de->d_name))
            continue;
        if (n == cap) {
            size_t ncap = cap ? 2 * cap : 64;
            char **p = realloc(names, ncap * sizeof(*p));
            if (!p) {
                rc = -1;
                break;
            }
            names = p;
            cap = ncap;
        }
        names[n] = strdup(de->d_name);
        if (!names[n]) {
            rc = -1;
            break;
        }
        n++;
    }
    closedir(d);
    if (n > 0)
        qsort(names, n, sizeof(*names), compare_names);
    for (size_t i = 0; rc == 0 && i < n; i++) {
        size_t len = strlen(dir) + strlen(names[i]) + 2;
        char *path = malloc(len);
        struct stat st;
        if (!path) {
            rc = -1;
            break;
        }
        snprintf(path, len, "%s/%s", dir, names[i]);
        if (stat(path, &st) == 0 && S_ISREG(st.st_mode)) {
            rc = run_file(t, path);
            if (rc == 0)
                (*count)++;
        }
        free(path);
    }
    for (size_t i = 0; i < n; i++)
        free(names[i]);
    free(names);
    return rc;
}

static int run_path(const ckpt_fuzz_target *t, const char *path, size_t *count)
{
    struct stat st;
    if (stat(path, &st) != 0) {
        fprintf(stderr, "%s: %s\n", path, strerror(errno));
        return -1;
    }
    if (S_ISDIR(st.st_mode))
        return run_dir(t, path, count);
    if (run_file(t, path) < 0)
        return -1;
    (*count)++;
    return 0;
}

static int is_dir(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

static int run_tree(const char *fuzz_dir, const char *extra_dir)
{
    static const char *const subdirs[] = {"regressions", "corpora"};
    size_t total = 0;
    char path[4096];
    for (const ckpt_fuzz_target *t = ckpt_fuzz_targets; t->name; t++) {
        size_t count = 0;
        for (size_t i = 0; i < sizeof(subdirs) / sizeof(subdirs[0]); i++) {
            snprintf(path, sizeof(path), "%s/%s/%s", fuzz_dir, subdirs[i],
                     t->name);
            if (is_dir(path) && run_dir(t, path, &count) < 0)
                return 1;
        }
        if (extra_dir) {
            snprintf(path, sizeof(path), "%s/%s", extra_dir, t->name);
            if (is_dir(path) && run_dir(t, path, &count) < 0)
                return 1;
        }
        printf("== %s: %zu inputs passed\n", t->name, count);
        total += count;
    }
    if (total == 0) {
        fprintf(stderr, "no fuzz inputs found under %s\n", fuzz_dir);
        return 1;
    }
    printf("== all targets: %zu inputs passed\n", total);
    return 0;
}

static int usage(void)
{
    fprintf(stderr, "usage: ckpt_fuzz_replay TARGET PATH...\n"
                    "       ckpt_fuzz_replay --tree FUZZDIR [DIR]\n"
                    "       ckpt_fuzz_replay --list\n");
    return 2;
}

int main(int argc, char **argv)
{
    const ckpt_fuzz_target *t;
    size_t count = 0;
    if (argc == 2 && strcmp(argv[1], "--list") == 0) {
        for (t = ckpt_fuzz_targets; t->name; t++)
            printf("%s\n", t->name);
        return 0;
    }
    if (argc >= 3 && argc <= 4 && strcmp(argv[1], "--tree") == 0)
        return run_tree(argv[2], argc == 4 ? argv[3] : NULL);
    if (argc < 3)
        return usage();
    t = find_target(argv[1]);
    if (!t) {
        fprintf(stderr, "unknown target '%s' (try --list)\n", argv[1]);
        return 2;
    }
    for (int i = 2; i < argc; i++)
        if (run_path(t, argv[i], &count) < 0)
            return 1;
    printf("== %s: %zu inputs passed\n", t->name, count);
    return 0;
}
