/* tools/ckpt/cli_values.c - reading a tensor and printing its first values
 * as text or JSON: floats with enough digits to round-trip (%.9g for 32-bit
 * and narrower floats, which are widened to float first; %.17g for
 * double), complex numbers as (re,im), bools as true/false, strings
 * C-escaped in text and as JSON strings in JSON (bytes that are not valid
 * UTF-8 are mapped one by one to U+0000..U+00FF). */
#include "cli.h"

#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Text strings longer than this are cut unless every value is asked for. */
#define TEXT_STRING_MAX 100

/* ---- narrow floats ------------------------------------------------------- */

/* NaN/infinity conventions of the 8-bit float formats. */
enum minifloat_kind {
    MINI_IEEE, /* max exponent: inf (mantissa 0) or NaN */
    MINI_FN,   /* no inf; NaN only with every exponent and mantissa bit */
    MINI_FNUZ  /* no inf, no -0: the bit pattern of -0 is the only NaN */
};

static float minifloat_to_float(uint8_t b, int mbits, int bias,
                                enum minifloat_kind kind)
{
    int ebits = 7 - mbits;
    int emax = (1 << ebits) - 1;
    int exp = (b >> mbits) & emax;
    int mant = b & ((1 << mbits) - 1);
    float v;
    if (kind == MINI_FNUZ && b == 0x80)
        return NAN;
    if (kind == MINI_IEEE && exp == emax)
        return mant ? NAN : ((b & 0x80) ? -INFINITY : INFINITY);
    if (kind == MINI_FN && exp == emax && mant == (1 << mbits) - 1)
        return NAN;
    if (exp == 0)
        v = ldexpf((float)mant, 1 - bias - mbits);
    else
        v = ldexpf((float)(mant | (1 << mbits)), exp - bias - mbits);
    return (b & 0x80) ? -v : v;
}

/* The element at `p` widened to a float, for the float-like dtypes. */
static int narrow_float(int dtype, const uint8_t *p, float *out)
{
    uint16_t h;
    switch (dtype) {
    case CKPT_DT_HALF:
        memcpy(&h, p, 2);
        *out = ckpt_half_to_float(h);
        return 1;
    case CKPT_DT_BFLOAT16:
        memcpy(&h, p, 2);
        *out = ckpt_bfloat16_to_float(h);
        return 1;
    case CKPT_DT_FLOAT8_E5M2:
        *out = minifloat_to_float(p[0], 2, 15, MINI_IEEE);
        return 1;
    case CKPT_DT_FLOAT8_E4M3FN:
        *out = minifloat_to_float(p[0], 3, 7, MINI_FN);
        return 1;
    case CKPT_DT_FLOAT8_E4M3FNUZ:
        *out = minifloat_to_float(p[0], 3, 8, MINI_FNUZ);
        return 1;
    case CKPT_DT_FLOAT8_E4M3B11FNUZ:
        *out = minifloat_to_float(p[0], 3, 11, MINI_FNUZ);
        return 1;
    case CKPT_DT_FLOAT8_E5M2FNUZ:
        *out = minifloat_to_float(p[0], 2, 16, MINI_FNUZ);
        return 1;
    default:
        return 0;
    }
}

/* ---- one element --------------------------------------------------------- */

/* Kinds of element, each printed its own way. */
enum elem_kind {
    ELEM_F32,
    ELEM_F64,
    ELEM_C64,
    ELEM_C128,
    ELEM_BOOL,
    ELEM_I8,
    ELEM_U8,
    ELEM_I16,
    ELEM_U16,
    ELEM_I32,
    ELEM_U32,
    ELEM_I64,
    ELEM_U64,
    ELEM_NARROW,
    ELEM_RAW
};

static enum elem_kind elem_kind_of(int dtype)
{
    switch (dtype) {
    case CKPT_DT_FLOAT:
        return ELEM_F32;
    case CKPT_DT_DOUBLE:
        return ELEM_F64;
    case CKPT_DT_COMPLEX64:
        return ELEM_C64;
    case CKPT_DT_COMPLEX128:
        return ELEM_C128;
    case CKPT_DT_BOOL:
        return ELEM_BOOL;
    case CKPT_DT_INT8:
    case CKPT_DT_QINT8:
        return ELEM_I8;
    case CKPT_DT_UINT8:
    case CKPT_DT_QUINT8:
        return ELEM_U8;
    case CKPT_DT_INT16:
    case CKPT_DT_QINT16:
        return ELEM_I16;
    case CKPT_DT_UINT16:
    case CKPT_DT_QUINT16:
        return ELEM_U16;
    case CKPT_DT_INT32:
    case CKPT_DT_QINT32:
        return ELEM_I32;
    case CKPT_DT_UINT32:
        return ELEM_U32;
    case CKPT_DT_INT64:
        return ELEM_I64;
    case CKPT_DT_UINT64:
        return ELEM_U64;
    case CKPT_DT_HALF:
    case CKPT_DT_BFLOAT16:
    case CKPT_DT_FLOAT8_E5M2:
    case CKPT_DT_FLOAT8_E4M3FN:
    case CKPT_DT_FLOAT8_E4M3FNUZ:
    case CKPT_DT_FLOAT8_E4M3B11FNUZ:
    case CKPT_DT_FLOAT8_E5M2FNUZ:
        return ELEM_NARROW;
    default:
        return ELEM_RAW;
    }
}

