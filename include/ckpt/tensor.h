/* ckpt/tensor.h - data types (TensorFlow's DataType numbers), shapes and
 * the helpers that size and name them.
 *
 * NULL arguments: a function returning int rejects a NULL pointer it needs
 * with CKPT_EINVAL ("<function>: <argument> is NULL"); pointers documented
 * as optional may be NULL; the functions that return no error code say
 * what a NULL gives. */
#ifndef CKPT_TENSOR_H
#define CKPT_TENSOR_H

#include "common.h"
#include "errors.h" /* the codes and ckpt_error_last() of every call */

CKPT_BEGIN_DECL

/** TensorFlow DataType values (tensorflow/core/framework/types.proto). */
typedef enum ckpt_dtype {
    CKPT_DT_INVALID = 0,
    CKPT_DT_FLOAT = 1,
    CKPT_DT_DOUBLE = 2,
    CKPT_DT_INT32 = 3,
    CKPT_DT_UINT8 = 4,
    CKPT_DT_INT16 = 5,
    CKPT_DT_INT8 = 6,
    CKPT_DT_STRING = 7,
    CKPT_DT_COMPLEX64 = 8,
    CKPT_DT_INT64 = 9,
    CKPT_DT_BOOL = 10,
    CKPT_DT_QINT8 = 11,
    CKPT_DT_QUINT8 = 12,
    CKPT_DT_QINT32 = 13,
    CKPT_DT_BFLOAT16 = 14,
    CKPT_DT_QINT16 = 15,
    CKPT_DT_QUINT16 = 16,
    CKPT_DT_UINT16 = 17,
    CKPT_DT_COMPLEX128 = 18,
    CKPT_DT_HALF = 19,
    CKPT_DT_RESOURCE = 20,
    CKPT_DT_VARIANT = 21,
    CKPT_DT_UINT32 = 22,
    CKPT_DT_UINT64 = 23,
    CKPT_DT_FLOAT8_E5M2 = 24,
    CKPT_DT_FLOAT8_E4M3FN = 25,
    CKPT_DT_FLOAT8_E4M3FNUZ = 26,
    CKPT_DT_FLOAT8_E4M3B11FNUZ = 27,
    CKPT_DT_FLOAT8_E5M2FNUZ = 28
} ckpt_dtype;

/** Largest rank the library accepts; deeper shapes are rejected. */
#define CKPT_MAX_RANK 32

/** The longest tensor name a writer (bundle writer, savers) accepts, in
 *  bytes: an index entry must fit in one of the index's blocks, which
 *  readers take up to 32 MiB. Readers accept any name that fits. */
#define CKPT_MAX_NAME_BYTES (1u << 20)

/** A fully defined shape, outermost dimension first. Rank 0 is a scalar. */
typedef struct ckpt_shape {
    int rank;                    /**< 0 .. CKPT_MAX_RANK */
    int64_t dims[CKPT_MAX_RANK]; /**< each >= 0 */
} ckpt_shape;

/** Bytes per element of a fixed-size dtype; 0 for DT_STRING, DT_VARIANT,
 *  DT_RESOURCE, DT_INVALID and any value the library does not support. */
CKPT_EXTERN(size_t) ckpt_dtype_size(int dtype);

/** Whether checkpoints of `dtype` can be read and written (every fixed-size
 *  dtype above, and DT_STRING). */
CKPT_EXTERN(int) ckpt_dtype_is_supported(int dtype);

/** TensorFlow's lower-case name ("float32", "int64", "string", "bfloat16",
 *  "half" is "float16", ...), or NULL for an unknown value. */
CKPT_EXTERN(const char *) ckpt_dtype_name(int dtype);

/** The dtype whose ckpt_dtype_name() is `name`, or CKPT_DT_INVALID. */
CKPT_EXTERN(int) ckpt_dtype_from_name(const char *name);

/** Number of elements of `shape` (1 for a scalar, 0 when a dim is 0).
 *  @return 0, or CKPT_EINVAL for a negative dim, a rank out of range or a
 *          count that overflows int64. */
CKPT_EXTERN(int) ckpt_shape_num_elements(int64_t *out, const ckpt_shape *shape);

/** Bytes of a fixed-size tensor of `dtype` and `shape`.
 *  @return 0, CKPT_ENOTSUP for a variable-size or unknown dtype, or
 *          CKPT_EINVAL for a bad shape or a size that overflows int64. */
CKPT_EXTERN(int)
ckpt_tensor_byte_size(int64_t *out, int dtype, const ckpt_shape *shape);

/** An IEEE-754 binary16 (DT_HALF) value, given as its bits, widened to
 *  float (subnormals, infinities and NaN included). */
CKPT_EXTERN(float) ckpt_half_to_float(uint16_t bits);

/** A bfloat16 value, given as its bits, widened to float. */
CKPT_EXTERN(float) ckpt_bfloat16_to_float(uint16_t bits);

/** Whether two shapes have the same rank and dimensions (two NULLs are
 *  equal, a NULL and a shape are not). */
CKPT_EXTERN(int) ckpt_shape_equal(const ckpt_shape *a, const ckpt_shape *b);

/** Write "[d0, d1, ...]" ("[]" for a scalar, "(null)" for a NULL shape,
 *  "(bad rank R)" for a rank outside 0..CKPT_MAX_RANK)
 *  into `out` (size `n`, always NUL-terminated). @return the length it
 *  needed, like snprintf. */
CKPT_EXTERN(size_t)
ckpt_shape_format(char *out, size_t n, const ckpt_shape *shape);

CKPT_END_DECL

#endif
