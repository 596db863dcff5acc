/* saver/restore.c - restoring registered variables from a checkpoint:
 * every requested variable is checked (present, dtype, shape) before any
 * is written (and every record it will read located inside its data
 * file), then values are read with their checksums verified: those in
 * the caller's memory in one ckpt_bundle_reader_read_many (file order,
 * through the page cache straight into the variables, or streamed around
 * it when a probe shows that faster), then those behind write callbacks
 * one by one. */
#include "format/bundle_read_report.h"
#include "format/bundle_reader_internal.h"
#include "format/bundle_slices.h"
#include "io/buffered_read.h"
#include "saver_internal.h"

#include <string.h>

/* Whether `name` has a graph tensor's output suffix (":0") and the
 * checkpoint has the name without it: a TensorFlow user's usual slip. */
static int has_key_without_suffix(const ckpt_bundle_reader *r, const char *name)
{
    ckpt_tensor_entry e;
    size_t n = strlen(name);
    size_t base = ckpt__without_output_suffix(name, n);
    char *bare;
    int found = 0;
    if (base == n)
        return 0;
    bare = ckpt__strndup(name, base);
    if (bare)
        found = ckpt__bundle_reader_lookup(&e, NULL, r, bare) == 0;
    ckpt__free(bare);
    return found;
}

static const ckpt__var *find_var(const ckpt_saver *s, const char *name)
{
    size_t i = ckpt__name_index_find(&s->var_names, name);
    return i < s->nvars ? &s->vars[i] : NULL;
}

static int check_var(ckpt_bundle_reader *r, const char *prefix,
                     const ckpt__var *v)
{
    ckpt_tensor_entry e; /* filled, not handed out: nothing kept per
                            variable */
    char want[256], have[256];
    int err;
    if (!v->v.write && !v->v.data) /* saved through `read` only */
        return ckpt__error(CKPT_EINVAL,
                           "restore: variable '%s' has neither data nor a "
                           "write callback",
                           v->name);
    err = ckpt__bundle_reader_lookup(&e, NULL, r, v->name);
    if (err < 0 && has_key_without_suffix(r, v->name))
        return ckpt__error(
            CKPT_ENOTFOUND,
            "restore %s: variable '%s' is not in the "
            "checkpoint (checkpoint keys are variable names, "
            "without a graph tensor's output suffix: register "
            "it as '%.*s')",
            prefix, v->name,
            (int)ckpt__without_output_suffix(v->name, strlen(v->name)),
            v->name);
    if (err < 0 &&
        ckpt__bundle_reader_has_tf2_value(r, v->name, strlen(v->name)))
        return ckpt__error(CKPT_ENOTFOUND,
                           "restore %s: variable '%s' is not in the "
                           "checkpoint (a TensorFlow 2 checkpoint stores a "
                           "variable's value under its object path followed "
                           "by '%s': register it as '%s%s')",
                           prefix, v->name, CKPT__TF2_VALUE_SUFFIX, v->name,
                           CKPT__TF2_VALUE_SUFFIX);
    if (err < 0 &&
        ckpt__bundle_reader_partition_of(r, v->name, strlen(v->name), &e)) {
        ckpt_shape_format(have, sizeof(have), &e.shape);
        return ckpt__error(
            CKPT_ENOTFOUND,
            "restore %s: variable '%s' is not in the "
            "checkpoint (TensorFlow saves the parts of a "
            "partitioned variable as pieces of one tensor "
            "under the variable's name: register '%.*s' "
            "with its full shape %s)",
            prefix, v->name,
            (int)ckpt__without_part_suffix(v->name, strlen(v->name)), v->name,
            have);
    }
    if (err < 0)
        return ckpt__error(CKPT_ENOTFOUND,
                           "restore %s: variable '%s' is not in the "
                           "checkpoint (one added since it was written? "
                           "restore the others with "
                           "ckpt_saver_restore_subset)",
                           prefix, v->name);
    if (e.dtype != v->v.dtype)
        return ckpt__error(
            CKPT_EINVAL,
            "restore %s: variable '%s' is %s in the checkpoint but %s here",
            prefix, v->name, ckpt__dtype_label(e.dtype),
            ckpt_dtype_name(v->v.dtype));
    if (!ckpt_shape_equal(&e.shape, &v->v.shape)) {
        ckpt_shape_format(have, sizeof(have), &e.shape);
        ckpt_shape_format(want, sizeof(want), &v->v.shape);
        return ckpt__error(CKPT_EINVAL,
                           "restore %s: variable '%s' has shape %s in the "
                           "checkpoint but %s here",
                           prefix, v->name, have, want);
    }
    return 0;
}