/* "%.9g"/"%.17g" of a finite or non-finite value ("nan", "inf", "-inf"). */
static void fmt_real(char *buf, size_t n, double v, int digits)
{
    if (isnan(v))
        snprintf(buf, n, "nan");
    else if (isinf(v))
        snprintf(buf, n, "%s", v < 0 ? "-inf" : "inf");
    else
        snprintf(buf, n, "%.*g", digits, v);
}

static json_object *json_real(double v, int digits)
{
    char buf[40];
    fmt_real(buf, sizeof(buf), v, digits);
    if (!isfinite(v))
        return json_object_new_string(buf);
    return json_object_new_double_s(v, buf);
}

static void text_element(FILE *out, int dtype, const uint8_t *p, size_t size)
{
    char a[40], b[40];
    float f;
    double d[2];
    int8_t i8;
    int16_t i16;
    uint16_t u16;
    int32_t i32;
    uint32_t u32;
    int64_t i64;
    uint64_t u64;
    switch (elem_kind_of(dtype)) {
    case ELEM_F32:
        memcpy(&f, p, 4);
        fmt_real(a, sizeof(a), f, 9);
        fputs(a, out);
        return;
    case ELEM_NARROW:
        narrow_float(dtype, p, &f);
        fmt_real(a, sizeof(a), f, 9);
        fputs(a, out);
        return;
    case ELEM_F64:
        memcpy(d, p, 8);
        fmt_real(a, sizeof(a), d[0], 17);
        fputs(a, out);
        return;
    case ELEM_C64: {
        float c[2];
        memcpy(c, p, 8);
        fmt_real(a, sizeof(a), c[0], 9);
        fmt_real(b, sizeof(b), c[1], 9);
        fprintf(out, "(%s,%s)", a, b);
        return;
    }
    case ELEM_C128:
        memcpy(d, p, 16);
        fmt_real(a, sizeof(a), d[0], 17);
        fmt_real(b, sizeof(b), d[1], 17);
        fprintf(out, "(%s,%s)", a, b);
        return;
    case ELEM_BOOL:
        fputs(p[0] ? "true" : "false", out);
        return;
    case ELEM_I8:
        memcpy(&i8, p, 1);
        fprintf(out, "%d", i8);
        return;
    case ELEM_U8:
        fprintf(out, "%u", p[0]);
        return;
    case ELEM_I16:
        memcpy(&i16, p, 2);
        fprintf(out, "%d", i16);
        return;
    case ELEM_U16:
        memcpy(&u16, p, 2);
        fprintf(out, "%u", u16);
        return;
    case ELEM_I32:
        memcpy(&i32, p, 4);
        fprintf(out, "%" PRId32, i32);
        return;
    case ELEM_U32:
        memcpy(&u32, p, 4);
        fprintf(out, "%" PRIu32, u32);
        return;
    case ELEM_I64:
        memcpy(&i64, p, 8);
        fprintf(out, "%" PRId64, i64);
        return;
    case ELEM_U64:
        memcpy(&u64, p, 8);
        fprintf(out, "%" PRIu64, u64);
        return;
    case ELEM_RAW:
        fputs("0x", out);
        for (size_t i = 0; i < size; i++)
            fprintf(out, "%02x", p[i]);
        return;
    }
}

static json_object *json_element(int dtype, const uint8_t *p, size_t size)
{
    float f;
    double d[2];
    int8_t i8;
    int16_t i16;
    uint16_t u16;
    int32_t i32;
    uint32_t u32;
    int64_t i64;
    uint64_t u64;
    json_object *pair;
    switch (elem_kind_of(dtype)) {
    case ELEM_F32:
        memcpy(&f, p, 4);
        return json_real(f, 9);
    case ELEM_NARROW:
        narrow_float(dtype, p, &f);
        return json_real(f, 9);
    case ELEM_F64:
        memcpy(d, p, 8);
        return json_real(d[0], 17);
    case ELEM_C64: {
        float c[2];
        memcpy(c, p, 8);
        pair = json_object_new_array();
        json_object_array_add(pair, json_real(c[0], 9));
        json_object_array_add(pair, json_real(c[1], 9));
        return pair;
    }
    case ELEM_C128:
        memcpy(d, p, 16);
        pair = json_object_new_array();
        json_object_array_add(pair, json_real(d[0], 17));
        json_object_array_add(pair, json_real(d[1], 17));
        return pair;
    case ELEM_BOOL:
        return json_object_new_boolean(p[0] != 0);
    case ELEM_I8:
        memcpy(&i8, p, 1);
        return json_object_new_int64(i8);
    case ELEM_U8:
        return json_object_new_int64(p[0]);
    case ELEM_I16:
        memcpy(&i16, p, 2);
        return json_object_new_int64(i16);
    case ELEM_U16:
        memcpy(&u16, p, 2);
        return json_object_new_int64(u16);
    case ELEM_I32:
        memcpy(&i32, p, 4);
        return json_object_new_int64(i32);
    case ELEM_U32:
        memcpy(&u32, p, 4);
        return json_object_new_int64(u32);
    case ELEM_I64:
        memcpy(&i64, p, 8);
        return json_object_new_int64(i64);
    case ELEM_U64:
        memcpy(&u64, p, 8);
        return json_object_new_uint64(u64);
    case ELEM_RAW:
    default: {
        char hex[2 * 16 + 3] = "0x";
        for (size_t i = 0; i < size && i < 16; i++)
            snprintf(hex + 2 + 2 * i, 3, "%02x", p[i]);
        return json_object_new_string(hex);
    }
    }
}

