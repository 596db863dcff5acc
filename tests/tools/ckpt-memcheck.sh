#!/bin/sh
# tests/tools/ckpt-memcheck.sh ARGS... - the `ckpt` tool ($CKPT_CLI_REAL)
# under valgrind memcheck, for the *_memcheck CLI test programs: any
# memcheck error (an uninitialised read, an invalid access, a leak) makes
# it exit 99, which no expected exit status matches.
exec valgrind --quiet --error-exitcode=99 --leak-check=full \
    --errors-for-leak-kinds=definite,indirect,possible \
    "$CKPT_CLI_REAL" "$@"
