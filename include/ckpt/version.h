/* ckpt/version.h - compile-time and run-time version numbers. */
#ifndef CKPT_VERSION_H
#define CKPT_VERSION_H

#include "common.h"

#define CKPT_VERSION_MAJOR 0
#define CKPT_VERSION_MINOR 1
#define CKPT_VERSION_PATCH 0
/** MAJOR*10000 + MINOR*100 + PATCH */
#define CKPT_VERSION_NUMBER                                                    \
    (CKPT_VERSION_MAJOR * 10000 + CKPT_VERSION_MINOR * 100 + CKPT_VERSION_PATCH)
#define CKPT_VERSION_STRING "0.1.0"

CKPT_BEGIN_DECL

/** The CKPT_VERSION_NUMBER the library was built with. */
CKPT_EXTERN(int) ckpt_version_number(void);

/** The CKPT_VERSION_STRING the library was built with. */
CKPT_EXTERN(const char *) ckpt_version_string(void);

CKPT_END_DECL

#endif
