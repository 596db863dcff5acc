/* hooks/format_value.c - turning a fetched tensor into log text
 * (LoggingTensorHook) and testing it for NaN (NanTensorHook). Values are in
 * host byte order; half and bfloat16 are widened to float. */
#include "common/internal.h"
#include "hooks/basic_hooks_internal.h"

#include <math.h>
#include <string.h>

#define MAX_SHOWN 6

/* Element i of `v` as a double when it is a real number type. */
static int element_as_double(const ckpt_value *v, size_t i, double *out)
{
    const uint8_t *p = (const uint8_t *)v->data + i * ckpt_dtype_size(v->dtype);
    union {
        float f;
        double d;
        uint16_t u16;
    } u;
    switch (v->dtype) {
    case CKPT_DT_FLOAT:
        memcpy(&u.f, p, sizeof(float));
        *out = u.f;
        return 1;
    case CKPT_DT_DOUBLE:
        memcpy(&u.d, p, sizeof(double));
        *out = u.d;
        return 1;
    case CKPT_DT_HALF:
        memcpy(&u.u16, p, 2);
        *out = ckpt_half_to_float(u.u16);
        return 1;
    case CKPT_DT_BFLOAT16:
        memcpy(&u.u16, p, 2);
        *out = ckpt_bfloat16_to_float(u.u16);
        return 1;
    default:
        return 0;
    }
}

/* Element i of `v` as an integer when it is an integer or bool type. */
static int element_as_int(const ckpt_value *v, size_t i, long long *s,
                          unsigned long long *u, int *is_unsigned)
{
    const uint8_t *p = (const uint8_t *)v->data + i * ckpt_dtype_size(v->dtype);
    int8_t i8;
    int16_t i16;
    int32_t i32;
    int64_t i64;
    uint16_t u16;
    uint32_t u32;
    uint64_t u64;
    *is_unsigned = 0;
    switch (v->dtype) {
    case CKPT_DT_INT8:
        memcpy(&i8, p, 1);
        *s = i8;
        return 1;
    case CKPT_DT_INT16:
        memcpy(&i16, p, 2);
        *s = i16;
        return 1;
    case CKPT_DT_INT32:
        memcpy(&i32, p, 4);
        *s = i32;
        return 1;
    case CKPT_DT_INT64:
        memcpy(&i64, p, 8);
        *s = i64;
        return 1;
    case CKPT_DT_UINT8:
    case CKPT_DT_BOOL:
        *u = p[0];
        *is_unsigned = 1;
        return 1;
    case CKPT_DT_UINT16:
        memcpy(&u16, p, 2);
        *u = u16;
        *is_unsigned = 1;
        return 1;
    case CKPT_DT_UINT32:
        memcpy(&u32, p, 4);
        *u = u32;
        *is_unsigned = 1;
        return 1;
    case CKPT_DT_UINT64:
        memcpy(&u64, p, 8);
        *u = u64;
        *is_unsigned = 1;
        return 1;
    default:
        return 0;
    }
}

static int format_element(ckpt_buf *out, const ckpt_value *v, size_t i)
{
    double d;
    long long s = 0;
    unsigned long long u = 0;
    int is_unsigned;
    if (element_as_double(v, i, &d))
        return ckpt__buf_printf(out, "%g", d);
    if (element_as_int(v, i, &s, &u, &is_unsigned)) {
        if (v->dtype == CKPT_DT_BOOL)
            return ckpt__buf_puts(out, u ? "true" : "false");
        return is_unsigned ? ckpt__buf_printf(out, "%llu", u)
                           : ckpt__buf_printf(out, "%lld", s);
    }
    return ckpt__buf_puts(out, "?");
}

int ckpt__format_value(ckpt_buf *out, const ckpt_value *v)
{
    size_t esize = ckpt_dtype_size(v->dtype);
    size_t n = esize ? v->size / esize : 0;
    int err;
    if (esize == 0 || !v->data)
        return ckpt__buf_printf(out, "<%s>",
                                ckpt_dtype_name(v->dtype)
                                    ? ckpt_dtype_name(v->dtype)
                                    : "unknown dtype");
    if (v->shape.rank == 0 && n == 1)
        return format_element(out, v, 0);
    err = ckpt__buf_puts(out, "[");
    for (size_t i = 0; i < n && i < MAX_SHOWN && err == 0; i++) {
        if (i > 0)
            err = ckpt__buf_puts(out, ", ");
        if (err == 0)
            err = format_element(out, v, i);
    }
    if (err == 0 && n > MAX_SHOWN)
        err = ckpt__buf_puts(out, ", ...");
    if (err == 0)
        err = ckpt__buf_puts(out, "]");
    return err;
}

int ckpt__value_has_nan(const ckpt_value *v)
{
    size_t esize = ckpt_dtype_size(v->dtype);
    size_t n = esize ? v->size / esize : 0;
    double d;
    if (v->dtype != CKPT_DT_FLOAT && v->dtype != CKPT_DT_DOUBLE &&
        v->dtype != CKPT_DT_HALF && v->dtype != CKPT_DT_BFLOAT16)
        return -1;
    for (size_t i = 0; i < n; i++)
        if (element_as_double(v, i, &d) && isnan(d))
            return 1;
    return 0;
}
