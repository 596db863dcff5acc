/* tests/support/open_shim.h - the part every LD_PRELOAD shim of open(2)
 * shares (open_shim.c): open, open64, openat and openat64 defined to call
 * the shim's own open_shim_before(path) first, then the next definition
 * (dlsym(RTLD_NEXT)) unless it asked for a failure. A shim module is
 * open_shim.c plus one file defining open_shim_before. Not part of
 * ckpt_testing: it is linked only into the shims. */
#ifndef CKPT_TESTS_SUPPORT_OPEN_SHIM_H
#define CKPT_TESTS_SUPPORT_OPEN_SHIM_H

/* Called before each open of `path` (NULL possible): 0 to open it, or an
 * errno value the open then fails with. */
int open_shim_before(const char *path);

#endif
