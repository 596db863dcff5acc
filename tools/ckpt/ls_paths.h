/* tools/ckpt/ls_paths.h - the paths `ckpt ls` lists: each spelling of a
 * path made one (ls_path_tidy), and a state file's list cut to one place
 * per path before any row is built (ls_paths_last_places). */
#ifndef CKPT_TOOLS_LS_PATHS_H
#define CKPT_TOOLS_LS_PATHS_H

#include <stddef.h>

/* `path` with repeated '/' made one and every "." component that is not
 * the last dropped ("./m", ".//./m" and "m" are one path; "m/." keeps its
 * last "." and a trailing '/' stays, since neither names the prefix "m").
 * ".." is kept: through a symbolic link it is not the parent of the name
 * before it. Never longer than `path`; malloc'd. */
char *ls_path_tidy(const char *path);

/* Whether a stored path can name a checkpoint prefix: not empty, not
 * ending in '/'. */
int ls_path_names_prefix(const char *path);

/* keep[i] for i < n: 1 for the last place of each path among paths[0..n)
 * as tidied (a path listed again later is dropped here), and for every
 * path that names no prefix (empty or ending in '/': each is its own row).
 * Memory: one copy of the paths and two arrays of n; n log n time. */
void ls_paths_last_places(const char *const *paths, size_t n,
                          unsigned char *keep);

#endif
