/* common/tensor.c - dtype sizes and names (TensorFlow's Python names; the
 * one table of them), element counts and byte sizes of shapes with
 * overflow checks, and the widening of half and bfloat16 values to
 * float. */
#include "ckpt/tensor.h"
#include "internal.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

struct dtype_info {
    int dtype;
    size_t size; /* 0: variable-size or unsupported */
    const char *name;
};

static const struct dtype_info dtype_table[] = {
    {CKPT_DT_FLOAT, 4, "float32"},
    {CKPT_DT_DOUBLE, 8, "float64"},
    {CKPT_DT_INT32, 4, "int32"},
    {CKPT_DT_UINT8, 1, "uint8"},
    {CKPT_DT_INT16, 2, "int16"},
    {CKPT_DT_INT8, 1, "int8"},
    {CKPT_DT_STRING, 0, "string"},
    {CKPT_DT_COMPLEX64, 8, "complex64"},
    {CKPT_DT_INT64, 8, "int64"},
    {CKPT_DT_BOOL, 1, "bool"},
    {CKPT_DT_QINT8, 1, "qint8"},
    {CKPT_DT_QUINT8, 1, "quint8"},
    {CKPT_DT_QINT32, 4, "qint32"},
    {CKPT_DT_BFLOAT16, 2, "bfloat16"},
    {CKPT_DT_QINT16, 2, "qint16"},
    {CKPT_DT_QUINT16, 2, "quint16"},
    {CKPT_DT_UINT16, 2, "uint16"},
    {CKPT_DT_COMPLEX128, 16, "complex128"},
    {CKPT_DT_HALF, 2, "float16"},
    {CKPT_DT_RESOURCE, 0, "resource"},
    {CKPT_DT_VARIANT, 0, "variant"},
    {CKPT_DT_UINT32, 4, "uint32"},
    {CKPT_DT_UINT64, 8, "uint64"},
    {CKPT_DT_FLOAT8_E5M2, 1, "float8_e5m2"},
    {CKPT_DT_FLOAT8_E4M3FN, 1, "float8_e4m3fn"},
    {CKPT_DT_FLOAT8_E4M3FNUZ, 1, "float8_e4m3fnuz"},
    {CKPT_DT_FLOAT8_E4M3B11FNUZ, 1, "float8_e4m3b11fnuz"},
    {CKPT_DT_FLOAT8_E5M2FNUZ, 1, "float8_e5m2fnuz"},
    /* TensorFlow's sub-byte integers: outside ckpt_dtype, so
     * ckpt_dtype_name() and ckpt_dtype_from_name() do not know them, but
     * messages about a bundle that holds one name them. */
    {29, 0, "int4"},
    {30, 0, "uint4"},
    {31, 0, "int2"},
    {32, 0, "uint2"},
};

/* The last value of ckpt_dtype; the table's later rows are for messages. */
#define LAST_PUBLIC_DTYPE CKPT_DT_FLOAT8_E5M2FNUZ

static const struct dtype_info *find_dtype(int dtype)
{
    for (size_t i = 0; i < CKPT__ARRAY_SIZE(dtype_table); i++)
        if (dtype_table[i].dtype == dtype)
            return &dtype_table[i];
    return NULL;
}

size_t ckpt_dtype_size(int dtype)
{
    const struct dtype_info *info = find_dtype(dtype);
    return info ? info->size : 0;
}

int ckpt_dtype_is_supported(int dtype)
{
    return ckpt_dtype_size(dtype) > 0 || dtype == CKPT_DT_STRING;
}

const char *ckpt_dtype_name(int dtype)
{
    const struct dtype_info *info = find_dtype(dtype);
    return info && info->dtype <= LAST_PUBLIC_DTYPE ? info->name : NULL;
}

int ckpt_dtype_from_name(const char *name)
{
    if (!name)
        return CKPT_DT_INVALID;
    for (size_t i = 0; i < CKPT__ARRAY_SIZE(dtype_table); i++)
        if (dtype_table[i].dtype <= LAST_PUBLIC_DTYPE &&
            strcmp(dtype_table[i].name, name) == 0)
            return dtype_table[i].dtype;
    return CKPT_DT_INVALID;
}

