/* format/block.c - building and validating SSTable blocks (see block.h).
 *
 *   offset 0: entry 0                        <- restart[0] = 0
 *             entry 1 ... entry k-1          (keys prefix-compressed)
 *             entry k                        <- restart[1] (shared = 0)
 *             ...
 *   n-4-4R:   fixed32 restart[0] ... restart[R-1]
 *   n-4:      fixed32 R
 *
 *   entry: varint32 shared | varint32 non_shared | varint32 value_len |
 *          key_delta[non_shared] | value[value_len]
 *
 * A new restart point (an entry stored with shared = 0) begins every
 * `restart_interval` entries. An empty block is 00000000 01000000.
 *
 * Prefix sharing lets a few bytes stand for a long key, so a hostile block
 * could make its reader materialize keys far larger than itself. Every key
 * of a well-formed block is at most its restart key plus the deltas since,
 * all inside the block, so with restarts at least every MAX_RESTART_RUN
 * entries its keys add up to at most MAX_RESTART_RUN times its size; the
 * reader refuses a block whose keys add up to more. */
#include "format/block.h"

#include "common/internal.h"
#include "util/coding.h"

#include <assert.h>
#include <inttypes.h>
#include <string.h>

/* The longest run of entries between restart points a reader accepts the
 * key bytes of (LevelDB's and TensorFlow's writers restart every 16). */
#define MAX_RESTART_RUN 64

/* ---- builder ------------------------------------------------------------ */

void ckpt__block_builder_init(ckpt__block_builder *b, int restart_interval)
{
    memset(b, 0, sizeof(*b));
    assert(restart_interval >= 1);
    b->restart_interval = restart_interval;
}

void ckpt__block_builder_dispose(ckpt__block_builder *b)
{
    ckpt_buf_dispose(&b->out);
    ckpt_buf_dispose(&b->last_key);
    ckpt__free(b->restarts);
    b->restarts = NULL;
    b->num_restarts = 0;
    b->cap_restarts = 0;
    b->counter = 0;
    b->finished = false;
}

void ckpt__block_builder_reset(ckpt__block_builder *b)
{
    ckpt__buf_clear(&b->out);
    ckpt__buf_clear(&b->last_key);
    b->num_restarts = 0;
    b->counter = 0;
    b->finished = false;
}

bool ckpt__block_builder_empty(const ckpt__block_builder *b)
{
    return b->out.size == 0;
}

/* The restart array always begins with offset 0; it is stored lazily (on
 * the first entry or at finish) because init cannot fail. */
static size_t logical_restarts(const ckpt__block_builder *b)
{
    return b->num_restarts ? b->num_restarts : 1;
}

size_t ckpt__block_builder_estimate(const ckpt__block_builder *b)
{
    return b->out.size + 4 * logical_restarts(b) + 4;
}

static int push_restart(ckpt__block_builder *b, size_t offset)
{
    if (offset > UINT32_MAX)
        return ckpt__error(CKPT_EINVAL, "table block larger than 4 GiB");
    if (ckpt__reserve_one(&b->restarts, &b->cap_restarts, b->num_restarts,
                          sizeof(*b->restarts), 16) < 0)
        return CKPT_ENOMEM;
    b->restarts[b->num_restarts++] = (uint32_t)offset;
    return 0;
}

static size_t common_prefix(const uint8_t *a, size_t na, const uint8_t *b,
                            size_t nb)
{
    size_t n = na < nb ? na : nb;
    size_t i = 0;
    while (i < n && a[i] == b[i])
        i++;
    return i;
}

int ckpt__key_compare(const void *a, size_t na, const void *b, size_t nb)
{
    size_t n = na < nb ? na : nb;
    int c = n ? memcmp(a, b, n) : 0;
    if (c)
        return c;
    return na < nb ? -1 : (na > nb ? 1 : 0);
}

