/* format/bundle_text.h - small helpers the bundle reader and the
 * partitioned-tensor code share: tensor names made fit for a message
 * (printable ASCII as is, other bytes as \xHH, cut after 200 bytes; names
 * are data and slice keys hold 0 bytes), shapes for messages (dtype names
 * come from ckpt__dtype_label, common/internal.h), and the byte-order swap
 * of a fixed-size record read from a bundle of the other endianness. Not
 * installed. */
#ifndef CKPT_FORMAT_BUNDLE_TEXT_H
#define CKPT_FORMAT_BUNDLE_TEXT_H

#include "ckpt/tensor.h"

#include <stddef.h>
#include <stdint.h>

/* Longest part of a tensor name shown in a message, in bytes. */
#define CKPT__NAME_SHOWN 200

typedef struct ckpt__shown_name {
    char text[CKPT__NAME_SHOWN * 4 + 8];
} ckpt__shown_name;

/* `n` bytes of `name` as text in `s`; returns s->text. */
const char *ckpt__show_name(ckpt__shown_name *s, const char *name, size_t n);

typedef struct ckpt__shown_shape {
    char text[CKPT_MAX_RANK * 22 + 8];
} ckpt__shown_shape;

/* `shape` as "[d0, d1, ...]" in `s`; returns s->text. */
const char *ckpt__show_shape(ckpt__shown_shape *s, const ckpt_shape *shape);

/* The width of the words whose byte order a record of `dtype` stores:
 * the element size, or each component's for the complex types. */
size_t ckpt__record_word_width(int dtype);

/* Reverse the byte order of each `width`-byte word of p[0..n). */
void ckpt__record_swap_words(uint8_t *p, size_t n, size_t width);

/* A DT_BOOL record's bytes as C's bool holds them: any byte other than 0
 * (TensorFlow reads it as true) becomes 1, so a hostile record never puts
 * a value into the caller's bool memory that C gives no meaning. */
void ckpt__record_bools_to_host(uint8_t *p, size_t n);

#endif