const char *ckpt__dtype_label(int dtype)
{
    const struct dtype_info *info = find_dtype(dtype);
    return info ? info->name : "unknown";
}

bool ckpt__dtype_known(int dtype)
{
    return find_dtype(dtype) != NULL;
}

int ckpt_shape_num_elements(int64_t *out, const ckpt_shape *shape)
{
    int64_t n = 1;
    CKPT__CHECK_ARG(out);
    CKPT__CHECK_ARG(shape);
    if (shape->rank < 0 || shape->rank > CKPT_MAX_RANK)
        return ckpt__error(CKPT_EINVAL, "shape: rank %d out of range 0..%d",
                           shape->rank, CKPT_MAX_RANK);
    for (int i = 0; i < shape->rank; i++) {
        if (shape->dims[i] < 0)
            return ckpt__error(CKPT_EINVAL, "shape: dim %d is negative (%lld)",
                               i, (long long)shape->dims[i]);
    }
    for (int i = 0; i < shape->rank; i++) {
        if (shape->dims[i] == 0) {
            n = 0;
            break;
        }
        if (ckpt__mul_overflow_i64(n, shape->dims[i], &n))
            return ckpt__error(CKPT_EINVAL,
                               "shape: element count overflows int64");
    }
    *out = n;
    return 0;
}

int ckpt_tensor_byte_size(int64_t *out, int dtype, const ckpt_shape *shape)
{
    int64_t n;
    size_t esize = ckpt_dtype_size(dtype);
    int err;
    CKPT__CHECK_ARG(out);
    CKPT__CHECK_ARG(shape);
    if (esize == 0)
        return ckpt__error(CKPT_ENOTSUP, "dtype %d (%s) has no fixed size",
                           dtype, ckpt__dtype_label(dtype));
    err = ckpt_shape_num_elements(&n, shape);
    if (err < 0)
        return err;
    if (ckpt__mul_overflow_i64(n, (int64_t)esize, out))
        return ckpt__error(CKPT_EINVAL, "shape: byte size overflows int64");
    return 0;
}

float ckpt_half_to_float(uint16_t bits)
{
    int exp = (bits >> 10) & 0x1f;
    int mant = bits & 0x3ff;
    float v;
    if (exp == 0)
        v = ldexpf((float)mant, -24);
    else if (exp == 31)
        v = mant ? NAN : INFINITY;
    else
        v = ldexpf((float)(mant | 0x400), exp - 25);
    return (bits & 0x8000) ? -v : v;
}

float ckpt_bfloat16_to_float(uint16_t bits)
{
    uint32_t wide = (uint32_t)bits << 16;
    float f;
    memcpy(&f, &wide, sizeof(f));
    return f;
}

int ckpt_shape_equal(const ckpt_shape *a, const ckpt_shape *b)
{
    if (!a || !b)
        return a == b;
    if (a->rank != b->rank)
        return 0;
    for (int i = 0; i < a->rank && i < CKPT_MAX_RANK; i++)
        if (a->dims[i] != b->dims[i])
            return 0;
    return 1;
}

size_t ckpt_shape_format(char *out, size_t n, const ckpt_shape *shape)
{
    /* 32 dims of at most 20 digits plus ", " fit comfortably. */
    char text[CKPT_MAX_RANK * 24 + 8];
    size_t used = 0;
    int rank;
    if (!shape) {
        if (n > 0)
            snprintf(out, n, "(null)");
        return 6;
    }
    if (shape->rank < 0 || shape->rank > CKPT_MAX_RANK) {
        /* not a shape: say so rather than print some of it */
        used =
            (size_t)snprintf(text, sizeof(text), "(bad rank %d)", shape->rank);
        if (n > 0)
            snprintf(out, n, "%s", text);
        return used;
    }
    rank = shape->rank;
    text[used++] = '[';
    for (int i = 0; i < rank; i++)
        used +=
            (size_t)snprintf(text + used, sizeof(text) - used,
                             i ? ", %lld" : "%lld", (long long)shape->dims[i]);
    text[used++] = ']';
    text[used] = '\0';
    if (n > 0)
        snprintf(out, n, "%s", text);
    return used;
}
