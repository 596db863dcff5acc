/* common/internal.h - helpers shared by every layer of the library: the
 * allocator, recording the last error, byte-buffer growth, and small
 * portable utilities. Not installed. */
#ifndef CKPT_COMMON_INTERNAL_H
#define CKPT_COMMON_INTERNAL_H

#include "ckpt/clock.h"
#include "ckpt/common.h"
#include "ckpt/errors.h"
#include "ckpt/log.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdbool.h>
#include <sys/types.h>

#if defined(__GNUC__)
#define CKPT__PRINTF(f, a) __attribute__((format(printf, f, a)))
#define CKPT__LIKELY(x) __builtin_expect(!!(x), 1)
#define CKPT__UNLIKELY(x) __builtin_expect(!!(x), 0)
#else
#define CKPT__PRINTF(f, a)
#define CKPT__LIKELY(x) (x)
#define CKPT__UNLIKELY(x) (x)
#endif

#define CKPT__ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

/* ---- allocation (all library memory goes through these) ---------------- */
void *ckpt__malloc(size_t n);
void *ckpt__calloc(size_t count, size_t size);
void *ckpt__realloc(void *p, size_t n);
void ckpt__free(void *p);
/* Room for one more item of `size` bytes in a growing array of which
 * `used` are in use: `items` is the address of the array's pointer (a
 * T **, given as void *), *cap its capacity, which becomes `first` on
 * the first growth and doubles after. 0, or CKPT_ENOMEM (recorded; the
 * array and *cap unchanged). */
int ckpt__reserve_one(void *items, size_t *cap, size_t used, size_t size,
                      size_t first);
char *ckpt__strdup(const char *s);
char *ckpt__strndup(const char *s, size_t n);

/* `bytes` of zeroed anonymous memory at a 2 MiB boundary, asked for as
 * transparent huge pages (MADV_HUGEPAGE, where the system has it); NULL
 * when it cannot be mapped (or bytes is 0). Given back with
 * ckpt__unmap_huge(p, bytes). For memory the library keeps or measures
 * with, not for a caller's data (common/huge_map.c). */
uint8_t *ckpt__map_huge(size_t bytes);
void ckpt__unmap_huge(uint8_t *p, size_t bytes);
/* The same mapping without asking for huge pages (the caller may, with
 * madvise: all of it can then be huge pages); NULL with errno set (EINVAL
 * for 0 bytes, or mmap's). Given back with ckpt__unmap_huge too. */
uint8_t *ckpt__map_aligned(size_t bytes);

/* CKPT_EINVAL when `name` is longer than CKPT_MAX_NAME_BYTES, naming
 * `who` and the name's start (name_index.c); else 0. */
int ckpt__check_name_length(const char *who, const char *name);

/* The name check of a variable being registered (ckpt_saver_add_var,
 * ckpt_mpi_saver_add_var, ckpt_graph_add_var): CKPT_EINVAL "<who>:
 * variable without a name (its name is NULL|empty)" for a NULL or empty
 * name, else
 * ckpt__check_name_length's (name_index.c); else 0. */
int ckpt__check_var_name(const char *who, const char *name);

/* write(2) with `sig` (SIGXFSZ or SIGPIPE) blocked on the calling thread,
 * and one this write raised (failing with `sig_errno`: EFBIG, EPIPE)
 * taken back: the write fails instead of the signal ending the process
 * (common/quiet_write.c). */
ssize_t ckpt__write_no_signal(int fd, const void *p, size_t n, int sig,
                              int sig_errno);

/* The largest single read()/write() request; Linux caps one transfer just
 * below 2 GiB anyway. */
#define CKPT__IO_CHUNK_MAX ((size_t)1 << 30)

/* All `n` bytes at `p` to `fd` through ckpt__write_no_signal, looping over
 * short writes and EINTR, at most CKPT__IO_CHUNK_MAX bytes a call. 0, a
 * negative errno, or 1 when write() made no progress without an errno;
 * *written: the bytes written either way. */
int ckpt__write_all_no_signal(int fd, const void *p, size_t n, int sig,
                              int sig_errno, size_t *written);

/* pthread_create for the library's own threads (common/thread.c), with a
 * stack of at least 1 MiB whatever RLIMIT_STACK says, and of 1 MiB where
 * RLIMIT_STACK's cannot be mapped (EAGAIN); 0 or the error number
 * pthread_create returns. */