/* How many of the checkpoint's tensors no registered variable takes are
 * named when one is missing. */
#define UNTAKEN_NAMED 3

/* A full restore found a variable missing (`err` CKPT_ENOTFOUND): name
 * the checkpoint's tensors that no registered variable takes, the first
 * few, so that a renamed variable shows its old name beside the new
 * ("'layer1/weights' is not in the checkpoint ...; it holds 1 tensor no
 * registered variable takes: 'layer1/w'"). Any other `err` is returned as
 * it is. */
static int name_untaken(const ckpt_saver *s, ckpt_bundle_reader *r, int err)
{
    ckpt_buf names = CKPT_BUF_INIT;
    ckpt__saved_error saved;
    size_t untaken = 0, n = ckpt_bundle_reader_count(r);
    if (err != CKPT_ENOTFOUND)
        return err;
    ckpt__error_save(&saved);
    for (size_t i = 0; i < n; i++) {
        ckpt_tensor_entry e;
        char shown[256];
        if (ckpt_bundle_reader_entry_fill(&e, r, i) < 0 || e.is_slice_key ||
            strlen(e.name) != e.name_len ||
            ckpt__name_index_find(&s->var_names, e.name) != SIZE_MAX)
            continue;
        if (untaken < UNTAKEN_NAMED)
            (void)ckpt__buf_printf(
                &names, "%s'%s'", untaken ? ", " : "",
                ckpt_tensor_entry_shown_name(shown, sizeof(shown), &e));
        untaken++;
    }
    if (untaken > UNTAKEN_NAMED)
        (void)ckpt__buf_printf(&names, ", ...");
    if (untaken > 0 && names.ptr)
        err = ckpt__error(CKPT_ENOTFOUND,
                          "%s; the checkpoint holds %zu tensor%s no "
                          "registered variable takes (renamed?): %s",
                          saved.message, untaken, untaken == 1 ? "" : "s",
                          names.ptr);
    else
        err = ckpt__error_restore(&saved);
    ckpt_buf_dispose(&names);
    return err;
}

/* Whether the variable is restored straight into the caller's memory. */
static int reads_in_place(const ckpt__var *v)
{
    return !v->v.write && v->v.data;
}

/* A variable restored through its write callback, via a temporary buffer. */
static int read_var_via_callback(ckpt_bundle_reader *r, const ckpt__var *v)
{
    void *tmp;
    int err;
    tmp = ckpt__malloc((size_t)v->bytes);
    if (!tmp)
        return ckpt__error_oom();
    err = ckpt_bundle_reader_read(r, v->name, tmp, (size_t)v->bytes);
    if (err == 0)
        err = ckpt__var_write(&v->v, v->name, tmp, (size_t)v->bytes);
    ckpt__free(tmp);
    return err;
}

/* Say how the data was read and why: through the page cache straight
 * into the variables, or streamed around it with O_DIRECT; chosen by a
 * probe, remembered from an earlier probe on the file's device, or through
 * the cache because its device reads far ahead, direct reads were not
 * possible (not offered, the file is mostly cached) or the read was too
 * short. */
