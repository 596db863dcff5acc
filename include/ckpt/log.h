/* ckpt/log.h - the log callback the library reports through instead of
 * printing (saves dispatched, durable, skipped, failed, ...). */
#ifndef CKPT_LOG_H
#define CKPT_LOG_H

#include "common.h"

CKPT_BEGIN_DECL

/** Log levels, most verbose first. */
typedef enum ckpt_log_level {
    CKPT_LOG_DEBUG = 0,
    CKPT_LOG_INFO = 1,
    CKPT_LOG_WARN = 2,
    CKPT_LOG_ERROR = 3
} ckpt_log_level;

/** Receives one formatted line (no trailing newline). May be called from
 *  the background writer thread; it must be thread-safe. */
typedef void (*ckpt_log_fn)(int level, const char *message, void *payload);

/** Name of a level: "debug", "info", "warn", "error". */
CKPT_EXTERN(const char *) ckpt_log_level_name(int level);

CKPT_END_DECL

#endif