int ckpt__block_builder_add(ckpt__block_builder *b, const void *key,
                            size_t key_len, const void *value, size_t value_len)
{
    const uint8_t *k = key;
    size_t shared = 0;
    int err;

    assert(!b->finished);
    assert(b->out.size == 0 ||
           ckpt__key_compare((const uint8_t *)b->last_key.ptr, b->last_key.size,
                             k, key_len) < 0);
    if (key_len > UINT32_MAX || value_len > UINT32_MAX)
        return ckpt__error(CKPT_EINVAL,
                           "table entry too large (key %zu, value %zu bytes)",
                           key_len, value_len);
    if (b->num_restarts == 0) {
        err = push_restart(b, 0);
        if (err < 0)
            return err;
    }
    if (b->out.size == 0) {
        b->counter = 0;
    } else if (b->counter < b->restart_interval) {
        shared = common_prefix((const uint8_t *)b->last_key.ptr,
                               b->last_key.size, k, key_len);
    } else {
        err = push_restart(b, b->out.size);
        if (err < 0)
            return err;
        b->counter = 0;
    }
    err = ckpt__put_varint32(&b->out, (uint32_t)shared);
    if (err == 0)
        err = ckpt__put_varint32(&b->out, (uint32_t)(key_len - shared));
    if (err == 0)
        err = ckpt__put_varint32(&b->out, (uint32_t)value_len);
    if (err == 0)
        err = ckpt__buf_put(&b->out, k + shared, key_len - shared);
    if (err == 0)
        err = ckpt__buf_put(&b->out, value, value_len);
    if (err == 0) {
        ckpt__buf_clear(&b->last_key);
        err = ckpt__buf_put(&b->last_key, k, key_len);
    }
    if (err < 0)
        return err;
    b->counter++;
    return 0;
}

int ckpt__block_builder_finish(ckpt__block_builder *b)
{
    int err = 0;
    assert(!b->finished);
    if (b->num_restarts == 0)
        err = push_restart(b, 0);
    for (size_t i = 0; err == 0 && i < b->num_restarts; i++)
        err = ckpt__put_fixed32(&b->out, b->restarts[i]);
    if (err == 0)
        err = ckpt__put_fixed32(&b->out, (uint32_t)b->num_restarts);
    if (err < 0)
        return err;
    b->finished = true;
    return 0;
}

/* ---- reader ------------------------------------------------------------- */

/* The trailer of a block: the restart count (which must fit the block)
 * and the restart offsets, strictly increasing, the first one 0, all inside
 * the entry area (an empty block may only point at offset 0). Sets
 * *restart_start, where the entry area ends. */
static int check_restarts(const uint8_t *block, size_t n, const char *what,
                          uint32_t *num_out, size_t *restart_start)
{
    uint32_t num_restarts;
    size_t start;
    if (n < 4)
        return ckpt__error(CKPT_ECORRUPT,
                           "%s: bad block contents (%zu bytes, too short)",
                           what, n);
    num_restarts = ckpt__decode_fixed32(block + n - 4);
    if (num_restarts > (n - 4) / 4)
        return ckpt__error(CKPT_ECORRUPT,
                           "%s: bad block contents (restart count %" PRIu32
                           " too large for %zu bytes)",
                           what, num_restarts, n);
    start = n - 4 - 4 * (size_t)num_restarts;
    /* An empty block has one restart point (LevelDB's builder) or none;
     * more would be work without entries. */
    if (start == 0 && num_restarts > 1)
        return ckpt__error(CKPT_ECORRUPT,
                           "%s: bad block contents (%" PRIu32
                           " restart points but no entries)",
                           what, num_restarts);
    if (num_restarts == 0 && start > 0)
        return ckpt__error(CKPT_ECORRUPT,
                           "%s: bad block contents (entries but no restart "
                           "points)",
                           what);
    for (size_t i = 0; i < num_restarts; i++) {
        uint32_t r = ckpt__decode_fixed32(block + start + 4 * i);
        uint32_t prev =
            i ? ckpt__decode_fixed32(block + start + 4 * (i - 1)) : 0;
        bool ok =
            start == 0 ? r == 0 : (r < start && (i == 0 ? r == 0 : r > prev));
        if (!ok)
            return ckpt__error(CKPT_ECORRUPT,
                               "%s: bad block contents (restart point %zu at "
                               "offset %" PRIu32 " is invalid)",
                               what, i, r);
    }
    *num_out = num_restarts;
    *restart_start = start;
    return 0;
}

