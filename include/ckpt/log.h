/* ckpt/log.h - the log callback the library reports through (saves
 * dispatched, durable, skipped, failed, ...), its levels, and the stderr
 * logger the hooks and the monitored session use when given none. */
#ifndef CKPT_LOG_H
#define CKPT_LOG_H

#include "common.h"

CKPT_BEGIN_DECL

/** Log levels, most verbose first. 0 is never a level: in every options
 *  struct a `log_level` of 0 means the default, CKPT_LOG_INFO. */
typedef enum ckpt_log_level {
    CKPT_LOG_DEFAULT = 0, /**< in options: the default (INFO) */
    CKPT_LOG_DEBUG = 1,
    CKPT_LOG_INFO = 2,
    CKPT_LOG_WARN = 3,
    CKPT_LOG_ERROR = 4,
    CKPT_LOG_OFF = 5 /**< in options: log nothing */
} ckpt_log_level;

/** Receives one formatted line (no trailing newline). May be called from
 *  the background writer thread; it must be thread-safe. */
typedef void (*ckpt_log_fn)(int level, const char *message, void *payload);

/** Name of a level: "debug", "info", "warn", "error" ("default" and "off"
 *  for the options-only values, "unknown" for anything else). */
CKPT_EXTERN(const char *) ckpt_log_level_name(int level);

/** A ckpt_log_fn that writes "ckpt: <level>: <message>\n" to stderr (one
 *  write per line, so lines of two threads do not interleave); `payload`
 *  is ignored. The checkpoint hooks, the other standard hooks and the
 *  monitored session log through it when their options name no `log`;
 *  set `log_level = CKPT_LOG_OFF` to silence them, or `log` to redirect.
 *  A stderr that cannot take the line (closed; a pipe whose reader went
 *  away) loses it: SIGPIPE is blocked on the calling thread for the write,
 *  so a log line never ends the process (docs/threading.md). */
CKPT_EXTERN(void)
ckpt_log_stderr(int level, const char *message, void *payload);

/** Copy `text` into out[0..cap) for showing on a terminal: printable ASCII
 *  and valid UTF-8 of printable characters as they are; every other byte
 *  (control bytes such as ESC and newline, DEL, C1 controls, line
 *  separators and direction marks, bytes that are not UTF-8) as "\xHH". The
 *  copy is cut at a character boundary to fit and always terminated (when
 *  cap > 0). The library's error messages and log lines already follow
 *  this rule; use it for paths and names the API returns (a state file's
 *  entries, tensor names), which are data. NULL `text` is "".
 *  @return the length written (0 when out is NULL or cap is 0) */
CKPT_EXTERN(size_t)
ckpt_text_printable(char *out, size_t cap, const char *text);

/** ckpt_text_printable of n bytes that may hold NUL (a tensor name is a
 *  byte string): NUL becomes "\x00". 4 * n + 1 bytes of `out` always
 *  suffice. NULL `bytes` is allowed when n is 0. */
CKPT_EXTERN(size_t)
ckpt_text_printable_n(char *out, size_t cap, const void *bytes, size_t n);

CKPT_END_DECL

#endif