/* ---- strings ------------------------------------------------------------- */

void cli_print_escaped(FILE *out, const void *bytes, size_t n)
{
    const unsigned char *p = bytes;
    fputc('"', out);
    for (size_t i = 0; i < n; i++) {
        unsigned char c = p[i];
        switch (c) {
        case '"':
            fputs("\\\"", out);
            break;
        case '\\':
            fputs("\\\\", out);
            break;
        case '\n':
            fputs("\\n", out);
            break;
        case '\r':
            fputs("\\r", out);
            break;
        case '\t':
            fputs("\\t", out);
            break;
        default:
            if (c < 32 || c >= 127)
                fprintf(out, "\\x%02x", c);
            else
                fputc(c, out);
        }
    }
    fputc('"', out);
}

/* ---- a tensor ------------------------------------------------------------ */

static int string_values(ckpt_bundle_reader *r, const ckpt_tensor_entry *e,
                         size_t limit, FILE *text, json_object **json)
{
    ckpt_string_array a = {NULL, 0, NULL};
    size_t shown;
    int err = ckpt_bundle_reader_read_strings(r, e->name, &a);
    if (err < 0)
        return err;
    shown = a.count < limit ? a.count : limit;
    if (json)
        *json = json_object_new_array();
    else if (e->shape.rank > 0)
        fputc('[', text);
    for (size_t i = 0; i < shown; i++) {
        const ckpt_slice *s = &a.strings[i];
        if (json) {
            json_object_array_add(*json, cli_json_bytes(s->ptr, s->len));
            continue;
        }
        if (i > 0)
            fputs(", ", text);
        if (limit != SIZE_MAX && s->len > TEXT_STRING_MAX) {
            cli_print_escaped(text, s->ptr, TEXT_STRING_MAX);
            fprintf(text, "... (%zu bytes)", s->len);
        } else {
            cli_print_escaped(text, s->ptr, s->len);
        }
    }
    if (!json) {
        if (shown < a.count)
            fputs(shown ? ", ..." : "...", text);
        if (e->shape.rank > 0)
            fputc(']', text);
    }
    ckpt_string_array_dispose(&a);
    return 0;
}

static int fixed_values(ckpt_bundle_reader *r, const ckpt_tensor_entry *e,
                        int64_t count, size_t limit, FILE *text,
                        json_object **json)
{
    int64_t nbytes = 0;
    size_t esize = ckpt_dtype_size(e->dtype);
    size_t shown = (uint64_t)count < limit ? (size_t)count : limit;
    uint8_t *data;
    int err = ckpt_tensor_byte_size(&nbytes, e->dtype, &e->shape);
    if (err < 0)
        return err;
    data = malloc(nbytes > 0 ? (size_t)nbytes : 1);
    if (!data) {
        fprintf(stderr, "ckpt: out of memory\n");
        exit(CLI_USAGE);
    }
    err = ckpt_bundle_reader_read(r, e->name, data, (size_t)nbytes);
    if (err < 0) {
        free(data);
        return err;
    }
    if (json)
        *json = json_object_new_array();
    else if (e->shape.rank > 0)
        fputc('[', text);
    for (size_t i = 0; i < shown; i++) {
        const uint8_t *p = data + i * esize;
        if (json) {
            json_object_array_add(*json, json_element(e->dtype, p, esize));
            continue;
        }
        if (i > 0)
            fputs(", ", text);
        text_element(text, e->dtype, p, esize);
    }
    if (!json) {
        if (shown < (uint64_t)count)
            fputs(shown ? ", ..." : "...", text);
        if (e->shape.rank > 0)
            fputc(']', text);
    }
    free(data);
    return 0;
}

int cli_tensor_values(ckpt_bundle_reader *r, const ckpt_tensor_entry *e,
                      size_t limit, FILE *text, json_object **json,
                      int64_t *count)
{
    int err;
    *count = 0;
    if (json)
        *json = NULL;
    err = ckpt_shape_num_elements(count, &e->shape);
    if (err < 0)
        return err;
    if (e->dtype == CKPT_DT_STRING)
        return string_values(r, e, limit, text, json);
    return fixed_values(r, e, *count, limit, text, json);
}
