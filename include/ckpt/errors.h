/* ckpt/errors.h - error codes, their static descriptions, and the
 * thread-local "last error" message that names the file, tensor or
 * argument at fault. */
#ifndef CKPT_ERRORS_H
#define CKPT_ERRORS_H

#include "common.h"

CKPT_BEGIN_DECL

/** Every fallible call returns 0 or one of these negative codes. */
typedef enum ckpt_error_code {
    CKPT_OK = 0,
    CKPT_ERROR = -1,      /**< generic failure */
    CKPT_ENOMEM = -2,     /**< out of memory */
    CKPT_EINVAL = -3,     /**< invalid argument (or dtype/shape mismatch) */
    CKPT_EIO = -4,        /**< an I/O operation failed */
    CKPT_ENOSPC = -5,     /**< no space left on the device (or quota) */
    CKPT_ENOTFOUND = -6,  /**< a file, checkpoint or tensor does not exist */
    CKPT_EEXISTS = -7,    /**< it already exists (e.g. a duplicate name) */
    CKPT_ECORRUPT = -8,   /**< damaged data: bad CRC, magic, proto, size */
    CKPT_EVERSION = -9,   /**< unsupported version (format or options) */
    CKPT_EBUSY = -10,     /**< a save is still in flight, or another
                               process's saver holds the directory */
    CKPT_ECANCELED = -11, /**< the operation was cancelled */
    CKPT_EUSER = -12,     /**< a user callback or hook failed */
    CKPT_ENOTSUP = -13,   /**< valid but not supported (e.g. a dtype) */
    CKPT_ESTATE = -14,    /**< call made in the wrong state */
    CKPT_EOUT_OF_RANGE = -15, /**< input exhausted: a clean end */
    CKPT_EABORTED = -16,      /**< recoverable: re-create the session */
    CKPT_EUNAVAILABLE = -17,  /**< recoverable: re-create the session */
    CKPT_EACCES = -18,        /**< permission denied (EACCES, EPERM), or a
                                   read-only file system (EROFS) */
    CKPT_ETIMEDOUT = -19,     /**< a wait ran past its timeout */
    CKPT_ESTOPITER = -20      /**< a step function asked to stop: a clean end */
} ckpt_error_code;

/** The last error recorded on the calling thread. */
typedef struct ckpt_error {
    int code;            /**< a ckpt_error_code, 0 when none */
    const char *message; /**< names the place, e.g. "x.index: bad magic" */
} ckpt_error;

/** Static text describing `code` (never NULL). */
CKPT_EXTERN(const char *) ckpt_strerror(int code);

/** Short constant name of `code`, e.g. "CKPT_ECORRUPT" (never NULL). */
CKPT_EXTERN(const char *) ckpt_error_name(int code);

/** The calling thread's last error. Read it right after a call returned a
 *  negative code: it holds that call's code and message. After a call
 *  that returned 0 it tells nothing, as errno does: some successful calls
 *  leave an earlier error in place, others clear it (those that handled an
 *  error of their own, such as ckpt_saver_open). `message` points into
 *  the calling thread's own buffer: the pointer stays usable while the
 *  thread lives, but its text is this error's only until the next call on
 *  this thread that records or clears one (a failing call, one that
 *  handled an error of its own, ckpt_error_clear, which empties it): copy
 *  the text to keep it across further calls or to give it to another
 *  thread. Another
 *  thread's failures never show here; a background write's failure shows
 *  on the thread of the call that returns it (save, poll, wait, close, or
 *  a session's run). When no error was recorded the code is 0 and the
 *  message is "no error". */
CKPT_EXTERN(const ckpt_error *) ckpt_error_last(void);

/** Forget the calling thread's last error. */
CKPT_EXTERN(void) ckpt_error_clear(void);

/** Record `code` with a printf-style message as the calling thread's last
 *  error and return `code`. For code the library calls back (a ckpt_fs
 *  method, a variable's read or write callback, a hook or a listener) to
 *  say what failed, e.g. naming its file: the library passes that message
 *  on, prefixed with its own context, instead of a generic one.
 *  `code` is a ckpt_error_code (negative); any other value is recorded as
 *  CKPT_EUSER. A NULL `fmt` records ckpt_strerror(code).
 *  Every callback returns to the library, failure included: a C++
 *  exception or a longjmp out of one skips the library's cleanup (locks,
 *  temporary files, memory) and leaves the object it was called for
 *  unusable; catch inside the callback and return
 *  ckpt_error_set(CKPT_EUSER, "%s", e.what()) instead (docs/guide.md,
 *  section 5).
 *  @return the code recorded */
CKPT_EXTERN(int)
ckpt_error_set(int code, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;

CKPT_END_DECL

#endif
