/* ckpt/common.h - export macros, C++ guards, and the small value types
 * (byte slices and growable buffers) shared by every public header. */
#ifndef CKPT_COMMON_H
#define CKPT_COMMON_H

#include <stddef.h>
#include <stdint.h>

#if defined(__GNUC__)
#define CKPT_EXTERN(type) __attribute__((visibility("default"))) type
#else
#define CKPT_EXTERN(type) type
#endif

#ifdef __cplusplus
#define CKPT_BEGIN_DECL extern "C" {
#define CKPT_END_DECL }
#else
#define CKPT_BEGIN_DECL
#define CKPT_END_DECL
#endif

CKPT_BEGIN_DECL

/** A borrowed run of bytes; not NUL-terminated unless documented. */
typedef struct ckpt_slice {
    const void *ptr; /**< first byte (may be NULL when len is 0) */
    size_t len;      /**< number of bytes */
} ckpt_slice;

/** A growable byte buffer owned by the caller and released with
 *  ckpt_buf_dispose(). The library keeps `ptr` NUL-terminated so a buffer
 *  holding text can be used as a C string. Initialise with CKPT_BUF_INIT. */
typedef struct ckpt_buf {
    char *ptr;    /**< contents (NULL until something is written) */
    size_t size;  /**< bytes used, excluding the terminating NUL */
    size_t asize; /**< bytes allocated */
} ckpt_buf;

/** An empty buffer. */
/* clang-format off */
#define CKPT_BUF_INIT {NULL, 0, 0}
/* clang-format on */

/** Release the memory of a buffer and reset it to empty; NULL is ignored. */
CKPT_EXTERN(void) ckpt_buf_dispose(ckpt_buf *buf);

CKPT_END_DECL

#endif
