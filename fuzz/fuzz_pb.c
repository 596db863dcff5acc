/* fuzz/fuzz_pb.c - fuzz target for the protobuf decoders of
 * format/bundle_proto.h: the input is one index value, decoded both as a
 * BundleHeaderProto and as a BundleEntryProto.
 *
 * Checks beyond "no crash": a failed decode reports CKPT_ECORRUPT with a
 * message; a decoded header re-encodes and decodes to the same fields; a
 * decoded entry's slices can all be fetched (and one more cannot), its
 * re-encoding decodes to the same fields and slices, and encoding that
 * again gives the same bytes (the encoding is a fixed point); no
 * allocation above the cap, no leak. */
#include "fuzz.h"

#include "common/internal.h"
#include "format/bundle_proto.h"

#include <stdlib.h>
#include <string.h>

/* Slices fetched per entry at most (each fetch rescans the value). */
#define MAX_SLICES 256

static void check_corrupt(int rc)
{
    CKPT_FUZZ_CHECK(rc == CKPT_ECORRUPT);
    CKPT_FUZZ_CHECK(ckpt_error_last()->code == rc);
    CKPT_FUZZ_CHECK(ckpt_error_last()->message[0] != '\0');
}

static void fuzz_header(const uint8_t *data, size_t size)
{
    ckpt__bundle_header h, h2;
    ckpt_buf enc = CKPT_BUF_INIT;
    size_t kept;
    int rc = ckpt__bundle_header_decode(&h, data, size);
    if (rc != 0) {
        check_corrupt(rc);
        return;
    }
    rc = ckpt__bundle_header_check_version(&h);
    CKPT_FUZZ_CHECK(rc == 0 || rc == CKPT_EVERSION);
    kept = h.num_bad_consumers < CKPT__BUNDLE_MAX_BAD_CONSUMERS
               ? h.num_bad_consumers
               : CKPT__BUNDLE_MAX_BAD_CONSUMERS;
    rc = ckpt__bundle_header_encode(&enc, &h);
    CKPT_FUZZ_CHECK(rc == 0);
    rc = ckpt__bundle_header_decode(&h2, (const uint8_t *)enc.ptr, enc.size);
    CKPT_FUZZ_CHECK(rc == 0);
    CKPT_FUZZ_CHECK(h2.num_shards == h.num_shards);
    CKPT_FUZZ_CHECK(h2.endianness == h.endianness);
    CKPT_FUZZ_CHECK(h2.producer == h.producer);
    CKPT_FUZZ_CHECK(h2.min_consumer == h.min_consumer);
    CKPT_FUZZ_CHECK(h2.num_bad_consumers == kept);
    for (size_t i = 0; i < kept; i++)
        CKPT_FUZZ_CHECK(h2.bad_consumers[i] == h.bad_consumers[i]);
    if (h.num_bad_consumers <= CKPT__BUNDLE_MAX_BAD_CONSUMERS)
        CKPT_FUZZ_CHECK(h2.bans_consumer_1 == h.bans_consumer_1);
    ckpt_buf_dispose(&enc);
}

static int same_slice(const ckpt__tensor_slice *a, const ckpt__tensor_slice *b)
{
    if (a->rank != b->rank)
        return 0;
    for (int i = 0; i < a->rank; i++)
        if (a->start[i] != b->start[i] || a->length[i] != b->length[i])
            return 0;
    return 1;
}

static int same_entry(const ckpt__bundle_entry *a, const ckpt__bundle_entry *b)
{
    if (a->dtype != b->dtype || a->shape.rank != b->shape.rank ||
        a->unknown_rank != b->unknown_rank || a->shard_id != b->shard_id ||
        a->offset != b->offset || a->size != b->size ||
        a->crc32c != b->crc32c || a->num_slices != b->num_slices)
        return 0;
    for (int i = 0; i < a->shape.rank; i++)
        if (a->shape.dims[i] != b->shape.dims[i])
            return 0;
    return 1;
}

static void fuzz_entry(const uint8_t *data, size_t size)
{
    ckpt__bundle_entry e, e2;
    ckpt__tensor_slice *slices = NULL;
    ckpt__tensor_slice extra;
    ckpt_buf enc = CKPT_BUF_INIT, enc2 = CKPT_BUF_INIT;
    int rc = ckpt__bundle_entry_decode(&e, data, size);
    if (rc != 0) {
        check_corrupt(rc);
        return;
    }
    CKPT_FUZZ_CHECK(e.shape.rank >= 0 && e.shape.rank <= CKPT_MAX_RANK);
    for (int i = 0; i < e.shape.rank; i++)
        CKPT_FUZZ_CHECK(e.shape.dims[i] >= 0);
    CKPT_FUZZ_CHECK(e.num_slices >= 0 && e.slices == NULL);
    if (e.num_slices > MAX_SLICES)
        return;
    slices = calloc((size_t)e.num_slices + 1, sizeof(*slices));
    CKPT_FUZZ_CHECK(slices != NULL);
    for (int i = 0; i < e.num_slices; i++) {
        rc = ckpt__bundle_entry_get_slice(&slices[i], data, size, i);
        CKPT_FUZZ_CHECK(rc == 0);
        CKPT_FUZZ_CHECK(slices[i].rank >= 0 && slices[i].rank <= CKPT_MAX_RANK);
    }
    rc = ckpt__bundle_entry_get_slice(&extra, data, size, e.num_slices);
    CKPT_FUZZ_CHECK(rc == CKPT_ENOTFOUND);

    /* re-encode with the slices, decode, compare */
    e.slices = slices;
    rc = ckpt__bundle_entry_encode(&enc, &e);
    CKPT_FUZZ_CHECK(rc == 0);
    rc = ckpt__bundle_entry_decode(&e2, (const uint8_t *)enc.ptr, enc.size);
    CKPT_FUZZ_CHECK(rc == 0);
    CKPT_FUZZ_CHECK(same_entry(&e, &e2));
    for (int i = 0; i < e.num_slices; i++) {
        rc = ckpt__bundle_entry_get_slice(&extra, (const uint8_t *)enc.ptr,
                                          enc.size, i);
        CKPT_FUZZ_CHECK(rc == 0);
        CKPT_FUZZ_CHECK(same_slice(&extra, &slices[i]));
    }
    e2.slices = slices;
    rc = ckpt__bundle_entry_encode(&enc2, &e2);
    CKPT_FUZZ_CHECK(rc == 0);
    CKPT_FUZZ_CHECK(
        enc2.size == enc.size &&
        (enc.size == 0 || memcmp(enc.ptr, enc2.ptr, enc.size) == 0));
    ckpt_buf_dispose(&enc);
    ckpt_buf_dispose(&enc2);
    free(slices);
}

int ckpt_fuzz_pb(const uint8_t *data, size_t size)
{
    ckpt_fuzz_begin();
    fuzz_header(data, size);
    fuzz_entry(data, size);
    ckpt_fuzz_end("pb");
    return 0;
}