/* One entry's header at `pos`, checked against the previous key (of
 * `key_size` bytes; none to share at a restart point) and the end of the
 * entry area: *p moves past the header. */
static int read_entry_header(const uint8_t **p, const uint8_t *limit,
                             const char *what, size_t pos, size_t key_size,
                             bool at_restart, uint32_t *shared,
                             uint32_t *non_shared, uint32_t *value_len)
{
    if (!ckpt__get_varint32(p, limit, shared) ||
        !ckpt__get_varint32(p, limit, non_shared) ||
        !ckpt__get_varint32(p, limit, value_len))
        return ckpt__error(CKPT_ECORRUPT,
                           "%s: bad entry in block at offset %zu "
                           "(truncated header)",
                           what, pos);
    if (*shared > key_size || (at_restart && *shared != 0))
        return ckpt__error(CKPT_ECORRUPT,
                           "%s: bad entry in block at offset %zu (shared "
                           "prefix %" PRIu32 " with a %s key of %zu bytes)",
                           what, pos, *shared,
                           at_restart ? "restart" : "previous", key_size);
    if ((uint64_t)*non_shared + *value_len > (uint64_t)(limit - *p))
        return ckpt__error(CKPT_ECORRUPT,
                           "%s: bad entry in block at offset %zu (key %" PRIu32
                           " + value %" PRIu32 " bytes overrun the block)",
                           what, pos, *non_shared, *value_len);
    return 0;
}

int ckpt__block_iterate(const uint8_t *block, size_t n, const char *what,
                        ckpt__block_entry_cb cb, void *payload)
{
    ckpt_buf key = CKPT_BUF_INIT;
    uint32_t num_restarts = 0;
    size_t restart_start = 0;
    size_t next_restart = 0; /* index of the next restart point to meet */
    size_t pos = 0;
    uint64_t key_bytes = 0; /* of every key so far */
    int err = check_restarts(block, n, what, &num_restarts, &restart_start);
    while (err == 0 && pos < restart_start) {
        const uint8_t *p = block + pos;
        uint32_t shared, non_shared, value_len;
        bool at_restart = next_restart < num_restarts &&
                          ckpt__decode_fixed32(block + restart_start +
                                               4 * next_restart) == pos;
        if (at_restart)
            next_restart++;
        err = read_entry_header(&p, block + restart_start, what, pos, key.size,
                                at_restart, &shared, &non_shared, &value_len);
        if (err < 0)
            break;
        key.size = shared;
        err = ckpt__buf_put(&key, p, non_shared);
        if (err < 0)
            break;
        p += non_shared;
        key_bytes += key.size;
        if (key_bytes > (uint64_t)MAX_RESTART_RUN * n) {
            err = ckpt__error(CKPT_ECORRUPT,
                              "%s: bad block contents (its keys up to the "
                              "entry at offset %zu add up to %" PRIu64
                              " bytes, more than %d times the block's %zu: "
                              "prefixes shared over more entries than a "
                              "writer puts between restart points)",
                              what, pos, key_bytes, MAX_RESTART_RUN, n);
            break;
        }
        err = cb((const uint8_t *)key.ptr, key.size, p, value_len, payload);
        pos = (size_t)(p + value_len - block);
    }
    if (err == 0 && next_restart != num_restarts && restart_start > 0)
        err = ckpt__error(CKPT_ECORRUPT,
                          "%s: bad block contents (restart point %zu is not "
                          "at an entry)",
                          what, next_restart);
    ckpt_buf_dispose(&key);
    return err;
}
