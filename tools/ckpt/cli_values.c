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

/* Strings longer than this are cut unless every value is asked for: in
 * text "..." and the length follow, in JSON the element is
 * {"cut": first bytes, "bytes": length}. */
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

uint64_t cli_uint_at(const uint8_t *p, size_t size)
{
    uint16_t u16;
    uint32_t u32;
    uint64_t u64;
    switch (size) {
    case 1:
        return p[0];
    case 2:
        memcpy(&u16, p, 2);
        return u16;
    case 4:
        memcpy(&u32, p, 4);
        return u32;
    default:
        memcpy(&u64, p, 8);
        return u64;
    }
}

int64_t cli_int_at(const uint8_t *p, size_t size)
{
    uint64_t u = cli_uint_at(p, size);
    /* two's complement: extend the sign bit of a narrower integer */
    if ((size == 1 || size == 2 || size == 4) && (u >> (8 * size - 1)) & 1)
        u |= ~(uint64_t)0 << (8 * size);
    return (int64_t)u;
}

/* An element decoded once, then printed as text or JSON. */
struct elem_value {
    enum { VAL_REAL, VAL_COMPLEX, VAL_BOOL, VAL_INT, VAL_UINT64, VAL_RAW } kind;
    double re, im; /* VAL_REAL, VAL_COMPLEX */
    int digits;    /* of re and im: 9 (float and narrower) or 17 (double) */
    int64_t i;     /* VAL_INT (every integer type but uint64); VAL_BOOL */
    uint64_t u;    /* VAL_UINT64 */
};