int ckpt__thread_create(pthread_t *id, void *(*fn)(void *), void *arg);
/* Disable cancellation of the calling thread (pthread_setcancelstate) for
 * a call that must not be cut short (it holds a mutex across a wait, or
 * owns helper threads it joins); returns the state to hand back to
 * ckpt__cancel_restore, after which a pending cancel takes effect at the
 * thread's next cancellation point. */
int ckpt__cancel_off(void);
void ckpt__cancel_restore(int old_state);

/* The body of a call that returns `call` (an int expression, evaluated
 * once) run with cancellation off: ckpt__cancel_off, the call,
 * ckpt__cancel_restore, return its value. */
#define CKPT__RETURN_UNCANCELLED(call)                                         \
    do {                                                                       \
        int cancel_state_ = ckpt__cancel_off();                                \
        int result_ = (call);                                                  \
        ckpt__cancel_restore(cancel_state_);                                   \
        return result_;                                                        \
    } while (0)

/* A number that tells the calling thread from every other thread the
 * process ran or runs, never 0 (common/thread.c): what an object driven
 * from one thread records while a call is inside it. */
uintptr_t ckpt__thread_token(void);

/* The length of the tensor name `name` (n bytes) without a TensorFlow
 * graph tensor's output suffix (":0", ":1", ...), or n when it has none:
 * checkpoint keys are variable names, which have none (name_index.c). */
size_t ckpt__without_output_suffix(const char *name, size_t n);
/* The length of `name` (n bytes) without a TensorFlow 1 partition suffix
 * "/part_<digits>" (the graph's name of one part of a partitioned
 * variable, which a checkpoint saves as a piece of the variable's own
 * name), or n when it has none. */
size_t ckpt__without_part_suffix(const char *name, size_t n);

/* ---- a name -> position index (name_index.c) ----------------------------
 * Over names the caller keeps alive and unchanged while indexed. */
typedef struct ckpt__name_slot {
    const char *name; /* NULL: empty */
    size_t pos;
} ckpt__name_slot;
typedef struct ckpt__name_index {
    ckpt__name_slot *slots;
    size_t nslots; /* 0 or a power of two, at least twice the names */
} ckpt__name_index;
/* The position put under `name`, or SIZE_MAX. */
size_t ckpt__name_index_find(const ckpt__name_index *x, const char *name);
/* Make room for `count` names in all (call before putting one more). */
int ckpt__name_index_reserve(ckpt__name_index *x, size_t count);
/* Put `name` (not yet indexed; room reserved) at `pos`. */
void ckpt__name_index_put(ckpt__name_index *x, const char *name, size_t pos);
void ckpt__name_index_dispose(ckpt__name_index *x);

/* ---- errors ------------------------------------------------------------- */
/* Record `code` with a printf-style message as the thread's last error and
 * return `code`, so a failure reads: return ckpt__error(CKPT_EINVAL, ...). */
int ckpt__error(int code, const char *fmt, ...) CKPT__PRINTF(2, 3);
int ckpt__error_v(int code, const char *fmt, va_list ap);
/* Map an errno value to a ckpt_error_code (ENOENT -> ENOTFOUND, ENOSPC and
 * EDQUOT -> ENOSPC, EACCES/EPERM -> EACCES, EEXIST -> EEXISTS, ENOMEM ->
 * ENOMEM, anything else -> EIO). */
int ckpt__code_from_errno(int err);
/* Record the mapped code with "<message>: <strerror(err)>" and return it. */
int ckpt__error_errno(int err, const char *fmt, ...) CKPT__PRINTF(2, 3);
/* Prepend "<context>: " to the current last error message (if any) and
 * return `code` unchanged; for adding the file or tensor name at a layer
 * that knows it. */
int ckpt__error_prefix(int code, const char *fmt, ...) CKPT__PRINTF(2, 3);
/* Give the current last error the code `code`, its message unchanged, and
 * return `code`. */
int ckpt__error_recode(int code);
/* A user callback (a variable's read or write callback) returned `rc`,
 * not 0: CKPT_EUSER, "<context>: <its message>" when it recorded one with
 * ckpt_error_set (the last error has code `rc`; clear the error before the
 * call), else "<context> (<rc>)". */
int ckpt__error_callback(int rc, const char *fmt, ...) CKPT__PRINTF(2, 3);
/* What ckpt_latest_checkpoint's CKPT_ENOTFOUND says when the state file
 * exists but does not parse (callers that warn about it look for it). */
