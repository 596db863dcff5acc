/* tools/ckpt/main.c - the `ckpt` command: dispatch to subcommands. */
#include "ckpt.h"

#include <stdio.h>
#include <string.h>

int main(int argc, char **argv)
{
    if (argc > 1 && strcmp(argv[1], "--version") == 0) {
        printf("ckpt %s\n", ckpt_version_string());
        return 0;
    }
    fprintf(stderr, "usage: ckpt <command> ...\n");
    return 2;
}