static struct elem_value load_element(int dtype, const uint8_t *p, size_t size)
{
    struct elem_value v;
    float f[2] = {0, 0};
    memset(&v, 0, sizeof(v));
    v.digits = 9;
    switch (dtype) {
    case CKPT_DT_FLOAT:
        memcpy(f, p, 4);
        v.kind = VAL_REAL;
        v.re = f[0];
        return v;
    case CKPT_DT_DOUBLE:
        memcpy(&v.re, p, 8);
        v.kind = VAL_REAL;
        v.digits = 17;
        return v;
    case CKPT_DT_COMPLEX64:
        memcpy(f, p, 8);
        v.kind = VAL_COMPLEX;
        v.re = f[0];
        v.im = f[1];
        return v;
    case CKPT_DT_COMPLEX128:
        memcpy(&v.re, p, 8);
        memcpy(&v.im, p + 8, 8);
        v.kind = VAL_COMPLEX;
        v.digits = 17;
        return v;
    case CKPT_DT_BOOL:
        v.kind = VAL_BOOL;
        v.i = p[0] != 0;
        return v;
    case CKPT_DT_INT8:
    case CKPT_DT_QINT8:
    case CKPT_DT_INT16:
    case CKPT_DT_QINT16:
    case CKPT_DT_INT32:
    case CKPT_DT_QINT32:
    case CKPT_DT_INT64:
        v.kind = VAL_INT;
        v.i = cli_int_at(p, size);
        return v;
    case CKPT_DT_UINT8:
    case CKPT_DT_QUINT8:
    case CKPT_DT_UINT16:
    case CKPT_DT_QUINT16:
    case CKPT_DT_UINT32:
        v.kind = VAL_INT;
        v.i = (int64_t)cli_uint_at(p, size);
        return v;
    case CKPT_DT_UINT64:
        v.kind = VAL_UINT64;
        v.u = cli_uint_at(p, size);
        return v;
    default:
        v.kind = narrow_float(dtype, p, &f[0]) ? VAL_REAL : VAL_RAW;
        v.re = f[0];
        return v;
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
    struct elem_value v = load_element(dtype, p, size);
    char a[40], b[40];
    switch (v.kind) {
    case VAL_REAL:
        fmt_real(a, sizeof(a), v.re, v.digits);
        fputs(a, out);
        return;
    case VAL_COMPLEX:
        fmt_real(a, sizeof(a), v.re, v.digits);
        fmt_real(b, sizeof(b), v.im, v.digits);
        fprintf(out, "(%s,%s)", a, b);
        return;
    case VAL_BOOL:
        fputs(v.i ? "true" : "false", out);
        return;
    case VAL_INT:
        fprintf(out, "%" PRId64, v.i);
        return;
    case VAL_UINT64:
        fprintf(out, "%" PRIu64, v.u);
        return;
    case VAL_RAW:
        fputs("0x", out);
        for (size_t i = 0; i < size; i++)
            fprintf(out, "%02x", p[i]);
        return;
    }
}

static json_object *json_element(int dtype, const uint8_t *p, size_t size)
{
    struct elem_value v = load_element(dtype, p, size);
    json_object *pair;
    switch (v.kind) {
    case VAL_REAL:
        return json_real(v.re, v.digits);
    case VAL_COMPLEX:
        pair = json_object_new_array();
        json_object_array_add(pair, json_real(v.re, v.digits));
        json_object_array_add(pair, json_real(v.im, v.digits));
        return pair;
    case VAL_BOOL:
        return json_object_new_boolean(v.i != 0);
    case VAL_INT:
        return json_object_new_int64(v.i);
    case VAL_UINT64:
        return json_object_new_uint64(v.u);
    case VAL_RAW:
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

/* The JSON element of a string cut to its first TEXT_STRING_MAX bytes (less
 * where that would split a UTF-8 sequence, so the start shows as text):
 * {"cut": those bytes, "bytes": its length}. Only a valid sequence moves
 * the cut: bytes that are not UTF-8 (a run of continuation bytes) are cut
 * at TEXT_STRING_MAX, as the text is (they were cut up to 3 bytes short). */
static json_object *json_cut_string(const ckpt_slice *s)
{
    const unsigned char *p = s->ptr;
    size_t n = TEXT_STRING_MAX, start = n;
    uint32_t cp;
    json_object *o = cli_json_or_oom(json_object_new_object());
    for (int back = 0; back < 3 && start > 0 && (p[start] & 0xc0) == 0x80;
         back++)
        start--;
    if (start < n &&
        cli_utf8_sequence(p + start, s->len - start, &cp) > n - start)
        n = start;
    cli_json_add(o, "cut", cli_json_bytes(p, n));
    cli_json_add(o, "bytes", json_object_new_int64((int64_t)s->len));
    return o;
}

static int string_values(ckpt_bundle_reader *r, const ckpt_tensor_entry *e,
                         size_t limit, FILE *text, cli_json_list *json)
{
    ckpt_string_array a = CKPT_STRING_ARRAY_INIT;
    size_t shown;
    int err = ckpt_bundle_reader_read_strings_entry(r, e, &a);
    if (err < 0)
        return err;
    shown = a.count < limit ? a.count : limit;
    if (!json && e->shape.rank > 0)
        fputc('[', text);
    for (size_t i = 0; i < shown; i++) {
        const ckpt_slice *s = &a.strings[i];
        int cut = limit != SIZE_MAX && s->len > TEXT_STRING_MAX;
        if (json) {
            cli_json_list_add(json, cut ? json_cut_string(s)
                                        : cli_json_bytes(s->ptr, s->len));
            continue;
        }
        if (i > 0)
            fputs(", ", text);
        if (cut) {
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

/* Where the elements of a fixed-size tensor go as they are read. */
typedef struct value_sink {
    int dtype;
    size_t esize;
    size_t shown; /* elements to format */
    size_t next;  /* elements formatted so far */
    FILE *text;
    cli_json_list *json;
} value_sink;

/* Format the elements of `n` bytes of data (whole elements, host order)
 * while fewer than `shown` have been. */
static void sink_piece(const void *data, size_t n, void *payload)
{
    value_sink *k = payload;
    const uint8_t *p = data;
    for (size_t i = 0; i < n / k->esize && k->next < k->shown; i++) {
        const uint8_t *elem = p + i * k->esize;
        if (k->json) {
            cli_json_list_add(k->json, json_element(k->dtype, elem, k->esize));
        } else {
            if (k->next > 0)
                fputs(", ", k->text);
            text_element(k->text, k->dtype, elem, k->esize);
        }
        k->next++;
    }
}

/* A record is streamed (read to its end, so its CRC is checked, in bounded
 * memory); a partitioned tensor is read assembled. */
static int fixed_values(ckpt_bundle_reader *r, const ckpt_tensor_entry *e,
                        int64_t count, size_t limit, FILE *text,
                        cli_json_list *json)
{
    value_sink k;
    int err;
    k.dtype = e->dtype;
    k.esize = ckpt_dtype_size(e->dtype);
    k.shown = (uint64_t)count < limit ? (size_t)count : limit;
    k.next = 0;
    k.text = text;
    k.json = json;
    if (!json && e->shape.rank > 0)
        fputc('[', text);
    if (e->num_slices > 0) {
        uint8_t *data = NULL;
        size_t nbytes = 0;
        err = cli_read_assembled(r, e, "inspect", &data, &nbytes);
        if (err == 0)
            sink_piece(data, nbytes, &k);
        free(data);
    } else {
        err = cli_stream_record(r, e, sink_piece, &k);
    }
    if (err < 0)
        return err;
    if (!json) {
        if (k.shown < (uint64_t)count)
            fputs(k.shown ? ", ..." : "...", text);
        if (e->shape.rank > 0)
            fputc(']', text);
    }
    return 0;
}

int cli_tensor_values(ckpt_bundle_reader *r, const ckpt_tensor_entry *e,
                      size_t limit, FILE *text, cli_json_list *json,
                      int64_t *count)
{
    int err;
    *count = 0;
    err = ckpt_shape_num_elements(count, &e->shape);
    if (err < 0)
        return err;
    if (e->dtype == CKPT_DT_STRING)
        return string_values(r, e, limit, text, json);
    return fixed_values(r, e, *count, limit, text, json);
}