#define CKPT__STATE_UNREADABLE "the state file is unreadable"

/* Record "out of memory" and return CKPT_ENOMEM. */
int ckpt__error_oom(void);

/* The size of the thread's last-error message buffer (and of a saved
 * copy), terminating NUL included: room for several paths of PATH_MAX
 * bytes and the error after them. A context prepended with
 * ckpt__error_prefix (or the head of ckpt__error_errno) that would not fit
 * is shortened in its middle, so the error at the end is always kept. */
#define CKPT__ERROR_MESSAGE_MAX 16384

/* A copy of the thread's last error, for code that must run a fallible
 * step (cleanup, a rollback, probing) without losing the error it reports:
 * save, run the step, restore. Saving and restoring never allocate and
 * never fail. */
typedef struct ckpt__saved_error {
    int code;
    char message[CKPT__ERROR_MESSAGE_MAX];
} ckpt__saved_error;

void ckpt__error_save(ckpt__saved_error *saved);
/* Make `saved` the last error again (code 0: clear it); returns its code,
 * so a cleanup path can end with: return ckpt__error_restore(&saved). */
int ckpt__error_restore(const ckpt__saved_error *saved);

/* A restore's checks of every variable (mismatches.c): add each check's
 * result (0 or an error, with the variable's name); finish returns 0 or
 * the first error, its message naming the other mismatching variables
 * (the first few), and frees what add kept. */
typedef struct ckpt__mismatches {
    int err;
    ckpt__saved_error first;
    ckpt_buf others;
    size_t more;
} ckpt__mismatches;
void ckpt__mismatches_init(ckpt__mismatches *m);
void ckpt__mismatches_add(ckpt__mismatches *m, int rc, const char *name);
int ckpt__mismatches_finish(ckpt__mismatches *m);

/* ---- NULL arguments of public functions ----------------------------------
 * The policy (docs/CONTRIBUTING.md, "NULL arguments"): a public function
 * that returns int rejects a NULL pointer it needs with CKPT_EINVAL and the
 * message "<function>: <argument> is NULL", before it does anything else.
 * CKPT__CHECK_ARG(arg) is that check; it returns from the calling function
 * and names the argument as written, so pass the parameter itself. */
