/* tests/tools/swap_state_shim.c - an LD_PRELOAD library for
 * test_cli_state_swap.c: a save landing while `ckpt` reads a checkpoint
 * directory, at a chosen moment. Opens (tests/support/open_shim.c) of the
 * path CKPT_SWAP_STATE_PATH, a state file, are counted; just before open
 * number CKPT_SWAP_STATE_AT, the file CKPT_SWAP_STATE_FROM is renamed onto
 * it, as a saver commits a new state file, and the shim says so on
 * stderr. */
#include "support/open_shim.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Opens of the state file so far (the tool reads it on one thread). */
static long opens;

/* Count an open of `path`; replace the state file before the chosen one.
 * Never fails the open. */
int open_shim_before(const char *path)
{
    const char *state = getenv("CKPT_SWAP_STATE_PATH");
    const char *from = getenv("CKPT_SWAP_STATE_FROM");
    const char *at = getenv("CKPT_SWAP_STATE_AT");
    if (!path || !state || !from || !at || strcmp(path, state) != 0)
        return 0;
    if (++opens != strtol(at, NULL, 10))
        return 0;
    if (rename(from, state) == 0)
        fprintf(stderr, "swap_state_shim: open %ld of %s: replaced\n", opens,
                state);
    else
        perror("swap_state_shim: rename");
    return 0;
}