static void log_read_mode(ckpt_saver *s, const char *prefix,
                          const ckpt_bundle_reader *r)
{
    uint64_t bytes = 0;
    const ckpt__read_report *rep = ckpt__bundle_reader_stream(r, &bytes);
    const char *why = "no probe: the file is mostly in the page cache, "
                      "direct reads are not offered, or the read is short";
    if (rep->mode == 0)
        return; /* nothing read into memory in one batch */
    if (rep->probed)
        why = "chosen by a probe";
    else if (rep->remembered)
        why = "remembered from an earlier probe on this device";
    else if (rep->far_read_ahead)
        why = "no probe: the file was not cached and its device reads far "
              "ahead by itself";
    CKPT__SAVER_LOG(
        s, CKPT_LOG_DEBUG,
        "restore %s: %llu bytes read %s (%s; %s%zu KiB reads, "
        "%d in flight)",
        prefix, (unsigned long long)bytes,
        rep->streamed ? "through the page cache into the variables in "
                        "long requests, each checksummed by a helper "
                        "thread while the next is read"
        : rep->mode == CKPT__READ_BUFFERED
            ? "through the page cache into the variables, each piece "
              "checksummed after its read"
            : "around the page cache (O_DIRECT), the checksum fused into "
              "the copy",
        why, rep->streamed ? "up to " : "", rep->piece_bytes >> 10,
        rep->readers);
    /* (the probe runs for this line only when it is logged) */
    if (rep->mode == CKPT__READ_BUFFERED &&
        rep->piece_bytes == CKPT__BUFFERED_PIECE && s->opts.log &&
        CKPT_LOG_DEBUG >= ckpt__log_min_level(s->opts.log_level)) {
        if (ckpt__first_touch_mode() != CKPT__TOUCH_STRAIGHT)
            CKPT__SAVER_LOG(
                s, CKPT_LOG_DEBUG,
                "restore %s: the kernel's first copy into the program's "
                "pages runs %.2fx slower than its next here: pieces go "
                "straight into the variables, timed, until one takes over "
                "%.3f ms (the kernel's first write there); the rest of the "
                "read then goes through a buffer at each record's place in "
                "a page and is copied on",
                prefix, ckpt__first_touch_ratio(),
                ckpt__first_touch_limit_s(CKPT__BUFFERED_PIECE) * 1e3);
        else
            CKPT__SAVER_LOG(
                s, CKPT_LOG_DEBUG,
                "restore %s: a variable just past its record's place in a "
                "page is read %s (the kernel's copy there: %.2fx an aligned "
                "one; its first copy into the program's pages: %.2fx its "
                "next)",
                prefix,
                ckpt__aliased_reads_bounce()
                    ? "through a buffer at that place and copied on"
                    : "straight into it",
                ckpt__aliased_read_ratio(), ckpt__first_touch_ratio());
    }
    if (rep->probed || rep->remembered)
        CKPT__SAVER_LOG(
            s, CKPT_LOG_DEBUG,
            "restore %s: probe rates%s: O_DIRECT %.2f GB/s, "
            "page cache %.2f GB/s",
            prefix, rep->remembered ? " (an earlier probe on this device)" : "",
            rep->direct_bytes_per_s / 1e9, rep->buffered_bytes_per_s / 1e9);
}