int ckpt__error_null_arg(const char *function, const char *argument);
#define CKPT__CHECK_ARG(arg)                                                   \
    do {                                                                       \
        if (CKPT__UNLIKELY((arg) == NULL))                                     \
            return ckpt__error_null_arg(__func__, #arg);                       \
    } while (0)

/* Rewrite the message in s[0..cap) so a terminal shows it as text: bytes
 * a terminal would act on (controls, DEL, C1, direction marks, bytes that
 * are not UTF-8) as \xHH, cut to fit (printable.c). Errors and log lines
 * pass through it. */
void ckpt__make_printable(char *s, size_t cap);

/* Where `msg`, a message made printable as above, shows `text` (a path or
 * name as the program holds it, which the message shows escaped by the
 * same rule): the first place, with the length it takes there in
 * *shown_len (when not NULL), or NULL when it does not show it. */
const char *ckpt__message_find(const char *msg, const char *text,
                               size_t *shown_len);
/* Whether msg shows text (ckpt__message_find). */
int ckpt__message_names(const char *msg, const char *text);

/* ---- logging ------------------------------------------------------------ */
/* Format a line and pass it to `fn` when `level` >= `min_level` (nothing
 * when fn is NULL). */
void ckpt__log(ckpt_log_fn fn, void *payload, int min_level, int level,
               const char *fmt, ...) CKPT__PRINTF(5, 6);
void ckpt__logv(ckpt_log_fn fn, void *payload, int min_level, int level,
                const char *fmt, va_list ap);
/* A `log_level` option resolved: CKPT_LOG_DEFAULT (0) is CKPT_LOG_INFO. */
int ckpt__log_min_level(int level);

/* ---- versioned options structs ------------------------------------------ */
/* Check the `version` member of the options struct `what` (e.g. "saver
 * options"): 1 .. `current` is accepted (a caller built against an older
 * header keeps working); 0 (a zero-initialised struct) is CKPT_EVERSION
 * with a hint naming `init_macro`; a newer one is CKPT_EVERSION too. */
int ckpt__options_check_version(unsigned int version, unsigned int current,
                                const char *what, const char *init_macro);
/* A caller's clock (NULL is fine: the system clock): CKPT_EVERSION
 * "<what>: ckpt_clock version V is not one this library knows" unless its
 * version is 1 .. CKPT_CLOCK_VERSION, so a zero-initialised clock or one
 * from a newer header is refused before any of its members is called. */
int ckpt__clock_check(const ckpt_clock *clock, const char *what);
/* A caller's seconds (a timeout, a period, an option): CKPT_EINVAL
 * "<what>: <name> is NaN" for a NaN, which compares false both ways and
 * so would pass a `< 0` check into a deadline or a sleep; 0 otherwise. */
int ckpt__seconds_check(double seconds, const char *what, const char *name);
/* A timeout below 0 (no limit), or past about 30 years, which a deadline
 * cannot hold (time_t from such a double is undefined): -1; else it. */
double ckpt__timeout_or_unbounded(double seconds);

/* CLOCK_MONOTONIC in seconds: what the library's own measurements of this
 * machine (probes, timed pieces) time with, whatever clock a caller set. */
double ckpt__seconds_now(void);
/* The calling thread's CPU seconds (CLOCK_THREAD_CPUTIME_ID: a system call,
 * 1.36-1.50 us a call on a PVM guest, two runs of 10000, so not for every
 * small piece); time the thread waited (on a disk, for a core) does not
 * count. CLOCK_MONOTONIC where that clock is missing. */
double ckpt__thread_seconds_now(void);
/* `defaults` (`size` bytes: the current struct) into `dst`, then the first
 * `known` bytes of `src` (what the caller's version of the struct has)
 * over them, so fields added after the caller's version keep defaults. */
void ckpt__options_merge(void *dst, const void *defaults, size_t size,
                         const void *src, size_t known);
/* An *_options_init: check `version` as above and fill the first
 * `known` bytes of `dst` from `defaults`, with `version` stored. */
int ckpt__options_init(void *dst, const void *defaults, size_t known,
                       unsigned int version, unsigned int current,
                       const char *what, const char *init_macro);

/* ---- buffers ------------------------------------------------------------ */
/* Make room for at least `extra` more bytes (plus NUL). */
int ckpt__buf_grow(ckpt_buf *b, size_t extra);
int ckpt__buf_put(ckpt_buf *b, const void *data, size_t n);
int ckpt__buf_puts(ckpt_buf *b, const char *s);
int ckpt__buf_printf(ckpt_buf *b, const char *fmt, ...) CKPT__PRINTF(2, 3);
int ckpt__buf_set(ckpt_buf *b, const char *s); /* replace contents */
void ckpt__buf_clear(ckpt_buf *b);             /* size = 0, keep memory */
/* Move the contents out as a malloc'd NUL-terminated string; b is emptied. */
char *ckpt__buf_detach(ckpt_buf *b);

/* ---- paths -------------------------------------------------------------- */
/* dir + "/" + name into out (replacing); "" or "." dir gives name. */
int ckpt__path_join(ckpt_buf *out, const char *dir, const char *name);
/* The directory part of `path` ("." when it has none) into out. */
int ckpt__path_dirname(ckpt_buf *out, const char *path);
/* Pointer to the last component of `path` (borrowed). */
const char *ckpt__path_basename(const char *path);
/* `path` with its empty and "." components dropped and each ".." taking
 * away the component before it (lexically: symbolic links are not
 * followed), into out: "./a//b/../c" gives "a/c", "/x/../y" "/y", "../a"
 * "../a", "." "". */
int ckpt__path_normalize(ckpt_buf *out, const char *path);

/* ---- dtypes -------------------------------------------------------------- */
/* The dtype's TensorFlow name for messages: ckpt_dtype_name()'s, the name of
 * a dtype TensorFlow defines beyond ckpt_dtype ("int4", "uint4", "int2",
 * "uint2": 29-32, listed but never read), or "unknown". */
const char *ckpt__dtype_label(int dtype);
/* Whether TensorFlow defines `dtype` (ckpt_dtype's values and 29-32),
 * readable by the library or not. */
bool ckpt__dtype_known(int dtype);

/* ---- checked arithmetic ------------------------------------------------- */
static inline bool ckpt__mul_overflow_i64(int64_t a, int64_t b, int64_t *out)
{
    return __builtin_mul_overflow(a, b, out);
}
static inline bool ckpt__add_overflow_u64(uint64_t a, uint64_t b, uint64_t *out)
{
    return __builtin_add_overflow(a, b, out);
}

#endif
