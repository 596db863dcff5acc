/* common/options.c - one way to check and fill every versioned options
 * struct (in the manner of libgit2's GIT_INIT_STRUCTURE and its version
 * check): versions 1 .. current are accepted, a zero version gets a hint
 * naming the struct's INIT macro, and fields a caller's older struct lacks
 * keep their defaults; and the check of a caller's seconds. */
#include "internal.h"

#include <string.h>

int ckpt__options_check_version(unsigned int version, unsigned int current,
                                const char *what, const char *init_macro)
{
    if (version >= 1 && version <= current)
        return 0;
    if (version == 0)
        return ckpt__error(CKPT_EVERSION,
                           "%s: unsupported version 0 (the struct was not "
                           "initialised): start from %s",
                           what, init_macro);
    return ckpt__error(CKPT_EVERSION,
                       "%s: unsupported version %u: this library knows "
                       "versions 1 to %u (the struct was not initialised: "
                       "start from %s; or the program was built against a "
                       "newer ckpt header)",
                       what, version, current, init_macro);
}

void ckpt__options_merge(void *dst, const void *defaults, size_t size,
                         const void *src, size_t known)
{
    if (dst != defaults)
        memcpy(dst, defaults, size);
    if (src)
        memcpy(dst, src, known < size ? known : size);
}

int ckpt__options_init(void *dst, const void *defaults, size_t known,
                       unsigned int version, unsigned int current,
                       const char *what, const char *init_macro)
{
    int err;
    if (!dst)
        return ckpt__error(CKPT_EINVAL, "%s init: the struct is NULL", what);
    err = ckpt__options_check_version(version, current, what, init_macro);
    if (err < 0)
        return err;
    memcpy(dst, defaults, known);
    /* Every options struct starts with `unsigned int version`. */
    memcpy(dst, &version, sizeof(version));
    return 0;
}

int ckpt__seconds_check(double seconds, const char *what, const char *name)
{
    if (seconds != seconds)
        return ckpt__error(CKPT_EINVAL, "%s: %s is NaN", what, name);
    return 0;
}

double ckpt__timeout_or_unbounded(double seconds)
{
    return seconds < 0 || seconds > 1e9 ? -1.0 : seconds;
}