/* Restore the `n` variables `names`, or with `all` every one. */
static int restore_vars(ckpt_saver *s, const char *prefix,
                        const char *const *names, size_t n, int all)
{
    ckpt_bundle_reader_options ro = CKPT_BUNDLE_READER_OPTIONS_INIT;
    ckpt_bundle_reader *r = NULL;
    ckpt_read_request *reqs = NULL;
    size_t nreqs = 0;
    size_t count = all ? s->nvars : n;
    /* also refuses the writer thread and a fork()ed child */
    int err = ckpt__saver_call_begin(s, "restore");
    if (err < 0)
        return err;
    ckpt__saver_complete_snapshot(s); /* before the variables change */
    err = ckpt__saver_check_own_memory(s, "restore");
    if (err < 0)
        goto done;
    ro.fs = s->fs;
    err = ckpt_bundle_reader_open(&r, prefix, &ro);
    if (err < 0)
        goto done;
    {
        /* every variable checked: the first mismatch is the error, and
         * the others are named with it (the first few), so that one run
         * shows everything to fix */
        ckpt__mismatches m;
        ckpt__mismatches_init(&m);
        for (size_t i = 0; i < count; i++) {
            const char *name = all ? s->vars[i].name : names[i];
            const ckpt__var *v = all ? &s->vars[i] : find_var(s, names[i]);
            ckpt__mismatches_add(
                &m,
                v ? check_var(r, prefix, v)
                  : ckpt__error(CKPT_EINVAL,
                                "restore_subset: '%s' is not a registered "
                                "variable (ckpt_saver_add_var registers "
                                "one)",
                                names[i]),
                name);
        }
        err = ckpt__mismatches_finish(&m);
        if (all)
            err = name_untaken(s, r, err);
    }
    /* Those behind write callbacks are read after the others: their
     * records (or pieces) are located now, as read_many locates the
     * others' before it reads any, so that a data file cut short under
     * one of them fails the restore before any variable is written. */
    for (size_t i = 0; i < count && err == 0; i++) {
        const ckpt__var *v = all ? &s->vars[i] : find_var(s, names[i]);
        if (!reads_in_place(v))
            err = ckpt__bundle_reader_check_read(r, v->name, (size_t)v->bytes);
        if (err == CKPT_ENOTFOUND) /* a data file the index names */
            err = ckpt__error_prefix(
                CKPT_ECORRUPT, "restore %s: incomplete checkpoint", prefix);
    }
    if (err < 0)
        goto done;
    /* Variables in memory in one batch, so the reader can stream the data
     * file in order; then those behind write callbacks, one at a time. */
    reqs = ckpt__calloc(count ? count : 1, sizeof(*reqs));
    if (!reqs) {
        err = ckpt__error_oom();
        goto done;
    }
    for (size_t i = 0; i < count; i++) {
        const ckpt__var *v = all ? &s->vars[i] : find_var(s, names[i]);
        if (!reads_in_place(v))
            continue;
        reqs[nreqs].name = v->name;
        reqs[nreqs].dst = v->v.data;
        reqs[nreqs].dst_size = (size_t)v->bytes;
        nreqs++;
    }
    err = ckpt_bundle_reader_read_many(r, reqs, nreqs);
    if (err == 0)
        log_read_mode(s, prefix, r);
    for (size_t i = 0; i < count && err == 0; i++) {
        const ckpt__var *v = all ? &s->vars[i] : find_var(s, names[i]);
        if (!reads_in_place(v))
            err = read_var_via_callback(r, v);
    }
    /* Every entry was found in the index: a file missing now is a data
     * file the index names, an incomplete checkpoint, found while reading
     * (some variables may hold its bytes already), not an absent one. */
    if (err == CKPT_ENOTFOUND)
        err = ckpt__error_prefix(CKPT_ECORRUPT,
                                 "restore %s: incomplete "
                                 "checkpoint",
                                 prefix);
done:
    ckpt__free(reqs);
    ckpt_bundle_reader_free(r);
    ckpt__saver_call_end(s);
    return err;
}

/* A restore of every variable before any is registered would restore
 * nothing and succeed: the program would train from its initial values
 * and its first saves evict the checkpoints it meant to resume from. */
static int check_has_vars(const ckpt_saver *s, const char *op)
{
    if (s->nvars > 0)
        return 0;
    return ckpt__error(CKPT_EINVAL,
                       "saver %s: %s: no variables registered, so nothing "
                       "would be restored (register them with "
                       "ckpt_saver_add_var first)",
                       ckpt__saver_say(s), op);
}

int ckpt_saver_restore(ckpt_saver *s, const char *prefix)
{
    int err;
    CKPT__CHECK_ARG(s);
    CKPT__CHECK_ARG(prefix);
    if (s->ops)
        return s->ops->restore(s->ops_self, prefix);
    err = check_has_vars(s, "restore");
    if (err < 0)
        return err;
    return restore_vars(s, prefix, NULL, 0, 1);
}

