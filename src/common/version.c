/* common/version.c - the run-time version of the library. */
#include "ckpt/version.h"

int ckpt_version_number(void)
{
    return CKPT_VERSION_NUMBER;
}

const char *ckpt_version_string(void)
{
    return CKPT_VERSION_STRING;
}