int ckpt_saver_restore_subset(ckpt_saver *s, const char *prefix,
                              const char *const *names, size_t n)
{
    CKPT__CHECK_ARG(s);
    CKPT__CHECK_ARG(prefix);
    if (n > 0)
        CKPT__CHECK_ARG(names);
    for (size_t i = 0; i < n; i++)
        if (!names[i])
            return ckpt__error(CKPT_EINVAL,
                               "restore_subset: names[%zu] is NULL", i);
    if (s->ops)
        return ckpt__error(CKPT_ENOTSUP,
                           "restore_subset: a wrapped saver restores every "
                           "variable (use ckpt_saver_restore)");
    return restore_vars(s, prefix, names, n, 0);
}

int ckpt__restore_latest_outcome(int err)
{
    /* CKPT_ENOTFOUND from restore_latest means "no checkpoint": a program
     * starts afresh on it, and its first saves would evict the very
     * checkpoints it could not read. A checkpoint that is there but lacks
     * a variable is a mismatch, like a dtype or shape. */
    if (err != CKPT_ENOTFOUND)
        return err;
    return ckpt__error_prefix(CKPT_EINVAL,
                              "the latest checkpoint does not hold every "
                              "registered variable (not starting afresh "
                              "beside it)");
}

void ckpt__dir_state_unnamed_note(const ckpt__dir_state *ds,
                                  const char *restore, ckpt_buf *note)
{
    ckpt_buf newest = CKPT_BUF_INIT;
    ckpt__saved_error saved;
    size_t n = 0;
    ckpt__error_save(&saved);
    /* a directory that cannot be listed adds nothing to say */
    if (ckpt__dir_state_numbered(ds, &n, &newest) == 0 && n > 0)
        (void)ckpt__buf_printf(
            note,
            "; %zu checkpoint%s of this saver's naming %s in the directory, "
            "the newest %s, " CKPT__UNNAMED_NOTE_MARK " (%s restores one by "
            "its prefix; `ckpt ls` lists them)",
            n, n == 1 ? "" : "s", n == 1 ? "is" : "are", newest.ptr, restore);
    ckpt__error_restore(&saved);
    ckpt_buf_dispose(&newest);
}

void ckpt__saver_unnamed_note(ckpt_saver *s, const char *dir, ckpt_buf *note)
{
    if (s->ops || !s->ds.dir || (dir && strcmp(dir, s->ds.dir) != 0))
        return;
    ckpt__dir_state_unnamed_note(&s->ds, "ckpt_saver_restore", note);
}

int ckpt_saver_restore_latest(ckpt_saver *s, ckpt_buf *prefix_out)
{
    ckpt_buf latest = CKPT_BUF_INIT;
    int err;
    CKPT__CHECK_ARG(s);
    if (s->ops)
        return s->ops->restore_latest(s->ops_self, prefix_out);
    err = check_has_vars(s, "restore_latest");
    if (err < 0)
        return err;
    err = ckpt_saver_latest(s, &latest);
    if (err == CKPT_ENOTFOUND) {
        ckpt_buf note = CKPT_BUF_INIT;
        ckpt__saver_unnamed_note(s, NULL, &note);
        if (note.size > 0) {
            ckpt__saved_error saved;
            ckpt__error_save(&saved);
            err = ckpt__error(CKPT_ENOTFOUND, "%s%s", saved.message, note.ptr);
        }
        ckpt_buf_dispose(&note);
    }
    if (err == 0)
        err = ckpt__restore_latest_outcome(ckpt_saver_restore(s, latest.ptr));
    if (err == CKPT_ECORRUPT && ckpt_saver_num_checkpoints(s) > 1) {
        ckpt__saved_error saved;
        size_t older = ckpt_saver_num_checkpoints(s) - 1;
        ckpt__error_save(&saved);
        err = ckpt__error(CKPT_ECORRUPT,
                          "%s (%zu older checkpoint%s listed: "
                          "ckpt_saver_checkpoint gives them, "
                          "ckpt_saver_restore restores one)",
                          saved.message, older, older == 1 ? " is" : "s are");
    }
    if (err == 0 && prefix_out)
        err = ckpt__buf_set(prefix_out, latest.ptr);
    ckpt_buf_dispose(&latest);
    return err;
}
